import CHalyardAtomics

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

    /// Whether ``forEach(_:_:)`` may read storage in place: ``LayoutReads`` on, the value
    /// layout's check (``JSONValueLayout/available``), and the storage layout checked on
    /// dictionaries of 1 to 300 attributes (bucket counts 2 to 512, so one and several bitmap
    /// words), with every kind of value, and on a dictionary that lost members after it grew
    /// (``readsLayout(_:names:values:)``). A layout other than the expected one makes this
    /// false; it never makes the check read outside the storage's allocation or follow a pointer
    /// it read there. Even when true, each dictionary is checked before it is walked
    /// (``forEach(_:_:)``).
    static let available: Bool = {
        #if canImport(ObjectiveC) || !os(Linux) || !(arch(x86_64) || arch(arm64)) || !_endian(little)
            return false
        #else
            guard LayoutReads.enabled, JSONValueLayout.available, MemoryLayout<[String: JSONValue]>.size == 8,
                MemoryLayout<String>.stride == 16
            else {
                return false
            }
            let kinds: [JSONValue] = [
                .null, .bool(true), .int(-3), .double(2.5), .string("s"),
                .string("a string longer than fifteen bytes"), .array([.int(1)]), .object(["k": .null]),
            ]
            // Some names long enough to leave the small form.
            let names = (0..<300).map { i in
                i % 3 == 0 ? "name-\(i)-long-enough-to-leave-the-small-form" : "name-\(i)"
            }
            let values = names.indices.map { kinds[$0 % kinds.count] }
            var samples: [[String: JSONValue]] = []
            for n in [1, 2, 3, 7, 10, 16, 40, 64, 65, 300] {
                samples.append(Dictionary(uniqueKeysWithValues: zip(names.prefix(n), values.prefix(n))))
            }
            var shrunk = samples[samples.count - 1]
            for i in stride(from: 0, to: 300, by: 2) { shrunk[names[i]] = nil }
            samples.append(shrunk)
            return samples.allSatisfy { readsLayout($0, names: names, values: values) }
        #endif
    }()

    #if os(Linux)
        /// Whether the storage walk finds exactly `d`'s members, `d` built from `names` and
        /// `values` (so its keys and values share their storage with those arrays' elements):
        /// its count and capacity where the layout puts them; a bucket count that fits the
        /// capacity; a bitmap, keys and values that lie inside the storage's allocation
        /// (`hal_allocation_size`, `malloc_usable_size`); and every occupied bucket holding the words of a distinct
        /// name of `names` and the bytes of that name's value. Nothing read from the storage is
        /// followed as a pointer.
        private static func readsLayout(_ d: [String: JSONValue], names: [String], values: [JSONValue]) -> Bool {
            withExtendedLifetime(d) {
                let storage = unsafeBitCast(d, to: UnsafeRawPointer.self)
                let size = hal_allocation_size(storage)
                guard size >= bitmapOffset + 8,
                    storage.load(fromByteOffset: countOffset, as: Int.self) == d.count,
                    storage.load(fromByteOffset: capacityOffset, as: Int.self) == d.capacity
                else { return false }
                // A bucket count at most four times the capacity (a table is at most 3/4 full).
                let scale = Int(storage.load(fromByteOffset: scaleOffset, as: Int8.self))
                guard scale > 0, scale < 32, 1 << scale >= d.capacity, 1 << scale <= 4 * d.capacity + 4 else {
                    return false
                }
                let buckets = 1 << scale
                let words = (buckets + 63) >> 6
                let end = UInt(bitPattern: storage) + UInt(size)
                let keys = storage.load(fromByteOffset: keysOffset, as: UInt.self)
                let valuesAt = storage.load(fromByteOffset: valuesOffset, as: UInt.self)
                let valueBytes = MemoryLayout<JSONValue>.size
                guard keys >= UInt(bitPattern: storage) + UInt(bitmapOffset + 8 * words),
                    keys + UInt(buckets * MemoryLayout<String>.stride) <= end,
                    valuesAt >= UInt(bitPattern: storage) + UInt(bitmapOffset + 8 * words),
                    valuesAt + UInt(buckets * MemoryLayout<JSONValue>.stride) <= end
                else { return false }
                var index: [[UInt64]: Int] = [:]
                for (i, name) in names.enumerated() where d[name] != nil {
                    let (w0, w1) = StringLayout.words(name)
                    index[[w0, w1]] = i
                }
                var seen = Set<Int>()
                var ok = true
                let walked = forEach(d) { name, value in
                    guard ok,
                        let i = index[[name.load(as: UInt64.self), name.load(fromByteOffset: 8, as: UInt64.self)]],
                        seen.insert(i).inserted
                    else {
                        ok = false
                        return
                    }
                    let expected = withUnsafeBytes(of: values[i]) { Array($0.prefix(valueBytes)) }
                    if !expected.elementsEqual(UnsafeRawBufferPointer(start: value, count: valueBytes)) { ok = false }
                }
                return walked && ok && seen.count == d.count
            }
        }
    #endif

    /// Calls `body` with a pointer to each attribute's name (a `String`) and one to its value,
    /// both in the dictionary's storage, valid only during the call, and returns true; or
    /// returns false having called nothing, when `attributes`' storage does not read as the
    /// layout checked (``walk(_:prefetch:_:)``): the caller then iterates as usual. Only when
    /// ``available``.
    @inline(__always)
    @discardableResult
    static func forEach(
        _ attributes: [String: JSONValue], _ body: (UnsafeRawPointer, UnsafePointer<JSONValue>) -> Void
    ) -> Bool {
        if attributes.isEmpty { return true }
        return withExtendedLifetime(attributes) { () -> Bool in
            walk(attributes, prefetch: true) { name, value in
                body(name, value)
                return true
            }
        }
    }

    /// Walks the occupied buckets of `attributes`' storage: `body` gets a pointer to each
    /// name (a `String`) and one to its value, and returns false to stop. Returns false having
    /// called nothing when the storage does not read as the layout checked: its count and
    /// capacity where the layout puts them must be the dictionary's own, its bucket count must
    /// fit that capacity, and its keys and values pointers must be set. Every word of the
    /// storage is loaded as an integer and becomes a pointer only after these checks. The
    /// caller keeps `attributes` alive for the walk; with `prefetch`, the first lines of keys
    /// and values are asked for before it.
    @inline(__always)
    static func walk(
        _ attributes: [String: JSONValue], prefetch: Bool,
        _ body: (UnsafeRawPointer, UnsafePointer<JSONValue>) -> Bool
    ) -> Bool {
        let storage = unsafeBitCast(attributes, to: UnsafeRawPointer.self)
        let count = storage.load(fromByteOffset: countOffset, as: Int.self)
        let capacity = storage.load(fromByteOffset: capacityOffset, as: Int.self)
        let scale = Int(storage.load(fromByteOffset: scaleOffset, as: Int8.self))
        // A bucket count at most four times the capacity (a table is at most 3/4 full).
        guard count == attributes.count, capacity == attributes.capacity, scale > 0, scale < 48,
            1 &<< scale >= capacity, 1 &<< scale <= 4 &* capacity &+ 4,
            let keys = UnsafeRawPointer(bitPattern: storage.load(fromByteOffset: keysOffset, as: UInt.self)),
            let values = UnsafeRawPointer(bitPattern: storage.load(fromByteOffset: valuesOffset, as: UInt.self))
        else { return false }
        let bucketCount = 1 &<< scale
        if prefetch {
            // A cold context's keys and values asked for at once (the first 16 lines of each;
            // a hint that never faults), not one miss after another as the walk reaches them.
            hal_prefetch_lines(keys, min(16, (bucketCount &* MemoryLayout<String>.stride &+ 63) &>> 6))
            hal_prefetch_lines(values, min(16, (bucketCount &* MemoryLayout<JSONValue>.stride &+ 63) &>> 6))
        }
        // A bucket count under 64 uses the low bits of the one word.
        let mask: UInt64 = bucketCount >= 64 ? ~0 : (1 &<< UInt64(truncatingIfNeeded: bucketCount)) &- 1
        let words = (bucketCount &+ 63) &>> 6
        var word = 0
        while word < words {
            var bits = storage.load(fromByteOffset: bitmapOffset &+ word &* 8, as: UInt64.self) & mask
            while bits != 0 {
                let bucket = word &<< 6 | bits.trailingZeroBitCount
                bits &= bits &- 1
                let goOn = body(
                    keys + bucket &* MemoryLayout<String>.stride,
                    (values + bucket &* MemoryLayout<JSONValue>.stride).assumingMemoryBound(to: JSONValue.self))
                if !goOn { return true }
            }
            word &+= 1
        }
        return true
    }
}
