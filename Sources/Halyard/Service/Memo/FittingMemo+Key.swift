import Foundation

// How the memo recognises a context it has fitted before (docs/service.md, "The warm path").
//
// **One pass.** The context is written once into a scratch buffer on the stack, in an
// unambiguous binary form (lengths before bytes, a tag before each value): a head (targeting
// key, kind, counts) and one record per attribute (name and value). Each record gets a 64-bit
// hash, mixed in while it is written (a folded multiply per word or small string, a value's
// tag with its payload, keyed by per-memo random words; `ContextEncoder.hash`), so no byte is
// read back; the record hashes are summed, so a dictionary's iteration order (which differs
// between equal dictionaries) does not matter, and mixed with the head's. The memo's table is
// keyed by the result itself; `EvaluationContext`'s own `Hashable` runs a seeded `Hasher` (a
// full SipHash finalization) per attribute.
//
// **Equality: exact, byte for byte.** An entry keeps its records' bytes in one buffer, after
// an open-addressing table of the records by hash; a probe finds each of its records there
// (one or two steps, whatever order its dictionary iterates in) and compares the bytes
// inline, a word at a time (`FittingMemo.Entry.same`: no `memcmp` call per record).
// No `String` or `JSONValue` is copied, retained or hashed again
// (`Dictionary.==` looks up every key in the other dictionary, hashing each name anew).
// Strings are their UTF-8 bytes (a string of up to 15 bytes in Swift's small form: the two
// words that hold those bytes, `StringLayout`) and doubles their bit patterns: stricter
// than `==` (which treats canonically equivalent strings as equal although they fit to
// different canonical JSON, so different fingerprints), so two contexts the memo takes for
// one always fit to the same bytes. The same short content stored out of line (rare: a string
// built with spare capacity) writes other bytes: a miss and a second entry, never a wrong
// answer. A hash collision costs a comparison, never a wrong answer. Private attribute
// names are compared with `Set`'s `==` (fitting tests names against that set with `String`'s
// `==`, so equal sets fit alike).

extension FittingMemo {
    /// The hash words of one memo: random per memo (an attacker cannot aim contexts at one
    /// table slot without knowing them), or fixed and degenerate for the collision test.
    struct HashKeys: Sendable {
        let k0: UInt64
        let k1: UInt64
        let k2: UInt64
        /// Test only: every context gets the same hash (all entries collide).
        let constant: Bool
        /// The bit that marks a string's small form in its second word (``StringLayout``)
        /// when small strings are written as their two words, else 0; fixed for the memo's
        /// life, so its entries and probes agree. Tested with one `and` per string (a flag
        /// tested first was a load, a compare and a branch more per string, measured).
        var smallMask: UInt64 = StringLayout.available ? StringLayout.smallBit : 0
        /// Attributes read in place from their dictionary's storage (``AttributeBuckets``)
        /// rather than through the dictionary's iterator; fixed for the memo's life. Both
        /// write the same bytes (tests compare them).
        private var readsInPlace: Bool = AttributeBuckets.available

        /// Whether attributes are read in place (only where ``AttributeBuckets/available``).
        var inPlace: Bool {
            get { readsInPlace }
            set { readsInPlace = newValue && AttributeBuckets.available }
        }

        /// Whether strings in Swift's small form are written as their two words.
        var smallStrings: Bool {
            get { smallMask != 0 }
            set { smallMask = newValue && StringLayout.available ? StringLayout.smallBit : 0 }
        }

        static func random() -> HashKeys {
            var g = SystemRandomNumberGenerator()
            return HashKeys(k0: g.next() | 1, k1: g.next() | 1, k2: g.next() | 1, constant: false)
        }

        static let colliding = HashKeys(
            k0: 0x9E37_79B9_7F4A_7C15, k1: 0xC2B2_AE3D_27D4_EB4F, k2: 0x1656_67B1_9E37_79F9, constant: true)
    }

    /// One attribute record: its hash and its bytes' range in the encoding.
    struct Record {
        var hash: UInt64
        var start: Int32
        var count: Int32
    }

    /// A context written out: `bytes[0..<head]` is the head, `records` the attributes (in the
    /// context's iteration order; an entry keeps them so, with an index by hash).
    struct Probe {
        let bytes: UnsafeRawBufferPointer
        let head: Int
        let records: UnsafeBufferPointer<Record>
        let hash: UInt64
    }
}

/// A multiply folded to 64 bits: the mixing step of the hash.
@inline(__always)
private func fold(_ a: UInt64, _ b: UInt64) -> UInt64 {
    let r = a.multipliedFullWidth(by: b)
    return r.high ^ r.low
}

