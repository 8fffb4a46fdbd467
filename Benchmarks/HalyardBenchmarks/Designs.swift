#if os(Linux)
    import Dispatch
    import Foundation
    import Glibc
    import Synchronization

    /// One read-path design under test. Every design answers "the Bool value of key number `i`";
    /// keyed designs look the key up by its `String` (`keys[i]`), the array and handle designs by
    /// index. `publish(_:)` swaps in value set `generation & 1` the way that design would.
    ///
    /// The runners are generic over this protocol, so every loop is specialized per design and
    /// the read is a direct (usually inlined) call.
    protocol ReadDesign: AnyObject, Sendable {
        func read(_ i: Int) -> Bool
        func publish(_ generation: Int)
    }

    /// What the harness knows about a design besides its read.
    struct DesignInfo: Sendable {
        enum Kind: String, Sendable { case halyard, bound, peer }
        /// Stable identifier (used by `--filter`, the JSON and the chart).
        let id: String
        /// One line saying what it does.
        let title: String
        let kind: Kind
        /// False for the unsynchronized baselines: their "publisher" only wakes up.
        let publisherSwaps: Bool
        /// The lower bound its single-thread time is divided by.
        let boundID: String
    }

    // MARK: - Lower bounds (unsynchronized, immutable)

    /// `[String: Bool]` lookup with no synchronization: cannot be published to.
    final class UnsyncDictionary: ReadDesign {
        let keys: [String]
        let dict: [String: Bool]
        init(_ w: Workload) { keys = w.keys; dict = w.dictionary(0) }
        @inline(__always) func read(_ i: Int) -> Bool { dict[keys[i]] ?? false }
        func publish(_ generation: Int) {}
    }

    /// `[String: Bool]` lookup with no synchronization, keys built at run time (the bound paired
    /// with ``HalyardKeyedBoolRuntimeKeys``).
    final class UnsyncDictionaryRuntimeKeys: ReadDesign {
        let keys: [String]
        let dict: [String: Bool]
        init(_ w: Workload) { keys = w.runtimeKeys; dict = w.dictionary(0) }
        @inline(__always) func read(_ i: Int) -> Bool { dict[keys[i]] ?? false }
        func publish(_ generation: Int) {}
    }

    /// `[Bool]` read by index with no synchronization: cannot be published to.
    final class UnsyncArray: ReadDesign {
        let values: [Bool]
        init(_ w: Workload) { values = w.values[0] }
        @inline(__always) func read(_ i: Int) -> Bool { values[i] }
        func publish(_ generation: Int) {}
    }

    // MARK: - Designs other Swift flag SDKs use

    /// `NSLock` around a mutable dictionary.
    final class NSLockDictionary: ReadDesign, @unchecked Sendable {
        let keys: [String]
        let sets: [[String: Bool]]
        let lock = NSLock()
        var dict: [String: Bool]
        init(_ w: Workload) { keys = w.keys; sets = [w.dictionary(0), w.dictionary(1)]; dict = sets[0] }
        @inline(__always) func read(_ i: Int) -> Bool {
            lock.lock()
            let v = dict[keys[i]] ?? false
            lock.unlock()
            return v
        }
        func publish(_ generation: Int) {
            lock.lock()
            dict = sets[generation & 1]
            lock.unlock()
        }
    }

    /// Concurrent `DispatchQueue`: reads with `sync`, writes with `sync(flags: .barrier)` (a
    /// synchronous barrier, so a publish counts only when it has happened).
    final class DispatchConcurrentDictionary: ReadDesign, @unchecked Sendable {
        let keys: [String]
        let sets: [[String: Bool]]
        let queue = DispatchQueue(label: "bench.concurrent", attributes: .concurrent)
        var dict: [String: Bool]
        init(_ w: Workload) { keys = w.keys; sets = [w.dictionary(0), w.dictionary(1)]; dict = sets[0] }
        @inline(__always) func read(_ i: Int) -> Bool {
            let key = keys[i]
            return queue.sync { dict[key] ?? false }
        }
        func publish(_ generation: Int) {
            let next = sets[generation & 1]
            queue.sync(flags: .barrier) { dict = next }
        }
    }

    /// Serial `DispatchQueue`, `sync` for reads and writes.
    final class DispatchSerialDictionary: ReadDesign, @unchecked Sendable {
        let keys: [String]
        let sets: [[String: Bool]]
        let queue = DispatchQueue(label: "bench.serial")
        var dict: [String: Bool]
        init(_ w: Workload) { keys = w.keys; sets = [w.dictionary(0), w.dictionary(1)]; dict = sets[0] }
        @inline(__always) func read(_ i: Int) -> Bool {
            let key = keys[i]
            return queue.sync { dict[key] ?? false }
        }
        func publish(_ generation: Int) {
            let next = sets[generation & 1]
            queue.sync { dict = next }
        }
    }

    /// `pthread_rwlock_t` (glibc default: prefers readers) around a mutable dictionary.
    final class RWLockDictionary: ReadDesign, @unchecked Sendable {
        let keys: [String]
        let sets: [[String: Bool]]
        let rw: UnsafeMutablePointer<pthread_rwlock_t>
        var dict: [String: Bool]
        init(_ w: Workload) {
            keys = w.keys
            sets = [w.dictionary(0), w.dictionary(1)]
            dict = sets[0]
            rw = .allocate(capacity: 1)
            rw.initialize(to: pthread_rwlock_t())
            pthread_rwlock_init(rw, nil)
        }
        deinit {
            pthread_rwlock_destroy(rw)
            rw.deallocate()
        }
        @inline(__always) func read(_ i: Int) -> Bool {
            pthread_rwlock_rdlock(rw)
            let v = dict[keys[i]] ?? false
            pthread_rwlock_unlock(rw)
            return v
        }
        func publish(_ generation: Int) {
            pthread_rwlock_wrlock(rw)
            dict = sets[generation & 1]
            pthread_rwlock_unlock(rw)
        }
    }

    /// `Synchronization.Mutex` around a dictionary.
    final class MutexDictionary: ReadDesign {
        let keys: [String]
        let sets: [[String: Bool]]
        let state: Mutex<[String: Bool]>
        init(_ w: Workload) { keys = w.keys; sets = [w.dictionary(0), w.dictionary(1)]; state = Mutex(sets[0]) }
        @inline(__always) func read(_ i: Int) -> Bool {
            let key = keys[i]
            return state.withLock { $0[key] ?? false }
        }
        func publish(_ generation: Int) {
            let next = sets[generation & 1]
            state.withLock { $0 = next }
        }
    }

    /// An immutable snapshot object holding the dictionary.
    final class DictionarySnapshot: Sendable {
        let dict: [String: Bool]
        init(_ dict: [String: Bool]) { self.dict = dict }
    }

    /// "Copy the snapshot reference under a mutex": lock, copy (retain) the current snapshot
    /// reference, unlock, look up in the snapshot, release it.
    final class LockedSnapshotReference: ReadDesign, @unchecked Sendable {
        let keys: [String]
        let snapshots: [DictionarySnapshot]
        let lock = NSLock()
        var current: DictionarySnapshot
        init(_ w: Workload) {
            keys = w.keys
            snapshots = [DictionarySnapshot(w.dictionary(0)), DictionarySnapshot(w.dictionary(1))]
            current = snapshots[0]
        }
        @inline(__always) func read(_ i: Int) -> Bool {
            lock.lock()
            let snapshot = current
            lock.unlock()
            return snapshot.dict[keys[i]] ?? false
        }
        func publish(_ generation: Int) {
            let next = snapshots[generation & 1]
            lock.lock()
            current = next
            lock.unlock()
        }
    }
#endif
