import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

/// The WHATWG event-stream rules of `EventStreamParser` (SPEC §14), case by case, and the
/// property the transports rely on: fed in any pieces, a byte string gives the same events as
/// fed whole (exhaustively for short strings, on seeded random splits for longer ones).
@Suite struct EventStreamParserTests {
    private func events(_ text: String, maxEventBytes: Int = 64 << 10, maxLineBytes: Int = 64 << 10) throws
        -> [ServerSentEvent]
    {
        var parser = EventStreamParser(maxEventBytes: maxEventBytes, maxLineBytes: maxLineBytes)
        return try parser.feed(Array(text.utf8)).events
    }

    private func message(_ data: String, type: String = "message", id: String = "") -> ServerSentEvent {
        ServerSentEvent(type: type, data: data, lastEventID: id)
    }

    @Test func flagdShapedEvent() throws {
        let got = try events(
            "id: 1\nevent: message\ndata: {\"type\": \"refetchEvaluation\", \"etag\": \"\\\"v1\\\"\"}\n\n:keep-alive\n\n"
        )
        #expect(got == [message(#"{"type": "refetchEvaluation", "etag": "\"v1\""}"#, id: "1")])
    }

    @Test func fliptShapedEventHasTheDefaultType() throws {
        #expect(try events("data: {\"type\":\"refetchEvaluation\"}\n\n") == [message(#"{"type":"refetchEvaluation"}"#)])
    }

    @Test func everyLineEndingEndsALine() throws {
        let expected = [message("a"), message("b"), message("c")]
        #expect(try events("data: a\n\ndata: b\r\n\r\ndata: c\r\r") == expected)
        #expect(try events("data: a\r\n\ndata: b\r\rdata: c\n\r") == expected)
        // CR LF is one line ending, LF CR is two.
        #expect(try events("data: a\n\rdata: b\n\n") == [message("a"), message("b")])
    }

    @Test func multiLineDataIsJoinedWithLineFeeds() throws {
        #expect(try events("data: one\ndata: two\ndata:\ndata\n\n") == [message("one\ntwo\n\n")])
        #expect(try events("data\n\n") == [message("")])
        #expect(try events("data:\n\n") == [message("")])
    }

    @Test func oneLeadingSpaceIsStripped() throws {
        #expect(try events("data:x\n\n") == [message("x")])
        #expect(try events("data: x\n\n") == [message("x")])
        #expect(try events("data:  x \n\n") == [message(" x ")])
        #expect(try events("data:\tx\n\n") == [message("\tx")])
    }

    @Test func commentsAndUnknownFieldsAreIgnored() throws {
        #expect(try events(":keep-alive\n: another\nfoo: bar\nDATA: no\ndata : no\ndata: yes\n\n") == [message("yes")])
        var parser = EventStreamParser()
        let comment = try parser.feed(Array(":\n".utf8))
        #expect(comment.sawBytes && comment.events.isEmpty)
        let nothing = try parser.feed([UInt8]())
        #expect(!nothing.sawBytes)
    }

    @Test func eventTypeAppliesToOneEventAndNeedsData() throws {
        let got = try events("event: update\ndata: 1\n\ndata: 2\n\nevent: lonely\n\ndata: 3\n\nevent:\ndata: 4\n\n")
        #expect(got == [message("1", type: "update"), message("2"), message("3"), message("4")])
    }

