import Dispatch
import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Resolves a Redis host name off the calling thread, with the caller's deadline
/// (docs/fleet.md, "Deadlines and threads").
///
/// `getaddrinfo` has no timeout of its own. Here a numeric address is converted inline (no
/// lookup can block); a name is looked up on a queue of the resolver's own, one lookup at a
/// time, and the caller waits for it only until its deadline (then ``RedisError/timeout``),
/// while the lookup goes on and its answer is cached for the next connect. A reconnect asks
/// for a fresh answer (a managed failover moves the name to the new primary) at most once per
/// ``refreshInterval``, or at once after ``invalidate()``; when a fresh one does not come in half the time left, or the lookup
/// fails, the last good answer is used.
///
/// ```swift
/// let resolver = RedisResolver(host: "redis.internal", port: 6379)
/// let addresses = try resolver.addresses(deadline: .now + .milliseconds(25))
/// ```
final class RedisResolver: @unchecked Sendable {
    /// A lookup: the addresses of `host`:`port`, blocking as long as it takes.
    typealias Lookup = @Sendable (_ host: String, _ port: Int) -> Result<[RedisSocket.Address], RedisError>

    let host: String
    let port: Int
    /// How often a reconnect may ask for a fresh answer (*default* 1 s).
    let refreshInterval: Duration
    private let lookup: Lookup
    private let queue = DispatchQueue(label: "halyard.redis.resolver")
    /// Guards everything below; held only to read or update it, never during a lookup.
    private let condition = NSCondition()
    private var cached: [RedisSocket.Address]?
    private var lastError: RedisError?
    /// Lookups finished.
    private var finished = 0
    private var running = false
    private var closed = false
    private var lastStart: ContinuousClock.Instant?

    init(host: String, port: Int, refreshInterval: Duration = .seconds(1), lookup: Lookup? = nil) {
        self.host = host
        self.port = port
        self.refreshInterval = refreshInterval
        self.lookup = lookup ?? Self.systemLookup
    }

    /// The addresses to connect to, by `deadline`.
    func addresses(deadline: ContinuousClock.Instant) throws(RedisError) -> [RedisSocket.Address] {
        if let numeric = Self.numeric(host, port) { return numeric }
        condition.lock()
        defer { condition.unlock() }
        if closed { throw .closed }
        let now = ContinuousClock.now
        if let cached, let lastStart, lastStart.duration(to: now) < refreshInterval { return cached }
        if !running { start(now: now) }
        let target = finished + 1
        // With an answer in hand, a fresh one is waited for only half the time left.
        let until = cached == nil ? deadline : now + now.duration(to: deadline) / 2
        while finished < target {
            if closed { throw .closed }
            let remaining = ContinuousClock.now.duration(to: until)
            guard remaining > .zero else { break }
            _ = condition.wait(until: Date(timeIntervalSinceNow: remaining.fractionalSeconds))
        }
        if closed { throw .closed }
        if let cached { return cached }
        if finished >= target, let lastError { throw lastError }
        throw .timeout
    }

    /// Makes the next connect ask for a fresh answer, however recent the last one is (the
    /// server answered as a replica: a failover may have moved the name).
    func invalidate() {
        condition.lock()
        lastStart = nil
        condition.unlock()
    }

    /// Wakes every call waiting for a lookup; they throw ``RedisError/closed`` (a lookup in
    /// progress goes on, on the resolver's queue, and is dropped).
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// Starts a lookup on the resolver's queue (the lock is held).
    private func start(now: ContinuousClock.Instant) {
        running = true
        lastStart = now
        let (host, port, lookup) = (self.host, self.port, self.lookup)
        queue.async { [self] in
            let result = lookup(host, port)
            condition.lock()
            switch result {
            case .success(let addresses) where !addresses.isEmpty:
                cached = addresses
                lastError = nil
            case .success: lastError = .resolutionFailed(host)
            case .failure(let error): lastError = error
            }
            finished += 1
            running = false
            condition.broadcast()
            condition.unlock()
        }
    }

    /// `host` as a numeric IPv4 or IPv6 address (no lookup: `AI_NUMERICHOST`), or nil.
    static func numeric(_ host: String, _ port: Int) -> [RedisSocket.Address]? {
        try? addresses(host, port, flags: AI_NUMERICSERV | AI_NUMERICHOST).get()
    }

    /// `getaddrinfo`, which may block for as long as the system's resolver takes.
    static let systemLookup: Lookup = { host, port in
        addresses(host, port, flags: AI_NUMERICSERV)
    }

    private static func addresses(_ host: String, _ port: Int, flags: Int32) -> Result<
        [RedisSocket.Address], RedisError
    > {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = RedisSocket.streamType
        hints.ai_flags = flags
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else {
            return .failure(.resolutionFailed(host))
        }
        defer { freeaddrinfo(first) }
        var found: [RedisSocket.Address] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let info = next {
            next = info.pointee.ai_next
            guard let address = info.pointee.ai_addr else { continue }
            let bytes = Array(UnsafeRawBufferPointer(start: address, count: Int(info.pointee.ai_addrlen)))
            found.append(RedisSocket.Address(family: info.pointee.ai_family, bytes: bytes))
        }
        return found.isEmpty ? .failure(.resolutionFailed(host)) : .success(found)
    }
}
