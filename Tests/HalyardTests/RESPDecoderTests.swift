import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

/// The RESP2 decoder (docs/fleet.md, "The client"): every reply type, every split of the input,
/// bounded sizes, and garbage answered with a typed error, never a crash.
@Suite struct RESPDecoderTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Each reply type, with its wire form.
    static let cases: [(wire: [UInt8], value: RedisValue)] = [
        (bytes("+OK\r\n"), .simple("OK")),
        (bytes("+\r\n"), .simple("")),
        (bytes("-ERR unknown command 'x'\r\n"), .error("ERR unknown command 'x'")),
        (bytes(":0\r\n"), .integer(0)),
        (bytes(":42\r\n"), .integer(42)),
        (bytes(":-7\r\n"), .integer(-7)),
        (bytes(":9223372036854775807\r\n"), .integer(.max)),
        (bytes(":-9223372036854775808\r\n"), .integer(.min)),
        (bytes("$5\r\nhello\r\n"), .bulk(bytes("hello"))),
        (bytes("$0\r\n\r\n"), .bulk([])),
        (bytes("$-1\r\n"), .bulk(nil)),
        (
            [UInt8(ascii: "$"), UInt8(ascii: "6"), 13, 10, 0, 13, 10, 255, 36, 42, 13, 10],
            .bulk([0, 13, 10, 255, 36, 42])
        ),
        (bytes("*0\r\n"), .array([])),
        (bytes("*-1\r\n"), .array(nil)),
        (
            bytes("*3\r\n:1\r\n$3\r\nfoo\r\n$-1\r\n"),
            .array([.integer(1), .bulk(bytes("foo")), .bulk(nil)])
        ),
        (
            bytes("*2\r\n*2\r\n+a\r\n-b\r\n*1\r\n*0\r\n"),
            .array([.array([.simple("a"), .error("b")]), .array([.array([])])])
        ),
    ]

    static var stream: [UInt8] { cases.flatMap(\.wire) }
    static var values: [RedisValue] { cases.map(\.value) }

    /// Feeds `chunks` one by one and takes out every reply after each.
    static func decode(_ chunks: [ArraySlice<UInt8>], limits: RESPDecoder.Limits = .init()) throws(RESPError)
        -> [RedisValue]
    {
        var decoder = RESPDecoder(limits: limits)
        var values: [RedisValue] = []
        for chunk in chunks {
            decoder.append(chunk)
            while let value = try decoder.next() { values.append(value) }
        }
        #expect(decoder.bufferedCount == 0)
        return values
    }

    @Test func everyReplyTypeDecodes() throws {
        for (wire, value) in Self.cases {
            #expect(try Self.decode([wire[...]]) == [value], "\(String(decoding: wire, as: UTF8.self))")
        }
        #expect(try Self.decode([Self.stream[...]]) == Self.values)
    }

    @Test func everySplitOfTheStreamDecodesTheSame() throws {
        let stream = Self.stream
        for split in 0...stream.count {
            let values = try Self.decode([stream[..<split], stream[split...]])
            #expect(values == Self.values, "split at \(split)")
        }
        #expect(try Self.decode(stream.map { [$0][...] }) == Self.values, "byte by byte")
    }

    @Test func seededRandomChunksDecodeTheSame() throws {
        let stream = Self.stream
        for seed in 1...UInt64(300) {
            var random = SplitMix64(seed: seed)
            var chunks: [ArraySlice<UInt8>] = []
            var index = 0
            while index < stream.count {
                let size = Int(random.next() % 17)
                chunks.append(stream[index..<min(stream.count, index + size)])
                index += size
            }
            #expect(try Self.decode(chunks) == Self.values, "seed \(seed)")
        }
    }

    @Test func anIncompleteReplyWaitsForItsBytes() throws {
        var decoder = RESPDecoder()
        decoder.append(Self.bytes("$10\r\nhello"))
        #expect(try decoder.next() == nil)
        decoder.append(Self.bytes("world\r"))
        #expect(try decoder.next() == nil)
        decoder.append(Self.bytes("\n:1"))
        #expect(try decoder.next() == .bulk(Self.bytes("helloworld")))
        #expect(try decoder.next() == nil)
        #expect(decoder.bufferedCount == 2)
    }

    @Test func sizesAreBounded() throws {
        var limits = RESPDecoder.Limits()
        limits.maxBulkBytes = 8
        limits.maxArrayElements = 3
        limits.maxDepth = 2
        limits.maxLineBytes = 24
        limits.maxReplyBytes = 40
        let refused: [(String, RESPError)] = [
            // Refused on the length line alone: the bytes are never waited for.
            ("$9\r\n", .bulkTooLong(9, limit: 8)),
            ("$9223372036854775807\r\n", .bulkTooLong(.max, limit: 8)),
            ("*4\r\n", .arrayTooLong(4, limit: 3)),
            ("*1\r\n*1\r\n*1\r\n:1\r\n", .tooDeep(limit: 2)),
            ("+" + String(repeating: "a", count: 25), .lineTooLong(limit: 24)),
            ("*3\r\n$8\r\naaaaaaaa\r\n$8\r\naaaaaaaa\r\n$8\r\naaaaaaaa\r\n", .replyTooLarge(limit: 40)),
        ]
        for (wire, error) in refused {
            var decoder = RESPDecoder(limits: limits)
            decoder.append(Self.bytes(wire))
            #expect(throws: error, "\(wire.debugDescription)") { try decoder.next() }
        }
        // At the limits: accepted.
        let accepted = try Self.decode(
            [
                Self.bytes(
                    "$8\r\naaaaaaaa\r\n*3\r\n*1\r\n:1\r\n:2\r\n:3\r\n+" + String(repeating: "b", count: 24) + "\r\n")[
                        ...]
            ],
            limits: limits)
        #expect(accepted.count == 3)
    }

    @Test func garbageIsATypedErrorAndTheDecoderStaysFailed() throws {
        let garbage: [(String, RESPError)] = [
            ("?\r\n", .unknownType(UInt8(ascii: "?"))),
            ("_\r\n", .unknownType(UInt8(ascii: "_"))),  // RESP3 null: not spoken
            (":\r\n", .invalidInteger),
            (":12a\r\n", .invalidInteger),
            (":+1\r\n", .invalidInteger),
            (":-\r\n", .invalidInteger),
            (":9223372036854775808\r\n", .invalidInteger),
            ("$-2\r\n", .invalidLength(-2)),
            ("*-5\r\n", .invalidLength(-5)),
            ("$3\r\nabcd\r\n", .missingTerminator),
            ("+a\rb\r\n", .malformedLine),
            ("+a\nb\r\n", .malformedLine),
            ("$ 3\r\nabc\r\n", .invalidInteger),
        ]
        for (wire, error) in garbage {
            var decoder = RESPDecoder()
            decoder.append(Self.bytes(wire))
            #expect(throws: error, "\(wire.debugDescription)") { try decoder.next() }
            decoder.append(Self.bytes("+OK\r\n"))
            #expect(throws: error, "a failed decoder stays failed") { try decoder.next() }
        }
    }

    /// Random bytes and randomly damaged valid streams: every outcome is a value, "incomplete"
    /// or a `RESPError`, and the run finishes (a trap would end the test process).
    @Test func randomAndDamagedInputNeverTraps() {
        let stream = Self.stream
        var outcomes = (values: 0, errors: 0)
        for seed in 1...UInt64(2_000) {
            var random = SplitMix64(seed: seed)
            var input: [UInt8]
            if seed % 2 == 0 {
                input = (0..<Int(random.next() % 64)).map { _ in
                    let alphabet: [UInt8] = Array("+-:$*\r\n0123456789-ab".utf8)
                    return random.next() % 4 == 0
                        ? UInt8(truncatingIfNeeded: random.next()) : alphabet[Int(random.next() % 20)]
                }
            } else {
                input = stream
                for _ in 0..<(1 + Int(random.next() % 4)) {
                    input[Int(random.next() % UInt64(input.count))] = UInt8(truncatingIfNeeded: random.next())
                }
            }
            var decoder = RESPDecoder()
            decoder.append(input)
            do {
                while try decoder.next() != nil { outcomes.values += 1 }
            } catch {
                outcomes.errors += 1
            }
        }
        #expect(outcomes.values > 0 && outcomes.errors > 0, "\(outcomes)")
    }

    /// A command's encoding is an array of bulk strings: the decoder reads it back byte for byte.
    @Test func commandsEncodeAsArraysOfBulkStrings() throws {
        var wire: [UInt8] = []
        RedisCommand.set(Self.bytes("k"), [0, 13, 10, 255], expiry: .milliseconds(1500), onlyIfAbsent: true)
            .encode(into: &wire)
        #expect(
            wire == Self.bytes("*6\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\n") + [0, 13, 10, 255]
                + Self.bytes("\r\n$2\r\nPX\r\n$4\r\n1500\r\n$2\r\nNX\r\n"))
        let commands: [RedisCommand] = [
            .get(Self.bytes("a")), .del([Self.bytes("a"), Self.bytes("b")]),
            .compareAndDelete(Self.bytes("lease"), token: Self.bytes("t1")), .ping, .select(3),
        ]
        var all: [UInt8] = []
        for command in commands { command.encode(into: &all) }
        let decoded = try Self.decode([all[...]])
        #expect(decoded == commands.map { .array($0.arguments.map { .bulk($0) }) })
        #expect(RedisCommand.milliseconds(.microseconds(1)) == 1)
        #expect(RedisCommand.milliseconds(.zero) == 1)
        #expect(RedisCommand.milliseconds(.seconds(11)) == 11_000)
        #expect(RedisCommand.milliseconds(.nanoseconds(1_000_001)) == 2)
    }
}

