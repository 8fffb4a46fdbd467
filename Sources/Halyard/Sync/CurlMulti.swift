#if canImport(CCurl)
    import CCurl
    import Foundation

    /// The process's one `curl_multi` and the one thread that drives it, shared by every
    /// ``CurlTransport``.
    ///
    /// Created on first use and kept for the life of the process (it holds libcurl's connection
    /// and DNS caches, so requests of all clients reuse connections). The driver thread is started
    /// when a request arrives and no thread runs, and exits once no transfer has been active for
    /// ``idleLinger``: an idle process has no thread here. Other threads only queue additions and
    /// removals (under a lock) and wake the thread with `curl_multi_wakeup`; everything else —
    /// the multi handle, the easy handles while they are added, and the transfer callbacks — is
    /// touched by the driver thread alone, one thread at a time (a new thread starts only after
    /// the previous one gave up the handle under the lock).
    final class CurlMulti: @unchecked Sendable {
        /// The shared instance.
        static let shared = CurlMulti()

        /// The most connections open to one host at a time.
        static let maxHostConnections = 16

        /// How long the driver thread stays after the last transfer finished.
        static let idleLinger: Duration = .seconds(1)

        private struct Queue {
            var additions: [CurlExchange] = []
            var removals: [CurlExchange] = []
            var threadRunning = false
        }

        private let multi: UnsafeMutableRawPointer
        private let queue = Locked(Queue())
        /// Transfers added to the multi handle, by easy handle (driver thread only).
        private var active: [UnsafeMutableRawPointer: CurlExchange] = [:]

        private init() {
            _ = halyard_curl_global_init()
            guard let multi = curl_multi_init() else { fatalError("curl_multi_init failed (out of memory)") }
            self.multi = multi
            _ = halyard_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX)
            // At most this many connections to one host; further HTTP/1.1 requests wait for a free
            // one (within their deadline), HTTP/2 requests share one connection.
            _ = halyard_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, Self.maxHostConnections)
        }

        /// Queues a transfer and makes sure a driver thread runs.
        func add(_ exchange: CurlExchange) {
            let start = queue.withLock { q -> Bool in
                q.additions.append(exchange)
                if q.threadRunning { return false }
                q.threadRunning = true
                return true
            }
            if start { startThread() } else { curl_multi_wakeup(multi) }
        }

        /// Queues the removal of a transfer (cancellation); its easy handle leaves the multi handle
        /// on the driver thread.
        func remove(_ exchange: CurlExchange) {
            let wake = queue.withLock { q -> Bool in
                if let index = q.additions.firstIndex(where: { $0 === exchange }) {
                    q.additions.remove(at: index)
                    return false
                }
                q.removals.append(exchange)
                return q.threadRunning
            }
            if wake { curl_multi_wakeup(multi) }
        }

        private func startThread() {
            var attributes = pthread_attr_t()
            pthread_attr_init(&attributes)
            defer { pthread_attr_destroy(&attributes) }
            pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
            pthread_attr_setstacksize(&attributes, 512 << 10)
            var thread = pthread_t()
            let rc = pthread_create(
                &thread, &attributes,
                { _ in
                    CurlMulti.shared.run()
                    return nil
                }, nil)
            if rc != 0 {
                // No thread: fail what was queued rather than leave it waiting.
                let stranded = queue.withLock { q -> [CurlExchange] in
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

        /// The driver loop: apply queued changes, perform, collect finished transfers, poll.
        private func run() {
            var idleSince: ContinuousClock.Instant?
            while true {
                let now = ContinuousClock.now
                let (additions, removals, exit) = queue.withLock { q -> ([CurlExchange], [CurlExchange], Bool) in
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
                    if curl_multi_add_handle(multi, exchange.easy) == CURLM_OK {
                        active[exchange.easy] = exchange
                    } else {
                        exchange.fail(.network("curl_multi_add_handle failed"))
                    }
                }
                for exchange in removals where active.removeValue(forKey: exchange.easy) != nil {
                    curl_multi_remove_handle(multi, exchange.easy)
                }
                var running: Int32 = 0
                curl_multi_perform(multi, &running)
                collectFinished()
                if active.isEmpty {
                    if idleSince == nil { idleSince = ContinuousClock.now }
                } else {
                    idleSince = nil
                }
                curl_multi_poll(multi, nil, 0, pollTimeout(idleSince: idleSince), nil)
            }
        }

        private func collectFinished() {
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                let result = halyard_curl_msg_result(message)
                // The message is invalid once its handle is removed: everything is read above.
                curl_multi_remove_handle(multi, easy)
                active.removeValue(forKey: easy)?.complete(result)
            }
        }

        /// Milliseconds to wait in `curl_multi_poll`: libcurl's own timer while transfers run
        /// (at most 1 s), the rest of the linger when idle.
        private func pollTimeout(idleSince: ContinuousClock.Instant?) -> Int32 {
            if let idleSince {
                let left = Self.idleLinger - (ContinuousClock.now - idleSince)
                return Int32(
                    clamping: max(
                        left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1, 1))
            }
            var timeout = -1
            curl_multi_timeout(multi, &timeout)
            return timeout < 0 ? 1000 : Int32(min(timeout, 1000))
        }
    }
#endif
