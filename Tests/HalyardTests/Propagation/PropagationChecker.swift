import Foundation

@testable import Halyard

/// Judges a ``PropagationHistory`` against the invariants of docs/testing.md, "The propagation
/// checker" (I1-I5), and explains each violation with a minimal history: the few events of the
/// run that bear on it, not the run.
struct PropagationChecker {
    struct Violation: Sendable {
        var invariant: String
        var reader: Int
        var summary: String
        var history: [String]
    }

    /// The contract: a change reaches every held context within this once its event is out.
    static let propagation: Duration = .seconds(2)
    /// How long a disruption of the stream (closed, rotated, refused, a new key, the background)
    /// keeps a reader out of I1: the reconnect backoff after one or two failures (≤ 1 s, then
    /// ≤ 2 s, SPEC §14), the re-learn fetch and the connect wave.
    static let reconnect: Duration = .seconds(4)
    /// After a `Retry-After` floor: the spread after it (max(1 s, RA/10)) and a backoff step.
    static let afterFloor: Duration = .milliseconds(1500)
    /// The first moments of a run: the start fetch, the stream's connect and its wave.
    static let startUp: Duration = .milliseconds(1500)
    static let coldFetchTimeout: Duration = .milliseconds(250)
    static let waitSlack: Duration = .milliseconds(50)
    /// A reader's stream may open at most twice per disruption it met (one open that fails or
    /// learns, one that succeeds), plus twice for the start.
    static let opensPerDisruption = 2
    /// A trigger (event delivered, stream opened, key set, activation, failed answer) costs at
    /// most two conditional requests per held context: the refresh, and one refetch owed when an
    /// event crossed that refresh.
    static let requestsPerTrigger = 2
    /// Readers told the same `Retry-After` date must not come back within this of each other.
    static let herdSpread: Duration = .milliseconds(20)
    static let herdSize = 4

    let history: PropagationHistory
    private let readers: [PropagationHistory.Reader]
    private let requests: [PropagationHistory.Request]
    private let operations: [PropagationHistory.Operation]
    private let publications: [PropagationHistory.Publication]
    private let changes: [PropagationHistory.Change]
    private let runs: [PropagationHistory.ReadKey: [PropagationHistory.ReadRun]]
    private let stalls: [(at: Duration, overshoot: Duration)]
    private let readerStalls: [Int: [(at: Duration, overshoot: Duration)]]
    private let end: Duration

    init(_ history: PropagationHistory) {
        self.history = history
        readers = history.readers
        requests = history.requests
        operations = history.operations
        publications = history.publications
        changes = history.changes
        runs = history.runs
        stalls = history.stalls.sorted { $0.at < $1.at }
        readerStalls = history.readerStalls
        end = history.end
    }

    func check() -> [Violation] {
        var result: [Violation] = []
        result += checkPropagation()
        result += checkKeyRotation()
        result += checkWaits()
        result += checkRequests()
        result += checkBytes()
        return result
    }

    // MARK: - Time a loaded machine took away

    /// `from + length`, pushed later by every stall of the run's scheduler inside the window
    /// (time the process was not running does not count against the contract).
    /// With `reader`, that reader's own late loops count too: a cooperative pool saturated by
    /// other work (the whole suite runs in one process) starves its tasks and the library's
    /// while a 5 ms monitor may still wake on time.
    func corrected(from: Duration, length: Duration, reader: Int? = nil) -> Duration {
        var deadline = from + length
        var counted = Set<Int>()
        var changed = true
        let all = stalls + (reader.flatMap { readerStalls[$0] } ?? [])
        while changed {
            changed = false
            for (i, stall) in all.enumerated() where stall.at >= from && stall.at < deadline && !counted.contains(i) {
                counted.insert(i)
                deadline += stall.overshoot
                changed = true
            }
        }
        return deadline
    }

    func stalled(from: Duration, to: Duration) -> Duration {
        stalls.filter { $0.at >= from && $0.at < to }.reduce(.zero) { $0 + $1.overshoot }
    }

    // MARK: - Health

