// TEMPORARY STAND-IN, NOT HALYARD. Delete this file when main's read path (FlagClient,
// FlagHandle, offline client) is merged into this branch. It exists only so the harness
// compiles and runs before the real core lands; numbers measured against it say nothing
// about Halyard. Its reclamation is a timed grace period (unsafe in general).
#if os(Linux)
import Halyard
import Synchronization
import Glibc

final class FlagClient: Sendable {
    private final class Snapshot: Sendable {
        let values: [String: JSONValue]
        init(_ values: [String: JSONValue]) { self.values = values }
    }
    private let current: Atomic<Unmanaged<Snapshot>>
    private let retired = Mutex<[(Unmanaged<Snapshot>, UInt64)]>([])

    init(offlineValues: [String: JSONValue]) throws {
        current = Atomic(Unmanaged.passRetained(Snapshot(offlineValues)))
    }

    func setOfflineValues(_ values: [String: JSONValue]) throws {
        let old = current.exchange(Unmanaged.passRetained(Snapshot(values)), ordering: .acquiringAndReleasing)
        let now = UInt64(DispatchTimeStandIn.nowNs())
        retired.withLock { list in
            list.append((old, now))
            // Grace period of one second (stand-in only).
            while let first = list.first, now - first.1 > 1_000_000_000 {
                first.0.release()
                list.removeFirst()
            }
        }
    }

    @inline(__always) private func lookup(_ key: String) -> JSONValue? {
        current.load(ordering: .acquiring)._withUnsafeGuaranteedRef { $0.values[key] }
    }

    func bool(_ key: String, default d: Bool) -> Bool {
        if case .bool(let b)? = lookup(key) { return b }
        return d
    }
    func int(_ key: String, default d: Int) -> Int {
        if case .int(let i)? = lookup(key) { return Int(i) }
        return d
    }
    func double(_ key: String, default d: Double) -> Double {
        switch lookup(key) {
        case .double(let x)?: return x
        case .int(let i)?: return Double(i)
        default: return d
        }
    }
    func boolDetail(_ key: String, default d: Bool) -> Evaluation<Bool> {
        Evaluation(key: key, value: bool(key, default: d), reason: .staticValue)
    }
    func intDetail(_ key: String, default d: Int) -> Evaluation<Int> {
        Evaluation(key: key, value: int(key, default: d), reason: .staticValue)
    }
    func doubleDetail(_ key: String, default d: Double) -> Evaluation<Double> {
        Evaluation(key: key, value: double(key, default: d), reason: .staticValue)
    }
    func handle(_ key: String, default d: Bool) -> FlagHandle<Bool> {
        FlagHandle { [self] in bool(key, default: d) }
    }
    func handle(_ key: String, default d: Int) -> FlagHandle<Int> {
        FlagHandle { [self] in int(key, default: d) }
    }
    func handle(_ key: String, default d: Double) -> FlagHandle<Double> {
        FlagHandle { [self] in double(key, default: d) }
    }
}

final class FlagHandle<Value: Sendable>: Sendable {
    private let read: @Sendable () -> Value
    init(_ read: @escaping @Sendable () -> Value) { self.read = read }
    var value: Value { read() }
}

enum DispatchTimeStandIn {
    static func nowNs() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return ts.tv_sec * 1_000_000_000 + ts.tv_nsec
    }
}
#endif
