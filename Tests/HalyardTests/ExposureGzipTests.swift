import Foundation
import Testing

@testable import Halyard

/// The hand-written JSON body and the zlib gzip output, checked by independent decoders.
@Suite struct ExposureGzipTests {
    static func sampleEvents(_ n: Int) -> [ExposureEvent] {
        var events: [ExposureEvent] = []
        for i in 0..<n {
            let variant: String? = i % 5 == 0 ? nil : "variant-\(i % 3)"
            let reason = i % 2 == 0 ? "TARGETING_MATCH" : "SPLIT"
            let fp = String(format: "%040x", i * 7_919)
            events.append(
                ExposureEvent(
                    key: "checkout.flag-\(i % 250)", variant: variant, reason: reason,
                    contextFingerprint: fp, creationDate: 1_800_000_000 + Int64(i)))
        }
        return events
    }

    static let meta = ExposureMeta(sdk: "halyard-swift", version: "0.1.0", appId: "app", installId: "install-1")

    /// Runs a tool with stdin/stdout through files; nil when it cannot be run.
    static func run(_ tool: String, _ arguments: [String]) -> (status: Int32, output: Data)? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, data)
    }

    static func temporaryFile(_ bytes: [UInt8]) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("halyard-gz-\(UUID().uuidString).gz")
        try Data(bytes).write(to: url)
        return url
    }

    @Test func pythonGzipDecompressesOurOutput() throws {
        let json = ExposureEncoder.encode(meta: Self.meta, events: Self.sampleEvents(1_000))
        let gz = try #require(GzipCompressor().compress(json))
        #expect(gz.count < json.count / 4)
        #expect(gz.prefix(2) == [0x1F, 0x8B])  // a gzip member, not a zlib stream
        let file = try Self.temporaryFile(gz)
        defer { try? FileManager.default.removeItem(at: file) }
        let script = "import gzip,sys; sys.stdout.buffer.write(gzip.decompress(open(sys.argv[1],'rb').read()))"
        let result = try #require(Self.run("python3", ["-c", script, file.path]), "python3 is required")
        #expect(result.status == 0)
        #expect([UInt8](result.output) == json)
    }

    /// gzip(1) as a second independent decoder; reported as skipped where it is not installed.
    @Test(.enabled(if: ExternalTool.find("gzip") != nil, "gzip not found: the gzip(1) check needs it"))
    func gzipToolDecompressesOurOutput() throws {
        let json = ExposureEncoder.encode(meta: Self.meta, events: Self.sampleEvents(300))
        let gz = try #require(GzipCompressor().compress(json))
        let file = try Self.temporaryFile(gz)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try #require(Self.run("gzip", ["-d", "-c", file.path]))
        #expect(result.status == 0)
        #expect([UInt8](result.output) == json)
    }

    @Test func reusedStreamGivesTheSameBytesAsAFreshOne() throws {
        let reused = GzipCompressor(reusesStream: true)
        let fresh = GzipCompressor(reusesStream: false)
        for n in [0, 1, 10, 1_000, 3] {
            let json = ExposureEncoder.encode(meta: Self.meta, events: Self.sampleEvents(n))
            let a = try #require(reused.compress(json))
            let b = try #require(fresh.compress(json))
            #expect(a == b)
            #expect((try? Gzip.inflate(a)) == json)
        }
        #expect((try? Gzip.inflate(try #require(reused.compress([])))) == [])
    }

    @Test func decompressorRefusesCorruptTruncatedAndOversizedInput() throws {
        let json = ExposureEncoder.encode(meta: Self.meta, events: Self.sampleEvents(50))
        let gz = try #require(GzipCompressor().compress(json))
        #expect((try? Gzip.inflate(Array(gz.prefix(gz.count / 2)))) == nil)
        var flipped = gz
        flipped[gz.count / 2] ^= 0xFF
        #expect((try? Gzip.inflate(flipped)) == nil)
        #expect((try? Gzip.inflate([1, 2, 3, 4])) == nil)
        #expect((try? Gzip.inflate([])) == nil)
        #expect((try? Gzip.inflate(gz, limit: 100)) == nil)
    }

    @Test func bodyIsTheSpecifiedJSONExactly() {
        let events = [
            ExposureEvent(
                key: "k", variant: nil, reason: "STATIC", contextFingerprint: "f", creationDate: 1_800_000_001, count: 1
            )
        ]
        let meta = ExposureMeta(sdk: "s", version: "1", appId: "a", installId: "i")
        let text = String(decoding: ExposureEncoder.encode(meta: meta, events: events), as: UTF8.self)
        #expect(
            text
                == #"{"meta":{"sdk":"s","version":"1","appId":"a","installId":"i"},"events":[{"kind":"exposure","key":"k","variant":null,"reason":"STATIC","contextFingerprint":"f","creationDate":1800000001,"count":1}]}"#
        )
        let empty = String(decoding: ExposureEncoder.encode(meta: meta, events: []), as: UTF8.self)
        #expect(empty.hasSuffix(#""events":[]}"#))
    }

    @Test func stringsAreEscapedPerRFC8259() throws {
        let nasty = "q\"b\\s/\n\r\t\u{8}\u{C}\u{0}\u{1F}\u{7F}é😀\u{2028}"
        let events = [
            ExposureEvent(
                key: nasty, variant: nasty, reason: nasty, contextFingerprint: nasty, creationDate: -5, count: 1)
        ]
        let meta = ExposureMeta(sdk: nasty, version: "", appId: "a", installId: "i")
        let bytes = ExposureEncoder.encode(meta: meta, events: events)
        #expect(!bytes.contains { $0 < 0x20 })  // no raw control characters
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        let decodedMeta = try #require(object["meta"] as? [String: Any])
        #expect(decodedMeta["sdk"] as? String == nasty)
        let event = try #require((object["events"] as? [[String: Any]])?.first)
        #expect(event["key"] as? String == nasty)
        #expect(event["variant"] as? String == nasty)
        #expect(event["contextFingerprint"] as? String == nasty)
        #expect((event["creationDate"] as? NSNumber)?.int64Value == -5)
        #expect(String(decoding: bytes, as: UTF8.self).contains(#"\u0000\u001f"#))
    }

    @Test func integersAreWrittenExactly() {
        for v: Int64 in [0, 7, -7, 10, 1_800_000_000, .max, .min] {
            var out: [UInt8] = []
            ExposureEncoder.appendInteger(&out, v)
            #expect(String(decoding: out, as: UTF8.self) == String(v))
        }
    }
}
