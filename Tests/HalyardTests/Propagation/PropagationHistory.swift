import Foundation

@testable import Halyard

/// Everything one propagation run did, as the simulated control plane and the workload saw it
/// (docs/testing.md, "The propagation checker"). Times are `Duration`s since the run's start
/// (real, monotonic time). A value served by the plane encodes where it came from:
/// `env * 100_000 + changeID` (``PropagationValue``), so a read alone says which environment and
/// which change produced it.
final class PropagationHistory: Sendable {
    /// A flag value changed on the plane.
    struct Change: Sendable {
        var id: Int
        var env: Int
        var flag: Int
        var at: Duration
    }

    /// A `refetchEvaluation` event written to the streams of one environment.
    struct Publication: Sendable {
        var env: Int
        /// The change the event announces (a late, duplicated or reordered event names an old one).
        var changeID: Int
        var at: Duration
        var deliveredTo: [Int]
    }

    /// One request the plane received (bulk POST or stream GET).
    struct Request: Sendable {
        enum Kind: String, Sendable { case bulk, stream }
        var reader: Int
        var kind: Kind
        var keyGeneration: Int?
        var env: Int?
        var sentAt: Duration
        var answeredAt: Duration?
        var status = 0
        /// The moment a `Retry-After` in the answer lets the reader come back (capped at 1 h).
        var retryFloor: Duration?
        var retryAfterText: String?
        var conditional = false
        /// A bulk request's evaluation context (its targeting key: the name the reads use for a
        /// service's context, and a client's context after `identify`); a stream open's URL path.
        var target = ""
        /// For a 200 bulk answer: the change id each flag's value carries.
        var served: [Int] = []
        /// For a 200 bulk answer: the generation of the stream URL it advertised.
        var advertised: Int?
        var note = ""
    }

    /// Consecutive equal reads of one (reader, context, flag): every read is in exactly one run.
    struct ReadRun: Sendable {
        var value: Int
        var first: Duration
        var last: Duration
        var count: Int
    }

    struct ReadKey: Hashable, Sendable {
        var reader: Int
        var context: String
        var flag: Int
    }

    /// A workload operation on a reader (setKey, setActive, identify, churn).
    struct Operation: Sendable {
        enum Kind: String, Sendable { case setKey, deactivate, identify, churn }
        var reader: Int
        var kind: Kind
        var start: Duration
        var end: Duration
        /// setKey: the new key generation's environment.
        var env = 0
        var detail = ""
    }

    /// Something that makes the plane unhealthy for everyone (a stream URL rotation, an outage).
    struct Disruption: Sendable {
        var at: Duration
        var what: String
    }

    /// One `flags(for:)` call that waited longer than a threshold.
    struct SlowWait: Sendable {
        var reader: Int
        var context: String
        var start: Duration
        var duration: Duration
    }

    struct Reader: Sendable {
        var id: Int
        var name: String
        var isService: Bool
        /// Readers sharing keys and a shared cache (the fleet): their group id.
        var group: Int
    }

    private struct State {
        var readers: [Reader] = []
        var changes: [Change] = []
        var publications: [Publication] = []
        var requests: [Request] = []
        var runs: [ReadKey: [ReadRun]] = [:]
        var operations: [Operation] = []
        var disruptions: [Disruption] = []
        var slowWaits: [SlowWait] = []
        var stalls: [(at: Duration, overshoot: Duration)] = []
        var readerStalls: [Int: [(at: Duration, overshoot: Duration)]] = [:]
        var bytes: [Int: (peak: Int, limit: Int)] = [:]
        var end: Duration = .zero
    }

    private let state = Locked(State())
    let start = ContinuousClock.now
    let seed: UInt64

    init(seed: UInt64) { self.seed = seed }

    var now: Duration { ContinuousClock.now - start }

    // MARK: - Recording

