import CHalyardAtomics

/// Counts live objects and remembers which ones are alive; tests use it to prove every replaced
/// snapshot is freed, and that none is freed while a reader still uses it.
///
/// Each registered object gets a token (a unique serial number and the index of the table slot
/// it holds); `isLive(token)` is answered from a table of atomic words (no lock), so a reader can
/// ask it from inside a protected read. Slots are claimed with a compare-and-swap and probed
/// linearly, so any number of objects up to the table size (16,384) may be alive at once,
/// however far apart their serial numbers are.
package final class LiveCounter: @unchecked Sendable {
    private static let slotBits = 14
    private static let tableSize = 1 << slotBits
    private let word = UnsafeMutablePointer<hal_atomic_word>.allocate(capacity: 2)
    private let table = UnsafeMutablePointer<hal_atomic_word>.allocate(capacity: LiveCounter.tableSize)

    package init() {
        word.initialize(repeating: hal_atomic_word(value: 0), count: 2)
        table.initialize(repeating: hal_atomic_word(value: 0), count: Self.tableSize)
    }
    deinit {
        word.deallocate()
        table.deallocate()
    }

    /// Counts a new object and returns its token (never 0).
    package func register() -> UInt {
        let serial = hal_fetch_add(word + 1, 1) + 1
        let mask = UInt(Self.tableSize - 1)
        var slot = serial & mask
        for _ in 0..<Self.tableSize {
            let token = serial << UInt(Self.slotBits) | slot
            var expected: UInt = 0
            if hal_compare_exchange(table + Int(slot), &expected, token) {
                _ = hal_fetch_add(word, 1)
                return token
            }
            slot = (slot + 1) & mask
        }
        preconditionFailure("LiveCounter: more than \(Self.tableSize) objects alive at once")
    }
    /// Counts an object's end.
    package func unregister(_ token: UInt) {
        hal_store_release(table + Int(token & UInt(Self.tableSize - 1)), 0)
        _ = hal_fetch_add(word, UInt.max)
    }
    /// Whether the object with `token` is still alive.
    package func isLive(_ token: UInt) -> Bool {
        token != 0 && hal_load_acquire(table + Int(token & UInt(Self.tableSize - 1))) == token
    }
    /// The number of live objects now.
    package var value: Int { Int(bitPattern: hal_load_acquire(word)) }
}
