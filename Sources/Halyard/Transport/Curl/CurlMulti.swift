#if canImport(CHalyardCurl)
    import CHalyardCurl
    import Foundation
    import CDispatch
    import Glibc

    /// A `curl_multi` and the one thread that drives it; the process shares one (``shared``) for
    /// every ``CurlTransport``.
    ///
    /// Created on first use and kept for the life of the process (it holds libcurl's connection
    /// and DNS caches, so requests of all clients reuse connections). The driver thread is started
    /// when a request arrives and no thread runs, and exits once no transfer has been active for
    /// ``idleLinger``: an idle process has no thread here. Other threads only queue additions and
    /// removals (under a lock) and wake the thread with `curl_multi_wakeup`; everything else —
    /// the multi handle, the easy handles while they are added, and the transfer callbacks — is
    /// touched by the driver thread alone, one thread at a time (a new thread starts only after
    /// the previous one gave up the handle under the lock).
    ///
    /// Every transfer has a deadline of its own, enforced here whatever libcurl does (transfers
    /// queued behind ``maxHostConnections`` have had version-dependent timeout bugs): past it, the
    /// driver removes the handle and fails the request with ``TransportError/timedOut``.
    final class CurlMulti: @unchecked Sendable {
        /// The process's instance on the process's libcurl, or why there is none (the default
        /// transport then falls back to URLSession).
        static let shared: Result<CurlMulti, CurlUnavailable> = CurlLibrary.shared.flatMap { library in
            Result { () throws(CurlUnavailable) in try CurlMulti(library: library) }
        }

        /// The most connections open to one host at a time.
        static let maxHostConnections = 16

        /// How long the driver thread stays after the last transfer finished.
        static let idleLinger: Duration = .seconds(1)

        private struct Queue {
            var additions: [any CurlTransfer] = []
            var removals: [any CurlTransfer] = []
            var threadRunning = false
        }

        /// The library the handles belong to.
        let library: CurlLibrary
        /// How long after a request's deadline libcurl's own timeout would end it (`nil`: never;
        /// the driver's deadline alone holds, for the tests that prove it).
        let libcurlBackstop: Duration?
        private let multi: UnsafeMutableRawPointer
        private let queue = Locked(Queue())
        /// Transfers added to the multi handle, by easy handle (driver thread only).
        private var active: [UnsafeMutableRawPointer: any CurlTransfer] = [:]
        /// The number of transfers in `active`, readable from any thread (tests, diagnostics).
        private let activeCount = Locked(0)

        /// Creates a multi handle on `library`; throws when `curl_multi_init` fails, the library
        /// refuses the connection limit, or an easy handle cannot be given the options every
        /// request relies on (protocols, TLS verification, timeouts).
        init(library: CurlLibrary, libcurlBackstop: Duration? = .seconds(1)) throws(CurlUnavailable) {
            self.library = library
            self.libcurlBackstop = libcurlBackstop
            guard let multi = hal_curl_multi_init(library.api) else {
                throw CurlUnavailable(reason: "curl_multi_init failed")
            }
            self.multi = multi
            // Multiplexing is a preference (HTTP/2 over TLS); the connection limit is a bound.
            _ = hal_curl_multi_setopt_long(library.api, multi, CurlABI.multiPipelining, CurlABI.pipeMultiplex)
            // At most this many connections to one host; further HTTP/1.1 requests wait for a free
            // one (within their deadline), HTTP/2 requests share one connection.
            let code = hal_curl_multi_setopt_long(
                library.api, multi, CurlABI.multiMaxHostConnections, Self.maxHostConnections)
            guard code == CurlABI.ok else {
                _ = hal_curl_multi_cleanup(library.api, multi)
                throw CurlUnavailable(reason: "libcurl \(library.version) refused CURLMOPT_MAX_HOST_CONNECTIONS")
            }
            do throws(TransportError) {
                // A probe: every option a request relies on must be accepted, or the transport is
                // not used at all.
                guard let url = URL(string: "https://127.0.0.1/") else { throw TransportError.network("probe URL") }
                let probe = TransportRequest(method: "POST", url: url, headers: ["A": "b"], body: Data("{}".utf8))
                _ = try CurlExchange(probe, trustedCAFile: nil, library: library)
            } catch {
                _ = hal_curl_multi_cleanup(library.api, multi)
                throw CurlUnavailable(reason: "\(error)")
            }
        }

        /// Queues a transfer and makes sure a driver thread runs.
        func add(_ exchange: any CurlTransfer) {
            let start = queue.withLock { q -> Bool in
                exchange.submitted = true
                q.additions.append(exchange)
                if q.threadRunning { return false }
                q.threadRunning = true
                return true
            }
            if start { startThread() } else { _ = hal_curl_multi_wakeup(library.api, multi) }
        }

        /// Queues the removal of a transfer (cancellation); its easy handle leaves the multi handle
        /// on the driver thread. A transfer never handed to ``add(_:)`` leaves nothing behind.
        func remove(_ exchange: any CurlTransfer) {
            let wake = queue.withLock { q -> Bool in
                guard exchange.submitted else { return false }
                if let index = q.additions.firstIndex(where: { $0 === exchange }) {
                    q.additions.remove(at: index)
                    return false
                }
                q.removals.append(exchange)
                return q.threadRunning
            }
            if wake { _ = hal_curl_multi_wakeup(library.api, multi) }
        }

        /// What is queued or in flight: (additions, removals, transfers on the multi handle).
        var pending: (additions: Int, removals: Int, active: Int) {
            let (additions, removals) = queue.withLock { ($0.additions.count, $0.removals.count) }
            return (additions, removals, activeCount.value)
        }

        private func startThread() {
            var attributes = pthread_attr_t()
            pthread_attr_init(&attributes)
            defer { pthread_attr_destroy(&attributes) }
            pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
            pthread_attr_setstacksize(&attributes, 512 << 10)
            var thread = pthread_t()
            let context = Unmanaged.passRetained(self)
            let rc = pthread_create(
                &thread, &attributes,
                { context in
                    guard let context else { return nil }
                    let multi = Unmanaged<CurlMulti>.fromOpaque(context).takeRetainedValue()
                    multi.run()
                    return nil
                }, context.toOpaque())
            if rc != 0 {
                context.release()
                // No thread: fail what was queued rather than leave it waiting.
                let stranded = queue.withLock { q -> [any CurlTransfer] in
                    defer {
                        q.additions = []
                        q.removals = []
                        q.threadRunning = false
                    }
                    return q.additions
                }
                for exchange in stranded { exchange.fail(.network("could not start the transfer thread")) }
            }
        }

        /// The driver loop: apply queued changes, perform, collect finished transfers, expire
        /// overdue ones, poll.
        private func run() {
            var idleSince: ContinuousClock.Instant?
            while true {
                let now = ContinuousClock.now
                let (additions, removals, exit) = queue.withLock {
                    q -> ([any CurlTransfer], [any CurlTransfer], Bool) in
                    if q.additions.isEmpty, q.removals.isEmpty, active.isEmpty, let idleSince,
                        now - idleSince >= Self.idleLinger
                    {
                        q.threadRunning = false
                        return ([], [], true)
                    }
                    defer {
                        q.additions = []
                        q.removals = []
                    }
                    return (q.additions, q.removals, false)
                }
                if exit { return }
                for exchange in additions where !exchange.isFinished {
                    if hal_curl_multi_add_handle(library.api, multi, exchange.easy) == CurlABI.ok {
                        active[exchange.easy] = exchange
                    } else {
                        exchange.fail(.network("curl_multi_add_handle failed"))
                    }
                }
                for exchange in removals where active.removeValue(forKey: exchange.easy) != nil {
                    _ = hal_curl_multi_remove_handle(library.api, multi, exchange.easy)
                }
                var running: Int32 = 0
                _ = hal_curl_multi_perform(library.api, multi, &running)
                collectFinished()
                expireOverdue(at: ContinuousClock.now)
                activeCount.withLock { $0 = active.count }
                if active.isEmpty {
                    if idleSince == nil { idleSince = ContinuousClock.now }
                } else {
                    idleSince = nil
                }
                _ = hal_curl_multi_poll(library.api, multi, pollTimeout(idleSince: idleSince), nil)
            }
        }

        private func collectFinished() {
            var easy: UnsafeMutableRawPointer?
            var result: Int32 = 0
            while hal_curl_multi_info_read_done(library.api, multi, &easy, &result) == 1 {
                guard let handle = easy else { continue }
                // The message is invalid once its handle is removed: everything is read above.
                _ = hal_curl_multi_remove_handle(library.api, multi, handle)
                active.removeValue(forKey: handle)?.complete(result)
            }
        }

        /// Removes and fails every transfer past its deadline (queued behind the connection limit
        /// included).
        private func expireOverdue(at now: ContinuousClock.Instant) {
            for (easy, exchange) in active where exchange.deadline <= now || exchange.isFinished {
                active.removeValue(forKey: easy)
                _ = hal_curl_multi_remove_handle(library.api, multi, easy)
                exchange.expire()
            }
        }

        /// Milliseconds to wait in `curl_multi_poll`: libcurl's own timer or the nearest deadline
        /// while transfers run (at most 1 s), the rest of the linger when idle.
        private func pollTimeout(idleSince: ContinuousClock.Instant?) -> Int32 {
            if let idleSince {
                let left = Self.idleLinger - (ContinuousClock.now - idleSince)
                return Int32(clamping: max(Self.millisecondsAndOne(left), 1))
            }
            var timeout = -1
            _ = hal_curl_multi_timeout(library.api, multi, &timeout)
            var wait = timeout < 0 ? 1000 : min(timeout, 1000)
            if let nearest = active.values.lazy.map(\.deadline).min() {
                wait = min(wait, max(Self.millisecondsAndOne(nearest - ContinuousClock.now), 0))
            }
            return Int32(clamping: wait)
        }

        /// `duration`'s whole milliseconds (truncated toward zero) and one more, so a poll wakes
        /// after the time, not before it; saturating (a far deadline or a negative one is no trap).
        static func millisecondsAndOne(_ duration: Duration) -> Int {
            let (sum, overflow) = Int(clamping: duration.saturatingMilliseconds).addingReportingOverflow(1)
            return overflow ? .max : sum
        }
    }
#endif