extension FittingMemo.HashKeys {
    /// The hash of the bytes at `p`.
    @inline(__always)
    func hash(_ base: UnsafeRawPointer, _ n: Int) -> UInt64 {
        var h = fold(k0, k1 ^ UInt64(truncatingIfNeeded: n))
        var i = 0
        while i + 16 <= n {
            let a = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            let b = base.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self)
            h = fold(a ^ k1 ^ h, b ^ k2)
            i += 16
        }
        let rest = n - i
        var a: UInt64 = 0
        var b: UInt64 = 0
        if rest >= 8 {
            a = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            b = base.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
        } else if rest >= 4 {
            a = UInt64(base.loadUnaligned(fromByteOffset: i, as: UInt32.self))
            b = UInt64(base.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self))
        } else if rest > 0 {
            a =
                UInt64(base.load(fromByteOffset: i, as: UInt8.self)) << 16
                | UInt64(base.load(fromByteOffset: i + rest / 2, as: UInt8.self)) << 8
                | UInt64(base.load(fromByteOffset: n - 1, as: UInt8.self))
        }
        return fold(a ^ k1 ^ h, b ^ k2)
    }
}

/// Writes the binary form of a context into a fixed buffer; past its end it only counts (the
/// caller then retries with a buffer of ``count`` bytes).
struct ContextEncoder {
    let base: UnsafeMutableRawPointer
    let capacity: Int
    /// The memo's hash words, and whether small strings are written as their words
    /// (``FittingMemo/HashKeys/smallStrings``).
    let keys: FittingMemo.HashKeys
    var count = 0
    /// The hash of what was written since the last ``startHash()``, mixed in as it is written:
    /// a multiply per word or tag, one per small string (its two words together), and a keyed
    /// hash of a long string's bytes. A function of the bytes written, since the encoding is
    /// unambiguous (equal bytes are written by equal calls); it reads nothing back.
    var hash: UInt64 = 0

    /// The top byte of a length word: `0xFF`, which no UTF-8 byte is, so a length word never
    /// reads as the first word of a small string (whose eighth byte is a UTF-8 byte or zero).
    static let lengthMark: UInt64 = 0xFF << 56

    var overflowed: Bool { count > capacity }

    @inline(__always)
    mutating func startHash() { hash = keys.k0 }

    @inline(__always)
    mutating func mix(_ a: UInt64, _ b: UInt64) { hash = fold(hash ^ a ^ keys.k1, b ^ keys.k2) }

    /// A word; `tag`, when the word is a value's payload, is its tag (written by
    /// ``tag(_:)``), mixed in with the word: one multiply for both.
    @inline(__always)
    mutating func word(_ w: UInt64, tag: UInt8 = 0) {
        if count &+ 8 <= capacity { base.storeBytes(of: w, toByteOffset: count, as: UInt64.self) }
        count &+= 8
        mix(w, UInt64(tag))
    }

    /// A value's tag byte, not mixed in: the payload written next mixes it in with its first
    /// word (``word(_:tag:)``, ``string(_:tag:)``), so a scalar costs one multiply, not two.
    @inline(__always)
    mutating func tag(_ b: UInt8) {
        if count < capacity { base.storeBytes(of: b, toByteOffset: count, as: UInt8.self) }
        count &+= 1
    }

    @inline(__always)
    mutating func byte(_ b: UInt8) {
        if count < capacity { base.storeBytes(of: b, toByteOffset: count, as: UInt8.self) }
        count &+= 1
        mix(UInt64(b), 0)
    }

    @inline(__always)
    mutating func bytes(_ p: UnsafeRawBufferPointer) {
        // Nothing written, nothing mixed: an empty buffer (whose base may or may not be nil)
        // leaves the hash as its length word made it.
        guard p.count > 0, let from = p.baseAddress else { return }
        if count &+ p.count <= capacity { (base + count).copyMemory(from: from, byteCount: p.count) }
        count &+= p.count
        mix(keys.hash(from, p.count), 0)
    }

    /// A string: in the small form its two words (``StringLayout``), otherwise its UTF-8
    /// length (marked with ``lengthMark``), then its bytes. `tag`, when the string is a value,
    /// is its tag (written by ``tag(_:)``), mixed in with the string.
    @inline(__always)
    mutating func string(_ s: String, tag: UInt8 = 0) {
        let (w0, w1) = StringLayout.words(s)
        if smallString(w0, w1, tag: tag) { return }
        if tag != 0 { mix(UInt64(tag), 0) }
        longString(s)
    }

