import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

@Suite struct SHA1Tests {
    /// FIPS 180-4 / NIST example vectors.
    @Test func nistVectors() {
        #expect(SHA1.hexDigest([UInt8]()) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(SHA1.hexDigest("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(
            SHA1.hexDigest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        #expect(
            SHA1.hexDigest(
                "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"
            )
                == "a49b2446a02c645bf419f995b67091253a04a259")
        #expect(
            SHA1.hexDigest([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))
                == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    @Test func digestShapes() {
        #expect(SHA1.hash("abc".utf8).count == 20)
        let hex = SHA1.hexDigest("x")
        #expect(hex.count == 40)
        #expect(hex.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(SHA1.hex([0x00, 0xAB, 0xFF]) == "00abff")
    }

    /// Non-contiguous sequences and chunked updates give the same digest as one-shot hashing.
    @Test func incrementalAndNonContiguousAgree() {
        var g = SeededGenerator(seed: 99)
        for length in [0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000, 5000] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &g) }
            let oneShot = SHA1.hash(bytes)
            #expect(SHA1.hash(bytes.lazy.map { $0 }) == oneShot, "lazy \(length)")
            #expect(SHA1.hash(Data(bytes)) == oneShot)
            var h = SHA1()
            var i = 0
            while i < length {
                let n = min(Int.random(in: 1...70, using: &g), length - i)
                h.update(bytes[i..<(i + n)])
                i += n
            }
            #expect(h.finalize() == oneShot, "chunked \(length)")
        }
    }

    /// Differential test against Python's hashlib (an independent implementation) over random
    /// inputs of random lengths. python3 exists on the build machines; where it does not, the run
    /// reports the test skipped, with the reason.
    @Test(.enabled(if: ExternalTool.find("python3") != nil, "python3 not found: the SHA-1 differential needs it"))
    func differentialAgainstPythonHashlib() throws {
        let python = try #require(ExternalTool.find("python3"), "python3 not found")
        var g = SeededGenerator(seed: 0x5348_4131)
        var inputs: [[UInt8]] = []
        for i in 0..<200 {
            let length = i < 130 ? i : Int.random(in: 0...20_000, using: &g)
            inputs.append((0..<length).map { _ in UInt8.random(in: 0...255, using: &g) })
        }
        // One hex-encoded input per line on stdin; one digest per line on stdout.
        let script =
            "import sys,hashlib\nfor l in sys.stdin:\n print(hashlib.sha1(bytes.fromhex(l.strip())).hexdigest())"
        let payload = inputs.map { SHA1.hex($0) }.joined(separator: "\n") + "\n"
        let (status, output) = try ExternalTool.filter(python, ["-c", script], input: Data(payload.utf8))
        #expect(status == 0)
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n").map(String.init)
        try #require(lines.count == inputs.count)
        for (input, expected) in zip(inputs, lines) {
            #expect(SHA1.hexDigest(input) == expected, "length \(input.count)")
        }
    }
}
