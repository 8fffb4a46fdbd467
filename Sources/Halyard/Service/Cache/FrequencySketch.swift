/// A count-min sketch of recent requests, for the admission filter (TinyLFU): four rows of
/// 4-bit-saturating counters (kept in bytes), about 8 counters per entry, halved every
/// `10 × entries` increments so old popularity fades.
///
/// Sized for the entries its shard holds, not for the shard's bound (which may be `Int.max`):
/// it starts at ``initialEntries`` and doubles (``reserve(entries:)``) as the shard fills, so
/// it takes 32-64 bytes per entry held (at most ``maxWidth`` counters a row: 16 MiB).
struct FrequencySketch {
    /// The entries a new sketch is sized for.
    static let initialEntries = 64
    /// The widest row (counters).
    static let maxWidth = 1 << 22
    private var counters: [UInt8]
    private var mask: Int
    private var additions = 0
    private var resetAfter: Int

    init(entries: Int) {
        let width = Self.width(for: entries)
        counters = [UInt8](repeating: 0, count: width * 4)
        mask = width - 1
        resetAfter = width / 8 * 10
    }

    /// Counters a row (a power of two, at least 64, at most ``maxWidth``).
    var width: Int { mask + 1 }

    private static func width(for entries: Int) -> Int {
        let wanted = entries > maxWidth / 8 ? maxWidth : max(entries, 0) * 8
        var width = 64
        while width < wanted { width *= 2 }
        return width
    }

    /// Widens the rows to about 8 counters per entry for `entries`. Each counter is copied to
    /// both halves of its doubled row (a slot's index keeps its low bits), so every estimate
    /// stays what it was.
    mutating func reserve(entries: Int) {
        let wanted = Self.width(for: entries)
        guard wanted > width else { return }
        let old = counters
        let oldWidth = width
        counters = [UInt8](repeating: 0, count: wanted * 4)
        for row in 0..<4 {
            for j in 0..<wanted { counters[row * wanted + j] = old[row * oldWidth + (j & (oldWidth - 1))] }
        }
        mask = wanted - 1
        resetAfter = wanted / 8 * 10
    }

    /// 64 bits of the fingerprint beyond the shard digits (hex: uniform).
    private static func hash(_ key: String) -> UInt64 {
        var value: UInt64 = 0
        var index = 0
        for c in key.utf8 {
            if index >= 4 && index < 20 {
                value = value << 4 | UInt64((c <= 57 ? c &- 48 : (c | 0x20) &- 87) & 0xF)
            }
            index += 1
        }
        return value
    }

    private func slot(_ hash: UInt64, _ row: Int) -> Int {
        let mixed = (hash &+ UInt64(row) &* 0x9E37_79B9_7F4A_7C15) &* 0xBF58_476D_1CE4_E5B9
        return row * (mask + 1) + Int(truncatingIfNeeded: mixed >> 32) & mask
    }

    mutating func increment(_ key: String) {
        let h = Self.hash(key)
        for row in 0..<4 {
            let i = slot(h, row)
            if counters[i] < 15 { counters[i] += 1 }
        }
        additions += 1
        if additions >= resetAfter {
            for i in counters.indices { counters[i] >>= 1 }
            additions /= 2
        }
    }

    func frequency(_ key: String) -> UInt8 {
        let h = Self.hash(key)
        var least: UInt8 = 15
        for row in 0..<4 { least = min(least, counters[slot(h, row)]) }
        return least
    }
}
