// halyard-bench-definitions: flagd definitions evaluated in process (SPEC §17,
// docs/benchmarks-definitions.md).
//
//   swift run -c release halyard-bench-definitions [--quick] [--json FILE] [--count N [--shape S] [--typed] [--handle]]
//
// --count N --shape S: no timing; N evaluations of one shape (static, rule, fractional, semver,
// or dictionary for the baseline) in countEvaluations, for instruction counts under callgrind
// (docs/benchmarks-definitions.md, "Instruction counts"); with --typed, N typed value reads
// (`bool`, `string` for fractional) instead of `evaluate`; with --typed --handle, by `FlagKey`.
//
// ns per evaluation of a static flag, a 3-condition rule, a `fractional` split and `sem_ver`,
// alternating in one process with an unsynchronized dictionary read (the baseline: ratios are
// against it); keys and contexts are chosen at run time from arrays, so nothing is hoisted.
// Then a document of 1,000 flags parsed and compiled, and published through a file source. With
// HALYARD_FLAGD_PYTHON set (a Python with openfeature-flagd-core==1.0.0), the same evaluations
// by the reference evaluator (Tests/FlagdReference/bench.py), per evaluation.
import BenchmarkSupport
import Foundation
import Halyard

// MARK: - Options

var quick = false
var jsonPath: String?
var count: Int?
var countShape: String?
var countTyped = false
var countHandle = false
do {
    var args = CommandLine.arguments.dropFirst()
    while let arg = args.popFirst() {
        switch arg {
        case "--quick": quick = true
        case "--json": jsonPath = args.popFirst()
        case "--count": count = args.popFirst().flatMap { Int($0) }
        case "--shape": countShape = args.popFirst()
        case "--typed": countTyped = true
        case "--handle": countHandle = true
        case "-h", "--help":
            print(
                "usage: halyard-bench-definitions [--quick] [--json FILE] [--count N [--shape S] [--typed] [--handle]]")
            exit(0)
        default:
            FileHandle.standardError.write(Data("unknown argument \(arg)\n".utf8))
            exit(2)
        }
    }
}
let rounds = quick ? 7 : 31
/// Target duration of one timed batch, in nanoseconds.
let batchTarget: UInt64 = quick ? 2_000_000 : 10_000_000

// MARK: - Timing

@inline(never)
func blackHole<T>(_ x: T) {
    withExtendedLifetime(x) {}
}

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// A batch size so one batch of `body` takes about `batchTarget`.
@MainActor
func calibrate(_ body: (Int) -> Void) -> Int {
    var n = 1
    while true {
        let t0 = now()
        for i in 0..<n { body(i) }
        let dt = now() - t0
        if dt >= batchTarget / 4 || n >= 1 << 24 {
            return max(1, Int(Double(n) * Double(batchTarget) / Double(max(dt, 1))))
        }
        n *= 4
    }
}

struct Result: Codable {
    var group: String
    var name: String
    var medianNanoseconds: Double
    var minNanoseconds: Double
    var ratioToBaseline: Double?
}
var results: [Result] = []

func format(_ ns: Double) -> String {
    if ns < 1_000 { return String(format: "%9.1f ns", ns) }
    if ns < 1_000_000 { return String(format: "%9.2f µs", ns / 1_000) }
    return String(format: "%9.2f ms", ns / 1_000_000)
}

