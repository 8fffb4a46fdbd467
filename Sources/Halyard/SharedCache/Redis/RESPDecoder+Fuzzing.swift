/// What a ``RESPDecoder`` made of a byte string fed in pieces: the check behind the `FuzzRESP`
/// harness ("fed in any pieces, the same replies and error as fed whole"). Replies are given in
/// their canonical RESP2 encoding, since ``RedisValue`` is not public. (SPI for the fuzz package;
/// not API.)
@_spi(Fuzzing) public struct RESPTranscript: Sendable, Hashable {
    /// Each whole reply, re-encoded canonically (`:7`, not `:007`).
    public var replies: [[UInt8]]
    /// The error that stopped the decoder (its description), if any.
    public var error: String?
    /// The most bytes left buffered whenever `next()` answered nil (an incomplete reply).
    public var maxBufferedWhileIncomplete: Int
    /// Whether every reply decodes back from its canonical encoding to the same value.
    public var roundTrips: Bool

    /// The limits used with `small`: a 16-byte bulk, 4 elements, depth 3, an 8-byte line, a
    /// 48-byte reply, so that every limit is reachable from a short input.
    public static func maxReplyBytes(small: Bool) -> Int { limits(small: small).maxReplyBytes }

    static func limits(small: Bool) -> RESPDecoder.Limits {
        var limits = RESPDecoder.Limits()
        if small {
            limits.maxBulkBytes = 16
            limits.maxArrayElements = 4
            limits.maxDepth = 3
            limits.maxLineBytes = 8
            limits.maxReplyBytes = 48
        }
        return limits
    }

    /// Feeds `bytes` cut at `cuts` (offsets, in any order; out-of-range ones are ignored) to one
    /// decoder, taking every whole reply out after each piece. When `next()` throws, the
    /// replies so far are kept (they were whole before the bad bytes) and feeding stops.
    public static func feed(_ bytes: [UInt8], cuts: [Int], small: Bool) -> RESPTranscript {
        var decoder = RESPDecoder(limits: limits(small: small))
        var values: [RedisValue] = []
        var transcript = RESPTranscript(replies: [], error: nil, maxBufferedWhileIncomplete: 0, roundTrips: true)
        var offsets = cuts.filter { $0 > 0 && $0 < bytes.count }
        offsets.sort()
        var start = 0
        feeding: for end in offsets + [bytes.count] where end >= start {
            decoder.append(bytes[start..<end])
            start = end
            do throws(RESPError) {
                while let value = try decoder.next() { values.append(value) }
                transcript.maxBufferedWhileIncomplete = max(
                    transcript.maxBufferedWhileIncomplete, decoder.bufferedCount)
            } catch {
                transcript.error = error.description
                // A failed decoder stays failed.
                do throws(RESPError) {
                    _ = try decoder.next()
                    transcript.error = "not failed after \(error)"
                } catch let again {
                    if again != error { transcript.error = "failed again with \(again) after \(error)" }
                }
                break feeding
            }
        }
        transcript.replies = values.map { encode($0) }
        var check = RESPDecoder()
        check.append(transcript.replies.flatMap { $0 })
        var again: [RedisValue] = []
        do throws(RESPError) {
            while let value = try check.next() { again.append(value) }
        } catch {
            transcript.roundTrips = false
        }
        transcript.roundTrips = transcript.roundTrips && again == values && check.bufferedCount == 0
        return transcript
    }

    /// The canonical RESP2 encoding of a reply.
    static func encode(_ value: RedisValue) -> [UInt8] {
        switch value {
        case .simple(let text): Array("+\(text)\r\n".utf8)
        case .error(let text): Array("-\(text)\r\n".utf8)
        case .integer(let number): Array(":\(number)\r\n".utf8)
        case .bulk(nil): Array("$-1\r\n".utf8)
        case .bulk(let bytes?): Array("$\(bytes.count)\r\n".utf8) + bytes + [13, 10]
        case .array(nil): Array("*-1\r\n".utf8)
        case .array(let elements?): Array("*\(elements.count)\r\n".utf8) + elements.flatMap { encode($0) }
        }
    }
}
