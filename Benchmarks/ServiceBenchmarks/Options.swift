import Foundation

/// Command-line options of `halyard-bench-service`.
///
/// `--quick`: fewer requests and rounds, the same sections; `--json FILE`: write the results
/// (``ServiceReport``); `--skip-loopback`: skip section 6 (it needs python3). The `--…-only`
/// switches run one section alone, for profiling and for re-measuring one figure.
struct Options {
    /// `--quick`: fewer requests, the same sections (~20 s instead of ~2 min).
    var quick = false
    /// `--json FILE`: where to write the results.
    var json: String?
    /// Whether section 6 (the loopback Python control plane) runs; `--skip-loopback` skips it.
    var loopback = true
    /// `--warm-only`: section 1 only (for `valgrind --tool=callgrind`, docs/benchmarks-service.md).
    var warmOnly = false
    /// `--samples N`: requests per path in section 1.
    var samples: Int?
    /// `--path context|fitted|both`: which warm path section 1 runs (both by default).
    var path = "both"
    /// `--memory-only`: section 4 only (memory per cached context).
    var memoryOnly = false
    /// `--brownout-only`: section 7 only (the brownout and the recovery after an outage, Halyard and
    /// the per-(flag, context) design).
    var brownoutOnly = false
    /// `--details-only`: section 9 only (detail reads from every core, shared vs own details).
    var detailsOnly = false
    /// `--stream-only`: section 10 only (the warm path with a stream connected, one event's wave).
    var streamOnly = false

    /// Parses `arguments` (the program name first); exits with status 2 on an unknown argument.
    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--quick": quick = true
            case "--json": json = iterator.next()
            case "--skip-loopback": loopback = false
            case "--warm-only": warmOnly = true
            case "--memory-only": memoryOnly = true
            case "--brownout-only": brownoutOnly = true
            case "--details-only": detailsOnly = true
            case "--stream-only": streamOnly = true
            case "--samples": samples = iterator.next().flatMap { Int($0) }
            case "--path": path = iterator.next() ?? "both"
            default:
                FileHandle.standardError.write(Data("unknown argument \(argument)\n".utf8))
                exit(2)
            }
        }
    }
}
