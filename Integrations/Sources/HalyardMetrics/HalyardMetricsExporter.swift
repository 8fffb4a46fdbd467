public import CoreMetrics
import Foundation
public import Halyard

/// Exports a ``FlagClient``'s or ``FlagService``'s stats (the service's shared cache included)
/// as swift-metrics counters, gauges and a timer, at an interval (docs/integrations.md,
/// "Metrics", has every name and dimension).
///
/// ```swift
/// let exporter = HalyardMetricsExporter(service: service, dimensions: [("instance", "api-1")])
/// let exporting = Task { try await exporter.run() }   // every 10 s until cancelled
/// ```
///
/// Halyard's stats are cumulative counts read on demand: each export reads them once and adds
/// each count's increase since the previous export to its counter (a count that went down —
/// never, for one reader — is taken as a restart and adds nothing), sets each gauge, and
/// records the age of the values served (time since the control plane last confirmed them) in
/// the `halyard_values_age` timer. Reading stats takes no lock on the read path, so exporting
/// costs reads nothing.
public final class HalyardMetricsExporter: Sendable {
    /// Where the samples come from (one reader's stats) and the age of its values.
    private let source: @Sendable () -> (samples: [MetricSample], confirmed: Date?)
    private let extraDimensions: [(String, String)]
    private let interval: Duration
    private let clock: any HalyardClock
    private let factory: any MetricsFactory
    private let state = ExportState()

    /// Exports a client's stats (`role=client`).
    ///
    /// - Parameters:
    ///   - client: The client whose ``FlagClient/stats`` and ``FlagClient/status`` are exported.
    ///   - dimensions: Added to every metric (for example `("instance", hostname)`); *default*
    ///     none.
    ///   - interval: Time between exports in ``run()``; *default* 10 s.
    ///   - factory: The metrics backend; *default* the one `MetricsSystem.bootstrap` installed.
    ///   - clock: Times the interval and the values' age; *default* the system clock.
    public convenience init(
        client: FlagClient, dimensions: [(String, String)] = [], interval: Duration = .seconds(10),
        factory: any MetricsFactory = MetricsSystem.factory, clock: any HalyardClock = SystemClock()
    ) {
        self.init(dimensions: dimensions, interval: interval, factory: factory, clock: clock) {
            let stats = client.stats
            return (MetricSample.client(stats, status: client.status), stats.sync.lastConfirmation)
        }
    }

    /// Exports a service's stats (`role=service`), its shared cache's included when it has one.
    ///
    /// - Parameters:
    ///   - service: The service whose ``FlagService/stats`` are exported.
    ///   - dimensions: Added to every metric; *default* none.
    ///   - interval: Time between exports in ``run()``; *default* 10 s.
    ///   - factory: The metrics backend; *default* the one `MetricsSystem.bootstrap` installed.
    ///   - clock: Times the interval; *default* the system clock.
    public convenience init(
        service: FlagService, dimensions: [(String, String)] = [], interval: Duration = .seconds(10),
        factory: any MetricsFactory = MetricsSystem.factory, clock: any HalyardClock = SystemClock()
    ) {
        self.init(dimensions: dimensions, interval: interval, factory: factory, clock: clock) {
            (MetricSample.service(service.stats), nil)
        }
    }

    private init(
        dimensions: [(String, String)], interval: Duration, factory: any MetricsFactory, clock: any HalyardClock,
        source: @escaping @Sendable () -> (samples: [MetricSample], confirmed: Date?)
    ) {
        self.extraDimensions = dimensions
        self.interval = max(interval, .milliseconds(1))
        self.factory = factory
        self.clock = clock
        self.source = source
    }

    /// Exports once now: reads the stats and updates every metric.
    public func export() {
        let (samples, confirmed) = source()
        let age = confirmed.map { clock.wallNow.timeIntervalSince($0) }
        state.apply(samples, extraDimensions: extraDimensions, age: age, factory: factory)
    }

    /// Exports now, then every `interval`, until the task is cancelled (then it throws
    /// `CancellationError`). Run it in a task of its own, or as a `Service` of a `ServiceGroup`
    /// (docs/integrations.md).
    public func run() async throws {
        while true {
            try Task.checkCancellation()
            export()
            try await clock.sleep(for: interval)
        }
    }
}

/// The metrics made so far and the counts last exported, under a lock (exports may overlap).
private final class ExportState: @unchecked Sendable {
    private let lock = NSLock()
    private var counters: [String: (metric: Counter, last: Int)] = [:]
    private var gauges: [String: Gauge] = [:]
    private var ageTimer: CoreMetrics.Timer?

    func apply(
        _ samples: [MetricSample], extraDimensions: [(String, String)], age: TimeInterval?, factory: any MetricsFactory
    ) {
        lock.lock()
        defer { lock.unlock() }
        for sample in samples {
            let dimensions = sample.dimensions + extraDimensions
            let identity = sample.identity
            switch sample.kind {
            case .counter:
                if let (metric, last) = counters[identity] {
                    if sample.value > last { metric.increment(by: sample.value - last) }
                    counters[identity] = (metric, sample.value)
                } else {
                    let metric = Counter(label: sample.label, dimensions: dimensions, factory: factory)
                    if sample.value > 0 { metric.increment(by: sample.value) }
                    counters[identity] = (metric, sample.value)
                }
            case .gauge:
                let gauge = gauges[identity] ?? Gauge(label: sample.label, dimensions: dimensions, factory: factory)
                gauges[identity] = gauge
                gauge.record(sample.value)
            }
        }
        if let age {
            let timer =
                ageTimer
                ?? CoreMetrics.Timer(
                    label: "halyard_values_age", dimensions: [("role", "client")] + extraDimensions, factory: factory)
            ageTimer = timer
            timer.recordNanoseconds(Int64(max(0, age) * 1_000_000_000))
        }
    }
}
