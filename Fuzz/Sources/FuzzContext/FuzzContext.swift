// libFuzzer harness: EvaluationContext(json:) then fitting, the main parser fuzz target.
//
// Invariants (a violation stops the fuzzer with the input saved):
// - parsing never crashes and throws only ContextError;
// - a parsed context fits within the cap (default 4,096 and a small input-derived cap), or
//   fitting throws requiredMembersExceedLimit with a length really above the cap;
// - the fitted canonical JSON parses back to a context whose fitting gives the same canonical
//   JSON (a fixed point), the same fingerprint and drops nothing;
// - the fingerprint is SHA-1 of the canonical JSON's UTF-8 bytes.
import Foundation
@_spi(Fuzzing) import Halyard

func check(_ context: EvaluationContext, limit: Int) {
    let fitted: FittedContext
    do {
        fitted = try context.fitted(limit: limit)
    } catch {
        guard case .requiredMembersExceedLimit(let length, let cap) = error, length > cap, cap == limit else {
            fatalError("unexpected fitting error \(error)")
        }
        return
    }
    precondition(fitted.canonicalJSON.utf16.count <= limit, "fitted context exceeds the cap")
    precondition(fitted.fingerprint == SHA1.hexDigest(fitted.canonicalJSON), "fingerprint is not SHA-1 of the text")
    let again: FittedContext
    do {
        again = try EvaluationContext(json: Data(fitted.canonicalJSON.utf8)).fitted(limit: limit)
    } catch {
        fatalError("canonical form does not re-parse and fit: \(error)\n\(fitted.canonicalJSON)")
    }
    precondition(again.canonicalJSON == fitted.canonicalJSON,
                 "canonical form is not a fixed point:\n\(fitted.canonicalJSON)\n\(again.canonicalJSON)")
    precondition(again.fingerprint == fitted.fingerprint, "fingerprint is not stable")
    precondition(again.droppedAttributes.isEmpty, "re-fitting a fitted context dropped attributes")
    for name in context.privateAttributes {
        precondition(fitted.attributes[name] == nil, "private attribute kept")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Data(bytes: data, count: count)
    let context: EvaluationContext
    do {
        // Make the alphabetically first attribute private, when there is one, to exercise removal.
        let plain = try EvaluationContext(json: bytes)
        let first = plain.attributes.keys.min().map { Set([$0]) } ?? []
        context = try EvaluationContext(json: bytes, privateAttributes: first)
    } catch {
        return 0  // typed rejection: fine
    }
    check(context, limit: EvaluationContext.defaultFittingLimit)
    check(context, limit: 16 + count % 256)
    return 0
}
