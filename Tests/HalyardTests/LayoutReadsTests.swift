import CHalyardAtomics
import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// The layout reads' switch and their guards (docs/architecture.md, "Layout reads"): a string
/// whose words say "literal" is one only where its bytes lie in a loaded image's constant data,
/// and the switch turns every layout read off. CI runs the key, snapshot, keyed-read and memo
/// suites once more with `HALYARD_LAYOUT_READS=off`, so the fallbacks are tested too.
@Suite struct LayoutReadsTests {
    /// Two flags whose keys have the same length, so one buffer can hold either.
    static let one = "layout.forged-key.one-aaaa"
    static let two = "layout.forged-key.two-bbbb"
    static let values: [String: JSONValue] = [one: .int(1), two: .int(2), "layout.other-key.three": .int(3)]

    /// A `String` whose words say "immortal literal" (a literal's count and flags, the
    /// discriminator `0x8`) over `count` bytes at `bytes`, a heap buffer: what a string of
    /// another form (an unloaded plugin's, a JIT's, a future standard library's) could look
    /// like. Valid while the buffer is; never released (immortal).
    static func forgedLiteral(over bytes: UnsafeMutableRawPointer, count: Int) -> String {
        let (w0, _) = StringLayout.words(one)
        let countAndFlags = (w0 & ~StringLayout.countMask) | UInt64(count)
        let object = 0x8 << 60 | (UInt64(UInt(bitPattern: bytes)) &- 32)
        return unsafeBitCast((countAndFlags, object), to: String.self)
    }

    /// A heap buffer holding `key`'s bytes, rewritable in place.
    final class Buffer {
        let bytes: UnsafeMutableRawPointer
        let count: Int

        init(_ key: String) {
            count = key.utf8.count
            bytes = UnsafeMutableRawPointer.allocate(byteCount: count + 1, alignment: 16)
            write(key)
        }

        deinit { bytes.deallocate() }

        func write(_ key: String) {
            precondition(key.utf8.count == count)
            for (i, byte) in key.utf8.enumerated() { bytes.storeBytes(of: byte, toByteOffset: i, as: UInt8.self) }
            bytes.storeBytes(of: 0, toByteOffset: count, as: UInt8.self)
        }

        var forged: String { LayoutReadsTests.forgedLiteral(over: bytes, count: count) }
    }

    @Test(.enabled(if: StringLayout.available, "string layout reads are off here"))
    func theForgedStringReadsAsALiteralByItsWordsAndBytes() {
        let buffer = Buffer(Self.one)
        let forged = buffer.forged
        let (w0, w1) = StringLayout.words(forged)
        // The forgery is a faithful one: the bit tests take it for a literal, and the string
        // reads its bytes from the heap buffer.
        #expect(StringLayout.isLiteral(w0, w1))
        #expect(forged == Self.one)
        #expect(!StringLayout.isLiteralInImage(w0, w1), "a heap buffer is no image's constant data")
        let literal = StringLayout.words(Self.one)
        #expect(StringLayout.isLiteralInImage(literal.0, literal.1), "a literal's bytes lie in the image")
        buffer.write(Self.two)
        #expect(forged == Self.two)
    }

    @Test func aKeyedReadOfARewrittenImmortalStringReadsTheNewKeysValue() throws {
        let client = try FlagClient(offlineValues: Self.values)
        let buffer = Buffer(Self.one)
        let forged = buffer.forged
        for _ in 0..<3 {
            #expect(client.int(forged, default: 0) == 1)
            #expect(client.intDetail(forged, default: 0).value == 1)
        }
        #expect(client.keyedReads.filled == 0, "an immortal string over the heap never takes a keyed slot")
        buffer.write(Self.two)
        for _ in 0..<3 {
            #expect(client.int(forged, default: 0) == 2, "the address of the first key served the second")
        }
        // A real literal still takes its slot (where the layout reads are on).
        #expect(client.int(Self.one, default: 0) == 1)
        #expect(client.keyedReads.filled == (StringLayout.available ? 1 : 0))
        withExtendedLifetime(buffer) {}
    }

