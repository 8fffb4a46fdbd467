/// Why bytes from a server are not a RESP2 reply the decoder accepts. The connection that read
/// them is closed: nothing after them can be trusted as the answer to a command.
///
/// ```swift
/// var decoder = RESPDecoder()
/// decoder.append(Array("?\r\n".utf8))
/// #expect(throws: RESPError.unknownType(0x3F)) { try decoder.next() }
/// ```
package enum RESPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The first byte of a reply is not `+ - : $ *` (RESP3 types are refused too). Carries it.
    case unknownType(UInt8)
    /// A line holds a lone CR or LF, or a length line does not end right after its digits.
    case malformedLine
    /// An integer or length is empty, not decimal, or does not fit 64 bits.
    case invalidInteger
    /// A length below -1.
    case invalidLength(Int64)
    /// A line (status, error, integer, length) longer than the limit without its CRLF.
    case lineTooLong(limit: Int)
    /// A bulk string longer than the limit. Carries the declared length.
    case bulkTooLong(Int64, limit: Int)
    /// An array with more elements than the limit. Carries the declared count.
    case arrayTooLong(Int64, limit: Int)
    /// Arrays nested deeper than the limit.
    case tooDeep(limit: Int)
    /// One reply larger than the limit in all.
    case replyTooLarge(limit: Int)
    /// A bulk string's bytes are not followed by CRLF.
    case missingTerminator
    /// Bytes after the last reply a pipeline asked for (a connection out of step).
    case unsolicitedBytes

    package var description: String {
        switch self {
        case .unknownType(let byte): "unknown RESP2 type byte 0x\(String(byte, radix: 16))"
        case .malformedLine: "a malformed RESP line (lone CR or LF)"
        case .invalidInteger: "an invalid RESP integer or length"
        case .invalidLength(let length): "an invalid RESP length \(length)"
        case .lineTooLong(let limit): "a RESP line longer than \(limit) bytes"
        case .bulkTooLong(let length, let limit): "a bulk string of \(length) bytes (limit \(limit))"
        case .arrayTooLong(let count, let limit): "an array of \(count) elements (limit \(limit))"
        case .tooDeep(let limit): "arrays nested deeper than \(limit)"
        case .replyTooLarge(let limit): "a reply larger than \(limit) bytes"
        case .missingTerminator: "a bulk string not followed by CRLF"
        case .unsolicitedBytes: "bytes after the last expected reply"
        }
    }
}