/// Runs the designs alternating, `rounds` times, and prints the median time per call with its
/// ratio to the first design (the baseline). Each design gets the iteration index.
@MainActor
func compare(_ group: String, _ designs: [(String, (Int) -> Void)]) {
    let batches = designs.map { calibrate($0.1) }
    var samples = Array(repeating: [Double](), count: designs.count)
    for _ in 0..<rounds {
        for (i, design) in designs.enumerated() {
            let n = batches[i]
            let t0 = now()
            for j in 0..<n { design.1(j) }
            samples[i].append(Double(now() - t0) / Double(n))
        }
    }
    print("\n## \(group)   (median per call; min in brackets)")
    let medians = samples.map(median)
    for (i, design) in designs.enumerated() {
        let minimum = samples[i].min() ?? .nan
        var line =
            "  \(design.0.padding(toLength: 40, withPad: " ", startingAt: 0)) \(format(medians[i])) [\(format(minimum))]"
        let ratio = i > 0 ? medians[i] / medians[0] : nil
        if let ratio { line += String(format: "  x%.1f vs %@", ratio, designs[0].0) }
        print(line)
        results.append(
            Result(
                group: group, name: design.0, medianNanoseconds: medians[i], minNanoseconds: minimum,
                ratioToBaseline: ratio))
    }
}

// MARK: - Workload

/// Flags of each shape (keys chosen at run time among them).
let flagsPerShape = 64
/// Contexts (chosen at run time).
let contextCount = 1_024
// Seeded: the same contexts in every run, so instruction counts compare across builds.
var rng = SplitMix64(seed: 51)
let plans = ["free", "pro", "team", "enterprise"]
let countries = ["FR", "DE", "US", "JP", "BR", "IN"]

