// halyard-bench-transport: requests per second and CPU per request of the HTTP transports
// (CurlTransport vs URLSessionTransport) against the loopback control plane
// (Tests/ControlPlaneServer/server.py, started and stopped here), at 1 and 64 concurrent requests.
//
//   swift run -c release halyard-bench-transport [--quick] [--json FILE] [--rounds N]
//
// The designs alternate (A B A B ...) in one run; the report gives medians over rounds and the
// ratio of each to URLSessionTransport measured in the same run. CPU is this process's user +
// system time (getrusage), so the server's own CPU is not counted.
import BenchmarkSupport
import Foundation
import Halyard

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct Options {
    var quick = false
    var json: String?
    var rounds: Int?

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--quick": quick = true
            case "--json": json = iterator.next()
            case "--rounds": rounds = iterator.next().flatMap { Int($0) }
            default:
                FileHandle.standardError.write(Data("unknown argument \(argument)\n".utf8))
                exit(2)
            }
        }
    }
}

struct Design {
    let name: String
    let transport: any FlagTransport
}

/// One batch: `count` requests, `concurrency` in flight; (requests/s, CPU µs per request, errors).
func batch(_ design: Design, _ request: TransportRequest, count: Int, concurrency: Int) async -> (Double, Double, Int) {
    let cpu0 = cpuSeconds()
    let start = ContinuousClock.now
    let errors = await withTaskGroup(of: Int.self) { group in
        for worker in 0..<concurrency {
            let share = count / concurrency + (worker < count % concurrency ? 1 : 0)
            group.addTask {
                var errors = 0
                for _ in 0..<share {
                    do {
                        if try await design.transport.send(request).status != 200 { errors += 1 }
                    } catch {
                        errors += 1
                    }
                }
                return errors
            }
        }
        return await group.reduce(0, +)
    }
    let elapsed = ContinuousClock.now - start
    let seconds = elapsed.fractionalSeconds
    let cpu = cpuSeconds() - cpu0
    return (Double(count) / seconds, cpu / Double(count) * 1e6, errors)
}

let options = Options(CommandLine.arguments)
var items: [[String: Any]] = []
for i in 0..<20 { items.append(["key": "flag-\(i)", "value": i % 2 == 0, "reason": "STATIC", "variant": "v"]) }
let server = try LoopbackServerProcess(document: ["default": items], label: "halyard-bench-transport")
defer { server.stop() }
let url = URL(string: "http://127.0.0.1:\(server.port)/ofrep/v1/evaluate/flags")!
let request = TransportRequest(
    url: url,
    headers: [
        "Content-Type": "application/json", "Accept": "application/json", "Accept-Encoding": "gzip",
        "Authorization": "Bearer bench",
    ],
    body: Data(#"{"context":{"kind":"user","targetingKey":"bench-user"}}"#.utf8), timeout: .seconds(30))

var designs: [Design] = []
#if os(Linux)
    designs.append(Design(name: "CurlTransport", transport: CurlTransport()))
#endif
designs.append(Design(name: "URLSessionTransport", transport: URLSessionTransport()))

let rounds = options.rounds ?? (options.quick ? 3 : 7)
let scenarios: [(concurrency: Int, count: Int)] =
    options.quick ? [(1, 300), (64, 1_000)] : [(1, 2_000), (64, 6_000)]

var results: [[String: Any]] = []
print("halyard-bench-transport: \(rounds) rounds, designs alternate in each round (A B A B ...)")
for scenario in scenarios {
    for design in designs {  // warm-up: connections, caches, the curl driver thread
        _ = await batch(design, request, count: min(scenario.count / 4, 200), concurrency: scenario.concurrency)
    }
    var rates: [String: [Double]] = [:]
    var cpus: [String: [Double]] = [:]
    var errors: [String: Int] = [:]
    for round in 0..<rounds {
        let order = round % 2 == 0 ? designs : designs.reversed()
        for design in order {
            let (rate, cpu, failed) = await batch(
                design, request, count: scenario.count, concurrency: scenario.concurrency)
            rates[design.name, default: []].append(rate)
            cpus[design.name, default: []].append(cpu)
            errors[design.name, default: 0] += failed
        }
    }
    let baseline = "URLSessionTransport"
    print("\nconcurrency \(scenario.concurrency), \(scenario.count) requests per round")
    print("  design                 req/s (median)   CPU µs/req (median)   req/s ratio   CPU ratio   errors")
    for design in designs {
        let rate = median(rates[design.name] ?? [])
        let cpu = median(cpus[design.name] ?? [])
        let rateRatio = rate / median(rates[baseline] ?? [1])
        let cpuRatio = cpu / median(cpus[baseline] ?? [1])
        print(
            "  \(design.name.padding(toLength: 22, withPad: " ", startingAt: 0))"
                + " \(String(format: "%10.0f", rate))       \(String(format: "%10.1f", cpu))"
                + "          \(String(format: "%6.2f", rateRatio))x     \(String(format: "%6.2f", cpuRatio))x"
                + "     \(errors[design.name] ?? 0)")
        results.append([
            "design": design.name, "concurrency": scenario.concurrency, "requestsPerRound": scenario.count,
            "rounds": rounds, "requestsPerSecondMedian": rate, "cpuMicrosecondsPerRequestMedian": cpu,
            "requestsPerSecondRatioToURLSession": rateRatio, "cpuRatioToURLSession": cpuRatio,
            "errors": errors[design.name] ?? 0, "requestsPerSecond": rates[design.name] ?? [],
            "cpuMicrosecondsPerRequest": cpus[design.name] ?? [],
        ])
    }
}

if let path = options.json {
    let document: [String: Any] = [
        "benchmark": "halyard-bench-transport", "quick": options.quick, "rounds": rounds,
        "date": ISO8601DateFormatter().string(from: Date()), "results": results,
    ]
    let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
    try data.write(to: URL(fileURLWithPath: path))
}
server.stop()
exit(0)