    /// ``string(_:tag:)`` of the `String` at `p`, read in place: its two words, and the
    /// `String` itself only when it is not in the small form (no retain of a small string).
    @inline(__always)
    mutating func string(at p: UnsafeRawPointer, tag: UInt8 = 0) {
        if smallString(p.load(as: UInt64.self), p.load(fromByteOffset: 8, as: UInt64.self), tag: tag) { return }
        if tag != 0 { mix(UInt64(tag), 0) }
        longString(p.assumingMemoryBound(to: String.self).pointee)
    }

    /// The two words `w0`, `w1` of a string when they are its small form (written, and mixed
    /// in with `tag`); false, with nothing written, for a string in any other form.
    @inline(__always)
    private mutating func smallString(_ w0: UInt64, _ w1: UInt64, tag: UInt8) -> Bool {
        guard w1 & keys.smallMask != 0 else { return false }
        if count &+ 16 <= capacity {
            base.storeBytes(of: w0, toByteOffset: count, as: UInt64.self)
            base.storeBytes(of: w1, toByteOffset: count &+ 8, as: UInt64.self)
        }
        count &+= 16
        mix(w0, w1 ^ UInt64(tag))
        return true
    }

    /// A record's value read in place when it is a Boolean, an integer, a double or a string in
    /// the small form: its code (1, 3, 4 or 5, the codes ``FittingMemo/record`` writes for
    /// them), then its payload word (a Boolean's as 0 or 1), and a string's second word,
    /// written and mixed in with no branch on the kind: a context's values come in its
    /// dictionary's order, so a `switch` over them (an indirect jump) was mispredicted value
    /// after value. False, having written nothing, for any other value. Reads the enum's tag
    /// byte and payload where ``JSONValueLayout/available`` checked them.
    @inline(__always)
    mutating func scalar(at p: UnsafeRawPointer) -> Bool {
        let t = p.load(fromByteOffset: JSONValueLayout.tagOffset, as: UInt8.self)
        let w0 = p.load(as: UInt64.self)
        let w1 = p.load(fromByteOffset: 8, as: UInt64.self)
        let isString = t == JSONValueLayout.stringTag
        // Bool, Int64 and Double are tags 0, 1 and 2; a string must be small.
        // One branch, taken only for the rare kinds: a branch on `t < stringTag` first was
        // taken or not by each value's kind, in the dictionary's order.
        let other: UInt64 = t > JSONValueLayout.stringTag ? 1 : 0
        let long: UInt64 = (isString ? 1 : 0) & (w1 & keys.smallMask == 0 ? 1 : 0)
        if other | long != 0 { return false }
        let code: UInt8 = t == JSONValueLayout.boolTag ? 1 : t &+ 2
        let a = t == JSONValueLayout.boolTag ? w0 & 1 : w0
        let b = isString ? w1 : 0
        if count &+ 17 <= capacity {
            base.storeBytes(of: code, toByteOffset: count, as: UInt8.self)
            base.storeBytes(of: a, toByteOffset: count &+ 1, as: UInt64.self)
            base.storeBytes(of: b, toByteOffset: count &+ 9, as: UInt64.self)
        } else if count &+ 9 <= capacity {
            // Near the buffer's end: a 9-byte value still fits (a string does not, and the
            // encoder overflows).
            base.storeBytes(of: code, toByteOffset: count, as: UInt8.self)
            base.storeBytes(of: a, toByteOffset: count &+ 1, as: UInt64.self)
        }
        count &+= isString ? 17 : 9
        mix(a, b ^ UInt64(code))
        return true
    }

    /// A string's UTF-8 length (marked with ``lengthMark``), then its bytes. Kept out of line:
    /// inlined, it made the optimizer outline ``string(_:)`` itself, a call and a retain for
    /// every small string (measured).
    @inline(never)
    mutating func longString(_ s: String) {
        let n = s.utf8.count
        word(UInt64(truncatingIfNeeded: n) | Self.lengthMark)
        if let done = s.utf8.withContiguousStorageIfAvailable({ bytes(UnsafeRawBufferPointer($0)) }) { return done }
        var copy = s
        copy.withUTF8 { bytes(UnsafeRawBufferPointer($0)) }
    }