/// The `FuzzRESP` seed corpus and crash inputs keep the harness's invariants in `swift test` too
/// (the fuzz package itself runs only in CI's fuzz step).
extension RESPDecoderTests {
    static var fuzzCorpus: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus/FuzzRESP")
    }

    /// The harness's checks on one input (byte 0: limits; bytes 1-4: the cuts' seed; then the
    /// stream): whole, byte by byte and cut at every offset give the same replies and error,
    /// replies round-trip, and an incomplete reply never holds more than the reply limit.
    static func checkLikeTheHarness(_ input: [UInt8], _ label: String) -> RESPTranscript? {
        guard input.count >= 5 else { return nil }
        let small = input[0] & 1 == 1
        let stream = Array(input[5...])
        let limit = RESPTranscript.maxReplyBytes(small: small)
        let whole = RESPTranscript.feed(stream, cuts: [], small: small)
        var feeds = [("byte by byte", RESPTranscript.feed(stream, cuts: Array(0..<stream.count), small: small))]
        for cut in 0...stream.count where stream.count <= 256 {
            feeds.append(("cut at \(cut)", RESPTranscript.feed(stream, cuts: [cut], small: small)))
        }
        #expect(whole.roundTrips, "\(label)")
        #expect(whole.maxBufferedWhileIncomplete <= limit, "\(label)")
        for (how, transcript) in feeds {
            #expect(transcript.replies == whole.replies, "\(label), \(how)")
            #expect(transcript.error == whole.error, "\(label), \(how)")
            #expect(transcript.roundTrips, "\(label), \(how)")
            #expect(transcript.maxBufferedWhileIncomplete <= limit, "\(label), \(how)")
        }
        return whole
    }

    @Test func fuzzSeedCorpusHoldsTheHarnessInvariants() throws {
        let files = try FileManager.default.contentsOfDirectory(at: Self.fuzzCorpus, includingPropertiesForKeys: nil)
        #expect(files.count >= 10)
        var replies = 0
        var errors: Set<String> = []
        for file in files {
            let input = [UInt8](try Data(contentsOf: file))
            guard let whole = Self.checkLikeTheHarness(input, file.lastPathComponent) else { continue }
            replies += whole.replies.count
            if let error = whole.error { errors.insert(error) }
        }
        #expect(replies >= 12)
        // The small-limit seeds reach the reply and depth limits.
        #expect(errors.count >= 2, "\(errors)")
    }
}

