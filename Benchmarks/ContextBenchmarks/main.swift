// halyard-bench-context: JSON parsing, canonical JSON, context fitting and SHA-1.
//
//   swift run -c release halyard-bench-context [--quick] [--json FILE]
//
// Designs that are compared run in the same process, alternating (A B C A B C ...), and the
// report gives medians of the per-round times and ratios against Halyard's parser.
import BenchmarkSupport
import Foundation
@_spi(Fuzzing) import Halyard

// MARK: - Options

var quick = false
var jsonPath: String?
do {
    var args = CommandLine.arguments.dropFirst()
    while let arg = args.popFirst() {
        switch arg {
        case "--quick": quick = true
        case "--json": jsonPath = args.popFirst()
        case "-h", "--help":
            print("usage: halyard-bench-context [--quick] [--json FILE]")
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

/// Calibrates a batch size so one batch takes about `batchTarget`, then returns it.
func calibrate(_ body: () -> Void) -> Int {
    var n = 1
    while true {
        let t0 = now()
        for _ in 0..<n { body() }
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
    var bytes: Int?
    var ratioToHalyard: Double?
    var note: String?
}
var results: [Result] = []

/// Runs several designs alternating, `rounds` times, and records the median time per call.
@MainActor
func compare(_ group: String, bytes: Int? = nil, _ designs: [(String, () -> Void)]) {
    let batches = designs.map { calibrate($0.1) }
    var samples = Array(repeating: [Double](), count: designs.count)
    for _ in 0..<rounds {
        for (i, design) in designs.enumerated() {
            let n = batches[i]
            let t0 = now()
            for _ in 0..<n { design.1() }
            samples[i].append(Double(now() - t0) / Double(n))
        }
    }
    let medians = samples.map(median)
    let minimums = samples.map { $0.min() ?? .nan }
    print("\n## \(group)   (median; min in brackets)")
    for (i, design) in designs.enumerated() {
        let ratio = medians[i] / medians[0]
        var line =
            "  \(design.0.padding(toLength: 42, withPad: " ", startingAt: 0)) \(format(medians[i])) [\(format(minimums[i]))]"
        if let bytes {
            line += String(
                format: "  %7.2f ns/B  %8.1f MB/s", medians[i] / Double(bytes), Double(bytes) / medians[i] * 1e3)
        }
        if i > 0 { line += String(format: "  x%.2f vs %@", ratio, designs[0].0) }
        print(line)
        results.append(
            Result(
                group: group, name: design.0, medianNanoseconds: medians[i],
                minNanoseconds: minimums[i], bytes: bytes,
                ratioToHalyard: i > 0 ? ratio : nil, note: nil))
    }
}

func format(_ ns: Double) -> String {
    let s: String
    if ns < 1_000 {
        s = String(format: "%8.1f ns", ns)
    } else if ns < 1_000_000 {
        s = String(format: "%8.2f µs", ns / 1_000)
    } else {
        s = String(format: "%8.2f ms", ns / 1_000_000)
    }
    return s
}

// MARK: - Inputs

/// A deterministic generator (Halyard's `SplitMix64`, package access) so every run uses the
/// same inputs.
var rng = SplitMix64(seed: 42)

@MainActor
func ofrepPayload(targetBytes: Int) -> Data {
    var flags: [String] = []
    var size = 20
    var i = 0
    let reasons = ["TARGETING_MATCH", "SPLIT", "STATIC", "DEFAULT"]
    while size < targetBytes {
        let value: String
        switch i % 5 {
        case 0: value = Bool.random(using: &rng) ? "true" : "false"
        case 1: value = "\"variant-text-\(i) with some words \\u00e9\""
        case 2: value = "\(Int.random(in: 0...100_000, using: &rng))"
        case 3: value = "\(Double(Int.random(in: 0...10_000, using: &rng)) / 100)"
        default: value = "{\"color\":\"teal\",\"size\":\(i % 7),\"enabled\":true,\"weights\":[0.25,0.5,0.25]}"
        }
        let flag =
            "{\"key\":\"feature.flag-\(i)\",\"value\":\(value),\"reason\":\"\(reasons[i % 4])\",\"variant\":\"v\(i % 3)\",\"metadata\":{\"team\":\"growth\",\"version\":\(i % 11),\"experiment\":\(i % 2 == 0)}}"
        flags.append(flag)
        size += flag.utf8.count + 1
        i += 1
    }
    return Data("{\"flags\":[\(flags.joined(separator: ","))],\"metadata\":{\"etag\":\"abc\"}}".utf8)
}

/// A context of about `targetBytes` bytes with mixed attribute types.
@MainActor
func contextJSON(targetBytes: Int, attributeCount: Int? = nil) -> Data {
    var members = ["\"targetingKey\":\"user-8f3a2c\"", "\"kind\":\"user\""]
    var size = 40
    var i = 0
    while attributeCount.map({ i < $0 }) ?? (size < targetBytes - 40) {
        let value: String
        switch i % 6 {
        case 0: value = "\"value-\(i)-lorem-ipsum-dolor-sit-amet-consectetur\""
        case 1: value = "\(Int.random(in: 0...1_000_000, using: &rng))"
        case 2: value = "true"
        case 3: value = "\(Double(Int.random(in: 0...10_000, using: &rng)) / 7)"
        case 4: value = "[\"alpha\",\"beta\",\"gamma\",\"delta\"]"
        default:
            value = "{\"city\":\"Lyon\",\"zip\":\"69001\",\"country\":\"FR\",\"street\":\"12 rue de la République\"}"
        }
        let m = "\"attribute_\(i)\":\(value)"
        members.append(m)
        size += m.utf8.count + 1
        i += 1
    }
    var text = "{" + members.joined(separator: ",") + "}"
    if attributeCount == nil {
        // Pad to the exact size with one string attribute.
        let missing = targetBytes - text.utf8.count - 12
        if missing > 0 {
            text.removeLast()
            text += ",\"pad\":\"" + String(repeating: "p", count: missing) + "\"}"
        }
    }
    return Data(text.utf8)
}

// Codable mirror of the OFREP response, for JSONDecoder.
indirect enum AnyJSON: Decodable {
    case null, bool(Bool), int(Int64), double(Double), string(String), array([AnyJSON]), object([String: AnyJSON])
    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? c.decode(Double.self) {
            self = .double(d)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([AnyJSON].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: AnyJSON].self))
        }
    }
}
struct OFREPFlag: Decodable {
    var key: String
    var value: AnyJSON?
    var reason: String?
    var variant: String?
    var errorCode: String?
    var errorDetails: String?
    var metadata: [String: AnyJSON]?
}
struct OFREPResponse: Decodable {
    var flags: [OFREPFlag]
    var metadata: [String: AnyJSON]?
}

// MARK: - Runs

print("# halyard-bench-context \(quick ? "(quick)" : "")")
print(
    "date: \(ISO8601DateFormatter().string(from: Date()))  cores: \(ProcessInfo.processInfo.activeProcessorCount)  rounds: \(rounds)"
)

let payload = ofrepPayload(targetBytes: 100_000)
let decoder = JSONDecoder()
precondition((try? JSONValue(parsing: payload, limits: .ofrepResponse)) != nil)
precondition((try? decoder.decode(OFREPResponse.self, from: payload)) != nil)
compare(
    "OFREP payload, \(payload.count) bytes", bytes: payload.count,
    [
        ("Halyard JSONValue(parsing:)", { blackHole(try? JSONValue(parsing: payload, limits: .ofrepResponse)) }),
        ("JSONSerialization.jsonObject", { blackHole(try? JSONSerialization.jsonObject(with: payload)) }),
        ("JSONDecoder (Codable mirror)", { blackHole(try? decoder.decode(OFREPResponse.self, from: payload)) }),
    ])

let context4K = contextJSON(targetBytes: 4096)
precondition((try? EvaluationContext(json: context4K)) != nil)
compare(
    "4 KiB context, \(context4K.count) bytes", bytes: context4K.count,
    [
        ("Halyard JSONValue(parsing:)", { blackHole(try? JSONValue(parsing: context4K, limits: .context)) }),
        ("JSONSerialization.jsonObject", { blackHole(try? JSONSerialization.jsonObject(with: context4K)) }),
        (
            "JSONDecoder ([String: AnyJSON])",
            { blackHole(try? decoder.decode([String: AnyJSON].self, from: context4K)) }
        ),
        ("Halyard EvaluationContext(json:)", { blackHole(try? EvaluationContext(json: context4K)) }),
    ])

// Cost per byte across sizes: flat means linear.
let sizes = [1 << 10, 4 << 10, 16 << 10, 64 << 10]
let sized = sizes.map { contextJSON(targetBytes: $0 - 16) }
do {
    print("\n## parse cost per byte by input size (contexts)")
    let batches = sized.map { d in calibrate { blackHole(try? JSONValue(parsing: d, limits: .default)) } }
    var samples = Array(repeating: [Double](), count: sized.count)
    for _ in 0..<rounds {
        for (i, d) in sized.enumerated() {
            let t0 = now()
            for _ in 0..<batches[i] { blackHole(try? JSONValue(parsing: d, limits: .default)) }
            samples[i].append(Double(now() - t0) / Double(batches[i]))
        }
    }
    let base = median(samples[0]) / Double(sized[0].count)
    let minBase = (samples[0].min() ?? .nan) / Double(sized[0].count)
    for (i, d) in sized.enumerated() {
        let m = median(samples[i])
        let perByte = m / Double(d.count)
        let minPerByte = (samples[i].min() ?? .nan) / Double(d.count)
        print(
            String(
                format: "  %6d bytes  %@  %6.2f ns/B  (x%.2f of the 1 KiB cost per byte; min %.2f ns/B, x%.2f)",
                d.count, format(m), perByte, perByte / base, minPerByte, minPerByte / minBase))
        results.append(
            Result(
                group: "per-byte", name: "\(d.count) bytes", medianNanoseconds: m,
                minNanoseconds: samples[i].min() ?? .nan, bytes: d.count,
                ratioToHalyard: perByte / base, note: "ratio = ns/B relative to 1 KiB"))
    }
}

// Pathological inputs.
let nested = Data(String(repeating: "[", count: 100_000).utf8)
let escapeString = Data(("[\"" + String(repeating: "\\u00e9\\n", count: 60 * 1024 / 8) + "\"]").utf8)
let manyMembers = Data(("{" + (0..<5_000).map { "\"member\($0)\":\($0)" }.joined(separator: ",") + "}").utf8)
let deepLimits = JSONParsingLimits(maxInputBytes: 1 << 20, maxDepth: 64, maxObjectMembers: 10_000)
do {
    var nestedError: JSONParseError?
    do { _ = try JSONValue(parsing: nested, limits: deepLimits) } catch { nestedError = error }
    precondition(nestedError?.kind == .nestingTooDeep(limit: 64))
    precondition((try? JSONValue(parsing: escapeString)) != nil)
    precondition((try? JSONValue(parsing: manyMembers)) != nil)
}
compare(
    "pathological inputs",
    [
        ("100,000 nested [ (rejected at depth 64)", { blackHole(try? JSONValue(parsing: nested, limits: deepLimits)) }),
        ("60 KiB string of escapes", { blackHole(try? JSONValue(parsing: escapeString)) }),
        ("5,000 members", { blackHole(try? JSONValue(parsing: manyMembers)) }),
        ("JSONSerialization: 60 KiB escapes", { blackHole(try? JSONSerialization.jsonObject(with: escapeString)) }),
        ("JSONSerialization: 5,000 members", { blackHole(try? JSONSerialization.jsonObject(with: manyMembers)) }),
    ])

// Typical context: 20 attributes, about 1 KiB, parse + fit + fingerprint.
let typical = contextJSON(targetBytes: 0, attributeCount: 20)
let typicalContext = try! EvaluationContext(json: typical)
compare(
    "typical context (\(typical.count) bytes, 20 attributes)", bytes: typical.count,
    [
        ("parse + fit + fingerprint", { blackHole(try? EvaluationContext(json: typical).fitted()) }),
        ("parse only", { blackHole(try? EvaluationContext(json: typical)) }),
        ("fit + fingerprint only", { blackHole(try? typicalContext.fitted()) }),
        ("fit with trimming (cap 512)", { blackHole(try? typicalContext.fitted(limit: 512)) }),
    ])
let typicalMedian = results.first { $0.name == "parse + fit + fingerprint" }!.medianNanoseconds
let typicalMin = results.first { $0.name == "parse + fit + fingerprint" }!.minNanoseconds

// Serialization.
let payloadValue = try! JSONValue(parsing: payload, limits: .ofrepResponse)
compare(
    "serialize OFREP payload value", bytes: payload.count,
    [
        ("Halyard canonicalJSON", { blackHole(payloadValue.canonicalJSON) }),
        ("Halyard jsonData", { blackHole(payloadValue.jsonData) }),
        (
            "JSONSerialization.data (of its own parse)",
            {
                blackHole(try? JSONSerialization.data(withJSONObject: try! JSONSerialization.jsonObject(with: payload)))
            }
        ),
    ])

// SHA-1 throughput.
let megabyte = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
compare(
    "SHA-1", bytes: megabyte.count,
    [
        ("SHA1.hash, 1 MiB", { blackHole(SHA1.hash(megabyte)) })
    ])
let shaMBs = Double(megabyte.count) / results.last!.medianNanoseconds * 1e3
let shaBestMBs = Double(megabyte.count) / results.last!.minNanoseconds * 1e3

print("\n## targets")
let halyardPayload = results.first { $0.group.hasPrefix("OFREP") && $0.name.hasPrefix("Halyard") }!.medianNanoseconds
let foundationPayload = results.first { $0.group.hasPrefix("OFREP") && $0.name.hasPrefix("JSONSerialization") }!
    .medianNanoseconds
print(
    String(
        format: "  parse+fit+fingerprint < 20 µs: median %.2f µs (min %.2f)  %@", typicalMedian / 1000,
        typicalMin / 1000,
        typicalMedian < 20_000 ? "MET" : "NOT MET"))
print(
    String(
        format: "  SHA-1 >= 300 MB/s: median %.0f MB/s (best %.0f)  %@", shaMBs, shaBestMBs,
        shaMBs >= 300 ? "MET" : "NOT MET"))
print(String(format: "  OFREP parse vs JSONSerialization: x%.2f faster", foundationPayload / halyardPayload))

if let jsonPath {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try! encoder.encode(results).write(to: URL(fileURLWithPath: jsonPath))
    print("wrote \(jsonPath)")
}
