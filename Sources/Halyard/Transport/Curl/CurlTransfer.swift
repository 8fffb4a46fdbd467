#if canImport(CHalyardCurl)
    /// What ``CurlMulti`` drives: one easy handle with a deadline and a one-time completion. A
    /// request (``CurlExchange``) and an event stream (``CurlStreamTransfer``) are both one.
    ///
    /// `complete(_:)`, `expire()`, `deadline`, `receiveHeader(_:)` and `receiveBody(_:)` (the
    /// handle's callbacks) run on the driver thread; `isFinished`, `fail(_:)` and `submitted`
    /// (under the multi's queue lock) on any thread.
    protocol CurlTransfer: AnyObject, Sendable {
        /// The easy handle and what every transfer sets up on it alike.
        var handle: CurlEasyHandle { get }
        /// When the driver removes the transfer and calls ``expire()``.
        var deadline: ContinuousClock.Instant { get }
        /// Whether the transfer has its outcome (the driver then removes it).
        var isFinished: Bool { get }
        /// Whether it was handed to ``CurlMulti/add(_:)``.
        var submitted: Bool { get set }
        /// One raw header line as libcurl received it; `false` aborts the transfer.
        func receiveHeader(_ line: UnsafeRawBufferPointer) -> Bool
        /// Body bytes as libcurl received them; `false` aborts the transfer.
        func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool
        /// libcurl finished the transfer with this `CURLcode`.
        func complete(_ code: Int32)
        /// The driver removed the transfer at its deadline (or after it finished).
        func expire()
        /// Fails the transfer (once).
        func fail(_ error: TransportError)
    }

    extension CurlTransfer {
        /// The easy handle, as ``CurlMulti`` adds, removes and finds it.
        var easy: UnsafeMutableRawPointer { handle.easy }
    }

    extension CurlExchange: CurlTransfer {}
#endif