    func addReader(_ reader: Reader) { state.withLock { $0.readers.append(reader) } }
    func recordChange(_ change: Change) { state.withLock { $0.changes.append(change) } }
    func recordPublication(_ p: Publication) { state.withLock { $0.publications.append(p) } }
    func recordDisruption(_ what: String) {
        let t = now
        state.withLock { $0.disruptions.append(Disruption(at: t, what: what)) }
    }
    func recordOperation(_ op: Operation) { state.withLock { $0.operations.append(op) } }
    func recordSlowWait(_ w: SlowWait) { state.withLock { $0.slowWaits.append(w) } }
    func recordStall(at: Duration, overshoot: Duration) { state.withLock { $0.stalls.append((at, overshoot)) } }
    /// A reader's loop came round late: its tasks (and the library's, on the same pool) did not run.
    func recordReaderStall(reader: Int, at: Duration, overshoot: Duration) {
        state.withLock { $0.readerStalls[reader, default: []].append((at, overshoot)) }
    }
    func recordBytes(reader: Int, bytes: Int, limit: Int) {
        state.withLock { s in
            let old = s.bytes[reader]?.peak ?? 0
            s.bytes[reader] = (max(old, bytes), limit)
        }
    }
    func finish() {
        let t = now
        state.withLock { $0.end = t }
    }

    /// Records a request when the plane receives it; returns its index for ``update(_:_:)``.
    func recordRequest(_ request: Request) -> Int {
        state.withLock { s in
            s.requests.append(request)
            return s.requests.count - 1
        }
    }

    func update(_ index: Int, _ change: (inout Request) -> Void) {
        state.withLock { change(&$0.requests[index]) }
    }

    /// Records one read made at `at` (the time the read started: before `flags(for:)`).
    func recordRead(reader: Int, context: String, flag: Int, value: Int, at: Duration) {
        let key = ReadKey(reader: reader, context: context, flag: flag)
        state.withLock { s in Self.extend(&s.runs[key, default: []], value: value, at: at) }
    }

    private static func extend(_ runs: inout [ReadRun], value: Int, at: Duration) {
        if let i = runs.indices.last, runs[i].value == value {
            runs[i].last = at
            runs[i].count += 1
        } else {
            runs.append(ReadRun(value: value, first: at, last: at, count: 1))
        }
    }

    // MARK: - Reading it back

    var readers: [Reader] { state.withLock { $0.readers } }
    var changes: [Change] { state.withLock { $0.changes } }
    var publications: [Publication] { state.withLock { $0.publications } }
    var requests: [Request] { state.withLock { $0.requests } }
    var runs: [ReadKey: [ReadRun]] { state.withLock { $0.runs } }
    var operations: [Operation] { state.withLock { $0.operations } }
    var disruptions: [Disruption] { state.withLock { $0.disruptions } }
    var slowWaits: [SlowWait] { state.withLock { $0.slowWaits } }
    var stalls: [(at: Duration, overshoot: Duration)] { state.withLock { $0.stalls } }
    var readerStalls: [Int: [(at: Duration, overshoot: Duration)]] { state.withLock { $0.readerStalls } }
    var bytes: [Int: (peak: Int, limit: Int)] { state.withLock { $0.bytes } }
    var end: Duration { state.withLock { $0.end } }
    var readCount: Int { state.withLock { $0.runs.values.reduce(0) { $0 + $1.reduce(0) { $0 + $1.count } } } }
}

/// How a served value names its origin: `env * 100_000 + changeID`; `-1` is the read's default.
enum PropagationValue {
    static let scale = 100_000
    static let missing = -1
    static func make(env: Int, change: Int) -> Int { env * scale + change }
    static func env(_ value: Int) -> Int { value / scale }
    static func change(_ value: Int) -> Int { value % scale }
    static func describe(_ value: Int) -> String {
        value == missing ? "default" : "env\(env(value))#\(change(value))"
    }
}

extension Duration {
    /// Seconds with millisecond precision, for the minimal histories.
    var ms: String {
        let total = Double(components.seconds) + Double(components.attoseconds) / 1e18
        return String(format: "%.3fs", total)
    }
}
