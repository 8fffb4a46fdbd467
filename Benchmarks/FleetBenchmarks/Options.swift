import Foundation

/// Command-line options of `halyard-bench-fleet` (the parent; workers get ``WorkerOptions``).
struct Options {
    /// `--processes N`: service processes in the fleet.
    var processes = 4
    /// `--quick`: shorter phases, fewer events (under a minute in all).
    var quick = false
    /// `--seconds S`: the steady-state phase of each mode (default 20; 5 with `--quick`).
    var seconds: Double?
    /// `--contexts N`: distinct targeting keys the Zipf distribution ranges over.
    var contexts = 10_000
    /// `--rate R`: `flags(for:)` calls a second per process (open loop).
    var rate = 200.0
    /// `--events N`: measured change events per mode (default 5; 3 with `--quick`).
    var events: Int?
    /// `--zipf S`: the exponent of the popularity (1.1: halyard-bench-service's).
    var zipf = 1.1
    /// `--latency MS`: the control plane's answer delay.
    var latencyMs = 20.0
    /// `--json FILE`: write the results there.
    var json: String?
    /// `--without-l2-only`: skip the mode with Redis.
    var withoutL2Only = false
    /// `--l2-calls`: measure calls/s of one `RedisClient` instead (threads: 4 × `--processes`).
    var l2Calls = false

    var warmupSeconds: Double { quick ? 3 : 10 }
    var steadySeconds: Double { seconds ?? (quick ? 5 : 20) }
    var eventCount: Int { events ?? (quick ? 3 : 5) }
    /// Load between two events: the contexts used then are the next wave's.
    var windowSeconds: Double { quick ? 1 : 3 }
    /// A wave is over once nothing moved for this long.
    var quietSeconds: Double { quick ? 0.6 : 1 }

    /// Parses `arguments` (the program name first); exits with status 2 on an unknown argument.
    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        func number(_ name: String) -> Double {
            guard let text = iterator.next(), let value = Double(text), value > 0 else {
                FileHandle.standardError.write(Data("\(name) needs a positive number\n".utf8))
                exit(2)
            }
            return value
        }
        while let argument = iterator.next() {
            switch argument {
            case "--quick": quick = true
            case "--processes": processes = Int(number(argument))
            case "--seconds": seconds = number(argument)
            case "--contexts": contexts = Int(number(argument))
            case "--rate": rate = number(argument)
            case "--events": events = Int(number(argument))
            case "--latency": latencyMs = number(argument)
            case "--zipf": zipf = number(argument)
            case "--json": json = iterator.next()
            case "--without-l2-only": withoutL2Only = true
            case "--l2-calls": l2Calls = true
            case "--help", "-h":
                print(
                    "usage: halyard-bench-fleet [--quick] [--processes N] [--seconds S] [--contexts N] [--rate R] [--events N] [--zipf S] [--latency MS] [--json FILE] [--without-l2-only] [--l2-calls]"
                )
                exit(0)
            default:
                FileHandle.standardError.write(Data("unknown argument \(argument)\n".utf8))
                exit(2)
            }
        }
    }
}
