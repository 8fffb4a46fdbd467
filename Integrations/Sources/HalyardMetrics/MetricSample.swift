import Halyard

/// One figure of a stats struct as a metric: its label, dimensions and value, and whether it is
/// a cumulative count (exported as a counter, by its increase since the last export) or a level
/// (exported as a gauge, as is). Internal: the names are documented in docs/integrations.md.
struct MetricSample: Sendable, Equatable {
    /// Counter (cumulative, exported by its increase) or gauge (a level, exported as is).
    enum Kind: Sendable, Equatable {
        case counter
        case gauge
    }

    var kind: Kind
    var label: String
    var dimensions: [(String, String)]
    var value: Int

    init(_ kind: Kind, _ label: String, _ dimensions: [(String, String)], _ value: Int) {
        self.kind = kind
        self.label = label
        self.dimensions = dimensions
        self.value = value
    }

    init(_ kind: Kind, _ label: String, _ value: Int) {
        self.init(kind, label, [], value)
    }

    /// The metric's identity: its label and dimensions.
    var identity: String {
        ([label] + dimensions.map { "\($0.0)=\($0.1)" }).joined(separator: "|")
    }

    static func == (lhs: MetricSample, rhs: MetricSample) -> Bool {
        lhs.identity == rhs.identity && lhs.kind == rhs.kind && lhs.value == rhs.value
    }
}

extension MetricSample {
    /// The figures every reader reports: reads that did not succeed, exposures, the event
    /// stream and the status; `role` is `client` or `service`.
    static func common(
        role: String, reads: ReadStats, exposures: ExposureStats, stream: EventStreamStats, status: ClientStatus
    ) -> [MetricSample] {
        let r = [("role", role)]
        var samples: [MetricSample] = [
            .init(.counter, "halyard_reads_failed_total", r + [("outcome", "not_ready")], reads.notReady),
            .init(.counter, "halyard_reads_failed_total", r + [("outcome", "flag_not_found")], reads.flagNotFound),
            .init(.counter, "halyard_reads_failed_total", r + [("outcome", "type_mismatch")], reads.typeMismatch),
            .init(.counter, "halyard_reads_failed_total", r + [("outcome", "served_error")], reads.servedError),
            .init(.counter, "halyard_exposures_total", r + [("outcome", "recorded")], exposures.recorded),
            .init(.counter, "halyard_exposures_total", r + [("outcome", "deduplicated")], exposures.deduplicated),
            .init(.counter, "halyard_exposures_total", r + [("outcome", "sampled_out")], exposures.sampledOut),
            .init(.counter, "halyard_exposures_total", r + [("outcome", "dropped")], exposures.dropped),
            .init(.counter, "halyard_exposures_total", r + [("outcome", "sent")], exposures.sent),
            .init(.counter, "halyard_exposures_total", r + [("outcome", "failed")], exposures.failed),
            .init(.counter, "halyard_exposures_total", r + [("outcome", "rejected")], exposures.rejected),
            .init(.gauge, "halyard_exposures_pending", r, exposures.pending),
            .init(.gauge, "halyard_stream_connected", r, stream.connected ? 1 : 0),
            .init(.gauge, "halyard_stream_healthy", r, stream.healthy ? 1 : 0),
            .init(.counter, "halyard_stream_connects_total", r, stream.connects),
            .init(.counter, "halyard_stream_failures_total", r, stream.failures),
            .init(.counter, "halyard_stream_events_total", r + [("outcome", "refetch")], stream.refetchEvents),
            .init(.counter, "halyard_stream_events_total", r + [("outcome", "ignored")], stream.ignoredEvents),
            .init(.counter, "halyard_stream_events_total", r + [("outcome", "coalesced")], stream.coalescedEvents),
        ]
        for candidate in ClientStatus.allCases {
            let value = candidate == status ? 1 : 0
            samples.append(.init(.gauge, "halyard_status", r + [("status", candidate.rawValue.lowercased())], value))
        }
        return samples
    }

    /// A client's figures (``FlagClient/stats``), `role=client`.
    static func client(_ stats: FlagClientStats, status: ClientStatus) -> [MetricSample] {
        let r = [("role", "client")]
        let sync = stats.sync
        var samples = common(
            role: "client", reads: stats.reads, exposures: stats.exposures, stream: stats.stream, status: status)
        samples += [
            .init(.counter, "halyard_fetch_requests_total", r, sync.requestsSent),
            .init(.counter, "halyard_fetch_failures_total", r + [("reason", "timeout")], sync.timeouts),
            .init(.counter, "halyard_fetch_failures_total", r + [("reason", "network")], sync.networkErrors),
            .init(.counter, "halyard_fetch_failures_total", r + [("reason", "invalid_body")], sync.invalidBodies),
            .init(.counter, "halyard_fetch_failures_total", r + [("reason", "oversized")], sync.oversizedResponses),
            .init(.counter, "halyard_snapshots_applied_total", r, sync.snapshotsApplied),
            .init(.gauge, "halyard_fetch_consecutive_failures", r, sync.consecutiveFailures),
            .init(.counter, "halyard_context_trims_total", r, sync.contextTrims),
        ]
        for (status, count) in sync.responsesByStatus.sorted(by: { $0.key < $1.key }) {
            samples.append(.init(.counter, "halyard_fetch_responses_total", r + [("status", String(status))], count))
        }
        return samples
    }

