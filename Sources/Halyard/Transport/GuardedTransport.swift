import Dispatch
import Foundation

/// Halyard's own guards around any ``FlagTransport`` (a custom one included), applied wherever
/// Halyard sends: the client's refresh engine and install check, the exposure recorder (control
/// plane and OTLP) and service mode's fetcher.
///
/// - The deadline: ``TransportRequest/timeout`` is enforced here whatever the transport does. At
///   the deadline the transport's task is cancelled and the request fails with
///   ``TransportError/timedOut`` as soon as the transport returns; a transport that ignores
///   cancellation (one that never answers) is abandoned ``abandonAfter`` later, still with
///   ``TransportError/timedOut``: the caller has its answer either way. The caller's cancellation
///   fails it with ``TransportError/cancelled`` at once.
/// - A refused redirect (``TransportError/redirectRefused(origin:reason:)``) is logged once, as a
///   warning naming the target's `host:port` only.
package struct GuardedTransport: FlagTransport {
    /// The transport that sends.
    package let base: any FlagTransport
    /// How long after the deadline a transport that ignores cancellation is abandoned.
    package static let abandonAfter: Duration = .milliseconds(500)
    private let logHandler: HalyardLogRecordHandler?

    /// `transport` guarded, unless it already is.
    package static func wrapping(_ transport: any FlagTransport, logHandler: HalyardLogRecordHandler?)
        -> any FlagTransport
    {
        guarding(transport, logHandler: logHandler)
    }

    /// ``wrapping(_:logHandler:)`` as the guard's own type, for the callers of
    /// ``send(_:cancellation:)``.
    package static func guarding(_ transport: any FlagTransport, logHandler: HalyardLogRecordHandler?)
        -> GuardedTransport
    {
        (transport as? GuardedTransport) ?? GuardedTransport(base: transport, logHandler: logHandler)
    }

    private init(base: any FlagTransport, logHandler: HalyardLogRecordHandler?) {
        self.base = base
        self.logHandler = logHandler
    }

    package func send(_ request: TransportRequest) async throws -> TransportResponse {
        try await send(request, cancellation: nil)
    }

    /// ``send(_:)`` that `cancellation` may also end from outside the caller's task: the request
    /// then fails with ``TransportError/cancelled`` at once and the transport's task is
    /// cancelled, as when the caller is cancelled (service mode's `setKey` ends the requests of
    /// a replaced key so: SPEC §12). No task is created for it.
    package func send(_ request: TransportRequest, cancellation: RequestCancellation?) async throws
        -> TransportResponse
    {
        do {
            return try await Self.withDeadline(request.timeout, cancellation: cancellation) { [base] in
                try await base.send(request)
            }
        } catch TransportError.redirectRefused(let origin, let reason) {
            logHandler?(
                HalyardLogRecord(
                    .warning, "redirect to \(origin) not followed (\(reason.rawValue)): \(request.method) failed",
                    .transport,
                    [
                        HalyardLogRecord.Key.origin: HalyardLogRecord.origin(request.url),
                        HalyardLogRecord.Key.reason: reason.rawValue,
                    ]))
            throw TransportError.redirectRefused(origin: origin, reason: reason)
        }
    }

    /// Runs `operation` in a task of its own and returns its result, or fails with
    /// ``TransportError/timedOut`` once `timeout` has passed (real time), whichever is first.
    /// The caller's cancellation, or `cancellation`'s, fails it with
    /// ``TransportError/cancelled`` at once and cancels the operation's task.
    static func withDeadline<T: Sendable>(
        _ timeout: Duration, abandonAfter: Duration = abandonAfter, cancellation: RequestCancellation? = nil,
        _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let outcome = OneShot<Result<T, any Error>>()
        let deadlinePassed = Locked(false)
        let body: @Sendable () async -> Void = {
            let result: Result<T, any Error>
            do {
                result = .success(try await operation())
            } catch {
                result = .failure(error)
            }
            // Whatever the operation says once its deadline passed (usually `cancelled`), the
            // request timed out.
            outcome.finish(deadlinePassed.value ? .failure(TransportError.timedOut) : result)
        }
        // The operation starts at once on this thread (where the runtime can), so a transport that
        // answers without suspending costs no extra scheduling, and nothing else is created.
        let work: Task<Void, Never>
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            work = Task.immediate(operation: body)
        } else {
            work = Task(operation: body)
        }
        if outcome.isFinished {
            return try await withCheckedContinuation { outcome.attach($0) }.get()
        }
        // Cancelled from outside (a replaced key): like the caller's cancellation below, in the
        // task the operation already runs in.
        cancellation?.whenCancelled {
            if outcome.finish(.failure(TransportError.cancelled)) { work.cancel() }
        }
        defer { cancellation?.clear() }
        // The deadline is a Dispatch timer, not a sleeping task: a cancelled `Task.sleep` keeps its
        // allocation until the time it would have woken (and on Linux some of it for good: ~700
        // bytes per request in flight at the request timeout, ~50 bytes per request after; issue
        // 20, item 4), while a cancelled timer source is freed at once.
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.setEventHandler {
            // At the deadline the operation is cancelled; one that stops (every transport of
            // Halyard's does at once) ends the request now, after its own clean-up, so whoever
            // wraps the transport sees it finish first. One that ignores cancellation is
            // abandoned after `abandonAfter` (only timed-out requests get this second timer).
            deadlinePassed.withLock { $0 = true }
            work.cancel()
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.dispatchInterval(abandonAfter)) {
                outcome.finish(.failure(TransportError.timedOut))
            }
        }
        timer.schedule(deadline: .now() + Self.dispatchInterval(max(timeout, .milliseconds(1))))
        timer.activate()
        defer { timer.cancel() }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { outcome.attach($0) }
        } onCancel: {
            if outcome.finish(.failure(TransportError.cancelled)) { work.cancel() }
        }
        return try result.get()
    }

    /// `duration` for a Dispatch deadline (whole nanoseconds, saturating).
    static func dispatchInterval(_ duration: Duration) -> DispatchTimeInterval {
        .nanoseconds(Int(clamping: max(duration.saturatingNanoseconds, 0)))
    }
}

extension GuardedTransport {
    /// The stream capability (SPEC §14) of `transport`, looking through the guard: a stream has
    /// no total deadline (it would end every healthy stream), so it is opened on the transport
    /// itself; the stream machine bounds the wait for its head and its read inactivity instead.
    package static func streaming(_ transport: any FlagTransport) -> (any StreamingTransport)? {
        ((transport as? GuardedTransport)?.base ?? transport) as? any StreamingTransport
    }
}
