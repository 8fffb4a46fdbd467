/// The buckets of a context's attributes, read in place: each attribute's name and value visited
/// through pointers into the dictionary's own storage, so the warm path's encoder copies,
/// retains and destroys no name or value (docs/service.md, "The warm path").
///
/// Iterating a `[String: JSONValue]` with `for (name, value) in` hands out copies: the iterator
/// retains each name, copies each value through the enum's outlined copy (a switch over its
/// cases, then a retain) and destroys both after the loop body; ~400 of the ~1,700 instructions
/// the encoder spent on a 10-attribute context, measured. Swift has no borrowing iteration of a
/// `Dictionary`, so this reads the native storage the standard library keeps every Swift
/// dictionary in (`__RawDictionaryStorage`): its bucket count's scale, its keys and values
/// arrays, and the bitmap of occupied buckets that follows the object's fields. That class is
/// `@_fixed_layout` (its fields are read by code inlined into every client, so its layout is
/// part of the standard library's ABI), yet it is not API: ``available`` checks the layout once
/// against dictionaries whose contents are known, and where it does not hold, or on platforms
/// whose dictionaries may be bridged Objective-C objects, ``forEach(_:_:)`` iterates as usual.
///
/// The visiting order is the storage's bucket order, which is the order `for in` yields; the
/// encoder's hash and the memo's comparison do not depend on it anyway.
enum AttributeBuckets {
    /// Byte offsets in `__RawDictionaryStorage` (after the 16-byte object header).
    private static let countOffset = 16
    private static let capacityOffset = 24
    private static let scaleOffset = 32
    private static let keysOffset = 48
    private static let valuesOffset = 56
    private static let bitmapOffset = 64

    /// Whether ``forEach(_:_:)`` reads the storage in place: the layout checked on dictionaries
    /// of 1 to 300 attributes (bucket counts 2 to 512, so one and several bitmap words), with
    /// every kind of value, and on a dictionary that lost members after it grew.
    static let available: Bool = {
        #if canImport(ObjectiveC) || !(arch(x86_64) || arch(arm64)) || !_endian(little)
            return false
        #else
            guard MemoryLayout<[String: JSONValue]>.size == 8, MemoryLayout<String>.stride == 16 else {
                return false
            }
            let values: [JSONValue] = [
                .null, .bool(true), .int(-3), .double(2.5), .string("s"),
                .string("a string longer than fifteen bytes"), .array([.int(1)]), .object(["k": .null]),
            ]
            // Some names long enough to leave the small form.
            func name(_ i: Int) -> String { i % 3 == 0 ? "name-\(i)-long-enough-to-leave-the-small-form" : "name-\(i)" }
            var samples: [[String: JSONValue]] = []
            for n in [1, 2, 3, 7, 10, 16, 40, 64, 65, 300] {
                var d: [String: JSONValue] = [:]
                for i in 0..<n { d[name(i)] = values[i % values.count] }
                samples.append(d)
            }
            var shrunk = samples[samples.count - 1]
            for i in stride(from: 0, to: 300, by: 2) { shrunk[name(i)] = nil }
            samples.append(shrunk)
            return samples.allSatisfy(readsLayout)
        #endif
    }()

    /// Whether the storage walk finds exactly `d`'s members: its count and capacity where the
    /// layout puts them, a bucket count that holds the capacity, and every occupied bucket a
    /// distinct member of `d` with its value (strings compared with their payload read in place).
    private static func readsLayout(_ d: [String: JSONValue]) -> Bool {
        withExtendedLifetime(d) {
            let storage = unsafeBitCast(d, to: UnsafeRawPointer.self)
            guard storage.load(fromByteOffset: countOffset, as: Int.self) == d.count,
                storage.load(fromByteOffset: capacityOffset, as: Int.self) == d.capacity
            else { return false }
            // A bucket count at most four times the capacity (a table is at most 3/4 full),
            // before any bucket is read.
            let scale = Int(storage.load(fromByteOffset: scaleOffset, as: Int8.self))
            guard scale > 0, scale < 32, 1 << scale >= d.capacity, 1 << scale <= 4 * d.capacity + 4 else {
                return false
            }
            var seen = Set<String>()
            var ok = true
            forEach(d) { name, value in
                let name = name.assumingMemoryBound(to: String.self).pointee
                guard ok, seen.count < d.count, let expected = d[name], seen.insert(name).inserted,
                    value.pointee == expected
                else {
                    ok = false
                    return
                }
                if case .string(let s) = expected {
                    let raw = UnsafeRawPointer(value)
                    let words = (raw.load(as: UInt64.self), raw.load(fromByteOffset: 8, as: UInt64.self))
                    if words != SmallStringWords.words(s) { ok = false }
                }
            }
            return ok && seen.count == d.count
        }
    }

    /// Calls `body` with a pointer to each attribute's name (a `String`) and one to its value,
    /// both in the dictionary's storage, valid only during the call. Only when ``available``.
    @inline(__always)
    static func forEach(
        _ attributes: [String: JSONValue], _ body: (UnsafeRawPointer, UnsafePointer<JSONValue>) -> Void
    ) {
        if attributes.isEmpty { return }
        withExtendedLifetime(attributes) {
            let storage = unsafeBitCast(attributes, to: UnsafeRawPointer.self)
            let scale = Int(storage.load(fromByteOffset: scaleOffset, as: Int8.self))
            let keys = storage.load(fromByteOffset: keysOffset, as: UnsafeRawPointer.self)
            let values = storage.load(fromByteOffset: valuesOffset, as: UnsafeRawPointer.self)
            let bucketCount = 1 &<< scale
            // A bucket count under 64 uses the low bits of the one word.
            let mask: UInt64 = bucketCount >= 64 ? ~0 : (1 &<< UInt64(truncatingIfNeeded: bucketCount)) &- 1
            let words = (bucketCount &+ 63) &>> 6
            var word = 0
            while word < words {
                var bits = storage.load(fromByteOffset: bitmapOffset &+ word &* 8, as: UInt64.self) & mask
                while bits != 0 {
                    let bucket = word &<< 6 | bits.trailingZeroBitCount
                    bits &= bits &- 1
                    body(
                        keys + bucket &* MemoryLayout<String>.stride,
                        (values + bucket &* MemoryLayout<JSONValue>.stride).assumingMemoryBound(to: JSONValue.self))
                }
                word &+= 1
            }
        }
    }
}
