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

    /// Runs `step` ``length`` times for every seed; `step` feeds one input and returns the
    /// broken invariants (empty when all hold) and a description of the input. Records the
    /// first failure of each sequence with its seed and step index, and stops after 5 failing
    /// sequences (one bug usually breaks many).
    static func run<State>(
        _ what: String, sourceLocation: SourceLocation = #_sourceLocation, start: (UInt64) -> State,
        step: (inout State, inout SplitMix64) -> (input: String, violations: [String])
    ) {
        var failing = 0
        for seed in seeds {
            var random = SplitMix64(seed: seed)
            var state = start(seed)
            for index in 0..<length {
                let (input, violations) = step(&state, &random)
                guard violations.isEmpty else {
                    Issue.record(
                        "\(what): seed \(seed), step \(index) (\(input)): \(violations.joined(separator: "; "))",
                        sourceLocation: sourceLocation)
                    failing += 1
                    break
                }
            }
            if failing == 5 { return }
        }
    }
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
        let milliseconds = maximum.components.seconds * 1_000 + maximum.components.attoseconds / 1_000_000_000_000_000
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
