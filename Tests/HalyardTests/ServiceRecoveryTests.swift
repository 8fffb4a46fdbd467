import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// Service mode: the memo of fitted contexts under concurrent misses (SPEC §12,
/// docs/service.md, "The warm path").
@Suite struct ServiceRecoveryTests {
    /// Two requests that miss the memo for the same context at once insert one entry: the
    /// second finds the first's and returns it (before: both inserted, two entries).
    @Test func twoConcurrentMissesOfOneContextInsertOneMemoEntry() throws {
        let memo = FittingMemo(maxCount: 1_000, maxBytes: 1 << 20)
        let context = serviceContext(3)
        let arrived = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let entries = Locked<[FittingMemo.Entry]>([])
        for _ in 0..<2 {
            Thread {
                let entry = try? memo.entry(context) { (c) throws(ContextError) in
                    arrived.signal()
                    _ = go.wait(timeout: .now() + 30)
                    return try c.fitted()
                }
                if let entry { entries.withLock { $0.append(entry) } }
                done.signal()
            }.start()
        }
        // Both missed: both are fitting at once.
        #expect(arrived.wait(timeout: .now() + 30) == .success)
        #expect(arrived.wait(timeout: .now() + 30) == .success)
        go.signal()
        go.signal()
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(memo.totals.count == 1)
        let both = entries.withLock { $0 }
        #expect(both.count == 2 && both.first === both.last)
    }
}
