import Foundation

// How the memo recognises a context it has fitted before (docs/service.md, "The warm path").
//
// **One pass.** The context is written once into a scratch buffer on the stack, in an
// unambiguous binary form (lengths before bytes, a tag before each value): a head (targeting
// key, kind, counts) and one record per attribute (name and value). Each record gets a 64-bit
// hash, mixed in while it is written (a folded multiply per word or small string, a value's
// tag with its payload, keyed by per-memo random words, FittingMemo+HashKeys.swift;
// `ContextEncoder.hash`, ContextEncoder.swift), so no byte is read back; the record hashes
// are summed, so a dictionary's iteration order (which differs between equal dictionaries)
// does not matter, and mixed with the head's. The memo's table is keyed by the result itself;
// `EvaluationContext`'s own `Hashable` runs a seeded `Hasher` (a full SipHash finalization)
// per attribute.
//
// **Equality: exact, byte for byte.** An entry keeps its records' bytes in one buffer, after
// an open-addressing table of the records by hash; a probe finds each of its records there
// (one or two steps, whatever order its dictionary iterates in) and compares the bytes
// inline, a word at a time (`FittingMemo.Entry.same`, FittingMemo+Matching.swift: no
// `memcmp` call per record). No `String` or `JSONValue` is copied, retained or hashed again
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