    @Test func lastEventIDPersistsAndIgnoresNUL() throws {
        let got = try events("id: 7\ndata: a\n\ndata: b\n\nid: 8\u{0}x\ndata: c\n\nid\ndata: d\n\nid: 9\n\ndata: e\n\n")
        #expect(
            got == [
                message("a", id: "7"), message("b", id: "7"), message("c", id: "7"), message("d"),
                message("e", id: "9"),
            ])
        var parser = EventStreamParser()
        _ = try parser.feed(Array("id: 42\n\n".utf8))
        #expect(parser.lastEventID == "42")
    }

    @Test func lastEventIDCarriesAcrossConnectionsAndIsBounded() throws {
        // The next connection's parser starts from the previous one's buffer: an event without
        // an id keeps it (before, a fresh parser reset it to "" on the first id-less event).
        var next = EventStreamParser(lastEventID: "41")
        #expect(try next.feed(Array("data: a\n\n".utf8)).events == [message("a", id: "41")])
        #expect(next.lastEventID == "41")
        // Over 1 KiB: ignored, like an id holding NUL; exactly 1 KiB is kept.
        let long = String(repeating: "i", count: EventStreamParser.maxLastEventIDBytes + 1)
        let fits = String(repeating: "j", count: EventStreamParser.maxLastEventIDBytes)
        #expect(try next.feed(Array("id: \(long)\ndata: b\n\n".utf8)).events == [message("b", id: "41")])
        #expect(try next.feed(Array("id: \(fits)\ndata: c\n\n".utf8)).events == [message("c", id: fits)])
        #expect(EventStreamParser(lastEventID: long).lastEventID == "")
    }

    @Test func retryTakesDigitsOnly() throws {
        var parser = EventStreamParser()
        #expect(try parser.feed(Array("retry: 1500\n".utf8)).retry == .milliseconds(1500))
        #expect(try parser.feed(Array("retry: 15a\nretry: -1\nretry:\nretry: 1.5\nretry:  2\n".utf8)).retry == nil)
        #expect(try parser.feed(Array("retry: 10\nretry: x\nretry: 20\n".utf8)).retry == .milliseconds(20))
        let huge = try parser.feed(Array("retry: 99999999999999999999999999\n".utf8))
        #expect(huge.retry == .milliseconds(Int64.max))
    }

    @Test func incompleteEventAtTheEndIsNotDispatched() throws {
        var parser = EventStreamParser()
        #expect(try parser.feed(Array("data: a\n".utf8)).events.isEmpty)
        #expect(try parser.feed(Array("data: b".utf8)).events.isEmpty)
        #expect(try parser.feed(Array("\n\n".utf8)).events == [message("a\nb")])
    }

    @Test func leadingByteOrderMarkIsSkippedOnlyAtTheStart() throws {
        #expect(try events("\u{FEFF}data: a\n\n") == [message("a")])
        // A second BOM belongs to the field name, which then is unknown.
        #expect(try events("\u{FEFF}\u{FEFF}data: a\n\ndata: b\n\n") == [message("b")])
        #expect(try events("\n\u{FEFF}data: a\n\ndata: b\n\n") == [message("b")])
        // A BOM split over three chunks, and a partial one that turns out to be data.
        var parser = EventStreamParser()
        var got: [ServerSentEvent] = []
        for chunk: [UInt8] in [[0xEF], [0xBB], [0xBF], Array("data: a\n\n".utf8)] {
            got += try parser.feed(chunk).events
        }
        #expect(got == [message("a")])
        var partial = EventStreamParser()
        got = []
        for chunk: [UInt8] in [[0xEF, 0xBB], Array("data: a\n\ndata: b\n\n".utf8)] {
            got += try partial.feed(chunk).events
        }
        #expect(got == [message("b")])
    }

    @Test func invalidUTF8BecomesReplacementCharacters() throws {
        var parser = EventStreamParser()
        let got = try parser.feed([0x64, 0x61, 0x74, 0x61, 0x3A, 0x20, 0xC3, 0x0A, 0xFF, 0x0A, 0x0A] as [UInt8]).events
        #expect(got == [message("\u{FFFD}")])
        // "é" split between chunks decodes whole.
        var split = EventStreamParser()
        var all: [ServerSentEvent] = []
        for chunk: [UInt8] in [Array("data: ".utf8) + [0xC3], [0xA9, 0x0A, 0x0A]] {
            all += try split.feed(chunk).events
        }
        #expect(all == [message("é")])
    }

    @Test func linesAndEventsAreBoundedAtTheExactLimit() throws {
        // 10-byte lines pass, 11-byte ones fail; the line ending does not count.
        #expect(try events("data: 1234\r\n\r\n", maxLineBytes: 10) == [message("1234")])
        #expect(throws: EventStreamError.lineTooLong(limit: 10)) { try events("data: 12345\n\n", maxLineBytes: 10) }
        // A line that never ends fails as soon as it passes the limit, without a line ending.
        var parser = EventStreamParser(maxLineBytes: 16)
        #expect(try parser.feed([UInt8](repeating: 0x61, count: 16)).events.isEmpty)
        #expect(throws: EventStreamError.lineTooLong(limit: 16)) { try parser.feed([0x61]) }
        // Sticky: the stream is to be closed.
        #expect(throws: EventStreamError.lineTooLong(limit: 16)) { try parser.feed(Array("\n".utf8)) }
        // Event data: "abc\nde" is 6 bytes.
        #expect(try events("data: abc\ndata: de\n\n", maxEventBytes: 6) == [message("abc\nde")])
        #expect(throws: EventStreamError.eventTooLarge(limit: 5)) {
            try events("data: abc\ndata: de\n\n", maxEventBytes: 5)
        }
        // The default bounds are 64 KiB each.
        let big = String(repeating: "x", count: 64 << 10)
        #expect(try events("data:" + big + "\n\n", maxLineBytes: 70 << 10).first?.data.utf8.count == 64 << 10)
        #expect(throws: EventStreamError.eventTooLarge(limit: 64 << 10)) {
            try events("data:" + big + "x\n\n", maxLineBytes: 70 << 10)
        }
        #expect(throws: EventStreamError.lineTooLong(limit: 64 << 10)) { try events("data:" + big + "\n\n") }
    }

    // MARK: - Split invariance

    /// Every cut of every string of up to 5 bytes over an alphabet with every delimiter, with
    /// small bounds so the errors are reached too.
    @Test func everySplitOfEveryShortStringMatchesTheWholeFeed() {
        let alphabet: [UInt8] = [0x0D, 0x0A, 0x3A, 0x20, 0x64, 0xEF]  // CR LF : space d BOM-start
        var checked = 0
        var strings: [[UInt8]] = [[]]
        for _ in 0..<5 {
            strings = strings.flatMap { s in alphabet.map { s + [$0] } }
            for bytes in strings {
                for (maxEvent, maxLine) in [(64, 64), (1, 2)] {
                    let whole = EventStreamTranscript.feed(
                        bytes, cuts: [], maxEventBytes: maxEvent, maxLineBytes: maxLine)
                    // Every set of cuts: each bit of `mask` is a cut after that byte.
                    for mask in 0..<(1 << max(bytes.count - 1, 0)) {
                        let cuts = (0..<max(bytes.count - 1, 0)).filter { mask & (1 << $0) != 0 }.map { $0 + 1 }
                        let split = EventStreamTranscript.feed(
                            bytes, cuts: cuts, maxEventBytes: maxEvent, maxLineBytes: maxLine)
                        if split != whole {
                            Issue.record("\(bytes) cut at \(cuts): \(split) != \(whole)")
                            return
                        }
                        checked += 1
                    }
                }
            }
        }
        #expect(checked > 10_000)
    }

    /// Longer, realistic streams built from field fragments, cut at random places (seeded).
    @Test(arguments: [UInt64(1), 2, 3, 4])
    func randomSplitsOfRandomStreamsMatchTheWholeFeed(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        let fragments: [[UInt8]] =
            [
                "data", "event", "id", "retry", ":", ": ", " ", "\r", "\n", "\r\n", "\n\n", "\r\n\r\n", "x", "message",
                "refetchEvaluation", "{\"type\":\"refetchEvaluation\"}", "12", "é", ":keep-alive\n\n", "\u{0}",
                "\u{FEFF}",
            ].map { Array($0.utf8) } + [[0xFF], [0xC3], [0xEF, 0xBB]]
        for _ in 0..<400 {
            var bytes: [UInt8] = []
            for _ in 0..<Int(random.next() % 40) {
                bytes += fragments[Int(random.next() % UInt64(fragments.count))]
            }
            let bounds = random.next() % 3 == 0 ? (8, 12) : (64 << 10, 64 << 10)
            let whole = EventStreamTranscript.feed(bytes, cuts: [], maxEventBytes: bounds.0, maxLineBytes: bounds.1)
            let byteByByte = EventStreamTranscript.feed(
                bytes, cuts: Array(0..<bytes.count), maxEventBytes: bounds.0, maxLineBytes: bounds.1)
            #expect(byteByByte == whole, "byte by byte: \(bytes)")
            for _ in 0..<8 {
                let cuts = (0..<Int(random.next() % 6)).map { _ in Int(random.next() % UInt64(bytes.count + 1)) }
                let split = EventStreamTranscript.feed(
                    bytes, cuts: cuts, maxEventBytes: bounds.0, maxLineBytes: bounds.1)
                if split != whole {
                    Issue.record("\(bytes) cut at \(cuts.sorted()): \(split) != \(whole)")
                    return
                }
            }
        }
    }
}

