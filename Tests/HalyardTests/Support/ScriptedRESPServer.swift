import Foundation

@testable import Halyard

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A RESP server on 127.0.0.1 that answers every command with the same reply (`answer`, raw
/// RESP, e.g. `-MOVED 3999 127.0.0.1:6381\r\n`), or with what a script says for each command:
/// what a Redis Cluster node, a failover's old primary, a full or a slow Redis, or any other
/// answer a real `redis-server` is hard to make give at a chosen moment, looks like to the
/// client. Commands are read with the client's own decoder (a command is a RESP array of bulk
/// strings); each connection is served by a thread of its own. `stop()` (or release) closes
/// everything.
final class ScriptedRESPServer: @unchecked Sendable {
    /// One scripted reply: raw RESP, sent after `delay` (a slow Redis).
    struct Answer: Sendable {
        var reply: String
        var delay: Duration = .zero
    }

    /// What to answer to a command, given its name (upper case) and how many commands of that
    /// name came before it, over every connection (0 for the first).
    typealias Script = @Sendable (_ command: String, _ index: Int) -> Answer

    let port: Int
    /// Commands received, by name (upper case).
    var commands: [String] { received.withLock { $0 } }

    private let listener: Int32
    private let script: Script
    private let received = Locked<[String]>([])
    private let connections = Locked<(open: [Int32], stopped: Bool)>(([], false))

    /// A server that answers every command with `answer`.
    convenience init(answer: String) throws {
        try self.init { _, _ in Answer(reply: answer) }
    }

    /// A server that answers each command with what `script` says.
    init(script: @escaping Script) throws {
        self.script = script
        (listener, port) = try LoopbackListener.open(backlog: 16)
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    deinit { stop() }

    /// The endpoint of this server.
    var endpoint: RedisEndpoint { RedisEndpoint(address: .tcp(host: "127.0.0.1", port: port)) }

    /// Stops accepting and closes every connection (their threads end).
    /// Only the first call acts: the accept loop closes the listener once it wakes, and its
    /// descriptor may belong to another socket by the time a later call (`deinit`) comes.
    func stop() {
        // Under the lock: a connection's thread closes its descriptor under it too, so none is
        // shut down after it was closed (and perhaps reused).
        connections.withLock { state in
            if state.stopped { return }
            state.stopped = true
            _ = shutdown(listener, Int32(SHUT_RDWR))
            for fd in state.open { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else {
                if errno == EINTR { continue }
                close(listener)
                return
            }
            let admitted = connections.withLock { state -> Bool in
                if state.stopped { return false }
                state.open.append(fd)
                return true
            }
            guard admitted else {
                close(fd)
                continue
            }
            Thread.detachNewThread { [self] in serve(fd) }
        }
    }

    private func serve(_ fd: Int32) {
        defer {
            connections.withLock { state in
                state.open.removeAll { $0 == fd }
                close(fd)
            }
        }
        var decoder = RESPDecoder()
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            decoder.append(buffer[..<count])
            var replies: [UInt8] = []
            while let command = try? decoder.next() {
                var text = ""
                if case .array(let parts?) = command, case .bulk(let name?)? = parts.first {
                    text = String(decoding: name, as: UTF8.self).uppercased()
                }
                let index = received.withLock { received in
                    defer { if !text.isEmpty { received.append(text) } }
                    return received.count { $0 == text }
                }
                let answer = script(text, index)
                if answer.delay > .zero { Thread.sleep(forTimeInterval: answer.delay.fractionalSeconds) }
                replies += Array(answer.reply.utf8)
            }
            var sent = 0
            while sent < replies.count {
                let result = replies[sent...].withUnsafeBytes { raw in
                    #if canImport(Darwin)
                        send(fd, raw.baseAddress, raw.count, 0)
                    #else
                        send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL))
                    #endif
                }
                guard result > 0 else { return }
                sent += result
            }
        }
    }
}
