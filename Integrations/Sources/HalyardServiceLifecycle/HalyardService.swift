public import Halyard
public import Logging
public import ServiceLifecycle

/// Runs a ``FlagClient`` or a ``FlagService`` as a `Service` of a `ServiceGroup`: it waits for
/// the group's graceful shutdown, then flushes the exposures still pending within a deadline
/// and closes the reader.
///
/// ```swift
/// let service = try FlagService(options: options)
/// let group = ServiceGroup(
///     services: [HalyardService(service: service, logger: logger), httpServer],
///     gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
///
/// The reader is created (and starts fetching) before the group runs, so requests can read it
/// at once; this service owns only its end. On graceful shutdown a client is shut down with
/// ``FlagClient/shutdown(timeout:)`` (its final exposure flush and pending cache writes, at most
/// `shutdownTimeout`), a service flushes with ``FlagService/flushExposures()`` (at most
/// `shutdownTimeout`) and is closed. Cancellation is honoured at any point: the reader is closed
/// at once, without waiting for a flush (its final flush still runs detached), and `run()`
/// throws `CancellationError`. `run()` returns after the shutdown; the outcome is logged and
/// passed to `onShutdown`.
public struct HalyardService: Service {
    /// What the shutdown achieved.
    public struct Outcome: Sendable, Hashable {
        /// Exposures sent by the final flush.
        public var sentEvents: Int
        /// Exposures still unsent when the deadline passed (lost when the process exits).
        public var lostEvents: Int
        /// Whether the flush ended before the deadline.
        public var completed: Bool

        /// Creates an outcome.
        public init(sentEvents: Int, lostEvents: Int, completed: Bool) {
            self.sentEvents = sentEvents
            self.lostEvents = lostEvents
            self.completed = completed
        }
    }

    private enum Reader: Sendable {
        case client(FlagClient)
        case service(FlagService)
    }

    private let reader: Reader
    private let shutdownTimeout: Duration
    private let clock: any HalyardClock
    private let logger: Logger?
    private let onShutdown: (@Sendable (Outcome) -> Void)?

    /// Runs a client: on graceful shutdown, ``FlagClient/shutdown(timeout:)``.
    ///
    /// - Parameters:
    ///   - client: The client; created by the caller, closed by this service.
    ///   - shutdownTimeout: The most the final flush may take (on the client's own clock);
    ///     *default* 5 s.
    ///   - logger: Receives one record of the shutdown's outcome; *default* none.
    ///   - onShutdown: Called once with the outcome, when the shutdown has ended; *default*
    ///     none.
    public init(
        client: FlagClient, shutdownTimeout: Duration = .seconds(5), logger: Logger? = nil,
        onShutdown: (@Sendable (Outcome) -> Void)? = nil
    ) {
        reader = .client(client)
        self.shutdownTimeout = shutdownTimeout
        self.clock = SystemClock()
        self.logger = logger
        self.onShutdown = onShutdown
    }

    /// Runs a service: on graceful shutdown, ``FlagService/flushExposures()`` within
    /// `shutdownTimeout`, then ``FlagService/close()``.
    ///
    /// - Parameters:
    ///   - service: The service; created by the caller, closed by this service.
    ///   - shutdownTimeout: The most the final flush may take; *default* 5 s.
    ///   - clock: Times the deadline; *default* the system clock.
    ///   - logger: Receives one record of the shutdown's outcome; *default* none.
    ///   - onShutdown: Called once with the outcome, when the shutdown has ended; *default*
    ///     none.
    public init(
        service: FlagService, shutdownTimeout: Duration = .seconds(5), clock: any HalyardClock = SystemClock(),
        logger: Logger? = nil, onShutdown: (@Sendable (Outcome) -> Void)? = nil
    ) {
        reader = .service(service)
        self.shutdownTimeout = shutdownTimeout
        self.clock = clock
        self.logger = logger
        self.onShutdown = onShutdown
    }

    /// Waits for the graceful shutdown, then flushes and closes (see the type's documentation).
    /// Throws `CancellationError` when cancelled, after closing the reader.
    public func run() async throws {
        do {
            try await gracefulShutdown()
        } catch {
            close()
            throw error
        }
        let outcome: Outcome?
        switch reader {
        case .client(let client):
            let timeout = shutdownTimeout
            let report = await CancellableWait.value { await client.shutdown(timeout: timeout) }
            outcome = report.map {
                Outcome(sentEvents: $0.sentEvents, lostEvents: $0.lostEvents, completed: $0.completed)
            }
        case .service(let service):
            outcome = await flushWithinDeadline(service)
        }
        close()
        guard let outcome else {
            logger?.debug("Halyard shutdown cancelled before its flush ended", source: "Halyard")
            throw CancellationError()
        }
        logger?.log(
            level: outcome.lostEvents > 0 ? .warning : .info, "Halyard shut down",
            metadata: [
                "halyard.exposures.sent": "\(outcome.sentEvents)", "halyard.exposures.lost": "\(outcome.lostEvents)",
                "halyard.shutdown.completed": "\(outcome.completed)",
            ], source: "Halyard")
        onShutdown?(outcome)
    }

    /// The service's flush, or what is pending when the deadline passes first; nil when
    /// cancelled.
    private func flushWithinDeadline(_ service: FlagService) async -> Outcome? {
        let clock = self.clock
        let timeout = shutdownTimeout
        let result: ExposureFlushResult?? = await CancellableWait.value {
            await withTaskGroup(of: ExposureFlushResult?.self) { group in
                group.addTask { await service.flushExposures() }
                group.addTask {
                    try? await clock.sleep(for: max(timeout, .zero))
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
        }
        guard let result else { return nil }
        guard let flushed = result else {
            return Outcome(sentEvents: 0, lostEvents: service.stats.exposures.pending, completed: false)
        }
        return Outcome(sentEvents: flushed.sentEvents, lostEvents: flushed.pendingEvents, completed: true)
    }

    private func close() {
        switch reader {
        case .client(let client): client.close()
        case .service(let service): service.close()
        }
    }
}