    /// The intervals in which `reader` is excused from I1, each with why.
    func unhealthy(_ reader: Int) -> [(from: Duration, to: Duration, why: String)] {
        var result: [(Duration, Duration, String)] = [(.zero, Self.startUp, "start-up")]
        for d in history.disruptions { result.append((d.at, d.at + Self.reconnect, d.what)) }
        for r in requests where r.reader == reader && r.status != 200 && r.status != 304 {
            let answered = r.answeredAt ?? r.sentAt
            if let floor = r.retryFloor {
                let retryAfter = floor - answered
                let spread = max(.seconds(1), retryAfter / 10)
                result.append(
                    (
                        r.sentAt, floor + spread + Self.afterFloor,
                        "\(r.kind) \(r.status) Retry-After \(r.retryAfterText ?? "")"
                    ))
            } else {
                let recovery = r.kind == .stream ? Self.reconnect : Self.afterFloor
                result.append((r.sentAt, answered + recovery, "\(r.kind) \(r.status)"))
            }
        }
        for op in operations where op.reader == reader {
            switch op.kind {
            case .setKey: result.append((op.start, op.end + Self.reconnect, "setKey"))
            case .deactivate: result.append((op.start, op.end + Self.reconnect, "setActive(false) … setActive(true)"))
            case .identify, .churn: break
            }
        }
        return result
    }

    /// The environment of `reader`'s key at `t` (1 until its first `setKey` returned).
    func env(of reader: Int, at t: Duration) -> Int {
        operations.filter { $0.reader == reader && $0.kind == .setKey && $0.end <= t }.max { $0.end < $1.end }?.env ?? 1
    }

    // MARK: - I1: a delivered change reaches every held context within 2 s

    func checkPropagation() -> [Violation] {
        var result: [Violation] = []
        for reader in readers {
            let excused = unhealthy(reader.id)
            var judged = Set<Duration>()
            for change in changes {
                guard let publication = publications.first(where: { $0.env == change.env && $0.at >= change.at }) else {
                    continue
                }
                let deadline = corrected(from: publication.at, length: Self.propagation, reader: reader.id)
                guard deadline < end - .milliseconds(50) else { continue }
                if excused.contains(where: { $0.from < deadline && $0.to > publication.at }) { continue }
                guard env(of: reader.id, at: publication.at) == change.env else { continue }
                // One violation per event and reader (changes announced by one event fail together).
                guard !judged.contains(publication.at) else { continue }
                // Reads count until the reader's next setKey begins (then its environment changes).
                let limit =
                    operations.filter { $0.reader == reader.id && $0.kind == .setKey && $0.start > publication.at }
                    .map(\.start).min() ?? end + .seconds(1)
                for (key, list) in runs where key.reader == reader.id && key.flag == change.flag {
                    let held = list.contains { $0.first < publication.at && $0.value != PropagationValue.missing }
                    guard held else { continue }
                    let stale = list.first { run in
                        run.last > deadline && run.first < limit && run.value != PropagationValue.missing
                            && (PropagationValue.env(run.value) != change.env
                                || PropagationValue.change(run.value) < change.id)
                    }
                    guard let stale else { continue }
                    var lines = [
                        "change #\(change.id): env\(change.env) f\(change.flag) at \(change.at.ms)",
                        "first event after it: #\(publication.changeID) at \(publication.at.ms), written to readers \(publication.deliveredTo)",
                        "deadline (2 s + \((deadline - publication.at - Self.propagation).ms) of scheduler and reader stalls): \(deadline.ms)",
                    ]
                    lines += describeRuns(
                        list, from: publication.at - .milliseconds(500), to: deadline + .milliseconds(500)
                    )
                    .map { "read \(key.context) f\(key.flag): \($0)" }
                    lines += describeRequests(
                        reader.id, context: key.context, from: publication.at - .seconds(1), to: deadline)
                    lines += describeEvents(
                        reader.id, env: change.env, from: change.at - .milliseconds(500), to: deadline)
                    if let open = requests.last(where: {
                        $0.reader == reader.id && $0.kind == .stream && $0.sentAt < publication.at
                    }) {
                        lines.append("the reader's last stream open before the event: \(describe(open))")
                    } else {
                        lines.append("the reader opened no stream before the event")
                    }
                    lines += operations.filter { $0.reader == reader.id && $0.kind == .setKey && $0.start < deadline }
                        .map { describe($0) }
                    judged.insert(publication.at)
                    result.append(
                        Violation(
                            invariant: "I1", reader: reader.id,
                            summary:
                                "\(reader.name) context \(key.context) still read \(PropagationValue.describe(stale.value)) at \(max(stale.first, deadline).ms)…\(stale.last.ms) (\(stale.count) reads), after change #\(change.id)'s deadline \(deadline.ms)",
                            history: lines))
                    break
                }
            }
        }
        return result
    }

    // MARK: - I2: no old-key value after setKey returns

