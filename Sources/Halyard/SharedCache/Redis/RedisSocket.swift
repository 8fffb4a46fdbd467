#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One non-blocking stream socket to a Redis server (TCP or unix), with `poll(2)` waits that end
/// at a deadline. Owned by one ``RedisConnection``; closed when released.
///
/// ```swift
/// let addresses = try RedisResolver(host: "127.0.0.1", port: 6379).addresses(deadline: .now + .milliseconds(25))
/// let socket = try RedisSocket.connect(addresses, deadline: .now + .milliseconds(25))
/// ```
///
/// Name resolution is not done here: ``RedisResolver`` hands over resolved addresses, so that a
/// slow lookup never runs inside a call (docs/fleet.md, "Deadlines and threads"). TCP sockets
/// have `TCP_NODELAY` and keepalive on (a peer that vanished without a reset is noticed).
///
/// The seam for another transport (TLS): ``wait(read:write:deadline:)``, ``send(_:)``,
/// ``receive(into:)`` and ``shutdown()`` are all a ``RedisConnection`` uses.
final class RedisSocket {
    /// One resolved socket address (a `sockaddr` of `family`, as bytes).
    struct Address: Sendable, Hashable {
        var family: Int32
        var bytes: [UInt8]
    }

    /// The descriptor (a TLS stream on this socket moves its ciphertext through it).
    let fd: Int32
    /// The receive buffer, reused by every read.
    private var chunk = [UInt8](repeating: 0, count: 16 << 10)

    private init(fd: Int32) { self.fd = fd }

    deinit { _ = systemClose(fd) }

    /// Connects to a unix socket's `path` before `deadline`.
    static func connect(unixPath path: String, deadline: ContinuousClock.Instant) throws(RedisError) -> RedisSocket {
        var storage = sockaddr_un()
        storage.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: storage.sun_path)
        guard bytes.count < capacity else { throw .connectionFailed("the unix socket path is too long") }
        withUnsafeMutableBytes(of: &storage.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return try withUnsafeBytes(of: &storage) { (raw) throws(RedisError) -> RedisSocket in
            guard let base = raw.baseAddress else { throw .connectionFailed("no socket address") }
            return try attempt(
                family: AF_UNIX, address: base.assumingMemoryBound(to: sockaddr.self),
                length: socklen_t(MemoryLayout<sockaddr_un>.size), deadline: deadline)
        }
    }

    /// Connects over TCP to the first of `addresses` that accepts, before `deadline`.
    static func connect(_ addresses: [Address], deadline: ContinuousClock.Instant) throws(RedisError) -> RedisSocket {
        var lastError = RedisError.connectionFailed("no address for the host")
        for address in addresses {
            do throws(RedisError) {
                let result = address.bytes.withUnsafeBytes { raw -> Result<RedisSocket, RedisError> in
                    guard let base = raw.baseAddress else { return .failure(.connectionFailed("no socket address")) }
                    return Result { () throws(RedisError) in
                        try attempt(
                            family: address.family, address: base.assumingMemoryBound(to: sockaddr.self),
                            length: socklen_t(raw.count), deadline: deadline)
                    }
                }
                let socket = try result.get()
                socket.setTCPOptions()
                return socket
            } catch {
                if error == .timeout { throw error }
                lastError = error
            }
        }
        throw lastError
    }

    /// `TCP_NODELAY` (a pipeline goes out at once) and keepalive: first probe after 30 s idle,
    /// then every 10 s, 3 unanswered probes close the connection.
    private func setTCPOptions() {
        func set(_ level: Int32, _ name: Int32, _ value: Int32) {
            var value = value
            _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
        }
        set(Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        set(SOL_SOCKET, SO_KEEPALIVE, 1)
        #if os(Linux)
            set(Int32(IPPROTO_TCP), TCP_KEEPIDLE, 30)
            set(Int32(IPPROTO_TCP), TCP_KEEPINTVL, 10)
            set(Int32(IPPROTO_TCP), TCP_KEEPCNT, 3)
        #elseif canImport(Darwin)
            set(Int32(IPPROTO_TCP), TCP_KEEPALIVE, 30)
        #endif
    }

    /// Whether keepalive is on (for tests).
    var keepAlive: Bool {
        var value: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &value, &size) == 0 && value != 0
    }

    /// Shuts both directions down without closing the descriptor: a thread waiting in
    /// ``wait(read:write:deadline:)`` on it wakes at once (hang-up) and its next read fails. Safe
    /// from another thread than the one using the socket (what a bounded `close()` needs).
    func shutdown() { _ = systemShutdown(fd) }

