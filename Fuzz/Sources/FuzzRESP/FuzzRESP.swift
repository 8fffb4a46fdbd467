// libFuzzer harness: the RESP2 reply decoder (`RESPDecoder`), which reads what a Redis server
// sends to the shared cache's client (SPEC §15, docs/fleet.md).
//
// Input: byte 0 picks the limits (even: the defaults; odd: a 16-byte bulk, 4 elements, depth 3,
// an 8-byte line, a 48-byte reply, so that every limit is reached); bytes 1-4 seed where the
// stream is cut; the rest is the stream. Invariants, for any bytes:
// - decoding never crashes; it ends in replies, possibly followed by one typed error, and a
//   failed decoder stays failed with the same error;
// - "chunked == whole": fed in pieces cut at seeded places, and fed byte by byte (inputs up to
//   1 KiB), the stream gives exactly the replies and error of the whole feed;
// - bounded memory: whenever the decoder answers "incomplete", it holds at most the reply limit;
// - every reply decodes back from its canonical encoding to the same value.
import Foundation
@_spi(Fuzzing) import Halyard

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data.assumingMemoryBound(to: UInt8.self), count: count))
    guard input.count >= 5 else { return 0 }
    let small = input[0] & 1 == 1
    var seed = UInt32(input[1]) | UInt32(input[2]) << 8 | UInt32(input[3]) << 16 | UInt32(input[4]) << 24
    let stream = Array(input[5...])
    let limit = RESPTranscript.maxReplyBytes(small: small)

    let whole = RESPTranscript.feed(stream, cuts: [], small: small)
    check(whole, limit: limit, "whole")

    var cuts: [Int] = []
    if !stream.isEmpty {
        for _ in 0..<Int(seed % 9) {
            seed = seed &* 1_664_525 &+ 1_013_904_223  // an LCG: deterministic cuts from the input
            cuts.append(Int(seed >> 8) % (stream.count + 1))
        }
    }
    let split = RESPTranscript.feed(stream, cuts: cuts, small: small)
    check(split, limit: limit, "cut at \(cuts.sorted())")
    precondition(
        split.replies == whole.replies && split.error == whole.error, "cut at \(cuts.sorted()): \(split) != \(whole)")
    if stream.count <= 1024 {
        let bytewise = RESPTranscript.feed(stream, cuts: Array(0..<stream.count), small: small)
        check(bytewise, limit: limit, "byte by byte")
        precondition(
            bytewise.replies == whole.replies && bytewise.error == whole.error, "byte by byte: \(bytewise) != \(whole)")
    }
    return 0
}

func check(_ transcript: RESPTranscript, limit: Int, _ label: String) {
    precondition(transcript.roundTrips, "\(label): a reply does not round-trip: \(transcript)")
    precondition(
        transcript.maxBufferedWhileIncomplete <= limit,
        "\(label): \(transcript.maxBufferedWhileIncomplete) bytes buffered for an incomplete reply (limit \(limit))")
    if let error = transcript.error {
        precondition(!error.hasPrefix("not failed") && !error.hasPrefix("failed again"), "\(label): \(error)")
    }
}
