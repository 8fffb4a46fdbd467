// halyard-release-stress: every read that takes something out of a hazard-protected snapshot,
// from many threads, while a publisher replaces the snapshot as fast as it can, in a
// `-c release` build: only there are the compiler's ARC passes free to move a retain (debug
// builds move nothing, and the sanitizer builds call the header's inline hazard functions
// instead of inlining them, which stops the motion; docs/architecture.md, "Reads and the
// optimizer").
//
// Why it exists: a detail read once retained the flag's `EvaluationDetail` *after* the store
// that ended the hazard protection (LLVM's ARC optimizer moved the `swift_retain` past it), a
// use-after-free the moment the snapshot was reclaimed. `swift test`, TSan and ASan could not
// see it; `halyard-bench --quick` crashed on it. Here such a retain shows as a crash or as a
// wrong value, and every read's result is checked against the two values its flag can have.
// `.ci/run` runs it for 10 s after the benchmark build.
//
//     swift run -c release halyard-release-stress [seconds] [readers]
//
// Exits 0 after `seconds` (default 10) when every read was consistent; prints the first
// inconsistent reads and exits 1 otherwise.

import Foundation
import Halyard
import Synchronization

final class Shared: Sendable {
    let stop = Atomic<Bool>(false)
    let reads = Atomic<Int>(0)
    let publishes = Atomic<Int>(0)
    let failures = Mutex<[String]>([])

    func fail(_ message: String) {
        failures.withLock { if $0.count < 10 { $0.append(message) } }
        stop.store(true, ordering: .relaxed)
    }
}

let arguments = CommandLine.arguments.dropFirst()
let seconds = arguments.first.flatMap(Double.init) ?? 10
let readers = arguments.dropFirst().first.flatMap(Int.init) ?? max(8, 4 * ProcessInfo.processInfo.activeProcessorCount)

// Keys built at run time (heap strings past 15 bytes), values on the heap too: every retain a
// read does is of an object the snapshot (or the caller) owns.
let count = 32
func key(_ kind: String, _ i: Int) -> String {
    String(decoding: Array("release-stress.\(kind).flag-\(i)".utf8), as: UTF8.self)
}
let stringKeys = (0..<count).map { key("string", $0) }
let jsonKeys = (0..<count).map { key("json", $0) }
let boolKeys = (0..<count).map { key("bool", $0) }
let intKeys = (0..<count).map { key("int", $0) }
let doubleKeys = (0..<count).map { key("double", $0) }
let missingKeys = (0..<count).map { key("missing", $0) }

func text(_ set: Int, _ i: Int) -> String { "value of set \(set) for flag \(i), long enough to live on the heap" }
func object(_ set: Int, _ i: Int) -> JSONValue {
    .object([
        "set": .int(Int64(set)), "flag": .int(Int64(i)), "name": .string(text(set, i)),
        "tags": .array([.string(text(set, i))]),
    ])
}
func values(_ set: Int) -> [String: JSONValue] {
    var values: [String: JSONValue] = [:]
    for i in 0..<count {
        values[stringKeys[i]] = .string(text(set, i))
        values[jsonKeys[i]] = object(set, i)
        values[boolKeys[i]] = .bool(set == 1)
        values[intKeys[i]] = .int(Int64(set * 1_000 + i))
        values[doubleKeys[i]] = .double(Double(set) + 0.5)
    }
    return values
}
let sets = [values(0), values(1)]
let expectedText = (0..<count).map { i in [text(0, i), text(1, i)] }
let expectedObject = (0..<count).map { i in [object(0, i), object(1, i)] }

let flags = try FlagClient(offlineValues: sets[0])
let shared = Shared()
let stringHandles = stringKeys.map { flags.handle($0, default: "") }
let jsonHandles = jsonKeys.map { flags.handle($0, default: JSONValue.null) }

