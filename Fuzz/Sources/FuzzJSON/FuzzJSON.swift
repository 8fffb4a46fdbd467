// libFuzzer harness: the strict JSON parser, its serializers, and a differential check
// against Foundation's JSONSerialization.
//
// Invariants:
// - parsing never crashes and rejects with a JSONParseError whose offset is within the input
//   (or at its end);
// - for an accepted document v: parse(v.jsonString) == v (exact round trip) and the canonical
//   form is a fixed point of parse-then-canonicalize;
// - differential, one direction only: every document the strict parser accepts is also accepted
//   by JSONSerialization (with .fragmentsAllowed), with the same shape: same container kinds and
//   sizes, same member names, same strings, booleans and nulls, and numbers where both give
//   numbers. The other direction is not checked, because JSONSerialization is deliberately
//   more lenient: it accepts duplicate member names, UTF-16/UTF-32 input and byte-order marks,
//   lone surrogate escapes, and out-of-range numbers, all of which RFC 8259 strict parsing rejects.
// - Known Foundation difference, excluded from the comparison: JSONSerialization drops a U+FEFF
//   (byte-order mark) at the start of a string value or member name (found by this harness;
//   the strict parser keeps it, as RFC 8259 requires). Strings and names are therefore compared
//   with every U+FEFF removed on both sides, and members whose names collide once U+FEFF is
//   removed (`"\u{FEFF}1"` and `"1"`, which Foundation merges) are compared by name only.
import Foundation
import Halyard

let roomyLimits = JSONParsingLimits(maxInputBytes: 64 << 20, maxDepth: 64, maxObjectMembers: 1 << 20)

/// The Unicode scalars of `s` without any U+FEFF (see the note above).
func withoutBOM(_ s: String) -> [Unicode.Scalar] {
    s.unicodeScalars.filter { $0 != "\u{FEFF}" }
}

func sameShape(_ ours: JSONValue, _ theirs: Any) -> Bool {
    switch ours {
    case .null:
        return theirs is NSNull
    case .bool(let b):
        if let t = theirs as? Bool { return t == b }
        return false
    case .int, .double:
        return theirs is NSNumber || theirs is Int || theirs is Double || theirs is Decimal
    case .string(let s):
        guard let t = theirs as? String else { return false }
        return withoutBOM(t) == withoutBOM(s)
    case .array(let items):
        guard let t = theirs as? [Any], t.count == items.count else { return false }
        return zip(items, t).allSatisfy { sameShape($0, $1) }
    case .object(let members):
        guard let t = theirs as? [String: Any] else { return false }
        // Names that differ only by U+FEFF collapse into one in Foundation's result (it strips
        // the mark, then keeps one of the now-duplicate members): compare those by name only.
        var ours: [[Unicode.Scalar]: Int] = [:]
        for name in members.keys { ours[withoutBOM(name), default: 0] += 1 }
        guard t.count == ours.count else { return false }
        var byName: [[Unicode.Scalar]: Any] = [:]
        for (name, value) in t { byName[withoutBOM(name)] = value }
        for (name, value) in members {
            let key = withoutBOM(name)
            guard let other = byName[key] else { return false }
            if ours[key] == 1 && !sameShape(value, other) { return false }
        }
        return true
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: count)
    let value: JSONValue
    do {
        value = try JSONValue(parsing: input, limits: .default)
    } catch {
        precondition(error.offset >= 0 && error.offset <= count, "error offset out of range: \(error)")
        _ = error.description
        return 0
    }

    let compact = value.jsonString
    guard let back = try? JSONValue(parsing: compact, limits: roomyLimits) else {
        fatalError("jsonString output does not parse: \(compact)")
    }
    precondition(back == value, "jsonString round trip changed the value: \(compact)")

    let canonical = value.canonicalJSON
    guard let reparsed = try? JSONValue(parsing: canonical, limits: roomyLimits) else {
        fatalError("canonicalJSON output does not parse: \(canonical)")
    }
    precondition(reparsed.canonicalJSON == canonical, "canonical form is not a fixed point: \(canonical)")

    let foundation: Any
    do {
        foundation = try JSONSerialization.jsonObject(with: Data(bytes: data, count: count), options: [.fragmentsAllowed])
    } catch {
        fatalError("JSONSerialization rejects a document the strict parser accepts: \(error)")
    }
    precondition(sameShape(value, foundation), "JSONSerialization reads a different shape")
    return 0
}
