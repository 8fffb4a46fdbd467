// libFuzzer harness: the WHATWG event-stream parser (`EventStreamParser`), which reads what an
// event-stream server sends (SPEC §14).
//
// Input: byte 0 picks the bounds (even: the default 64 KiB line and event limits; odd: a 16-byte
// line and 24-byte event limit, so the errors are reached); bytes 1-4 seed where the stream is
// cut; the rest is the stream. Invariants, for any bytes:
// - parsing never crashes; it ends in events or in one of the two typed errors;
// - "chunked == whole": fed in pieces cut at seeded places, and fed byte by byte (inputs up to
//   1 KiB), the stream gives exactly the events, last retry and error of the whole feed;
// - every event has a non-empty type and a last event ID without NUL;
// - without an error, no event's data is longer than the limit allows (each byte decodes to at
//   most 3 UTF-8 bytes: U+FFFD for an invalid one).
import Foundation
@_spi(Fuzzing) import Halyard

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data.assumingMemoryBound(to: UInt8.self), count: count))
    guard input.count >= 5 else { return 0 }
    let small = input[0] & 1 == 1
    let (maxEvent, maxLine) = small ? (24, 16) : (64 << 10, 64 << 10)
    var seed = UInt32(input[1]) | UInt32(input[2]) << 8 | UInt32(input[3]) << 16 | UInt32(input[4]) << 24
    let stream = Array(input[5...])

    let whole = EventStreamTranscript.feed(stream, cuts: [], maxEventBytes: maxEvent, maxLineBytes: maxLine)
    precondition(
        whole.error == nil || whole.error == "lineTooLong" || whole.error == "eventTooLarge",
        "unexpected error \(String(describing: whole.error))")
    for event in whole.events {
        precondition(event.count == 3 && !event[0].isEmpty, "event without a type")
        precondition(!event[2].unicodeScalars.contains("\u{0}"), "last event ID with NUL")
        precondition(event[1].utf8.count <= 3 * maxEvent, "event data beyond the limit")
    }
    if let retry = whole.retryMilliseconds { precondition(retry >= 0, "negative retry") }
    precondition(whole.sawBytes == !stream.isEmpty, "sawBytes disagrees with the input")

    var cuts: [Int] = []
    if !stream.isEmpty {
        for _ in 0..<Int(seed % 9) {
            seed = seed &* 1_664_525 &+ 1_013_904_223  // an LCG: deterministic cuts from the input
            cuts.append(Int(seed >> 8) % (stream.count + 1))
        }
    }
    let split = EventStreamTranscript.feed(stream, cuts: cuts, maxEventBytes: maxEvent, maxLineBytes: maxLine)
    precondition(split == whole, "cut at \(cuts.sorted()): \(split) != \(whole)")
    if stream.count <= 1024 {
        let bytewise = EventStreamTranscript.feed(
            stream, cuts: Array(0..<stream.count), maxEventBytes: maxEvent, maxLineBytes: maxLine)
        precondition(bytewise == whole, "byte by byte: \(bytewise) != \(whole)")
    }
    return 0
}
