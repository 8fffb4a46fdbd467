import Foundation

extension FlagClient {
    /// The client's exposure recorder (nil offline).
    package var exposureRecorder: ExposureRecorder? { sync?.recorder }

    /// Records that the user saw flag `key` now ("exposure" semantics for flags read earlier or
    /// elsewhere). Uses the variant and reason currently served for `key` and goes through the
    /// same de-duplication and sampling as automatic exposures. Records nothing when the flag is
    /// not served, was served with an error, offline, or after `close()`.
    ///
    /// ```swift
    /// flags.recordExposure("checkout.new")   // the new checkout button is on screen now
    /// ```
    public func recordExposure(_ key: String) {
        guard let sink = exposureSink else { return }
        let candidate = store.withCurrent { snapshot in snapshot.flatMap { ReadRules.exposureCandidate($0, key) } }
        guard let (variant, reason, fingerprint, value, metadata) = candidate else { return }
        _ = sink.recordExposure(
            key: key, variant: variant, reason: reason, contextFingerprint: fingerprint, value: value, errorCode: nil,
            metadata: metadata)
    }

    /// Uploads pending exposures now and reports what happened. Honours a backoff or
    /// `Retry-After` in force (reported in ``ExposureFlushResult/retryAfter`` rather than
    /// waited for). Offline clients have nothing to flush.
    @discardableResult
    public func flushExposures() async -> ExposureFlushResult {
        guard let recorder = exposureRecorder else { return ExposureFlushResult() }
        return await recorder.flush()
    }
}
