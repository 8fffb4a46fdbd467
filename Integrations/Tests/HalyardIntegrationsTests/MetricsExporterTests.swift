import Halyard
import HalyardMetrics
import HalyardTesting
import Metrics
import MetricsTestKit
import Testing

/// `HalyardMetricsExporter`: stats as swift-metrics counters (by their increase), gauges and
/// the values' age timer, with dimensions, at an interval.
@Suite struct MetricsExporterTests {
    @Test func countersGrowByTheStatsIncreaseAndGaugesTakeTheLevel() throws {
        let metrics = TestMetrics()
        let client = try FlagClient(offlineValues: ["checkout.new": .bool(true)])
        let exporter = HalyardMetricsExporter(client: client, dimensions: [("instance", "a")], factory: metrics)
        _ = client.bool("missing", default: false)
        _ = client.bool("missing", default: false)
        exporter.export()
        let notFound = try metrics.expectCounter(
            "halyard_reads_failed_total", [("role", "client"), ("outcome", "flag_not_found"), ("instance", "a")])
        #expect(notFound.totalValue == 2)
        _ = client.int("checkout.new", default: 0)  // a type mismatch
        _ = client.bool("missing", default: false)
        exporter.export()
        exporter.export()  // nothing new: nothing added
        #expect(notFound.values == [2, 1])
        let mismatch = try metrics.expectCounter(
            "halyard_reads_failed_total", [("role", "client"), ("outcome", "type_mismatch"), ("instance", "a")])
        #expect(mismatch.totalValue == 1)
        let ready = try metrics.expectGauge(
            "halyard_status", [("role", "client"), ("status", "ready"), ("instance", "a")])
        let fatal = try metrics.expectGauge(
            "halyard_status", [("role", "client"), ("status", "fatal"), ("instance", "a")])
        #expect(ready.lastValue == 1 && fatal.lastValue == 0)
    }

    @Test func aServiceExportsItsCacheAndFetches() async throws {
        let metrics = TestMetrics()
        let plane = InMemoryControlPlane(values: ["limit": .int(3)])
        let service = try FlagService(options: plane.makeServiceOptions())
        defer { service.close() }
        let exporter = HalyardMetricsExporter(service: service, factory: metrics)
        let flags = await service.flags(for: EvaluationContext(targetingKey: "u1"))
        #expect(flags.int("limit", default: 0) == 3)
        _ = await service.flags(for: EvaluationContext(targetingKey: "u1"))
        exporter.export()
        #expect(try metrics.expectCounter("halyard_service_lookups_total", [("result", "miss")]).totalValue == 1)
        #expect(try metrics.expectCounter("halyard_service_lookups_total", [("result", "hit")]).totalValue == 1)
        #expect(try metrics.expectGauge("halyard_service_contexts_held").lastValue == 1)
        #expect(try metrics.expectCounter("halyard_fetch_requests_total", [("role", "service")]).totalValue == 1)
        #expect(
            try metrics.expectCounter("halyard_fetch_responses_total", [("role", "service"), ("status", "200")])
                .totalValue == 1)
    }

    @Test func runExportsAtEachIntervalUntilCancelled() async throws {
        let metrics = TestMetrics()
        let clock = ManualClock()
        let plane = InMemoryControlPlane(values: ["limit": .int(3)])
        var options = plane.makeOptions()
        options.clock = ManualClock()  // the same wall start as the exporter's: the age is what it advances
        let client = try FlagClient(options: options)
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(5)))
        let exporter = HalyardMetricsExporter(client: client, interval: .seconds(10), factory: metrics, clock: clock)
        let running = Task { try await exporter.run() }
        #expect(await Self.eventually { clock.sleeperCount == 1 })
        let requests = try metrics.expectCounter("halyard_fetch_requests_total", [("role", "client")])
        #expect(requests.totalValue == 1)
        await client.refresh()
        clock.advance(by: .seconds(30))  // wakes the exporter; the values are 30 s old then
        #expect(await Self.eventually { requests.totalValue == 2 })
        let age = try metrics.expectTimer("halyard_values_age", [("role", "client")])
        #expect(age.values.contains { $0 >= 30_000_000_000 })
        running.cancel()
        await #expect(throws: CancellationError.self) {
            try await cancelled(after: .seconds(10)) { try await running.value }
        }
    }

    /// Polls `condition` every 10 ms, at most 500 times (5 s).
    static func eventually(_ condition: @Sendable () -> Bool) async -> Bool {
        for _ in 0..<500 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}