    /// The context a request's answer was for, as the reads name it: a service's context by its
    /// targeting key; a client's as the client itself (`""`). A client holds one context at a
    /// time and its reads are named after `identify` returns, so an answer to the context
    /// `identify` moves to is read under the previous name for a moment: a client's answers
    /// count for all its reads.
    func legitimacyContext(reader: Int, context: String) -> String {
        readers.first { $0.id == reader }?.isService == true ? context : ""
    }

    func checkKeyRotation() -> [Violation] {
        var result: [Violation] = []
        for op in operations where op.kind == .setKey {
            guard let reader = readers.first(where: { $0.id == op.reader }) else { continue }
            let oldEnv = env(of: op.reader, at: op.start)
            guard oldEnv != op.env else { continue }
            let group = Set(readers.filter { $0.group == reader.group }.map(\.id))
            let rotation = operations.filter {
                $0.kind == .setKey && group.contains($0.reader) && abs(($0.start - op.start).fractionalSeconds) < 1
            }
            let groupStart = rotation.map(\.start).min() ?? op.start
            // When each member of the group began this rotation: its own answers before that were
            // applied with its then current key (a fleet's pods rotate one after another).
            var memberStart: [Int: Duration] = [:]
            for member in group { memberStart[member] = rotation.first { $0.reader == member }?.start ?? groupStart }
            // What the old key's environment had served, per context and flag, before the
            // rotation began: to that context, by the reader or its fleet (through the shared
            // cache). A late old-key answer carries a change that other contexts may already
            // hold; for this context it is new, and applying it is the bug.
            var legitimate: [String: [Set<Int>]] = [:]
            for r in requests where group.contains(r.reader) && r.env == oldEnv && r.status == 200 && r.kind == .bulk {
                guard let answered = r.answeredAt, answered < memberStart[r.reader] ?? groupStart else { continue }
                let context = legitimacyContext(reader: r.reader, context: r.target)
                var sets = legitimate[context] ?? Array(repeating: Set<Int>(), count: SimulatedControlPlane.flagCount)
                for (flag, change) in r.served.enumerated() { sets[flag].insert(change) }
                legitimate[context] = sets
            }
            let next =
                operations.filter { $0.reader == op.reader && $0.kind == .setKey && $0.start > op.end }
                .map(\.start).min() ?? end
            var offending: [(key: PropagationHistory.ReadKey, run: PropagationHistory.ReadRun)] = []
            for (key, list) in runs where key.reader == op.reader {
                let served = legitimate[legitimacyContext(reader: key.reader, context: key.context)]?[key.flag] ?? []
                for run in list where run.last > op.end && run.first < next && run.value != PropagationValue.missing {
                    guard PropagationValue.env(run.value) == oldEnv,
                        !served.contains(PropagationValue.change(run.value))
                    else { continue }
                    // Held: this reader read it for this context before setKey began (setKey keeps
                    // held entries until their refresh, docs/service.md "Key rotation").
                    if list.contains(where: { $0.value == run.value && $0.first < op.start }) { continue }
                    offending.append((key, run))
                }
            }
            guard let (key, run) = offending.min(by: { $0.run.first < $1.run.first }), let list = runs[key] else {
                continue
            }
            var lines = ["setKey(\(op.detail)) on \(reader.name): \(op.start.ms) … returned \(op.end.ms)"]
            lines += describeRuns(list, from: op.start - .milliseconds(300), to: run.last + .milliseconds(100))
                .map { "read \(key.context) f\(key.flag): \($0)" }
            let context = legitimacyContext(reader: key.reader, context: key.context)
            let answers = requests.filter {
                group.contains($0.reader) && $0.env == oldEnv && $0.kind == .bulk
                    && legitimacyContext(reader: $0.reader, context: $0.target) == context
                    && $0.sentAt < run.last
            }
            // The last answers to that context before the rotation, and every one after it began.
            let before = answers.filter { ($0.answeredAt ?? .zero) < groupStart }.suffix(3)
            let after = answers.filter { ($0.answeredAt ?? .zero) >= groupStart }.prefix(6)
            lines += (before + after).map { describe($0) }
            let contexts = Set(offending.map(\.key.context)).sorted()
            result.append(
                Violation(
                    invariant: "I2", reader: op.reader,
                    summary:
                        "\(reader.name) read \(PropagationValue.describe(run.value)) for \(key.context) f\(key.flag) (old key's environment, served to that context by no answer before setKey) at \(max(run.first, op.end).ms)…\(run.last.ms), after setKey returned at \(op.end.ms); \(contexts.count) contexts read such values: \(contexts.prefix(8).joined(separator: ", "))",
                    history: lines))
        }
        return result
    }