    /// A value: a tag, then its payload (an object's members in the UTF-8 order of their names,
    /// so equal objects write the same bytes).
    mutating func value(_ v: JSONValue) {
        switch v {
        case .null: byte(0)
        case .bool(let b): byte(b ? 2 : 1)
        case .int(let i):
            byte(3)
            word(UInt64(bitPattern: i))
        case .double(let d):
            byte(4)
            word(d.bitPattern)
        case .string(let s):
            byte(5)
            string(s)
        case .array(let items):
            byte(6)
            word(UInt64(items.count))
            for item in items { value(item) }
        case .object(let members):
            byte(7)
            word(UInt64(members.count))
            for (name, member) in members.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
                string(name)
                value(member)
            }
        }
    }
}

extension FittingMemo {
    /// Writes `context` into `encoder` and its records into `records` (iteration order);
    /// returns the head's length and the context's hash (meaningless after an overflow).
    static func encode(
        _ context: EvaluationContext, _ out: inout ContextEncoder, _ records: UnsafeMutableBufferPointer<Record>,
        keys: HashKeys
    ) -> (head: Int, hash: UInt64) {
        // A local copy: the optimizer keeps its count in a register instead of storing it
        // through `out` after every write.
        var encoder = out
        defer { out = encoder }
        encoder.startHash()
        encoder.string(context.targetingKey)
        encoder.string(context.kind)
        encoder.word(
            UInt64(truncatingIfNeeded: context.attributes.count) << 32
                | UInt64(truncatingIfNeeded: context.privateAttributes.count))
        let head = encoder.count
        let headHash = encoder.hash
        var sum: UInt64 = 0
        var n = 0
        // Each attribute read in place (``AttributeBuckets``): no name or value is copied. A
        // dictionary whose storage does not read as checked is walked by its iterator instead.
        let walked =
            keys.inPlace
            && AttributeBuckets.forEach(context.attributes) { name, value in
                record(name, value, inPlace: true, &encoder, records, &n, &sum, keys: keys)
            }
        if !walked {
            for (name, value) in context.attributes {
                withUnsafePointer(to: name) { name in
                    withUnsafePointer(to: value) {
                        record(UnsafeRawPointer(name), $0, inPlace: false, &encoder, records, &n, &sum, keys: keys)
                    }
                }
            }
        }
        assert(n == context.attributes.count, "a dictionary's occupied buckets are its count")
        if keys.constant || encoder.overflowed { return (head, 0) }
        return (head, fold(headHash ^ keys.k2, sum ^ keys.k0))
    }

    /// One attribute's record: its name, then its value, hashed as written; stored at
    /// `records[n]` and its hash added to `sum`. `inPlace`: a string value's payload is read
    /// where it lies (``JSONValueLayout/available`` checks the enum's layout), else through
    /// a copy.
    @inline(__always)
    private static func record(
        _ name: UnsafeRawPointer, _ value: UnsafePointer<JSONValue>, inPlace: Bool, _ encoder: inout ContextEncoder,
        _ records: UnsafeMutableBufferPointer<Record>, _ n: inout Int, _ sum: inout UInt64, keys: HashKeys
    ) {
        let start = encoder.count
        encoder.startHash()
        encoder.string(at: name)
        // Scalars and strings written here, not through the call of `value` (which the
        // optimizer keeps out of line: ~250 instructions a request, measured); the same
        // bytes `value` writes for them. Arrays and objects go through `value`.
        // The tag is mixed in with the payload's first word (one multiply fewer a value).
        // In place, a Boolean, an integer, a double and a short string are written without
        // a branch on their kind (``ContextEncoder/scalar(at:)``); the same bytes as below.
        if inPlace, encoder.scalar(at: UnsafeRawPointer(value)) {
        } else {
            switch value.pointee {
            case .null: encoder.byte(0)
            case .bool(let b):
                encoder.tag(1)
                encoder.word(b ? 1 : 0, tag: 1)
            case .double(let d):
                encoder.tag(4)
                encoder.word(d.bitPattern, tag: 4)
            case .int(let i):
                encoder.tag(3)
                encoder.word(UInt64(bitPattern: i), tag: 3)
            case .string:
                encoder.tag(5)
                if inPlace {
                    encoder.string(at: UnsafeRawPointer(value), tag: 5)
                } else if case .string(let s) = value.pointee {
                    encoder.string(s, tag: 5)
                }
            default: encoder.value(value.pointee)
            }
        }
        // Test only (`HashKeys.colliding`): every record's hash collides too, so an entry's
        // records share one chain of its table and are told apart by their bytes.
        let h = keys.constant ? 0 : encoder.hash
        records[n] = Record(
            hash: h, start: Int32(truncatingIfNeeded: start), count: Int32(truncatingIfNeeded: encoder.count - start))
        sum &+= h
        n &+= 1
    }

