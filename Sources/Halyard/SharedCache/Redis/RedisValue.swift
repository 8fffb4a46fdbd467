/// One RESP2 reply (https://redis.io/docs/latest/develop/reference/protocol-spec/).
///
/// Bulk strings are bytes (binary-safe); simple strings and errors are text lines.
///
/// ```swift
/// var decoder = RESPDecoder()
/// decoder.append(Array("$2\r\nhi\r\n".utf8))
/// let value = try decoder.next()   // .bulk(Array("hi".utf8))
/// ```
package enum RedisValue: Sendable, Hashable {
    /// `+OK`: a status line.
    case simple(String)
    /// `-ERR …`: an error reply (the command failed; the connection is fine).
    case error(String)
    /// `:42`.
    case integer(Int64)
    /// `$n` and n bytes; nil for the null bulk string `$-1` (a missing key).
    case bulk([UInt8]?)
    /// `*n` and n replies; nil for the null array `*-1`.
    case array([RedisValue]?)

    /// The bytes of a bulk string (nil for every other reply).
    package var bytes: [UInt8]? {
        if case .bulk(let bytes?) = self { return bytes }
        return nil
    }
}
