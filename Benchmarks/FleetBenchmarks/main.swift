import Foundation

// halyard-bench-fleet: P service processes (FlagService, SPEC §12) on one redis-server (the L2
// of SPEC §15) against a loopback control plane that answers after 20 ms, contexts drawn from
// a Zipf distribution; the same run without and with the L2. docs/benchmarks-fleet.md.
//
// The parent starts the control plane (Tests/ControlPlaneServer/server.py), redis-server, and
// the workers: this executable again with `--worker` (Worker.swift).

if CommandLine.arguments.contains("--l2-calls") {
    // Calls/s one pod sustains: its RedisClients alone, then through its shared tier
    // (ClientThroughput.swift, TierThroughput.swift).
    let options = Options(CommandLine.arguments)
    await ClientThroughput.run(seconds: options.seconds ?? (options.quick ? 2 : 5), threads: options.processes * 4)
} else if CommandLine.arguments.contains("--hung-burst") {
    // One service, a burst of cold contexts while Redis is hung (HungBurst.swift).
    await HungBurst.run()
} else if CommandLine.arguments.contains("--worker") {
    await FleetWorker.run(WorkerOptions(CommandLine.arguments))
} else {
    FleetBench(options: Options(CommandLine.arguments)).run()
}