/// Inputs the `FuzzRESP` harness found, each as it was saved (docs/fuzzing.md).
extension RESPDecoderTests {
    /// Found on 2026-12-05 (`crash-86b1b305…`, small limits: a 48-byte reply, an 8-byte line):
    /// fed whole, the decoder reported a malformed line beyond the reply limit; fed byte by
    /// byte, it stopped at the limit first with `replyTooLarge`. The error depended on how the
    /// bytes arrived. Now the decoder never looks past the reply limit, so both give
    /// `replyTooLarge`.
    @Test func fuzzCrashErrorBeyondTheReplyLimitDependedOnTheSplit() {
        let input: [UInt8] = [
            0x01, 0x05, 0x00, 0x00, 0x00, 0x2A, 0x32, 0x0D, 0x0A, 0x24, 0x31, 0x36, 0x0D, 0x0A, 0x30, 0x31,
            0x32, 0x33, 0x34, 0x35, 0x36, 0x36, 0x37, 0x07, 0x00, 0x00, 0x00, 0x2A, 0x2D, 0x31, 0x0D, 0x0A,
            0x2A, 0x32, 0x0D, 0x0A, 0x2A, 0x32, 0x0D, 0x0A, 0x2B, 0x61, 0x0D, 0x0A, 0x2D, 0x62, 0x32, 0x0D,
            0x0A, 0x2A, 0x32, 0x0D, 0x0A, 0x2B, 0x61, 0x0A, 0x2D, 0x32, 0x0D, 0x0A, 0x2A, 0x32, 0x0D, 0x0A,
            0x2B, 0x61, 0x0D, 0x0A, 0x2D, 0x61, 0x0D, 0x0A, 0x2D, 0x62, 0x32, 0x0D, 0x0A, 0x2A, 0x32, 0x0D,
            0x0A, 0x2B, 0x61, 0x0D, 0x0A, 0x2D, 0x62, 0x0D, 0x0A, 0x2B, 0x61, 0x0D, 0x0A, 0x2D, 0x61, 0x0D,
            0x0A, 0x2D, 0x62, 0x32, 0x0D, 0x0A, 0x2A, 0x32, 0x0D, 0x0A, 0x2A, 0x32, 0x0D, 0x0A, 0x2B, 0x61,
            0x0D, 0x0A, 0x2D, 0x62, 0x00, 0x00, 0x00, 0x08, 0x00, 0x5C, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2A,
            0x32, 0x0D, 0x0A, 0x2B, 0x61, 0x0D, 0x0A, 0x2D, 0x62, 0x32, 0x0D, 0x0A, 0x2A, 0x32, 0x0D, 0x0A,
            0x2B, 0x61, 0x0D, 0x0A, 0x2D, 0x62, 0x30, 0x49, 0x6E, 0x82, 0x66, 0x69, 0x69, 0x62, 0x69, 0x69,
            0x62, 0x32, 0x0D, 0x0A, 0x2A, 0x32, 0x0D, 0x0A, 0x2B, 0x2D, 0x62, 0x30, 0x49, 0x00, 0x07, 0x00,
            0x00, 0x2C, 0x0D, 0x0A, 0x2A, 0x32, 0x0D, 0x0A, 0x2B, 0x61, 0x0D, 0x0A, 0x2D, 0x62, 0x00, 0x00,
            0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x32, 0x0D, 0x0A, 0x2A, 0x0D, 0x0A, 0x2D, 0x32, 0x0D, 0x0A,
            0x2A, 0x32, 0x0D, 0x0A, 0x2B, 0x61, 0x0D, 0x0A, 0x2D, 0x61, 0x0D, 0x0A, 0x2D, 0x62, 0x32, 0x0D,
            0x0A, 0x2A, 0x32, 0x0D, 0x0A, 0x2B, 0x61, 0x0D, 0x0A, 0x2D, 0x62, 0x0D, 0x0A, 0x2B, 0x61, 0x0D,
            0x0A, 0x2D, 0x61, 0x0D, 0x0A, 0x2D, 0x62, 0x32, 0x0D, 0x0A, 0x2A, 0x32, 0x0D, 0x0A, 0x2A, 0x32,
            0x0D, 0x0A, 0x2B, 0x61, 0x0D, 0x0A, 0x2D, 0x62, 0x00, 0x00, 0x00, 0x08, 0x00, 0x5C, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x2A, 0x32, 0x0D, 0x0A, 0x2B, 0x61, 0x0D, 0x0A, 0x2D, 0x62, 0x32, 0x0D, 0x0A,
            0x2A, 0x32, 0x0D, 0x0A, 0x2B, 0x61, 0x0D, 0x0A, 0x2D, 0x62, 0x30, 0x49, 0x6E, 0x82, 0x66, 0x69,
            0x69, 0x62, 0x69, 0x69, 0x62, 0x32, 0x0D, 0x0A, 0x2A, 0x32, 0x0D, 0x0A, 0x2B, 0x2D, 0x62, 0x30,
            0x49, 0x00, 0x07, 0x00, 0x00, 0x2C, 0x0D, 0x0A, 0x2A, 0x32, 0x0D, 0x0A, 0x2B, 0x61, 0x0D, 0x0A,
            0x2D, 0x62, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x32, 0x0D, 0x0A, 0x2A, 0x32, 0x0D,
            0x0A, 0x2B, 0x61, 0x0D, 0x0A, 0x2D, 0x62, 0x30, 0x62, 0x30, 0x49, 0x6E, 0x82, 0x66, 0x69, 0x69,
            0x62, 0x69, 0x69, 0x62, 0x32, 0x0D, 0x0A, 0x2A, 0x32, 0x0D, 0x0A, 0x2B, 0x61, 0x3B, 0x0D, 0x0A,
            0x2D, 0x3A, 0x61, 0x0D, 0x0A, 0x2D, 0x62, 0x32, 0x0D, 0x0A, 0x2A, 0x32, 0x0D, 0x0A, 0x2A, 0x32,
            0x0D, 0x0A, 0x2B, 0x61, 0x0D, 0x0A, 0x2D, 0x62, 0x32, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0D, 0x0A, 0x2B, 0x0A,
        ]
        _ = Self.checkLikeTheHarness(input, "crash-86b1b305")
    }

    /// The same bug, reduced by hand: `*4`, a 16-byte bulk, a 12-byte bulk (46 bytes so far),
    /// then `+ab` and a lone LF at offset 49, past the 48-byte reply limit.
    @Test func aLineErrorPastTheReplyLimitIsReplyTooLargeInAnySplit() {
        let stream = Array("*4\r\n$16\r\n0123456789abcdef\r\n$12\r\n0123456789ab\r\n+ab\n".utf8)
        let whole = Self.checkLikeTheHarness([1, 0, 0, 0, 0] + stream, "reduced")
        #expect(whole?.error == RESPError.replyTooLarge(limit: 48).description)
    }
}
