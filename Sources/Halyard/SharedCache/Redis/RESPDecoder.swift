/// An incremental, bounded RESP2 reply decoder: feed it bytes as they arrive, in any split, and
/// take whole replies out. It never traps on bad input: a reply it cannot accept is a
/// ``RESPError``, and the decoder stays failed (the connection must be closed).
///
/// ```swift
/// var decoder = RESPDecoder()
/// decoder.append(Array("+OK\r\n:4".utf8))
/// try decoder.next()   // .simple("OK")
/// try decoder.next()   // nil: ":4" is not complete yet
/// decoder.append(Array("2\r\n".utf8))
/// try decoder.next()   // .integer(42)
/// ```
///
/// An incomplete reply is parsed again from its start when more bytes arrive; the limits keep
/// that work and the memory bounded (a bulk string's bytes are not rescanned: only its length
/// line is).
package struct RESPDecoder: Sendable {
    /// The most a reply may hold. A server that sends more is treated as broken.
    ///
    /// ```swift
    /// var limits = RESPDecoder.Limits()
    /// limits.maxBulkBytes = 1 << 20
    /// let decoder = RESPDecoder(limits: limits)
    /// ```
    package struct Limits: Sendable, Hashable {
        /// The longest bulk string; *default* 4 MiB (an L2 entry is at most 256 KiB).
        package var maxBulkBytes = 4 << 20
        /// The most elements of one array; *default* 65,536.
        package var maxArrayElements = 65_536
        /// The deepest nesting of arrays; *default* 8.
        package var maxDepth = 8
        /// The longest status, error, integer or length line; *default* 64 KiB.
        package var maxLineBytes = 64 << 10
        /// The most bytes of one reply in all; *default* 8 MiB.
        package var maxReplyBytes = 8 << 20

        package init() {}
    }

    package let limits: Limits
    private var buffer: [UInt8] = []
    /// Where the next reply starts in `buffer`.
    private var start = 0
    /// The error that stopped the decoder, thrown again by every later `next()`.
    private var failure: RESPError?

    package init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Bytes received and not yet taken out as replies.
    package var bufferedCount: Int { buffer.count - start }

    /// Adds bytes received from the server.
    package mutating func append(_ bytes: some Sequence<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    /// Adds bytes received from the server.
    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
    }

    /// The next whole reply, or nil when the bytes so far end inside one.
    package mutating func next() throws(RESPError) -> RedisValue? {
        if let failure { throw failure }
        guard start < buffer.count else {
            reset()
            return nil
        }
        var cursor = start
        do throws(RESPError) {
            guard let value = try parse(&cursor, depth: 0) else {
                if buffer.count - start > limits.maxReplyBytes {
                    throw RESPError.replyTooLarge(limit: limits.maxReplyBytes)
                }
                return nil
            }
            start = cursor
            if start == buffer.count {
                reset()
            } else if start >= 64 << 10 {
                buffer.removeFirst(start)
                start = 0
            }
            return value
        } catch {
            failure = error
            throw error
        }
    }

    private mutating func reset() {
        buffer.removeAll(keepingCapacity: buffer.capacity <= 64 << 10)
        start = 0
    }

    /// The end of the bytes a parse may look at: one past the reply limit. What lies beyond is
    /// never read, so that the error a reply gets does not depend on how its bytes arrived (fed
    /// byte by byte, the decoder stops at the limit with `replyTooLarge` before it sees them).
    private var visibleEnd: Int { min(buffer.count, start + limits.maxReplyBytes + 1) }

    /// One value at `cursor`, moving it past the value; nil when incomplete.
    private func parse(_ cursor: inout Int, depth: Int) throws(RESPError) -> RedisValue? {
        guard cursor < visibleEnd else { return nil }
        let type = buffer[cursor]
        guard let line = try line(after: cursor + 1) else { return nil }
        try checkSize(line.next)
        switch type {
        case UInt8(ascii: "+"):
            cursor = line.next
            return .simple(String(decoding: buffer[line.content], as: UTF8.self))
        case UInt8(ascii: "-"):
            cursor = line.next
            return .error(String(decoding: buffer[line.content], as: UTF8.self))
        case UInt8(ascii: ":"):
            let number = try integer(line.content)
            cursor = line.next
            return .integer(number)
        case UInt8(ascii: "$"):
            let length = try integer(line.content)
            if length == -1 {
                cursor = line.next
                return .bulk(nil)
            }
            guard length >= 0 else { throw .invalidLength(length) }
            guard length <= Int64(limits.maxBulkBytes) else { throw .bulkTooLong(length, limit: limits.maxBulkBytes) }
            let end = line.next + Int(length)
            try checkSize(end + 2)
            guard end + 2 <= visibleEnd else { return nil }
            guard buffer[end] == 13, buffer[end + 1] == 10 else { throw .missingTerminator }
            cursor = end + 2
            return .bulk(Array(buffer[line.next..<end]))
        case UInt8(ascii: "*"):
            let count = try integer(line.content)
            if count == -1 {
                cursor = line.next
                return .array(nil)
            }
            guard count >= 0 else { throw .invalidLength(count) }
            guard count <= Int64(limits.maxArrayElements) else {
                throw .arrayTooLong(count, limit: limits.maxArrayElements)
            }
            guard depth < limits.maxDepth else { throw .tooDeep(limit: limits.maxDepth) }
            var elements: [RedisValue] = []
            elements.reserveCapacity(min(Int(count), 1024))
            var position = line.next
            for _ in 0..<count {
                guard let element = try parse(&position, depth: depth + 1) else { return nil }
                elements.append(element)
            }
            cursor = position
            return .array(elements)
        default:
            throw .unknownType(type)
        }
    }

    /// Throws when a reply that starts at `start` would reach `end`, past the reply limit.
    private func checkSize(_ end: Int) throws(RESPError) {
        if end - start > limits.maxReplyBytes { throw .replyTooLarge(limit: limits.maxReplyBytes) }
    }

    /// The line from `from` to its CRLF: its content and where the next byte is; nil when the
    /// CRLF has not arrived.
    private func line(after from: Int) throws(RESPError) -> (content: Range<Int>, next: Int)? {
        var index = from
        let visible = visibleEnd
        let end = min(visible, from + limits.maxLineBytes + 1)
        while index < end {
            switch buffer[index] {
            case 13:
                guard index + 1 < visible else { return nil }
                guard buffer[index + 1] == 10 else { throw .malformedLine }
                return (from..<index, index + 2)
            case 10:
                throw .malformedLine
            default:
                index += 1
            }
        }
        if visible - from > limits.maxLineBytes { throw .lineTooLong(limit: limits.maxLineBytes) }
        return nil
    }

    /// A decimal integer: an optional `-` and 1 to 19 digits, within 64 bits.
    private func integer(_ range: Range<Int>) throws(RESPError) -> Int64 {
        var index = range.lowerBound
        let negative = index < range.upperBound && buffer[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < range.upperBound, range.upperBound - index <= 19 else { throw .invalidInteger }
        // Accumulated towards the sign, so that Int64.min parses as well as Int64.max.
        var value: Int64 = 0
        while index < range.upperBound {
            let byte = buffer[index]
            guard byte >= 48 && byte <= 57 else { throw .invalidInteger }
            let digit = Int64(byte - 48)
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) =
                negative ? times.subtractingReportingOverflow(digit) : times.addingReportingOverflow(digit)
            guard !overflow1 && !overflow2 else { throw .invalidInteger }
            value = sum
            index += 1
        }
        return value
    }
}