    // MARK: - I3: no flags(for:) waits beyond coldFetchTimeout + 50 ms

    func checkWaits() -> [Violation] {
        history.slowWaits.compactMap { wait in
            let lost = stalled(from: wait.start, to: wait.start + wait.duration)
            guard wait.duration - lost > Self.coldFetchTimeout + Self.waitSlack else { return nil }
            let name = readers.first { $0.id == wait.reader }?.name ?? "\(wait.reader)"
            return Violation(
                invariant: "I3", reader: wait.reader,
                summary:
                    "\(name) flags(for: \(wait.context)) waited \(wait.duration.ms) from \(wait.start.ms) (\(lost.ms) of it scheduler stalls)",
                history: requests.filter {
                    $0.reader == wait.reader && $0.target == wait.context && $0.sentAt >= wait.start - .seconds(1)
                        && $0.sentAt <= wait.start + wait.duration
                }.prefix(6).map { describe($0) })
        }
    }

    // MARK: - I4: requests per change

    func checkRequests() -> [Violation] {
        var result: [Violation] = []
        let drops = history.disruptions.filter { $0.what.hasPrefix("stream") }.count
        for reader in readers {
            let mine = requests.filter { $0.reader == reader.id }
            let opens = mine.filter { $0.kind == .stream }
            let refusedOpens = opens.filter { $0.status != 200 }.count
            let ops = operations.filter { $0.reader == reader.id }
            let keys = ops.filter { $0.kind == .setKey }.count
            let activations = ops.filter { $0.kind == .deactivate }.count
            // (a) stream opens per disruption.
            let disruptions = 1 + drops + refusedOpens + keys + activations
            let openBound = Self.opensPerDisruption * disruptions
            if opens.count > openBound {
                result.append(
                    Violation(
                        invariant: "I4", reader: reader.id,
                        summary:
                            "\(reader.name) opened its stream \(opens.count) times; bound \(openBound) = \(Self.opensPerDisruption) × (1 start + \(drops) drops + \(refusedOpens) refused opens + \(keys) setKey + \(activations) activations)",
                        history: opens.prefix(10).map { describe($0) }
                            + (opens.count > 10 ? ["… \(opens.count - 10) more opens"] : [])))
            }
            // (b) conditional bulk requests per trigger and held context.
            let held = Set(runs.keys.filter { $0.reader == reader.id }.map(\.context)).count
            let churned = Set(mine.filter { $0.kind == .bulk }.map(\.target)).count
            let contexts = max(held, churned)
            let delivered = publications.filter { $0.deliveredTo.contains(reader.id) }.count
            let okOpens = opens.count - refusedOpens
            let failures = mine.filter { $0.kind == .bulk && $0.status != 200 && $0.status != 304 }.count
            let triggers = delivered + okOpens + keys + activations + failures + 1
            let conditional = mine.filter { $0.kind == .bulk && $0.conditional }.count
            let bulkBound = Self.requestsPerTrigger * contexts * triggers
            if conditional > bulkBound {
                result.append(
                    Violation(
                        invariant: "I4", reader: reader.id,
                        summary:
                            "\(reader.name) sent \(conditional) conditional bulk requests; bound \(bulkBound) = \(Self.requestsPerTrigger) × \(contexts) contexts × \(triggers) triggers",
                        history: []))
            }
            // (c) nothing before a Retry-After floor given to a request with the current key.
            for floorAnswer in mine where floorAnswer.retryFloor != nil {
                guard let floor = floorAnswer.retryFloor, let answered = floorAnswer.answeredAt else { continue }
                let generation = 1 + ops.filter { $0.kind == .setKey && $0.start <= answered }.count
                guard floorAnswer.keyGeneration == generation else { continue }
                let early: [PropagationHistory.Request]
                switch floorAnswer.kind {
                case .stream:
                    // As for bulk requests: an open sent within 20 ms of the answer was decided
                    // before the answer could be seen (a switch to another URL racing the old
                    // connection's head; no reconnect delay is under 500 ms).
                    early = opens.filter {
                        $0.sentAt > answered + .milliseconds(20) && $0.sentAt < floor - .milliseconds(50)
                    }
                case .bulk:
                    guard !reader.isService else { continue }
                    early = mine.filter {
                        $0.kind == .bulk && $0.sentAt > answered + .milliseconds(20)
                            && $0.sentAt < floor - .milliseconds(50)
                    }
                }
                guard let first = early.first else { continue }
                result.append(
                    Violation(
                        invariant: "I4", reader: reader.id,
                        summary:
                            "\(reader.name) sent a \(first.kind) request at \(first.sentAt.ms), before the Retry-After floor \(floor.ms) it was given at \(answered.ms) (\(floorAnswer.retryAfterText ?? ""))",
                        history: [describe(floorAnswer)] + early.prefix(4).map { describe($0) }
                            + ops.filter { $0.start >= answered - .seconds(1) && $0.start <= first.sentAt }.map {
                                describe($0)
                            }))
                break
            }
        }
        // (e) a stream URL refused with 401 is not tried again unless an answer advertised it
        // again (SPEC §14: one unconditional re-fetch learns the current advertisement first).
        for reader in readers {
            let mine = requests.filter { $0.reader == reader.id }
            let opens = mine.filter { $0.kind == .stream }
            for refused in opens where refused.status == 401 {
                guard let generation = refused.advertised,
                    let again = opens.first(where: {
                        $0.sentAt > refused.sentAt && $0.advertised == generation
                            && $0.keyGeneration == refused.keyGeneration
                    })
                else { continue }
                let readvertised = mine.contains {
                    $0.kind == .bulk && $0.advertised == generation && ($0.answeredAt ?? .zero) > refused.sentAt
                        && ($0.answeredAt ?? .zero) < again.sentAt
                }
                guard !readvertised else { continue }
                let relearn = mine.filter { $0.kind == .bulk && $0.sentAt > refused.sentAt && $0.sentAt < again.sentAt }
                // A re-learn fetch that failed leaves only the old URL to try.
                guard !relearn.contains(where: { $0.status != 200 && $0.status != 304 }) else { continue }
                result.append(
                    Violation(
                        invariant: "I4", reader: reader.id,
                        summary:
                            "\(reader.name) opened the stream URL /sse/\(generation) again at \(again.sentAt.ms) after it was refused 401 at \(refused.sentAt.ms), with no answer advertising it in between",
                        history: [describe(refused)] + relearn.prefix(6).map { describe($0) } + [describe(again)]
                            + (relearn.isEmpty
                                ? ["(no bulk request in between: nothing re-learned the advertisement)"] : [])))
                break
            }
        }
        // (d) a shared Retry-After date is not a fleet's appointment.
        let dated = requests.filter {
            $0.kind == .stream && $0.status == 503 && $0.retryAfterText?.contains("GMT") == true
        }
        for floor in Set(dated.compactMap(\.retryFloor)) {
            let told = Set(dated.filter { $0.retryFloor == floor }.map(\.reader))
            var comebacks: [(Int, Duration)] = []
            for reader in told {
                if let next = requests.first(where: {
                    $0.reader == reader && $0.kind == .stream && $0.sentAt >= floor - .milliseconds(50)
                }) {
                    comebacks.append((reader, next.sentAt))
                }
            }
            guard comebacks.count >= Self.herdSize, let first = comebacks.map(\.1).min(),
                let last = comebacks.map(\.1).max()
            else { continue }
            if last - first < Self.herdSpread {
                result.append(
                    Violation(
                        invariant: "I4", reader: -1,
                        summary:
                            "\(comebacks.count) readers told Retry-After \(floor.ms) (an HTTP date) all reopened within \((last - first).ms): a herd",
                        history: comebacks.sorted { $0.1 < $1.1 }.map { "reader \($0.0) reopened at \($0.1.ms)" }))
            }
        }
        return result
    }

