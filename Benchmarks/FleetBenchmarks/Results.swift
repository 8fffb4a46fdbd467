import Foundation

/// The latency of one class of L1 misses, in milliseconds.
struct LatencyFigures: Codable {
    var count = 0
    var p50ms = Double.nan
    var p99ms = Double.nan
    /// Misses that served defaults (`coldFetchTimeout` ran out).
    var defaultsServed = 0
}

/// One change event: what the fleet asked of the control plane for it.
struct EventFigures: Codable {
    /// Contexts used by at least one process since the previous event (the fleet's hot set).
    var hotContexts = 0
    /// The sum of each process's own hot set (what the fleet asks without sharing anything).
    var podHotContexts = 0
    /// Hot contexts every process asked for (without sharing, each costs P requests).
    var usedByEveryProcess = 0
    /// Bulk requests the control plane received from the event until the wave was over.
    var requests = 0
    /// Of them, conditional (`If-None-Match`).
    var conditional = 0
    /// From the event until the last request, fetch or refresh of the wave.
    var waveSeconds = 0.0
    /// Processes whose service started a wave for the event.
    var processesWaved = 0

    var requestsPerHotContext: Double { Double(requests) / Double(max(hotContexts, 1)) }
}

/// One mode's figures (without or with the L2).
struct ModeFigures: Codable {
    var name = ""
    var sharedCache = false
    /// Warnings and errors the services logged (unique).
    var warnings: [String] = []
    var streamsConnected = 0
    /// Steady state, counted at the server.
    var controlPlanePerSecond = 0.0
    var conditionalPerSecond = 0.0
    /// Steady state, counted by the processes.
    var callsPerSecond = 0.0
    var l1MissesPerSecond = 0.0
    var skippedCalls = 0
    var events: [EventFigures] = []
    /// L1 misses of a context no process had asked for before.
    var firstInFleet = LatencyFigures()
    /// L1 misses of a context another process had finished fetching before (from L2 when it
    /// is wired).
    var afterAnotherProcess = LatencyFigures()
    /// L1 misses while another process's first request for the context was in flight.
    var whileAnotherFetched = LatencyFigures()
    /// Bulk requests in all, and distinct contexts asked for, over the mode.
    var totalRequests = 0
    var distinctContextsFetched = 0
    /// Redis after the mode (with the L2): keys and commands processed (-1: no Redis).
    /// The processes' `stats.sharedCache` summed at the end (nil without the L2).
    var l2: SharedCacheFigures? = nil
    /// The processes' `stats.requestsSent` summed at the end.
    var requestsSent = 0
    var redisKeys = -1
    var redisCommands = -1

    var requestsPerEvent: Double { mean(events.map { Double($0.requests) }) }
    var hotContextsPerEvent: Double { mean(events.map { Double($0.hotContexts) }) }
    var usedByEveryProcessPerEvent: Double { mean(events.map { Double($0.usedByEveryProcess) }) }
    var requestsPerHotContext: Double {
        Double(events.reduce(0) { $0 + $1.requests }) / Double(max(events.reduce(0) { $0 + $1.hotContexts }, 1))
    }
    var podSetsPerHotContext: Double {
        Double(events.reduce(0) { $0 + $1.podHotContexts }) / Double(max(events.reduce(0) { $0 + $1.hotContexts }, 1))
    }
}

func mean(_ values: [Double]) -> Double { values.isEmpty ? .nan : values.reduce(0, +) / Double(values.count) }

/// Everything a run measured (`--json`).
struct FleetReport: Codable {
    var date = ""
    var quick = false
    var processes = 0
    var contexts = 0
    var ratePerProcess = 0.0
    var zipf = 1.1
    var latencyMs = 0.0
    var redis: String? = nil
    /// Whether the build measured served anything from Redis (keys written, no "not used yet").
    var l2Wired = false
    var modes: [ModeFigures] = []
    var verdicts: [Verdict] = []
}

struct Verdict: Codable {
    var name: String
    var pass: Bool
    var detail: String
}
