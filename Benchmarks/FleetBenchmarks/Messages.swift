import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// What the parent and its workers say to each other: one command word a line on the worker's
// stdin, one JSON ``WorkerMessage`` a line on its stdout.

/// `CLOCK_MONOTONIC` in nanoseconds: one clock for every process of the machine, so the parent
/// can order the L1 misses of different workers.
func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// The `FlagServiceStats` fields a worker reports (public API only).
struct WorkerStats: Codable, Sendable {
    var requestsSent = 0
    var hits = 0
    var misses = 0
    var coldWaits = 0
    var timeouts = 0
    var contextsHeld = 0
    var notModified = 0
    var fetchesInFlight = 0
    var backgroundRefreshes = 0
    var streamConnected = false
    var streamWaves = 0
    var streamRefreshes = 0
    var fetchTimeouts = 0
    var networkErrors = 0
    var droppedFetches = 0
    var shedFetches = 0
    /// `stats.sharedCache` (nil without the L2).
    var sharedCache: SharedCacheFigures? = nil
}

/// The `SharedCacheStats` fields a worker reports.
struct SharedCacheFigures: Codable, Sendable {
    var hits = 0
    var misses = 0
    var writes = 0
    var leaseWaits = 0
    var leaseWaitHits = 0
    var leasesTaken = 0
    var rejectedEntries = 0
    var errors = 0
    var skippedCalls = 0
    var breakerOpenings = 0

    /// The sum of two processes' figures.
    static func + (a: Self, b: Self) -> Self {
        Self(
            hits: a.hits + b.hits, misses: a.misses + b.misses, writes: a.writes + b.writes,
            leaseWaits: a.leaseWaits + b.leaseWaits, leaseWaitHits: a.leaseWaitHits + b.leaseWaitHits,
            leasesTaken: a.leasesTaken + b.leasesTaken, rejectedEntries: a.rejectedEntries + b.rejectedEntries,
            errors: a.errors + b.errors, skippedCalls: a.skippedCalls + b.skippedCalls,
            breakerOpenings: a.breakerOpenings + b.breakerOpenings)
    }
}

/// One L1 miss: the first time this worker asked for a context.
struct Miss: Codable, Sendable {
    /// The context (its rank in the Zipf popularity).
    var id: Int
    /// When `flags(for:)` was called (``monotonicNanos()``).
    var start: UInt64
    /// How long it took, in nanoseconds.
    var nanos: UInt64
    /// Whether it served values (false: defaults after `coldFetchTimeout`).
    var served: Bool
}

/// A line a worker writes on its stdout.
struct WorkerMessage: Codable, Sendable {
    /// `ready`, `report`, `paused`, `stats`, `bye`.
    var type: String
    /// Warnings and errors the service logged so far (`ready`, `bye`).
    var warnings: [String]? = nil
    /// Contexts asked for since the last `pause` (`paused`).
    var used: [Int]? = nil
    /// L1 misses since the last `report` or `pause`.
    var misses: [Miss]? = nil
    /// `flags(for:)` calls since the last `report` or `pause`.
    var calls: Int? = nil
    /// Calls not made because 512 were already in flight (the worker could not keep up).
    var skipped: Int? = nil
    /// The service's stats now.
    var stats: WorkerStats? = nil
}

/// A value behind a `Mutex`, shareable between threads and tasks.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}

/// `s` on standard error.
func warn(_ s: String) {
    FileHandle.standardError.write(Data((s + "\n").utf8))
}
