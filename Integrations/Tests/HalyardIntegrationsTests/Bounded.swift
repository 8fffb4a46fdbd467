/// Runs `body`, cancelling it once `bound` (real time) has passed: a watch or a service that
/// never ends makes its test fail (its loop ends at cancellation) instead of hang. A bound, not
/// a deadline: no assertion depends on it passing.
func cancelled<T: Sendable>(after bound: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try? await Task.sleep(for: bound)
            return nil
        }
        while let result = try await group.next() {
            if let value = result {
                group.cancelAll()
                return value
            }
            group.cancelAll()  // the bound passed: `body` ends at its cancellation
        }
        throw CancellationError()
    }
}
