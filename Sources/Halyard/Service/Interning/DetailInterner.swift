import Foundation

/// One ``EvaluationDetail`` for every snapshot a service holds that was served the same flag
/// result: same key, value, variant, reason, error code, message and metadata.
///
/// A control plane serves each flag one of a few variants to every context, so most of the
/// 64 details of one context's snapshot are identical, field for field, to those of thousands
/// of others. A detail is immutable (112 bytes, a 128-byte malloc block, plus what its value,
/// variant and metadata own), so any number of snapshots can hold one; each holds a strong
/// reference and the exposure slots and scalar entries stay per snapshot. Sharing them cuts a
/// cached 64-flag context from ~13 KiB to a few (docs/service.md, "How bytes are counted").
///
/// **Equality is exact**: strings byte for byte, doubles by bit pattern, object member names
/// byte for byte. `String`'s `==` treats canonically equivalent strings as equal; a shared
/// detail must show exactly the bytes the plane sent for this context.
///
/// **Bounded** by ``capacity`` details and ``maxBytes`` (estimated like snapshots are), and by
/// ``maxPerKey`` details per flag key: a flag whose value differs per context (an e-mail
/// template, a user's quota) would otherwise fill the table with details one snapshot each
/// holds. A result beyond a bound gets a detail of its own in its snapshot, counted in that
/// snapshot's bytes as before. Every ``sweepEvery`` refusals, details nothing else holds any
/// more (no snapshot, no `Evaluation`: the table's reference is the only one,
/// `isKnownUniquelyReferenced`) are dropped, so results a plane stopped serving make room for
/// new ones. Such a detail can only be reached through this table, under its lock, so the
/// check cannot race with a new holder.
///
/// **Striped.** A detail read retains its detail (one atomic increment and decrement of its
/// reference count). Threads on different cores reading one shared object move its cache
/// line between them: measured 3.3x the cost of a detail read on own details with 2 threads
/// (`halyard-bench-service --details-only`). So each result is kept in up to ``stripes``
/// copies, and a context uses the copy its fingerprint picks: two contexts read on two cores
/// at once meet on one copy with probability 1 / ``stripes`` (readers of one context always
/// share, as readers of one `FlagClient` do). The default is 8 per core, at most 64: a result
/// served to thousands of contexts is kept in at most 64 copies.
///
/// The cost is off the read path: one hash per served flag and one lock per snapshot built
/// (docs/service.md, "Shared details").
package final class DetailInterner: Sendable {
    /// The most details kept (copies counted).
    static let capacity = 16_384
    /// The most estimated bytes of details kept.
    static let maxBytes = 4 << 20
    /// Refusals between two sweeps of a full table.
    static let sweepEvery = 256
    /// The default number of copies of a result: 8 per core, at most 64.
    package static var defaultStripes: Int { min(64, 8 * max(1, ProcessInfo.processInfo.activeProcessorCount)) }

    /// The copies of one result kept at most.
    let stripes: Int
    /// The most details (copies counted) kept for one flag key: 32 results in every stripe.
    let maxPerKey: Int

    /// An interner keeping up to `stripes` copies of each result.
    init(stripes: Int = 1) {
        self.stripes = max(1, stripes)
        maxPerKey = 32 * self.stripes
    }

    private struct Entry {
        var detail: EvaluationDetail
        /// Its estimated bytes, as counted when it was kept.
        let bytes: Int
    }
    private struct State {
        var details: [Int: [Entry]] = [:]
        var perKey: [String: Int] = [:]
        var count = 0
        var bytes = 0
        var refusedSinceSweep = 0
    }
    private let state = Locked(State())

    /// The shared detail for each of `flags` (nil where a bound refused one: the snapshot then
    /// builds its own), from the copies of stripe `stripe` (any integer: the context's
    /// fingerprint's hash). `keysShared` says the keys are interned (counted there).
    func details(for flags: [ServedFlag], keysShared: Bool, stripe: Int = 0) -> [EvaluationDetail?] {
        guard !flags.isEmpty else { return [] }
        let stripe = Int(UInt(bitPattern: stripe) % UInt(stripes))
        // Copies of other stripes may share a hash (a collision): any exact copy is right.
        let hashes = flags.map { flag in
            var hasher = Hasher()
            hasher.combine(flag)
            hasher.combine(stripe)
            return hasher.finalize()
        }
        var result = [EvaluationDetail?](repeating: nil, count: flags.count)
        var missing: [Int] = []
        state.withLock { s in
            for index in flags.indices {
                if let found = s.details[hashes[index]]?.first(where: { $0.detail.isExactly(flags[index]) }) {
                    result[index] = found.detail
                } else {
                    missing.append(index)
                }
            }
        }
        guard !missing.isEmpty else { return result }
        // Built outside the lock; a racing builder of the same result may win, and its detail
        // is used.
        let built = missing.map { EvaluationDetail(served: flags[$0], interned: true) }
        let costs = built.map { $0.estimatedBytes(keyShared: keysShared) }
        state.withLock { s in
            for (n, index) in missing.enumerated() {
                let hash = hashes[index]
                if let found = s.details[hash]?.first(where: { $0.detail.isExactly(flags[index]) }) {
                    result[index] = found.detail
                    continue
                }
                let key = flags[index].key
                func fits() -> Bool {
                    s.count < Self.capacity && s.bytes + costs[n] <= Self.maxBytes
                        && s.perKey[key, default: 0] < maxPerKey
                }
                if !fits() {
                    s.refusedSinceSweep += 1
                    guard s.refusedSinceSweep >= Self.sweepEvery else { continue }
                    Self.sweep(&s)
                    guard fits() else { continue }
                }
                s.details[hash, default: []].append(Entry(detail: built[n], bytes: costs[n]))
                s.perKey[key, default: 0] += 1
                s.count += 1
                s.bytes += costs[n]
                result[index] = built[n]
            }
        }
        return result
    }

    /// Drops the details only the table holds.
    private static func sweep(_ s: inout State) {
        s.refusedSinceSweep = 0
        for hash in Array(s.details.keys) {
            guard var bucket = s.details.removeValue(forKey: hash) else { continue }
            var index = bucket.count - 1
            while index >= 0 {
                if isKnownUniquelyReferenced(&bucket[index].detail) {
                    let entry = bucket.remove(at: index)
                    s.count -= 1
                    s.bytes -= entry.bytes
                    let key = entry.detail.key
                    s.perKey[key, default: 1] -= 1
                    if s.perKey[key] == 0 { s.perKey.removeValue(forKey: key) }
                }
                index -= 1
            }
            if !bucket.isEmpty { s.details[hash] = bucket }
        }
    }

    /// Bytes held by the shared details (estimated like snapshots are).
    var bytes: Int { state.withLock { $0.bytes } }
    /// The number of shared details.
    var count: Int { state.withLock { $0.count } }
}