/// The `FuzzEventStream` seed corpus keeps the harness's "chunked == whole" invariant in
/// `swift test` too (the fuzz package itself runs only in CI's fuzz step).
@Suite struct EventStreamCorpusTests {
    static var corpus: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus/FuzzEventStream")
    }

    @Test func seedCorpusIsTheSameFedWholeOrByteByByte() throws {
        let files = try FileManager.default.contentsOfDirectory(at: Self.corpus, includingPropertiesForKeys: nil)
        #expect(files.count >= 10)
        var errors: Set<String> = []
        var events = 0
        for file in files {
            let input = [UInt8](try Data(contentsOf: file))
            guard input.count >= 5 else { continue }
            let bounds = input[0] & 1 == 1 ? (24, 16) : (64 << 10, 64 << 10)
            let stream = Array(input[5...])
            let whole = EventStreamTranscript.feed(stream, cuts: [], maxEventBytes: bounds.0, maxLineBytes: bounds.1)
            let bytewise = EventStreamTranscript.feed(
                stream, cuts: Array(0..<stream.count), maxEventBytes: bounds.0, maxLineBytes: bounds.1)
            #expect(bytewise == whole, "\(file.lastPathComponent)")
            if let error = whole.error { errors.insert(error) }
            events += whole.events.count
        }
        // The seeds reach both errors and real events.
        #expect(errors == ["lineTooLong", "eventTooLarge"])
        #expect(events >= 10)
    }
}
