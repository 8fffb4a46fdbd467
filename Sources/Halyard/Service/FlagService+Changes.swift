extension FlagService {
    /// Runs `body` with a stream of the flag keys whose served result changed (value, variant,
    /// reason or error, or added or removed) for `context`, and ends it when `body` returns or
    /// throws. The service's counterpart of ``FlagClient/withChanges(bufferingPolicy:isolation:_:)``,
    /// for one context of the many it holds.
    ///
    /// ```swift
    /// try await service.withChanges(for: context) { changes in
    ///     for await keys in changes where keys.contains("checkout.new") {
    ///         await reloadCheckout()
    ///     }
    /// }
    /// ```
    ///
    /// - A set is delivered when new values for the context are stored (a fetch's or the
    ///   shared cache's answer, a refresh after ``FlagServiceOptions/refreshAfter``, an event
    ///   stream's refetch) and differ from the ones held; the first values of a context not held
    ///   yet report every key. Watching fetches nothing by itself: the context's values are
    ///   fetched and refreshed as reads and the event stream fetch them.
    /// - Bounded: while `body` is not reading, the changed keys are merged into one pending set
    ///   (never more than the context's flag keys), which the next iteration gets; no change is
    ///   lost and nothing queues up.
    /// - The stream finishes when `body` returns or throws, when the service closes, when the
    ///   task iterating it is cancelled, and at once for a service closed already or an
    ///   invalid context.
    ///
    /// - Parameters:
    ///   - context: The context watched (fitted as ``flags(for:)-(EvaluationContext)`` fits it).
    ///   - isolation: Where `body` runs; *default* the caller's.
    ///   - body: Receives the stream; what it returns is returned.
    public func withChanges<R>(
        for context: EvaluationContext, isolation: isolated (any Actor)? = #isolation,
        _ body: (AsyncStream<Set<String>>) async throws -> R
    ) async rethrows -> R {
        let fitted = try? context.fitted(limit: options.maxContextCodeUnits)
        return try await withChanges(fingerprint: fitted?.fingerprint, body)
    }

    /// ``withChanges(for:isolation:_:)-(EvaluationContext,_,_)`` for a context fitted already.
    public func withChanges<R>(
        for fitted: FittedContext, isolation: isolated (any Actor)? = #isolation,
        _ body: (AsyncStream<Set<String>>) async throws -> R
    ) async rethrows -> R {
        try await withChanges(fingerprint: fitted.fingerprint, body)
    }

    private func withChanges<R>(
        fingerprint: String?, isolation: isolated (any Actor)? = #isolation,
        _ body: (AsyncStream<Set<String>>) async throws -> R
    ) async rethrows -> R {
        let buffer: ContextChangeBuffer
        let end: @Sendable () -> Void
        if let fingerprint, !isClosed {
            (buffer, end) = changes.open(fingerprint)
        } else {
            buffer = ContextChangeBuffer()
            buffer.finish()
            end = {}
        }
        // A close() that ran before open registered the buffer finished the hub: open then
        // returned a finished buffer.
        defer { end() }
        let stream = AsyncStream<Set<String>>(unfolding: { await buffer.next() }, onCancel: { buffer.finish() })
        return try await body(stream)
    }

    /// Reports the keys that differ between the values a context held and the new ones stored
    /// for it, when someone watches it (called outside the cache's locks).
    func noteStored(_ fresh: Snapshot, replacing held: Snapshot?, for fingerprint: String) {
        guard changes.isWatching(fingerprint), fresh !== held else { return }
        let keys = ServedFlag.changedKeys(from: held?.flags ?? [], to: fresh.flags)
        changes.deliver(keys, for: fingerprint)
    }
}