    /// One non-blocking connect to one address, waited for until `deadline`.
    private static func attempt(
        family: Int32, address: UnsafePointer<sockaddr>, length: socklen_t, deadline: ContinuousClock.Instant
    ) throws(RedisError) -> RedisSocket {
        let fd = socket(family, streamType, 0)
        guard fd >= 0 else { throw .connectionFailed(errorText(errno)) }
        let socket = RedisSocket(fd: fd)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        #if canImport(Darwin)
            var one: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var result: Int32
        repeat { result = systemConnect(fd, address, length) } while result != 0 && errno == EINTR
        if result == 0 { return socket }
        guard errno == EINPROGRESS || errno == EAGAIN else { throw .connectionFailed(errorText(errno)) }
        let events = try socket.wait(read: false, write: true, deadline: deadline)
        guard events.writable || events.failed else { throw .timeout }
        var status: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &status, &size) == 0 else {
            throw .connectionFailed(errorText(errno))
        }
        guard status == 0 else { throw .connectionFailed(errorText(status)) }
        return socket
    }

    /// What `poll` reported.
    struct Events {
        var readable: Bool
        var writable: Bool
        /// An error or hang-up: the next read or write says which.
        var failed: Bool
    }

    /// Waits until the socket is readable (when `read`) or writable (when `write`), or throws
    /// ``RedisError/timeout`` once `deadline` has passed.
    func wait(read: Bool, write: Bool, deadline: ContinuousClock.Instant) throws(RedisError) -> Events {
        var request = Int16(0)
        if read { request |= Int16(POLLIN) }
        if write { request |= Int16(POLLOUT) }
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw .timeout }
            var descriptor = pollfd(fd: fd, events: request, revents: 0)
            let result = poll(&descriptor, 1, Self.pollMilliseconds(remaining))
            if result < 0 {
                if errno == EINTR { continue }
                throw .connectionClosed(Self.errorText(errno))
            }
            if result == 0 { continue }  // the deadline is checked again above
            let got = descriptor.revents
            return Events(
                readable: got & Int16(POLLIN) != 0, writable: got & Int16(POLLOUT) != 0,
                failed: got & Int16(POLLERR | POLLHUP | POLLNVAL) != 0)
        }
    }

    /// `poll`'s timeout for `remaining`: whole milliseconds rounded up, at least 1.
    static func pollMilliseconds(_ remaining: Duration) -> Int32 {
        let milliseconds = RedisCommand.milliseconds(remaining)
        return Int32(clamping: milliseconds)
    }

    /// Sends what it can of `bytes` without blocking; returns how many were sent (0: try later).
    func send(_ bytes: ArraySlice<UInt8>) throws(RedisError) -> Int {
        let result = bytes.withUnsafeBytes { raw in
            systemSend(fd, raw.baseAddress, raw.count, Self.sendFlags)
        }
        if result >= 0 { return result }
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return 0 }
        throw .connectionClosed(Self.errorText(code))
    }

    /// Reads what is there into `decoder`; returns how many bytes (0: nothing yet). Throws when
    /// the server closed the connection.
    func receive(into decoder: inout RESPDecoder) throws(RedisError) -> Int {
        let result = chunk.withUnsafeMutableBytes { raw in systemRecv(fd, raw.baseAddress, raw.count, 0) }
        if result > 0 {
            chunk.withUnsafeBytes { raw in decoder.append(UnsafeRawBufferPointer(rebasing: raw[..<result])) }
            return result
        }
        if result == 0 { throw .connectionClosed("closed by the server") }
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return try pendingError() }
        throw .connectionClosed(Self.errorText(code))
    }

    /// 0 when the socket has no pending error; throws it otherwise (a `poll` that reported an
    /// error or hang-up with nothing to read must not be polled again until the deadline).
    func pendingError() throws(RedisError) -> Int {
        var status: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &status, &size) == 0, status != 0 {
            throw .connectionClosed(Self.errorText(status))
        }
        return 0
    }

    static func errorText(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "errno \(code)" }
        return String(cString: text) + " (errno \(code))"
    }

    #if canImport(Darwin)
        static let streamType = SOCK_STREAM
        private static let sendFlags: Int32 = 0
    #else
        static let streamType = Int32(SOCK_STREAM.rawValue)
        private static let sendFlags = Int32(MSG_NOSIGNAL)
    #endif
}

// The C functions under names that do not collide with this type's methods.
private func systemClose(_ fd: Int32) -> Int32 { close(fd) }
#if canImport(Darwin)
    private func systemShutdown(_ fd: Int32) -> Int32 { shutdown(fd, SHUT_RDWR) }
#else
    private func systemShutdown(_ fd: Int32) -> Int32 { shutdown(fd, Int32(SHUT_RDWR)) }
#endif
private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}
private func systemSend(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int {
    send(fd, bytes, count, flags)
}
private func systemRecv(_ fd: Int32, _ bytes: UnsafeMutableRawPointer?, _ count: Int, _ flags: Int32) -> Int {
    recv(fd, bytes, count, flags)
}
