public import Foundation

/// A context ready to leave the process (docs/context.md): private attributes removed, serialized as
/// canonical JSON within the size cap, with its fingerprint.
///
/// Send ``canonicalJSON`` (or ``canonicalJSONData``) as the OFREP `context`, key caches and
/// exposures by ``fingerprint``, and report ``droppedAttributes`` in the client's stats.
public struct FittedContext: Sendable, Hashable {
    /// The targeting key (empty when anonymous).
    public let targetingKey: String
    /// The context kind.
    public let kind: String
    /// The attributes that were kept: public, not dropped by fitting.
    public let attributes: [String: JSONValue]
    /// The canonical JSON (RFC 8785) of the fitted wire form; at most ``limit`` UTF-16 code units.
    public let canonicalJSON: String
    /// SHA-1 of the UTF-8 bytes of ``canonicalJSON``, 40 lowercase hex characters.
    public let fingerprint: String
    /// The attributes dropped to fit, in the order they were dropped (largest first, ties by
    /// name); empty when nothing was dropped. Private attributes are not listed.
    public let droppedAttributes: [String]
    /// The size cap the context was fitted to, in UTF-16 code units.
    public let limit: Int

    /// The length of ``canonicalJSON`` in UTF-16 code units (the unit of the cap).
    public var utf16Length: Int { canonicalJSON.utf16.count }

    /// ``canonicalJSON`` as UTF-8 bytes, for request bodies and cache files.
    public var canonicalJSONData: Data { Data(canonicalJSON.utf8) }

    /// The fitted wire form as a JSON object (`targetingKey`, `kind` and the kept attributes).
    public var wireValue: JSONValue {
        var members = attributes
        members["targetingKey"] = .string(targetingKey)
        members["kind"] = .string(kind)
        return .object(members)
    }

    /// The fitted context as an ``EvaluationContext`` without private attributes.
    public var context: EvaluationContext {
        EvaluationContext(targetingKey: targetingKey, kind: kind, attributes: attributes)
    }

    /// Whether fitting dropped any attribute.
    public var wasTrimmed: Bool { !droppedAttributes.isEmpty }
}

extension EvaluationContext {
    /// The default size cap of a fitted context, in UTF-16 code units (docs/context.md).
    public static let defaultFittingLimit = 4096

    /// Validates the context, removes private attributes, serializes the wire form as canonical
    /// JSON and, if it is longer than `limit` UTF-16 code units, drops top-level attributes
    /// largest-first (a member's size is the UTF-16 length of its canonical `"name":value`
    /// text; equal sizes drop in ascending name order) until it fits. `targetingKey`, `kind`
    /// and an attribute named `key` are never dropped.
    ///
    /// Member sizes are computed once; each drop subtracts the member and its comma, so the cost
    /// is one serialization plus a sort.
    /// - Throws: ``ContextError`` when ``validate()`` fails, or
    ///   ``ContextError/requiredMembersExceedLimit(length:limit:)`` when `targetingKey`, `kind`
    ///   and `key` alone are longer than `limit`.
    public func fitted(limit: Int = EvaluationContext.defaultFittingLimit) throws(ContextError) -> FittedContext {
        try validate()

        // Every member's canonical "name":value text goes into one shared buffer, once.
        struct Member {
            let name: String
            let nameStart: Int  // range of the raw UTF-8 name in `names`, for sorting
            let nameEnd: Int
            let start: Int
            let end: Int
            let utf16Length: Int
            let droppable: Bool
        }
        var members: [Member] = []
        members.reserveCapacity(attributes.count + 2)
        var writer = JSONWriter(canonical: true, capacity: 512)
        var names: [UInt8] = []
        names.reserveCapacity(256)
        func add(_ name: String, _ value: JSONValue, droppable: Bool) {
            let nameStart = names.count
            names.append(contentsOf: name.utf8)
            let start = writer.bytes.count
            writer.writeString(name)
            writer.bytes.append(UInt8(ascii: ":"))
            writer.write(value)
            let end = writer.bytes.count
            let length = writer.bytes.withUnsafeBufferPointer {
                utf16Count(UnsafeBufferPointer(rebasing: $0[start..<end]))
            }
            members.append(
                Member(
                    name: name, nameStart: nameStart, nameEnd: names.count, start: start, end: end,
                    utf16Length: length, droppable: droppable))
        }
        add("targetingKey", .string(targetingKey), droppable: false)
        add("kind", .string(kind), droppable: false)
        for (name, value) in attributes where !privateAttributes.contains(name) {
            add(name, value, droppable: name != "key")
        }

        // Total = braces + members + commas between them.
        var total = 2 + members.count - 1
        for m in members { total += m.utf16Length }

        // Sorting compares raw UTF-8 names in place: no String traffic.
        func sortedIndices(_ indices: [Int], bySizeFirst: Bool) -> [Int] {
            names.withUnsafeBufferPointer { all in
                indices.sorted { i, j in
                    let a = members[i], b = members[j]
                    if bySizeFirst && a.utf16Length != b.utf16Length { return a.utf16Length > b.utf16Length }
                    return utf16Precedes(
                        UnsafeBufferPointer(rebasing: all[a.nameStart..<a.nameEnd]),
                        UnsafeBufferPointer(rebasing: all[b.nameStart..<b.nameEnd]))
                }
            }
        }
        var dropped: [String] = []
        var keep = [Bool](repeating: true, count: members.count)
        if total > limit {
            let candidates = sortedIndices(members.indices.filter { members[$0].droppable }, bySizeFirst: true)
            for c in candidates where total > limit {
                total -= members[c].utf16Length + 1  // the member and one comma
                dropped.append(members[c].name)
                keep[c] = false
            }
            if total > limit { throw .requiredMembersExceedLimit(length: total, limit: limit) }
        }

        let order = sortedIndices(members.indices.filter { keep[$0] }, bySizeFirst: false)
        var out: [UInt8] = []
        out.reserveCapacity(writer.bytes.count + members.count + 2)
        out.append(UInt8(ascii: "{"))
        writer.bytes.withUnsafeBufferPointer { all in
            for (n, i) in order.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: all[members[i].start..<members[i].end]))
            }
        }
        out.append(UInt8(ascii: "}"))

        var keptAttributes = attributes
        for name in privateAttributes where keptAttributes[name] != nil { keptAttributes.removeValue(forKey: name) }
        for name in dropped { keptAttributes.removeValue(forKey: name) }

        return FittedContext(
            targetingKey: targetingKey,
            kind: kind,
            attributes: keptAttributes,
            canonicalJSON: String(decoding: out, as: UTF8.self),
            fingerprint: SHA1.hexDigest(out),
            droppedAttributes: dropped,
            limit: limit)
    }
}

/// The number of UTF-16 code units of well-formed UTF-8 text: one per scalar, two for scalars
/// of four UTF-8 bytes.
func utf16Count(_ utf8: UnsafeBufferPointer<UInt8>) -> Int {
    var n = 0
    for b in utf8 {
        if b & 0xC0 != 0x80 { n += 1 }  // a scalar starts here
        if b >= 0xF0 { n += 1 }  // four-byte scalar = surrogate pair
    }
    return n
}