    /// A service's figures (``FlagService/stats``), `role=service`, with its shared cache's
    /// when it has one.
    static func service(_ stats: FlagServiceStats) -> [MetricSample] {
        let r = [("role", "service")]
        let cache = stats.cache
        let fetching = stats.fetching
        var samples = common(
            role: "service", reads: stats.reads, exposures: stats.exposures, stream: stats.stream,
            status: stats.status)
        samples += [
            .init(.counter, "halyard_service_lookups_total", [("result", "hit")], cache.hits),
            .init(.counter, "halyard_service_lookups_total", [("result", "miss")], cache.misses),
            .init(.counter, "halyard_service_lookups_total", [("result", "invalid_context")], cache.invalidContexts),
            .init(.counter, "halyard_service_cold_waits_total", [("outcome", "waited")], cache.coldWaits),
            .init(.counter, "halyard_service_cold_waits_total", [("outcome", "timed_out")], cache.coldWaitTimeouts),
            .init(.counter, "halyard_service_evictions_total", cache.evictions),
            .init(.counter, "halyard_service_admission_rejections_total", cache.admissionRejections),
            .init(.gauge, "halyard_service_contexts_held", cache.contextsHeld),
            .init(.gauge, "halyard_service_failure_records", cache.failureRecords),
            .init(.gauge, "halyard_service_bytes_held", [("part", "contexts")], cache.bytesHeld),
            .init(.gauge, "halyard_service_bytes_held", [("part", "interned_keys")], cache.internedKeyBytes),
            .init(.gauge, "halyard_service_bytes_held", [("part", "shared_details")], cache.sharedDetailBytes),
            .init(.gauge, "halyard_service_bytes_held", [("part", "memo")], cache.memoBytes),
            .init(.gauge, "halyard_service_peak_bytes_held", cache.peakBytesHeld),
            .init(.gauge, "halyard_fetch_in_flight", r, fetching.inFlight),
            .init(.counter, "halyard_fetch_requests_total", r, fetching.requests),
            .init(.counter, "halyard_fetch_failures_total", r + [("reason", "timeout")], fetching.timeouts),
            .init(.counter, "halyard_fetch_failures_total", r + [("reason", "network")], fetching.networkErrors),
            .init(.counter, "halyard_fetch_failures_total", r + [("reason", "invalid_body")], fetching.invalidBodies),
            .init(.counter, "halyard_service_fetches_not_sent_total", [("reason", "paused")], fetching.paused),
            .init(.counter, "halyard_service_fetches_not_sent_total", [("reason", "shed")], fetching.shed),
            .init(.counter, "halyard_service_fetches_not_sent_total", [("reason", "dropped")], fetching.dropped),
            .init(.counter, "halyard_service_background_refreshes_total", fetching.backgroundRefreshes),
            .init(.counter, "halyard_service_stream_refreshes_total", stats.streaming.refreshes),
        ]
        for (status, count) in fetching.byStatus.sorted(by: { $0.key < $1.key }) {
            samples.append(.init(.counter, "halyard_fetch_responses_total", r + [("status", String(status))], count))
        }
        if let shared = stats.sharedCache { samples += sharedCache(shared) }
        return samples
    }

    /// The fleet's shared cache (``FlagServiceStats/sharedCache``).
    static func sharedCache(_ stats: SharedCacheStats) -> [MetricSample] {
        [
            .init(.counter, "halyard_shared_cache_lookups_total", [("result", "hit")], stats.hits),
            .init(.counter, "halyard_shared_cache_lookups_total", [("result", "miss")], stats.misses),
            .init(.counter, "halyard_shared_cache_writes_total", stats.writes),
            .init(.counter, "halyard_shared_cache_errors_total", stats.errors),
            .init(.counter, "halyard_shared_cache_skipped_calls_total", stats.skippedCalls),
            .init(.counter, "halyard_shared_cache_lease_waits_total", stats.leaseWaits),
            .init(.gauge, "halyard_shared_cache_breaker_open", stats.breakerOpen ? 1 : 0),
            .init(.counter, "halyard_shared_cache_breaker_openings_total", stats.breakerOpenings),
        ]
    }
}
