import Halyard

/// The client calls that return only when the sync engine resumes their caller, bounded in real
/// time (``Wait``): a test fails with a message instead of hanging the run when a change makes
/// the engine lose a waiter.
extension FlagClient {
    /// `refresh()`, bounded.
    func refreshOrFail(seconds: Double = Wait.defaultSeconds) async throws {
        try await Wait.result("refresh()", seconds: seconds) { await self.refresh() }
    }

    /// `refreshIfStale()`, bounded.
    func refreshIfStaleOrFail(seconds: Double = Wait.defaultSeconds) async throws {
        try await Wait.result("refreshIfStale()", seconds: seconds) { await self.refreshIfStale() }
    }
}