    @Test func theFlagTablesLiteralSideTableKeepsOnlyImageLiterals() {
        let table = FlagTable(keys: [Self.one, Self.two, "layout.other-key.three"])
        defer { table.deallocate() }
        let buffer = Buffer(Self.one)
        let forged = buffer.forged
        #expect(table.index(of: forged) == 0)
        #expect(table.index(of: forged) == 0)
        #expect(table.literalsFilled == 0, "an immortal string over the heap is not cached by its address")
        buffer.write(Self.two)
        #expect(table.index(of: forged) == 1)
        #expect(table.index(of: Self.two) == 1)
        #expect(table.literalsFilled == (StringLayout.available ? 1 : 0))
        withExtendedLifetime(buffer) {}
    }

    @Test func aServiceContextReadsARewrittenImmortalStringsOwnValue() async throws {
        let plane = InMemoryControlPlane(values: Self.values)
        let service = try FlagService(options: plane.makeServiceOptions())
        defer { service.close() }
        let flags = await service.flags(for: EvaluationContext(targetingKey: "layout-user"))
        let buffer = Buffer(Self.one)
        let forged = buffer.forged
        #expect(flags.int(forged, default: 0) == 1)
        #expect(flags.int(forged, default: 0) == 1)
        buffer.write(Self.two)
        #expect(flags.int(forged, default: 0) == 2)
        withExtendedLifetime(buffer) {}
    }

    @Test func aMissOnTheImageRangesCollectsThemAgainAtMostEvery100Milliseconds() {
        let buffer = Buffer(Self.one)
        _ = hal_image_readonly_contains(buffer.bytes, buffer.count)
        let before = hal_image_range_collections()
        let clock = ContinuousClock()
        let start = clock.now
        var refused = 0
        for _ in 0..<1_000 where !hal_image_readonly_contains(buffer.bytes, buffer.count) { refused += 1 }
        // At most one collection per 100 ms, however long the loop took: a bound that scales
        // with the elapsed time, not a deadline.
        let elapsed = clock.now - start
        let allowed = 1 + Int(elapsed / .milliseconds(100))
        #expect(refused == 1_000)
        #expect(Int(hal_image_range_collections() - before) <= allowed, "in \(elapsed)")
    }

    @Test func theSwitchReadsOffAndItsSpellings() {
        for off in ["off", "OFF", " off ", "0", "false", "no", "No"] {
            #expect(LayoutReads.switchedOff(off), "\(off)")
        }
        for on in [nil, "", "on", "1", "true", "yes", "offf"] as [String?] {
            #expect(!LayoutReads.switchedOff(on), "\(String(describing: on))")
        }
        let variable = ProcessInfo.processInfo.environment["HALYARD_LAYOUT_READS"]
        #expect(LayoutReads.enabled == (LayoutReads.compiledIn && !LayoutReads.switchedOff(variable)))
        #if (arch(x86_64) || arch(arm64)) && _endian(little) && !HALYARD_NO_LAYOUT_READS
            #expect(LayoutReads.compiledIn)
        #else
            #expect(!LayoutReads.compiledIn)
        #endif
    }

    @Test func everyLayoutIsOnExactlyWhereTheSwitchIs() {
        #expect(StringLayout.available == LayoutReads.enabled, "this toolchain's String layout check failed")
        #expect(JSONValueLayout.available == LayoutReads.enabled, "this toolchain's JSONValue layout check failed")
        #if os(Linux)
            #expect(AttributeBuckets.available == LayoutReads.enabled, "this toolchain's Dictionary check failed")
        #else
            #expect(!AttributeBuckets.available)
        #endif
        let client = try? FlagClient(offlineValues: Self.values)
        #expect(client?.keyedReads.enabled == StringLayout.available)
        #expect(client?.keyedReads.ownedBytes == (StringLayout.available ? KeyedReadCache.slotCount * 64 : 0))
    }
}