    /// Runs `body` with `context` written out (on the stack when it fits 1 KiB: Swift keeps
    /// larger temporary allocations on the heap).
    static func withProbe<R>(_ context: EvaluationContext, keys: HashKeys, _ body: (Probe) -> R) -> R {
        let n = context.attributes.count
        return withUnsafeTemporaryAllocation(of: Record.self, capacity: max(1, n)) { records in
            func run(_ raw: UnsafeMutableRawBufferPointer) -> (R?, Int) {
                var encoder = ContextEncoder(base: raw.baseAddress!, capacity: raw.count, keys: keys)
                let (head, hash) = encode(context, &encoder, records, keys: keys)
                if encoder.overflowed { return (nil, encoder.count) }
                let probe = Probe(
                    bytes: UnsafeRawBufferPointer(rebasing: raw[..<encoder.count]), head: head,
                    records: UnsafeBufferPointer(rebasing: records[..<n]), hash: hash)
                return (body(probe), encoder.count)
            }
            let (result, needed) = withUnsafeTemporaryAllocation(byteCount: 1024, alignment: 8) { run($0) }
            if let result { return result }
            let heap = UnsafeMutableRawBufferPointer.allocate(byteCount: needed, alignment: 8)
            defer { heap.deallocate() }
            return run(heap).0!
        }
    }
}

extension FittingMemo.Entry {
    /// Whether the probed context is exactly this entry's: the head's bytes first (targeting
    /// key, kind, counts), then each attribute record found by its hash and compared byte for
    /// byte, then the private names. Reads the entry's own buffer through its pointers: no
    /// array, string or closure context is retained.
    func matches(_ probe: FittingMemo.Probe, _ privateAttributes: Set<String>) -> Bool {
        // A probe longer than a slot can address cannot be an entry's (whose records' lengths
        // then all fit the slots' 24 bits, as the probe's do).
        guard probe.records.count == recordCount, probe.head == head, probe.bytes.count < Self.maxKeyBytes,
            let p = probe.bytes.baseAddress,
            Self.same(key, p, head)
        else { return false }
        // Each probe record is looked up in the entry's table by its hash and compared byte
        // for byte. A context's records differ from each other (its attribute names do), so
        // as many records all found, each in a distinct entry record, is the same set.
        for r in probe.records {
            var slot = Int(truncatingIfNeeded: r.hash) & slotMask
            let want = Self.slot(hash: r.hash, start: 0, count: Int(r.count))
            while true {
                let s = slots[slot]
                if s == 0 { return false }
                // The hash's top bits and the length: the start is masked out.
                if s & ~Self.startBits == want, Self.same(key + Self.start(s), p + Int(r.start), Int(r.count)) {
                    break
                }
                slot = (slot + 1) & slotMask
            }
        }
        return privateAttributes.isEmpty || privateAttributes == self.privateAttributes
    }

    /// Whether the `n` bytes at `a` and `b` are equal, a word at a time with the differences
    /// or-ed together. From 24 to 48 bytes (a head of short strings, and a record of a short
    /// name and a scalar, a short string or a string of up to 19 bytes) in the same six
    /// possibly overlapping words whatever the length: a probe's records come in its
    /// dictionary's order, so a branch on their lengths would be mispredicted record after
    /// record. A head or a record is at least 9 bytes (a string is at least one word, and a
    /// record has a tag after its name); shorter runs go through `FlagTable.equal`.
    @inline(__always)
    static func same(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ n: Int) -> Bool {
        @inline(__always)
        func differs(_ i: Int) -> UInt64 {
            a.loadUnaligned(fromByteOffset: i, as: UInt64.self) ^ b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
        }
        if n &- 24 <= 24 && n >= 24 {
            // [0, 24) and [n - 24, n), which overlap or meet.
            let low = differs(0) | differs(8) | differs(16)
            return low | differs(n &- 24) | differs(n &- 16) | differs(n &- 8) == 0
        }
        guard n >= 8 else { return FlagTable.equal(a, b, n) }
        if n < 16 { return differs(0) | differs(n &- 8) == 0 }
        // The first 16 and the last 16 bytes, then what lies between, 16 bytes a step.
        guard differs(0) | differs(8) | differs(n &- 16) | differs(n &- 8) == 0 else { return false }
        var i = 16
        while i < n &- 16 {
            guard differs(i) | differs(i &+ 8) == 0 else { return false }
            i &+= 16
        }
        return true
    }
}
