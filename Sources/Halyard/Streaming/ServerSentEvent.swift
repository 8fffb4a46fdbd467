/// One dispatched event of a `text/event-stream` (the WHATWG event-stream interpretation rules),
/// as ``EventStreamParser`` produces it.
package struct ServerSentEvent: Sendable, Hashable {
    /// The `event:` field, `"message"` when the event had none (or an empty one).
    package var type: String
    /// The `data:` lines joined with `"\n"` (the final line feed removed).
    package var data: String
    /// The last `id:` seen on the stream so far: WHATWG's last-event-ID buffer persists across
    /// events until another `id:` line sets it (an `id:` whose value contains NUL is ignored).
    package var lastEventID: String

    /// Creates an event.
    package init(type: String = "message", data: String, lastEventID: String = "") {
        self.type = type
        self.data = data
        self.lastEventID = lastEventID
    }
}

/// What one ``EventStreamParser/feed(_:)`` call completed.
package struct EventStreamOutput: Sendable, Hashable {
    /// The events dispatched by this chunk, in order.
    package var events: [ServerSentEvent]
    /// The last valid `retry:` value in this chunk (milliseconds on the wire), `nil` when none.
    package var retry: Duration?
    /// Whether the chunk had any byte at all (a comment counts: that is what a keep-alive is).
    package var sawBytes: Bool

    /// Creates an output.
    package init(events: [ServerSentEvent] = [], retry: Duration? = nil, sawBytes: Bool = false) {
        self.events = events
        self.retry = retry
        self.sawBytes = sawBytes
    }
}

/// Why an event stream was refused. The stream is then closed (and retried with backoff by the
/// stream machine); the parser stays failed.
package enum EventStreamError: Error, Sendable, Hashable {
    /// A line (without its line ending) was longer than `limit` bytes.
    case lineTooLong(limit: Int)
    /// An event's data (its `data:` values joined with line feeds) was longer than `limit` bytes.
    case eventTooLarge(limit: Int)
}