@MainActor
func flagJSON(_ shape: String, _ i: Int) -> String {
    let variants = #""variants": {"on": true, "off": false}, "defaultVariant": "off""#
    switch shape {
    case "static":
        return #""static-\#(i)": {"state": "ENABLED", \#(variants)}"#
    case "rule":
        return #"""
            "rule-\#(i)": {"state": "ENABLED", \#(variants), "targeting": {"if": [{"and": [
              {"==": [{"var": "plan"}, "\#(plans[i % plans.count])"]},
              {">=": [{"var": "age"}, \#(18 + i % 10)]},
              {"in": [{"var": "country"}, ["FR", "DE", "US"]]}]}, "on", "off"]}}
            """#
    case "fractional":
        return #"""
            "fractional-\#(i)": {"state": "ENABLED", "variants": {"a": "A", "b": "B", "c": "C"}, "defaultVariant": "a",
              "targeting": {"fractional": [["a", 50], ["b", 30], ["c", 20]]}}
            """#
    default:
        return #"""
            "semver-\#(i)": {"state": "ENABLED", \#(variants),
              "targeting": {"if": [{"sem_ver": [{"var": "version"}, ">=", "2.\#(i % 5).0"]}, "on", "off"]}}
            """#
    }
}

let shapes = ["static", "rule", "fractional", "semver"]
let document =
    "{\"flags\": {"
    + shapes.flatMap { shape in (0..<flagsPerShape).map { flagJSON(shape, $0) } }.joined(separator: ",\n")
    + "}}"
let definitions: FlagDefinitions
do {
    definitions = try FlagDefinitions(parsing: document)
} catch {
    print("the benchmark's definitions were refused: \(error)")
    exit(1)
}

/// Keys per shape, built at run time.
let keys: [String: [String]] = Dictionary(
    uniqueKeysWithValues: shapes.map { shape in (shape, (0..<flagsPerShape).map { "\(shape)-\($0)" }) })
/// The baseline's dictionary: the same keys, to values.
let dictionary: [String: JSONValue] = Dictionary(
    uniqueKeysWithValues: keys.values.flatMap { $0 }.map { ($0, JSONValue.bool(true)) })

let contexts: [EvaluationContext] = (0..<contextCount).map { i in
    EvaluationContext(
        targetingKey: "user-\(UInt32.random(in: 0 ... .max, using: &rng))",
        attributes: [
            "plan": .string(plans.randomElement(using: &rng) ?? "free"),
            "age": .int(Int64.random(in: 12...80, using: &rng)),
            "country": .string(countries.randomElement(using: &rng) ?? "FR"),
            "version": .string("\(Int.random(in: 1...3, using: &rng)).\(Int.random(in: 0...9, using: &rng)).\(i % 7)"),
            "email": .string("u\(i)@example.com"),
        ])
}

// Sanity: every shape serves a value (a benchmark of errors would measure nothing).
for shape in shapes {
    let served = definitions.evaluate(keys[shape]![0], context: contexts[0])
    guard served.errorCode == nil else {
        print("\(shape) evaluates to an error: \(served)")
        exit(1)
    }
}
let reasons = shapes.map { shape in "\(shape): \(definitions.evaluate(keys[shape]![0], context: contexts[0]).reason)" }

print("# halyard-bench-definitions\(quick ? " (quick)" : "")")
print(
    "\(ProcessInfo.processInfo.activeProcessorCount) cores, \(rounds) rounds; \(flagsPerShape) flags per shape, \(contextCount) contexts"
)
print("reasons: \(reasons.joined(separator: ", "))")

// MARK: - Evaluations

let keyMask = flagsPerShape - 1
let contextMask = contextCount - 1
let staticKeys = keys["static"]!
let ruleKeys = keys["rule"]!
let fractionalKeys = keys["fractional"]!
let semverKeys = keys["semver"]!

/// Handles (`FlagKey`, docs/in-process.md, "Reading by handle") held as a program holds them:
/// in an array picked at run time, and in a property of an object (one key).
let staticHandles = staticKeys.map(FlagKey.init)
let semverHandles = semverKeys.map(FlagKey.init)
final class FeatureKeys: Sendable {
    let newCheckout = FlagKey("static-7")
    let semverGate = FlagKey("semver-3")
}
let featureKeys = FeatureKeys()
let heldContext = contexts[5]

// MARK: - Instruction counts (--count N [--shape S])

/// `n` evaluations of `shapeKeys` (the dictionary read when `dictionaryRead`), in a function of
/// its own: callgrind's inclusive count of it over `n` is one evaluation's instructions. One
/// shape per process (the optimizer merges functions that differ only in a global they read).
@MainActor @inline(never)
func countEvaluations(_ shapeKeys: [String], _ n: Int, dictionaryRead: Bool, typed: Bool, string: Bool) {
    if dictionaryRead {
        for i in 0..<n { blackHole(dictionary[shapeKeys[i & keyMask]]) }
    } else if typed && string {
        for i in 0..<n {
            blackHole(definitions.string(shapeKeys[i & keyMask], context: contexts[i & contextMask], default: ""))
        }
    } else if typed && countHandle {
        let handles = shapeKeys.map(FlagKey.init)
        for i in 0..<n {
            blackHole(definitions.bool(handles[i & keyMask], context: contexts[i & contextMask], default: false))
        }
    } else if typed {
        for i in 0..<n {
            blackHole(definitions.bool(shapeKeys[i & keyMask], context: contexts[i & contextMask], default: false))
        }
    } else {
        for i in 0..<n { blackHole(definitions.evaluate(shapeKeys[i & keyMask], context: contexts[i & contextMask])) }
    }
}

if let count {
    let shape = countShape ?? "static"
    guard let shapeKeys = keys[shape == "dictionary" ? "static" : shape] else {
        print("--shape: one of dictionary, \(shapes.joined(separator: ", "))")
        exit(2)
    }
    countEvaluations(
        shapeKeys, count, dictionaryRead: shape == "dictionary", typed: countTyped, string: shape == "fractional")
    print("counted: \(count) \(countTyped ? "typed reads" : "evaluations") of \(shape) in countEvaluations")
    exit(0)
}

compare(
    "one evaluation (key and context chosen at run time)",
    [
        ("dictionary read [String: JSONValue]", { i in blackHole(dictionary[staticKeys[i & keyMask]]) }),
        (
            "static flag",
            { i in blackHole(definitions.evaluate(staticKeys[i & keyMask], context: contexts[i & contextMask])) }
        ),
        (
            "3-condition rule",
            { i in blackHole(definitions.evaluate(ruleKeys[i & keyMask], context: contexts[i & contextMask])) }
        ),
        (
            "fractional (3 buckets)",
            { i in
                blackHole(definitions.evaluate(fractionalKeys[i & keyMask], context: contexts[i & contextMask]))
            }
        ),
        (
            "sem_ver",
            { i in blackHole(definitions.evaluate(semverKeys[i & keyMask], context: contexts[i & contextMask])) }
        ),
        (
            "3-condition rule, one context held",
            { i in blackHole(definitions.evaluate(ruleKeys[i & keyMask], context: heldContext)) }
        ),
        (
            "fractional (3 buckets), one context held",
            { i in blackHole(definitions.evaluate(fractionalKeys[i & keyMask], context: heldContext)) }
        ),
    ])

compare(
    "one typed value read (bool; string for fractional): the value only, no ServedFlag",
    [
        ("dictionary read [String: JSONValue]", { i in blackHole(dictionary[staticKeys[i & keyMask]]) }),
        (
            "static flag",
            { i in
                blackHole(
                    definitions.bool(staticKeys[i & keyMask], context: contexts[i & contextMask], default: false))
            }
        ),
        (
            "3-condition rule",
            { i in
                blackHole(definitions.bool(ruleKeys[i & keyMask], context: contexts[i & contextMask], default: false))
            }
        ),
        (
            "fractional (3 buckets)",
            { i in
                blackHole(
                    definitions.string(fractionalKeys[i & keyMask], context: contexts[i & contextMask], default: ""))
            }
        ),
        (
            "sem_ver",
            { i in
                blackHole(
                    definitions.bool(semverKeys[i & keyMask], context: contexts[i & contextMask], default: false))
            }
        ),
        (
            "static flag, FlagKey from an array",
            { i in
                blackHole(
                    definitions.bool(staticHandles[i & keyMask], context: contexts[i & contextMask], default: false))
            }
        ),
        (
            "static flag, FlagKey in a property",
            { i in
                blackHole(definitions.bool(featureKeys.newCheckout, context: contexts[i & contextMask], default: false))
            }
        ),
        (
            "static flag, FlagKey, one context held",
            { _ in blackHole(definitions.bool(featureKeys.newCheckout, context: heldContext, default: false)) }
        ),
        (
            "sem_ver, FlagKey from an array",
            { i in
                blackHole(
                    definitions.bool(semverHandles[i & keyMask], context: contexts[i & contextMask], default: false))
            }
        ),
        (
            "3-condition rule, one context held",
            { i in blackHole(definitions.bool(ruleKeys[i & keyMask], context: heldContext, default: false)) }
        ),
        (
            "fractional (3 buckets), one context held",
            { i in blackHole(definitions.string(fractionalKeys[i & keyMask], context: heldContext, default: "")) }
        ),
    ])

// MARK: - A service's read: a ContextFlags view of in-process definitions

/// The read a service's request handler makes (docs/in-process.md): `flags(for:)` once per
/// request (each context's flags are evaluated once per definitions version and memoized), then
/// keyed reads of the view. The views of the 1,024 contexts are held in an array and picked at
/// run time, like the keys, so neither the view nor the key is hoisted out of the loop.
let serviceFile = FileManager.default.temporaryDirectory
    .appendingPathComponent("halyard-bench-definitions-\(ProcessInfo.processInfo.processIdentifier).json")
let views: [ContextFlags]
do {
    try Data(document.utf8).write(to: serviceFile)
    var options = FlagServiceOptions(definitions: .file(serviceFile))
    options.exposures.enabled = false  // as halyard-bench-service's reads
    options.maxContexts = 4 * contextCount
    let service = try FlagService(options: options)
    var held: [ContextFlags] = []
    for context in contexts { held.append(await service.flags(for: context)) }
    views = held
    for shape in shapes {
        let key = keys[shape]![0]
        let viewDetail = views[0].stringDetail(key, default: "")
        let boolDetail = views[0].boolDetail(key, default: false)
        guard viewDetail.errorCode == nil || boolDetail.errorCode == nil else {
            print("\(shape) read through a view is an error: \(viewDetail)")
            exit(1)
        }
    }
} catch {
    print("the in-process service could not be made: \(error)")
    exit(1)
}
try? FileManager.default.removeItem(at: serviceFile)
/// One view and one context held (a request handler's): the read without the copy of a view
/// or a context out of an array (what the rows above pay at each call).
let heldView = views[5]

compare(
    "a service's read: ContextFlags view (held, one per context) keyed read, run-time key",
    [
        ("dictionary read [String: JSONValue]", { i in blackHole(dictionary[staticKeys[i & keyMask]]) }),
        ("static flag", { i in blackHole(views[i & contextMask].bool(staticKeys[i & keyMask], default: false)) }),
        ("3-condition rule", { i in blackHole(views[i & contextMask].bool(ruleKeys[i & keyMask], default: false)) }),
        (
            "fractional (3 buckets)",
            { i in blackHole(views[i & contextMask].string(fractionalKeys[i & keyMask], default: "")) }
        ),
        ("sem_ver", { i in blackHole(views[i & contextMask].bool(semverKeys[i & keyMask], default: false)) }),
        (
            "static flag, FlagKey from an array",
            { i in blackHole(views[i & contextMask].bool(staticHandles[i & keyMask], default: false)) }
        ),
        (
            "static flag, FlagKey in a property",
            { i in blackHole(views[i & contextMask].bool(featureKeys.newCheckout, default: false)) }
        ),
        (
            "static flag, FlagKey, one view held",
            { _ in blackHole(heldView.bool(featureKeys.newCheckout, default: false)) }
        ),
        (
            "sem_ver, FlagKey in a property",
            { i in blackHole(views[i & contextMask].bool(featureKeys.semverGate, default: false)) }
        ),
    ])

compare(
    "one evaluation with a fixed $flagd.timestamp (no clock read)",
    [
        ("dictionary read [String: JSONValue]", { i in blackHole(dictionary[ruleKeys[i & keyMask]]) }),
        (
            "3-condition rule",
            { i in
                blackHole(
                    definitions.evaluate(
                        ruleKeys[i & keyMask], context: contexts[i & contextMask], timestamp: 1_800_000_000))
            }
        ),
        (
            "fractional (3 buckets)",
            { i in
                blackHole(
                    definitions.evaluate(
                        fractionalKeys[i & keyMask], context: contexts[i & contextMask], timestamp: 1_800_000_000))
            }
        ),
        (
            "sem_ver",
            { i in
                blackHole(
                    definitions.evaluate(
                        semverKeys[i & keyMask], context: contexts[i & contextMask], timestamp: 1_800_000_000))
            }
        ),
    ])

// MARK: - 1,000 flags: parse + compile, publish

let thousand =
    "{\"flags\": {" + (0..<1_000).map { flagJSON(shapes[$0 % 4], $0 / 4) }.joined(separator: ",\n") + "}}"
let thousandData = Data(thousand.utf8)
var compileSamples: [Double] = []
for _ in 0..<(quick ? 5 : 21) {
    let t0 = now()
    let compiled = try? FlagDefinitions(parsing: thousandData)
    compileSamples.append(Double(now() - t0))
    guard compiled?.count == 1_000 else {
        print("the 1,000-flag document did not compile")
        exit(1)
    }
}
print("\n## 1,000 flags (\(thousandData.count) bytes)")
print(
    "  parse + compile                          \(format(median(compileSamples))) [\(format(compileSamples.min() ?? .nan))]"
)
results.append(
    Result(
        group: "1,000 flags", name: "parse + compile", medianNanoseconds: median(compileSamples),
        minNanoseconds: compileSamples.min() ?? .nan, ratioToBaseline: nil))

/// Publishing through a file source: a changed file checked, read, hashed, compiled and
/// published, until a reader of `updates()` holds it.
@MainActor
func publishSamples() async throws -> [Double] {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halyard-bench-definitions-\(getpid())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let file = folder.appendingPathComponent("flags.json")
    let feed = try DefinitionsFeed(source: .file(file), pollJitter: 0)
    defer { feed.close() }
    var samples: [Double] = []
    for round in 0..<(quick ? 5 : 21) {
        // Each round a different document (one flag key renamed), so the hash differs.
        try Data(thousand.replacingOccurrences(of: "\"static-0\"", with: "\"static-0-\(round)\"").utf8).write(to: file)
        let t0 = now()
        await feed.check()
        samples.append(Double(now() - t0))
        guard feed.current?.count == 1_000, feed.stats.loads == round + 1 else {
            print("the file source did not publish round \(round): \(feed.stats)")
            exit(1)
        }
    }
    return samples
}
let publish = try await publishSamples()
print(
    "  file source: check, read, hash, compile, publish \(format(median(publish))) [\(format(publish.min() ?? .nan))]")
results.append(
    Result(
        group: "1,000 flags", name: "file source publish", medianNanoseconds: median(publish),
        minNanoseconds: publish.min() ?? .nan, ratioToBaseline: nil))

// MARK: - The reference evaluator (optional)

if let python = ProcessInfo.processInfo.environment["HALYARD_FLAGD_PYTHON"], !python.isEmpty {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Tests/FlagdReference/bench.py")
    let request: [String: Any] = [
        "definitions": try JSONSerialization.jsonObject(with: Data(document.utf8)),
        "shapes": Dictionary(uniqueKeysWithValues: shapes.map { ($0, keys[$0]!) }),
        "contexts": contexts.prefix(256).map { context -> [String: Any] in
            var attributes: [String: Any] = [:]
            for (name, value) in context.attributes {
                switch value {
                case .string(let s): attributes[name] = s
                case .int(let n): attributes[name] = n
                default: break
                }
            }
            return ["targetingKey": context.targetingKey, "attributes": attributes]
        },
        "seconds": quick ? 0.2 : 1.0,
    ]
    let process = Process()
    process.executableURL = URL(fileURLWithPath: python)
    process.arguments = [script.path]
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    input.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: request))
    try input.fileHandleForWriting.close()
    let answer = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0,
        let perShape = try JSONSerialization.jsonObject(with: answer) as? [String: Double]
    else {
        print("the reference benchmark failed (status \(process.terminationStatus))")
        exit(1)
    }
    print("\n## the reference evaluator (openfeature-flagd-core, same machine; median per call)")
    for shape in shapes {
        let reference = perShape[shape] ?? .nan
        let halyard =
            results.first { $0.group.hasPrefix("one evaluation (") && $0.name.hasPrefix(shapeName(shape)) }?
            .medianNanoseconds ?? .nan
        print(
            "  \(shapeName(shape).padding(toLength: 40, withPad: " ", startingAt: 0)) \(format(reference))  x\(String(format: "%.0f", reference / halyard)) Halyard's time"
        )
        results.append(
            Result(
                group: "reference evaluator", name: shapeName(shape), medianNanoseconds: reference,
                minNanoseconds: reference,
                ratioToBaseline: nil))
    }
} else {
    print("\n(the reference evaluator: set HALYARD_FLAGD_PYTHON to a Python with openfeature-flagd-core==1.0.0)")
}

func shapeName(_ shape: String) -> String {
    switch shape {
    case "static": "static flag"
    case "rule": "3-condition rule"
    case "fractional": "fractional"
    default: "sem_ver"
    }
}

if let jsonPath {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try encoder.encode(results).write(to: URL(fileURLWithPath: jsonPath))
}
