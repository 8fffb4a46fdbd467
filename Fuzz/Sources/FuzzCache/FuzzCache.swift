// libFuzzer harness: the on-device cache envelope decoder (docs/cache.md, "Format"), the one
// place that turns bytes from disk into served flags.
//
// The first input byte picks the mode:
// - even: the remaining bytes are a whole stored entry (header line + payload), as read from disk;
// - odd: the remaining bytes are a payload, given a valid header (the right length and SHA-1),
//   so the fuzzer reaches the payload checks it could never reach by forging a checksum.
//
// Invariants, for any bytes:
// - decoding never crashes and either throws a CacheEnvelopeError or returns an envelope;
// - an input above the limit is refused as tooLarge without being parsed;
// - a decoded envelope has a 40-hex fingerprint and targeting-key hash, a valid kind, unique
//   non-empty keys, no stored JSON null, no error item with a value;
// - encoding a decoded envelope and decoding it again gives the same envelope (round trip);
// - decoding is deterministic.
import Foundation
@_spi(Fuzzing) import Halyard

/// Small enough that the fuzzer reaches the size check, large enough for real entries.
let limit = 4_096

func isHex40(_ s: String) -> Bool {
    s.utf8.count == 40 && s.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let bytes = Data(bytes: data, count: count)
    var entry = bytes.dropFirst()
    if bytes[bytes.startIndex] & 1 == 1 {
        let header =
            "{\"checksum\":\"\(SHA1.hexDigest(entry))\",\"format\":\"halyard-cache\",\"length\":\(entry.count),\"version\":1}\n"
        entry = Data(header.utf8) + entry
    }
    let input = Data(entry)
    let envelope: CacheEnvelope
    do {
        envelope = try CacheEnvelope.decode(input, limit: limit)
    } catch {
        if case .tooLarge(let reported) = error {
            precondition(input.count > limit && reported == limit, "tooLarge for \(input.count) bytes")
        } else {
            precondition(input.count <= limit, "an oversized entry was parsed")
        }
        return 0
    }
    precondition(input.count <= limit, "an oversized entry was accepted")
    precondition(isHex40(envelope.fingerprint) && isHex40(envelope.targetingKeyHash), "bad hex field")
    precondition(EvaluationContext.isValidKind(envelope.kind), "invalid kind \(envelope.kind)")
    precondition(envelope.writtenAt >= 0, "negative writtenAt")
    var keys = Set<String>()
    for flag in envelope.flags {
        precondition(!flag.key.isEmpty && keys.insert(flag.key).inserted, "empty or duplicate key \(flag.key)")
        precondition(flag.value != .null, "a stored JSON null")
        precondition(flag.errorCode == nil || flag.value == nil, "an error item with a value")
    }
    let again = try? CacheEnvelope.decode(envelope.encoded(), limit: 1 << 20)
    precondition(again == envelope, "re-encoding does not round-trip")
    precondition((try? CacheEnvelope.decode(input, limit: limit)) == envelope, "decoding is not deterministic")
    return 0
}
