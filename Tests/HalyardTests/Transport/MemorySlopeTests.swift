import Testing

/// The slope the churn test asserts on is computed right (a wrong one would pass any leak).
struct MemorySlopeTests {
    @Test func exactLineGivesItsSlope() throws {
        let points = (0..<10).map { (seconds: Double($0), bytes: 1_000 + 512 * Double($0)) }
        let slope = try #require(MemorySlope.bytesPerSecond(points))
        #expect(abs(slope - 512) < 1e-9)
    }

    @Test func noiseAroundAFlatLineGivesNearZero() throws {
        // A 4 KiB page appearing and going again does not read as growth.
        let points = (0..<20).map { (seconds: Double($0), bytes: 40_000_000 + ($0 % 2 == 0 ? 0 : 4_096.0)) }
        let slope = try #require(MemorySlope.bytesPerSecond(points))
        #expect(abs(slope) < 50)
    }

    @Test func lastHalfIgnoresTheWarmUp() throws {
        // Steep during the first half (tables filling), flat after.
        let points = (0..<20).map { i in (seconds: Double(i), bytes: Double(min(i, 10)) * 100_000) }
        let slope = try #require(MemorySlope.lastHalf(points, runSeconds: 20))
        #expect(abs(slope) < 1e-9)
        #expect((MemorySlope.bytesPerSecond(points) ?? 0) > 10_000)
    }

    @Test func tooFewPointsHaveNoSlope() {
        #expect(MemorySlope.bytesPerSecond([]) == nil)
        #expect(MemorySlope.bytesPerSecond([(seconds: 1, bytes: 5)]) == nil)
        #expect(MemorySlope.bytesPerSecond([(seconds: 1, bytes: 5), (seconds: 1, bytes: 9)]) == nil)
    }
}
