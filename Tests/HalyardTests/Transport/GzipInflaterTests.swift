import Foundation
import Testing

@testable import Halyard

/// The streaming, bounded inflater: chunk by chunk as bytes arrive, refusing at the limit.
@Suite struct GzipInflaterTests {
    static let text = Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 * 7 % 251) })

    @Test(arguments: [1, 7, 512, 1 << 20])
    func chunkedInputInflatesLikeWholeInput(chunk: Int) throws {
        let packed = Gzip.compress(Self.text)
        let inflater = GzipInflater(limit: Self.text.count)
        var offset = 0
        while offset < packed.count {
            let end = min(offset + chunk, packed.count)
            try inflater.append(packed.subdata(in: offset..<end))
            offset = end
        }
        #expect(inflater.isComplete)
        #expect(try inflater.finish() == Self.text)
    }

    @Test func limitIsInclusiveAndZeroMeansUnlimited() throws {
        let packed = Gzip.compress(Self.text)
        #expect(try Gzip.inflate(packed, limit: Self.text.count) == Self.text)
        #expect(try Gzip.inflate(packed, limit: 0) == Self.text)
        #expect(throws: GzipError.tooLarge(limit: Self.text.count - 1)) {
            try Gzip.inflate(packed, limit: Self.text.count - 1)
        }
    }

    @Test func aBombFedInPiecesStopsAtTheLimitAndStaysFailed() throws {
        let bomb = Gzip.compress(Data(count: 64 << 20))  // ~64 KiB inflating to 64 MiB
        let inflater = GzipInflater(limit: 1 << 20)
        var failure: GzipError?
        var offset = 0
        while offset < bomb.count, failure == nil {
            let end = min(offset + 4096, bomb.count)
            do throws(GzipError) { try inflater.append(bomb.subdata(in: offset..<end)) } catch { failure = error }
            offset = end
            #expect(inflater.output.count <= 1 << 20)
        }
        #expect(failure == .tooLarge(limit: 1 << 20))
        #expect(offset < bomb.count)  // refused before the whole body arrived
        #expect(throws: GzipError.tooLarge(limit: 1 << 20)) { try inflater.append(Data([0])) }
        #expect(throws: GzipError.tooLarge(limit: 1 << 20)) { try inflater.finish() }
    }

    @Test func truncatedCorruptAndEmptyStreams() throws {
        let packed = Gzip.compress(Self.text)
        let truncated = GzipInflater(limit: 0)
        try truncated.append(packed.prefix(packed.count - 9))
        #expect(throws: GzipError.invalid) { try truncated.finish() }
        var corrupt = packed
        corrupt[corrupt.startIndex + 20] ^= 0xFF
        #expect(throws: GzipError.self) { try Gzip.inflate(corrupt, limit: 0) }
        #expect(try GzipInflater(limit: 10).finish() == Data())  // no body at all
        #expect(throws: GzipError.invalid) { try Gzip.inflate(Data(), limit: 10) }
        // Bytes after the end of the member are ignored.
        #expect(try Gzip.inflate(packed + Data("trailing".utf8), limit: 0) == Self.text)
    }
}
