// libFuzzer harness: the OFREP bulk-response decoder, the one place that turns control-plane
// bytes into served flags.
//
// Invariants, for any bytes:
// - decoding never crashes and either throws an OFREPDecodingError or returns a flag list;
// - the keys of that list are unique (the decoder is the only place that de-duplicates);
// - every item is classified as exactly one of: an error (an error code, no value, no variant,
//   reason ERROR), a code default (no value, no error code), or a value (a non-null value, no
//   error code) — never a stored JSON null;
// - an input above the limit is refused as tooLarge without being parsed;
// - decoding is deterministic (the same bytes decode to the same result twice).
import Foundation
@_spi(Fuzzing) import Halyard

/// Small enough that the fuzzer reaches the size check, large enough for real documents.
let limit = 4_096

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer, _ count: Int) -> CInt {
    let body = Data(bytes: data, count: count)
    let decoded: OFREPResponse
    do {
        decoded = try OFREPResponse.decode(body, limit: limit)
    } catch {
        switch error {
        case .tooLarge(let reported):
            precondition(count > limit && reported == limit, "tooLarge for \(count) bytes (limit \(limit))")
        case .notJSON, .notAnObject, .missingFlags:
            precondition(count <= limit, "an oversized body was parsed")
        }
        return 0
    }
    precondition(count <= limit, "an oversized body was accepted")
    var keys = Set<String>()
    for flag in decoded.flags {
        precondition(keys.insert(flag.key).inserted, "duplicate key \(flag.key)")
        if flag.errorCode != nil {
            precondition(flag.value == nil && flag.variant == nil, "error item with a value or variant")
            precondition(flag.reason == .error, "error item with reason \(flag.reason)")
        } else if let value = flag.value {
            precondition(value != .null, "a stored JSON null")
        }
    }
    precondition(decoded.skippedItems >= 0, "negative skipped count")
    let again = try? OFREPResponse.decode(body, limit: limit)
    precondition(again == decoded, "decoding is not deterministic")
    return 0
}
