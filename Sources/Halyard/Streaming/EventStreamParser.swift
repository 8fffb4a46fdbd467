/// Bytes in, events out: the WHATWG event-stream interpretation rules as a pure value type.
///
/// Feed it the body of a `text/event-stream` in chunks split anywhere (inside a UTF-8
/// sequence, between the CR and LF of a CRLF, inside the leading byte-order mark): the events
/// are the same as when the body is fed whole.
///
/// - One leading U+FEFF (EF BB BF) at the very start of the stream is skipped.
/// - Lines end at CRLF, LF or CR. Each line is decoded as UTF-8 (invalid sequences become
///   U+FFFD).
/// - An empty line dispatches the event being built (nothing when it has no `data`). A line
///   starting with `:` is a comment. Otherwise the field name runs to the first `:` (the whole
///   line when there is none) and the value follows it, without one leading space.
/// - Fields: `event` sets the type, `data` appends a line, `id` sets the last event ID unless
///   the value contains NUL, `retry` (ASCII digits only) sets the reconnection time in
///   milliseconds; any other field is ignored. An incomplete event at the end of the stream is
///   never dispatched.
/// - Bounds: a line longer than `maxLineBytes` (line ending excluded) throws
///   ``EventStreamError/lineTooLong(limit:)``; an event whose data is longer than
///   `maxEventBytes` throws ``EventStreamError/eventTooLarge(limit:)``. Either is detected at the
///   same byte whatever the split; after it the parser stays failed (every later `feed` throws
///   the same error) and the stream is to be closed.
package struct EventStreamParser: Sendable {
    /// The largest event data accepted, in bytes.
    package let maxEventBytes: Int
    /// The longest line accepted, in bytes, without its line ending.
    package let maxLineBytes: Int

    /// The last event ID buffer (WHATWG): the value of the last valid `id:` line, persisting
    /// across events (and, when the owner passes it to the next parser, across connections).
    /// A reconnect sends it as `Last-Event-ID`. Only an `id` field changes it; one over
    /// ``maxLastEventIDBytes`` is ignored, like one holding NUL.
    package private(set) var lastEventID = ""
    /// The longest `id` value kept, in bytes (SPEC §14: *default* 1 KiB).
    package static let maxLastEventIDBytes = 1_024

    private static let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
    /// How many bytes of the leading BOM matched so far; `nil` once the start is decided.
    private var bomMatched: Int? = 0
    /// The current line's bytes (no line ending).
    private var line: [UInt8] = []
    /// The previous byte ended a line with CR: a LF right after it belongs to that line ending.
    private var afterCR = false
    private var eventType: [UInt8] = []
    private var data: [UInt8] = []
    private var hasData = false
    private var failure: EventStreamError?
    /// Filled during one `feed` call.
    private var output = EventStreamOutput()

    /// Creates a parser with the given bounds (64 KiB each by default; at least 1 byte), its
    /// last event ID buffer starting at `lastEventID` (the previous connection's).
    package init(maxEventBytes: Int = 64 << 10, maxLineBytes: Int = 64 << 10, lastEventID: String = "") {
        self.maxEventBytes = max(maxEventBytes, 1)
        self.maxLineBytes = max(maxLineBytes, 1)
        self.lastEventID = lastEventID.utf8.count <= Self.maxLastEventIDBytes ? lastEventID : ""
    }

    /// Feeds a chunk; returns the events it completed and the last valid `retry:` value it held.
    /// Throws when a bound was exceeded (in this chunk or an earlier one).
    package mutating func feed(_ chunk: some Collection<UInt8>) throws(EventStreamError) -> EventStreamOutput {
        if let failure { throw failure }
        output = EventStreamOutput(sawBytes: !chunk.isEmpty)
        let handled: Void? = chunk.withContiguousStorageIfAvailable { buffer in consume(buffer) }
        if handled == nil {
            let copy = Array(chunk)
            copy.withUnsafeBufferPointer { consume($0) }
        }
        let result = output
        output = EventStreamOutput()
        if let failure { throw failure }
        return result
    }

    // MARK: - Bytes

    private mutating func consume(_ buffer: UnsafeBufferPointer<UInt8>) {
        var start = 0
        if let matched = bomMatched {
            var index = 0
            var count = matched
            while index < buffer.count, count < 3, buffer[index] == Self.bom[count] {
                count += 1
                index += 1
            }
            if count == 3 {
                bomMatched = nil  // skipped
                start = index
            } else if index == buffer.count {
                bomMatched = count  // the chunk ended inside a possible BOM: decide later
                return
            } else {
                // Not a BOM: the bytes that looked like one are ordinary line bytes.
                bomMatched = nil
                Self.bom.prefix(count).withUnsafeBufferPointer { lines($0) }
                start = index  // the rest of this chunk follows them
            }
        }
        if failure == nil, start < buffer.count {
            lines(UnsafeBufferPointer(rebasing: buffer[start...]))
        }
    }

    /// Splits bytes into lines (CRLF, LF, CR) and processes each complete one.
    private mutating func lines(_ buffer: UnsafeBufferPointer<UInt8>) {
        var index = 0
        let end = buffer.count
        if afterCR, index < end {
            afterCR = false
            if buffer[index] == 0x0A { index += 1 }
        }
        while index < end {
            var stop = index
            while stop < end, buffer[stop] != 0x0A, buffer[stop] != 0x0D { stop += 1 }
            if line.count + (stop - index) > maxLineBytes {
                failure = .lineTooLong(limit: maxLineBytes)
                return
            }
            line.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[index..<stop]))
            guard stop < end else { return }  // the line continues in the next chunk
            let terminator = buffer[stop]
            index = stop + 1
            if terminator == 0x0D {
                if index < end {
                    if buffer[index] == 0x0A { index += 1 }
                } else {
                    afterCR = true
                }
            }
            processLine()
            line.removeAll(keepingCapacity: line.capacity <= 4096)
            if failure != nil { return }
        }
    }

    // MARK: - Lines

    private mutating func processLine() {
        if line.isEmpty {
            dispatch()
            return
        }
        if line[0] == UInt8(ascii: ":") { return }  // a comment
        let colon = line.firstIndex(of: UInt8(ascii: ":"))
        let nameEnd = colon ?? line.count
        var valueStart = colon.map { $0 + 1 } ?? line.count
        if valueStart < line.count, line[valueStart] == 0x20 { valueStart += 1 }
        let name = line[0..<nameEnd]
        let value = line[valueStart...]
        if name.elementsEqual("data".utf8) {
            let added = (hasData ? 1 : 0) + value.count
            if data.count + added > maxEventBytes {
                failure = .eventTooLarge(limit: maxEventBytes)
                return
            }
            if hasData { data.append(0x0A) }
            data.append(contentsOf: value)
            hasData = true
        } else if name.elementsEqual("event".utf8) {
            eventType = Array(value)
        } else if name.elementsEqual("id".utf8) {
            if !value.contains(0), value.count <= Self.maxLastEventIDBytes {
                lastEventID = String(decoding: value, as: UTF8.self)
            }
        } else if name.elementsEqual("retry".utf8) {
            if let milliseconds = Self.digits(value) { output.retry = .milliseconds(milliseconds) }
        }
    }

    /// The value of a non-empty string of ASCII digits (saturating), else `nil`.
    private static func digits(_ bytes: ArraySlice<UInt8>) -> Int64? {
        guard !bytes.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            value = overflow1 || overflow2 ? Int64.max : sum
        }
        return value
    }

    private mutating func dispatch() {
        defer {
            data.removeAll(keepingCapacity: data.capacity <= 4096)
            eventType.removeAll()
            hasData = false
        }
        guard hasData else { return }
        let type = eventType.isEmpty ? "message" : String(decoding: eventType, as: UTF8.self)
        output.events.append(
            ServerSentEvent(type: type, data: String(decoding: data, as: UTF8.self), lastEventID: lastEventID))
    }
}
