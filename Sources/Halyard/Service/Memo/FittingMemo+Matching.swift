import Foundation

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
