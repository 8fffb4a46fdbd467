/// The byte stream a ``RedisConnection`` exchanges RESP over: the plain ``RedisSocket``, or a
/// TLS session on one (`rediss://`, ``RedisTLSStream`` on Linux). Every wait ends at a deadline;
/// `send` and `receive` never block.
///
/// ```swift
/// let stream: any RedisByteStream = try RedisSocket.connect(address, deadline: deadline)
/// let events = try stream.wait(read: true, write: false, deadline: deadline)
/// if events.readable || events.failed { _ = try stream.receive(into: &decoder) }
/// ```
protocol RedisByteStream: AnyObject {
    /// Waits until bytes can be received (when `read`) or sent (when `write`), or throws
    /// ``RedisError/timeout`` once `deadline` has passed.
    func wait(read: Bool, write: Bool, deadline: ContinuousClock.Instant) throws(RedisError) -> RedisSocket.Events
    /// Sends what it can of `bytes` without blocking; returns how many were taken (0: try later).
    func send(_ bytes: ArraySlice<UInt8>) throws(RedisError) -> Int
    /// Appends what has arrived to `decoder`; returns how many bytes (0: nothing yet). Throws
    /// when the server closed the connection.
    func receive(into decoder: inout RESPDecoder) throws(RedisError) -> Int
}

extension RedisSocket: RedisByteStream {}
