import CHalyardAtomics

/// Counters of reads that did not succeed, and the fatal flag the read path checks when there
/// is nothing to serve; one per ``FlagClient``, one per `FlagService` (shared by its views).
/// Successful reads are not counted: a shared counter would put an atomic read-modify-write on
/// every read; see docs/architecture.md.
package final class ReadCounters: @unchecked Sendable {
    private let words = UnsafeMutablePointer<hal_atomic_word>.allocate(capacity: 5)

    package init() { words.initialize(repeating: hal_atomic_word(value: 0), count: 5) }
    deinit { words.deallocate() }

    package enum Counter: Int {
        case notReady = 0, flagNotFound, typeMismatch, servedError
    }

    @inline(never)
    package func increment(_ counter: Counter) { _ = hal_fetch_add(words + counter.rawValue, 1) }
    package func value(_ counter: Counter) -> Int { Int(hal_load_relaxed(words + counter.rawValue)) }

    /// Whether the owner is fatal (PROVIDER_FATAL instead of PROVIDER_NOT_READY when empty).
    package var isFatal: Bool {
        get { hal_load_acquire(words + 4) != 0 }
        set { hal_store_release(words + 4, newValue ? 1 : 0) }
    }

    /// Counts a read that did not succeed, by its outcome (success and code default count nothing).
    @inline(never)
    func count(_ outcome: ReadOutcome) {
        switch outcome {
        case .notReady: increment(.notReady)
        case .flagNotFound: increment(.flagNotFound)
        case .typeMismatch: increment(.typeMismatch)
        case .servedError: increment(.servedError)
        case .success, .codeDefault: break
        }
    }

    /// Counts a read that served the default with `code`.
    @inline(never)
    package func count(_ code: FlagErrorCode) {
        switch code {
        case .providerNotReady, .providerFatal, .invalidContext: increment(.notReady)
        case .flagNotFound: increment(.flagNotFound)
        case .typeMismatch: increment(.typeMismatch)
        default: increment(.servedError)
        }
    }

    /// The counters as public stats.
    package var stats: ReadStats {
        ReadStats(
            notReady: value(.notReady), flagNotFound: value(.flagNotFound), typeMismatch: value(.typeMismatch),
            servedError: value(.servedError))
    }
}
