import Dispatch
import Foundation
import Halyard
import HalyardTesting

/// A wait in a test that did not end in time. Thrown, so the test stops at the wait and Swift
/// Testing records the message; the rest of the run goes on.
struct WaitTimedOut: Error, CustomStringConvertible {
    var what: String
    var seconds: Double
    var description: String { "gave up after \(seconds) s of real time waiting for \(what)" }
}

/// Bounded waits for tests (docs/testing.md, "Rules for tests"). Every wait in a test ends on its own:
/// either on a clock the test advances, or on one of these real-time bounds, and a wait that
/// runs out fails the test with a message saying what it was waiting for.
///
/// The bounds are generous (the machines are shared and slow) and only matter when something
/// is broken: a passing test never waits for them to run out.
enum Wait {
    /// The default real-time bound, in seconds. 30, not 10: CI runs the whole suite in
    /// parallel on two cores, and work that takes milliseconds alone (a few async hops, a
    /// child process's first output) was seen to exceed 10 s there, failing a healthy test.
    static let defaultSeconds: Double = 30

    /// Runs `operation` in a task of its own and returns its result, or throws ``WaitTimedOut``
    /// when it has not finished after `seconds` of real time. A timed-out operation is cancelled
    /// and left behind (a `withCheckedContinuation` that nobody resumes cannot be taken back),
    /// so the test fails instead of hanging the run.
    ///
    /// ```swift
    /// #expect(try await Wait.result("ready(timeout:)") { await client.ready(timeout: .seconds(5)) } == false)
    /// ```
    @discardableResult
    static func result<T: Sendable>(
        _ what: String, seconds: Double = defaultSeconds, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let claimed = Locked(false)
        let claim: @Sendable () -> Bool = {
            claimed.withLock { done in
                defer { done = true }
                return !done
            }
        }
        let work = Locked<Task<Void, Never>?>(nil)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let timer = Task {
                try? await Task.sleep(for: .seconds(seconds))
                guard !Task.isCancelled, claim() else { return }
                work.withLock { $0?.cancel() }
                continuation.resume(throwing: WaitTimedOut(what: what, seconds: seconds))
            }
            let body: @Sendable () async -> Void = {
                let outcome: Result<T, any Error>
                do { outcome = .success(try await operation()) } catch { outcome = .failure(error) }
                guard claim() else { return }
                timer.cancel()
                continuation.resume(with: outcome)
            }
            // Where the runtime has it, the operation starts at once on this thread, so it runs
            // in the same order as a plain `await` would (a `refresh()` right after creating a
            // client still joins the start-up fetch).
            let task: Task<Void, Never>
            if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
                task = Task.immediate { await body() }
            } else {
                task = Task { await body() }
            }
            work.withLock { $0 = task }
        }
    }

    /// Polls `condition` (every 2 ms) until it holds; throws ``WaitTimedOut`` when it still does
    /// not after `seconds` of real time.
    static func until(_ what: String, seconds: Double = defaultSeconds, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw WaitTimedOut(what: what, seconds: seconds) }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// ``until(_:seconds:_:)`` for a condition that must await (a server's request log).
    static func untilAsync(
        _ what: String, seconds: Double = defaultSeconds, _ condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while try await !condition() {
            guard ContinuousClock.now < deadline else { throw WaitTimedOut(what: what, seconds: seconds) }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Waits until at least `sleepers` tasks sleep on `clock` (the code under test armed its
    /// timer), then advances it by `duration`. Throws ``WaitTimedOut`` when nothing arms.
    static func advance(
        _ clock: ManualClock, by duration: Duration, sleepers: Int = 1, _ what: String = "a timer on the manual clock"
    ) async throws {
        try await until("\(what) (\(sleepers) sleeper(s))") { clock.sleeperCount >= sleepers }
        clock.advance(by: duration)
    }

    /// Waits until `group` is empty without blocking the calling thread (an async test must not
    /// hold one of the cooperative pool's few threads while other tests need it); throws
    /// ``WaitTimedOut`` after `seconds` of real time.
    static func until(_ group: DispatchGroup, _ what: String, seconds: Double = defaultSeconds) async throws {
        try await until(what, seconds: seconds) { group.wait(timeout: .now()) == .success }
    }

    /// Blocks the calling thread until `group` is empty; throws ``WaitTimedOut`` after `seconds`.
    static func blocking(_ group: DispatchGroup, _ what: String, seconds: Double = defaultSeconds) throws {
        guard group.wait(timeout: .now() + seconds) == .success else {
            throw WaitTimedOut(what: what, seconds: seconds)
        }
    }
}