    // MARK: - I5: bytes held within maxCacheBytes

    func checkBytes() -> [Violation] {
        history.bytes.compactMap { reader, figures in
            guard figures.peak > figures.limit else { return nil }
            return Violation(
                invariant: "I5", reader: reader,
                summary: "service\(reader) held \(figures.peak) bytes; maxCacheBytes is \(figures.limit)", history: [])
        }
    }

    // MARK: - What the run exercised

    /// Counts of the situations the invariants are about, printed with every run (a run that
    /// never met one proves nothing about it).
    var coverage: String {
        var oldKeyAnswers = 0
        for r in requests where r.kind == .bulk && r.status == 200 {
            guard let answered = r.answeredAt, let generation = r.keyGeneration else { continue }
            let current =
                1 + operations.filter { $0.reader == r.reader && $0.kind == .setKey && $0.end < answered }.count
            if generation < current { oldKeyAnswers += 1 }
        }
        let floors = requests.filter { $0.retryFloor != nil }.count
        let dated = requests.filter {
            $0.kind == .stream && $0.status == 503 && $0.retryAfterText?.contains("GMT") == true
        }
        let toldOneDate =
            Dictionary(grouping: dated, by: { $0.retryFloor ?? .zero }).values.map { Set($0.map(\.reader)).count }.max()
            ?? 0
        let refusedOpens = requests.filter { $0.kind == .stream && $0.status == 401 }.count
        let keys = operations.filter { $0.kind == .setKey }.count
        return
            "coverage: \(keys) setKey, \(oldKeyAnswers) old-key 200s answered after setKey, \(floors) Retry-After answers, \(toldOneDate) readers told one date, \(refusedOpens) stream opens refused 401, \(history.disruptions.count) stream drops"
    }

