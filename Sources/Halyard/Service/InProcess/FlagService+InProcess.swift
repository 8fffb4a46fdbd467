import CHalyardAtomics

// A service built with `FlagServiceOptions.definitions` (SPEC §17, docs/in-process.md): its
// views are the usual `ContextFlags`, over a snapshot evaluated here from the definitions
// instead of one fetched per context.

extension FlagService {
    /// Checks the definitions source now (or joins the check running) and returns once it is
    /// done: new definitions are then in use, for every context's next read. Does nothing
    /// without ``FlagServiceOptions/definitions``, after ``close()``, or while a `Retry-After`
    /// of the HTTP source forbids it.
    public func checkDefinitions() async {
        await inProcess?.feed.check()
    }

    /// A view evaluated in process for `context`: the results held for it from the current
    /// definitions, or evaluated now. Before the first definitions load it waits at most
    /// `coldFetchTimeout` when `wait` (then, or without waiting, the view serves defaults with
    /// `PROVIDER_NOT_READY`). An invalid context serves `INVALID_CONTEXT`, as without
    /// definitions.
    func evaluatedFlags(for context: EvaluationContext, _ evaluator: InProcessEvaluator, wait: Bool) async
        -> ContextFlags
    {
        guard let entry = fit(context) else { return invalidView() }
        guard let generation = await definitions(evaluator, wait: wait) else {
            return unavailableView(.providerNotReady, entry.fitted.fingerprint)
        }
        return ContextFlags(snapshot: evaluator.snapshot(for: entry, context, generation), environment: environment)
    }

    /// ``evaluatedFlags(for:_:wait:)-(EvaluationContext,_,_)`` without waiting (for
    /// ``flagsIfCached(for:)-(EvaluationContext)``).
    func evaluatedFlags(for context: EvaluationContext, _ evaluator: InProcessEvaluator) -> ContextFlags {
        guard let entry = fit(context) else { return invalidView() }
        guard let generation = evaluator.current else {
            return unavailableView(.providerNotReady, entry.fitted.fingerprint)
        }
        return ContextFlags(snapshot: evaluator.snapshot(for: entry, context, generation), environment: environment)
    }

    /// A view evaluated in process for a context given fitted: its kept attributes only (a
    /// fitted context has no private ones), evaluated at each call.
    func evaluatedFlags(for fitted: FittedContext, _ evaluator: InProcessEvaluator, wait: Bool) async
        -> ContextFlags
    {
        guard let generation = await definitions(evaluator, wait: wait) else {
            return unavailableView(.providerNotReady, fitted.fingerprint)
        }
        return ContextFlags(snapshot: evaluator.snapshot(for: fitted, generation), environment: environment)
    }

    /// ``evaluatedFlags(for:_:wait:)-(FittedContext,_,_)`` without waiting.
    func evaluatedFlags(for fitted: FittedContext, _ evaluator: InProcessEvaluator) -> ContextFlags {
        guard let generation = evaluator.current else { return unavailableView(.providerNotReady, fitted.fingerprint) }
        return ContextFlags(snapshot: evaluator.snapshot(for: fitted, generation), environment: environment)
    }

    /// The definitions in use; before the first load, when `wait`, the first ones, waited for
    /// at most `coldFetchTimeout` (counted as a cold wait, and as its timeout when they do not
    /// come).
    private func definitions(_ evaluator: InProcessEvaluator, wait: Bool) async -> DefinitionsGeneration? {
        if let current = evaluator.current { return current }
        guard wait, !isClosed else { return nil }
        _ = hal_fetch_add(word(.coldWaits), 1)
        let first = await evaluator.firstDefinitions(timeout: options.coldFetchTimeout)
        if first == nil { _ = hal_fetch_add(word(.coldWaitTimeouts), 1) }
        return first
    }
}
