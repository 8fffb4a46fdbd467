/// What an ``EventStreamParser`` made of a byte string fed in pieces: the check behind the
/// `FuzzEventStream` harness and the split tests ("fed in any pieces, the same as fed whole").
/// (SPI for the fuzz package; not API.)
@_spi(Fuzzing) public struct EventStreamTranscript: Sendable, Hashable {
    /// Each dispatched event as `type`, `data` and `lastEventID`.
    public var events: [[String]]
    /// The last valid `retry:` seen, in milliseconds.
    public var retryMilliseconds: Int64?
    /// Whether any feed reported bytes.
    public var sawBytes: Bool
    /// The error that ended the stream (`"lineTooLong"` or `"eventTooLarge"`), if any.
    public var error: String?

    /// Feeds `bytes` cut at `cuts` (offsets, in any order; out-of-range ones are ignored) to one
    /// parser with the given bounds. When a feed throws, the events of earlier pieces are
    /// dropped: a stream that fails is closed, so only the error is comparable.
    public static func feed(_ bytes: [UInt8], cuts: [Int], maxEventBytes: Int, maxLineBytes: Int)
        -> EventStreamTranscript
    {
        var parser = EventStreamParser(maxEventBytes: maxEventBytes, maxLineBytes: maxLineBytes)
        var transcript = EventStreamTranscript(events: [], retryMilliseconds: nil, sawBytes: false, error: nil)
        var offsets = cuts.filter { $0 > 0 && $0 < bytes.count }
        offsets.sort()
        var start = 0
        for end in offsets + [bytes.count] where end >= start {
            do throws(EventStreamError) {
                let output = try parser.feed(bytes[start..<end])
                transcript.events += output.events.map { [$0.type, $0.data, $0.lastEventID] }
                if let retry = output.retry { transcript.retryMilliseconds = retry.saturatingMilliseconds }
                transcript.sawBytes = transcript.sawBytes || output.sawBytes
            } catch {
                switch error {
                case .lineTooLong: transcript.error = "lineTooLong"
                case .eventTooLarge: transcript.error = "eventTooLarge"
                }
                transcript.events = []
                transcript.retryMilliseconds = nil
                transcript.sawBytes = !bytes.isEmpty
                return transcript
            }
            start = end
        }
        return transcript
    }
}