/// One round of every read kind over flag `i`; a message for the first inconsistent result.
func round(_ i: Int) -> String? {
    let texts = expectedText[i]
    let objects = expectedObject[i]
    let s = flags.string(stringKeys[i], default: "")
    if !texts.contains(s) { return "string(\(stringKeys[i])) = \(s.debugDescription)" }
    let sd = flags.stringDetail(stringKeys[i], default: "")
    if !texts.contains(sd.value) || sd.key != stringKeys[i] || sd.errorCode != nil || sd.reason != .staticValue {
        return "stringDetail(\(stringKeys[i])) = \(sd)"
    }
    let j = flags.json(jsonKeys[i], default: .null)
    if !objects.contains(j) { return "json(\(jsonKeys[i])) = \(j)" }
    let jd = flags.detail(jsonKeys[i], default: .null)
    if !objects.contains(jd.value) || jd.key != jsonKeys[i] || jd.errorCode != nil {
        return "detail(\(jsonKeys[i])) = \(jd)"
    }
    let bd = flags.boolDetail(boolKeys[i], default: false)
    if bd.key != boolKeys[i] || bd.errorCode != nil || bd.variant != nil { return "boolDetail(\(boolKeys[i])) = \(bd)" }
    let id = flags.intDetail(intKeys[i], default: -1)
    if id.value % 1_000 != i || id.key != intKeys[i] || id.errorCode != nil {
        return "intDetail(\(intKeys[i])) = \(id)"
    }
    let dd = flags.doubleDetail(doubleKeys[i], default: -1)
    if (dd.value != 0.5 && dd.value != 1.5) || dd.key != doubleKeys[i] {
        return "doubleDetail(\(doubleKeys[i])) = \(dd)"
    }
    // A type mismatch and a miss: the evaluation is made from the served flag's detail (or from
    // nothing), the value is the default.
    let mismatch = flags.intDetail(stringKeys[i], default: -7)
    if mismatch.value != -7 || mismatch.errorCode != .typeMismatch || mismatch.key != stringKeys[i] {
        return "intDetail(\(stringKeys[i])) (a type mismatch) = \(mismatch)"
    }
    let miss = flags.stringDetail(missingKeys[i], default: "fallback")
    if miss.value != "fallback" || miss.errorCode != .flagNotFound || miss.key != missingKeys[i] {
        return "stringDetail(\(missingKeys[i])) (a miss) = \(miss)"
    }
    let hs = stringHandles[i].value
    if !texts.contains(hs) { return "string handle \(i) = \(hs.debugDescription)" }
    let hd = jsonHandles[i].detail
    if !objects.contains(hd.value) || hd.key != jsonKeys[i] { return "JSON handle detail \(i) = \(hd)" }
    return nil
}

var threads: [Thread] = []
for r in 0..<readers {
    let thread = Thread {
        var i = r % count
        var done = 0
        while !shared.stop.load(ordering: .relaxed) {
            if let failure = round(i) {
                shared.fail(failure)
                break
            }
            done += 1
            i = (i + 1) % count
        }
        _ = shared.reads.add(done, ordering: .relaxed)
    }
    thread.stackSize = 1 << 20
    threads.append(thread)
}
let publisher = Thread {
    var generation = 1
    while !shared.stop.load(ordering: .relaxed) {
        do { try flags.setOfflineValues(sets[generation & 1]) } catch {
            shared.fail("setOfflineValues threw \(error)")
            break
        }
        generation += 1
    }
    _ = shared.publishes.add(generation - 1, ordering: .relaxed)
}
let all = threads + [publisher]
for thread in all { thread.start() }
Thread.sleep(forTimeInterval: seconds)
shared.stop.store(true, ordering: .relaxed)
while all.contains(where: { !$0.isFinished }) { Thread.sleep(forTimeInterval: 0.01) }

let failures = shared.failures.withLock { $0 }
let reads = shared.reads.load(ordering: .relaxed)
let publishes = shared.publishes.load(ordering: .relaxed)
print(
    "halyard-release-stress: \(readers) readers, \(reads) rounds of 12 reads, \(publishes) snapshots published in \(seconds) s"
)
if !failures.isEmpty {
    for failure in failures { print("inconsistent read: \(failure)") }
    exit(1)
}
