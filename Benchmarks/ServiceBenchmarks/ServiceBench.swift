import Foundation

/// One run of `halyard-bench-service`: the options and the verdicts so far. Each section is a
/// method in a file of its own (`*Scenario.swift`) returning its figures; `main.swift` runs
/// them in order and ``finish(_:)`` reports (Report.swift).
///
/// Main-actor isolated, as the sections' driving code always was; the loops that time requests
/// are nonisolated functions (awaiting one from the main actor per request would add a thread
/// hop, ~10 µs, that a server's request handlers never pay).
@MainActor
final class ServiceBench {
    /// The command-line options.
    let options: Options
    /// When the run started (the report's "run took").
    let runStart = ContinuousClock.now
    /// The verdicts so far, in the order they are printed.
    private(set) var verdicts: [Verdict] = []

    /// A run with `options`.
    init(_ options: Options) { self.options = options }

    /// Whether the run is `--quick`.
    var quick: Bool { options.quick }

    /// Records a verdict: `name` states the bound, `pass` whether it held, `detail` the figure.
    func verdict(_ name: String, _ pass: Bool, _ detail: String) {
        verdicts.append(Verdict(name: name, pass: pass, detail: detail))
    }
}
