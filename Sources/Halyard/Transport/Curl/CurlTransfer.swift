#if canImport(CHalyardCurl)
    /// What ``CurlMulti`` drives: one easy handle with a deadline and a one-time completion. A
    /// request (``CurlExchange``) and an event stream (``CurlStreamTransfer``) are both one.
    ///
    /// `complete(_:)`, `expire()`, `deadline` and the handle's callbacks run on the driver thread;
    /// `isFinished`, `fail(_:)` and `submitted` (under the multi's queue lock) on any thread.
    protocol CurlTransfer: AnyObject, Sendable {
        /// The easy handle.
        var easy: UnsafeMutableRawPointer { get }
        /// When the driver removes the transfer and calls ``expire()``.
        var deadline: ContinuousClock.Instant { get }
        /// Whether the transfer has its outcome (the driver then removes it).
        var isFinished: Bool { get }
        /// Whether it was handed to ``CurlMulti/add(_:)``.
        var submitted: Bool { get set }
        /// libcurl finished the transfer with this `CURLcode`.
        func complete(_ code: Int32)
        /// The driver removed the transfer at its deadline (or after it finished).
        func expire()
        /// Fails the transfer (once).
        func fail(_ error: TransportError)
    }

    extension CurlExchange: CurlTransfer {}
#endif
