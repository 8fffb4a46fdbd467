import Foundation
import Testing

@testable import Halyard

/// Seeded random input sequences for the pure machines' invariant tests (the way
/// swift-collections checks its types: many small random scenarios, every invariant checked
/// after every step). Each sequence has its own seed (``SplitMix64``), so a failure names the
/// seed and the step and replays alone: `HALYARD_MACHINE_SEED=<seed> swift test --filter <Suite>`.
enum RandomSequences {
    /// Sequences per test.
    static let count = 500
    /// Inputs per sequence.
    static let length = 60

    /// The seeds to run: `HALYARD_MACHINE_SEED` alone when set, else 1 through ``count``.
    static var seeds: [UInt64] {
        if let only = ProcessInfo.processInfo.environment["HALYARD_MACHINE_SEED"].flatMap(UInt64.init) {
            return [only]
        }
        return (1...UInt64(count)).map { $0 }
    }

    /// Runs a `Scenario` of every seed for ``length`` steps. Records the first broken invariant
    /// of each sequence with its seed and step index, stops after 5 failing sequences (one bug
    /// usually breaks many), and, over a full run, expects the sequences to have reached every
    /// state named in `expected` (else they would prove little).
    static func run<Scenario: RandomScenario>(
        _ scenario: Scenario.Type, reaching expected: Set<String>, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        var failing = 0
        var reached = Set<String>()
        for seed in seeds {
            var random = SplitMix64(seed: seed)
            var state = Scenario(seed: seed)
            for index in 0..<length {
                let (input, violations) = state.step(&random)
                guard violations.isEmpty else {
                    Issue.record(
                        "\(Scenario.self): seed \(seed), step \(index) (\(input)): \(violations.joined(separator: "; "))",
                        sourceLocation: sourceLocation)
                    failing += 1
                    break
                }
            }
            reached.formUnion(state.coverage)
            if failing == 5 { return }
        }
        if seeds.count == count {
            #expect(
                reached.isSuperset(of: expected), "never reached: \(expected.subtracting(reached).sorted())",
                sourceLocation: sourceLocation)
        }
    }
}

/// A random scenario against one machine, for ``RandomSequences/run(_:reaching:sourceLocation:)``.
protocol RandomScenario {
    /// A scenario whose configuration and randomness derive from `seed`.
    init(seed: UInt64)
    /// The names of the states the scenario has reached so far.
    var coverage: Set<String> { get }
    /// Draws one input (moving the clock), feeds it, and returns it described with the broken
    /// invariants (empty when all hold).
    mutating func step(_ random: inout SplitMix64) -> (input: String, violations: [String])
}

extension SplitMix64 {
    /// A uniform integer in `0..<bound`.
    mutating func below(_ bound: Int) -> Int { Int.random(in: 0..<bound, using: &self) }

    /// `true` with probability `p`.
    mutating func chance(_ p: Double) -> Bool { unit() < p }

    /// One of `choices`, drawn by weight (weights of 0 are never drawn).
    mutating func pick<T>(_ choices: [(weight: Int, value: T)]) -> T {
        var roll = below(choices.reduce(0) { $0 + $1.weight })
        for choice in choices {
            if roll < choice.weight { return choice.value }
            roll -= choice.weight
        }
        preconditionFailure("no choice with a positive weight")
    }

    /// One element of `elements` (not empty).
    mutating func element<T>(of elements: [T]) -> T { elements[below(elements.count)] }

    /// A duration of whole milliseconds in `0...maximum`.
    mutating func duration(upTo maximum: Duration) -> Duration {
        let milliseconds = maximum.saturatingMilliseconds
        return .milliseconds(Int64.random(in: 0...max(milliseconds, 0), using: &self))
    }

    /// How far the clock moves before the next input: often not at all, often a little,
    /// sometimes minutes (so backoffs, polls and timeouts run out).
    mutating func advance() -> Duration {
        switch below(10) {
        case 0..<3: .zero
        case 3..<7: duration(upTo: .seconds(2))
        case 7..<9: duration(upTo: .seconds(40))
        default: duration(upTo: .seconds(400))
        }
    }
}