    // MARK: - Minimal histories

    func describe(_ r: PropagationHistory.Request) -> String {
        var line = "\(r.kind) by reader \(r.reader) sent \(r.sentAt.ms)"
        if let g = r.keyGeneration { line += " key g\(g)" }
        if let e = r.env { line += " (env\(e))" }
        if !r.target.isEmpty { line += " for \(r.target)" }
        if r.conditional { line += " If-None-Match" }
        line += " → \(r.status)"
        if let a = r.answeredAt { line += " at \(a.ms)" }
        if let t = r.retryAfterText { line += " Retry-After \(t)" }
        if !r.served.isEmpty { line += " serving \(r.served.map { "#\($0)" }.joined(separator: ","))" }
        if r.kind == .bulk, let g = r.advertised { line += " advertising /sse/\(g)" }
        if !r.note.isEmpty { line += " [\(r.note)]" }
        return line
    }

    func describe(_ op: PropagationHistory.Operation) -> String {
        "\(op.kind.rawValue) on reader \(op.reader) \(op.start.ms)…\(op.end.ms) \(op.detail)"
    }

    func describeRuns(_ list: [PropagationHistory.ReadRun], from: Duration, to: Duration) -> [String] {
        list.filter { $0.last >= from && $0.first <= to }.prefix(8).map {
            "\(PropagationValue.describe($0.value)) \($0.first.ms)…\($0.last.ms) (\($0.count) reads)"
        }
    }

    func describeRequests(_ reader: Int, context: String, from: Duration, to: Duration) -> [String] {
        let list = requests.filter {
            $0.reader == reader && ($0.kind == .stream || $0.target == context) && $0.sentAt >= from && $0.sentAt <= to
        }
        let lines = list.prefix(12).map { describe($0) }
        return list.count > 12 ? lines + ["… \(list.count - 12) more requests"] : Array(lines)
    }

    func describeEvents(_ reader: Int, env: Int, from: Duration, to: Duration) -> [String] {
        var lines = changes.filter { $0.env == env && $0.at >= from && $0.at <= to }.prefix(6).map {
            "change #\($0.id) env\($0.env) f\($0.flag) at \($0.at.ms)"
        }
        lines += publications.filter { $0.env == env && $0.at >= from && $0.at <= to }.prefix(8).map {
            "event #\($0.changeID) env\($0.env) at \($0.at.ms) written to \($0.deliveredTo.contains(reader) ? "this reader" : "readers \($0.deliveredTo)")"
        }
        lines += history.disruptions.filter { $0.at >= from - Self.reconnect && $0.at <= to }.map {
            "\($0.at.ms) \($0.what)"
        }
        lines += operations.filter {
            $0.reader == reader && $0.kind != .setKey && $0.end >= from - Self.reconnect && $0.start <= to
        }.map { describe($0) }
        return lines
    }

    /// The report of a failed run: the seed, how to replay it, and each violation with its history.
    static func report(seed: UInt64, violations: [Violation], checker: PropagationChecker) -> String {
        var lines = [
            "propagation seed \(seed): \(violations.count) violation(s) (replay: HALYARD_PROPAGATION_SEEDS=\(seed) swift test --filter PropagationTests)"
        ]
        for (invariant, group) in Dictionary(grouping: violations, by: \.invariant).sorted(by: { $0.key < $1.key }) {
            lines.append("\(invariant): \(group.count) violation(s)")
            for v in group.prefix(3) {
                lines.append("  \(v.summary)")
                lines += v.history.map { "    \($0)" }
            }
            if group.count > 3 { lines.append("  … \(group.count - 3) more \(invariant) violations") }
        }
        return lines.joined(separator: "\n")
    }
}
