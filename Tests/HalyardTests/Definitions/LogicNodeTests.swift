import Foundation
import Testing

@testable import Halyard

/// JsonLogic as the flagd reference evaluator has it: each operator, its coercions and its
/// edge cases, through the compiled form.
@Suite struct LogicNodeTests {
    static func evaluate(
        _ rule: String, _ attributes: [String: JSONValue] = [:], targetingKey: String = "", flagKey: String = "flag",
        evaluators: [String: JSONValue] = [:]
    ) throws -> JSONValue {
        let node = try #require(LogicNode.compile(try JSONValue(parsing: rule), evaluators: evaluators))
        let env = LogicEnvironment(
            attributes: attributes, targetingKey: targetingKey, flagKey: flagKey, timestamp: 1_700_000_000)
        return try node.evaluate(.root, env)
    }

    static func check(
        _ rule: String, _ expected: JSONValue, _ attributes: [String: JSONValue] = [:], targetingKey: String = "",
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let value = try evaluate(rule, attributes, targetingKey: targetingKey)
        #expect(value == expected, "\(rule)", sourceLocation: sourceLocation)
    }

    @Test func variablesReadPathsDefaultsAndFlagdProperties() throws {
        let user: JSONValue = ["name": "ada", "tags": ["a", "b"], "nothing": nil]
        try Self.check(#"{"var": "user.name"}"#, "ada", ["user": user])
        try Self.check(#"{"var": ["user.missing", "dflt"]}"#, "dflt", ["user": user])
        try Self.check(#"{"var": ["user.nothing", 7]}"#, 7, ["user": user])
        try Self.check(#"{"var": "user.tags.1"}"#, "b", ["user": user])
        try Self.check(#"{"var": "user.tags.length"}"#, 2, ["user": user])
        try Self.check(#"{"var": "user.tags.01"}"#, nil, ["user": user])
        try Self.check(#"{"var": "user.name.0"}"#, "a", ["user": user])
        try Self.check(#"{"var": "user.name.x"}"#, nil, ["user": user])
        try Self.check(#"{"var": "targetingKey"}"#, "u-1", targetingKey: "u-1")
        try Self.check(#"{"var": "targetingKey"}"#, nil)
        try Self.check(#"{"var": "$flagd.flagKey"}"#, "flag")
        try Self.check(#"{"var": "$flagd.timestamp"}"#, 1_700_000_000)
        try Self.check(#"{"var": {"cat": ["us", "er.name"]}}"#, "ada", ["user": user])
        try Self.check(#"{"var": 0}"#, nil)
        let whole = try Self.evaluate(#"{"var": ""}"#, ["a": 1], targetingKey: "t")
        #expect(whole == ["a": 1, "targetingKey": "t", "$flagd": ["flagKey": "flag", "timestamp": 1_700_000_000]])
        // A user attribute named $flagd is shadowed, as in the reference.
        try Self.check(#"{"var": "$flagd.flagKey"}"#, "flag", ["$flagd": ["flagKey": "mine"]])
    }

    /// `fractional` with constant buckets and `sem_ver` with a constant operator and version
    /// compile to plans (weights summed, the version parsed once); each gives what the general
    /// path gives. The general path is forced by writing one argument as an `if` that yields the
    /// same constant at run time.
    @Test func compiledPlansAgreeWithTheGeneralPath() throws {
        func compiled(_ rule: String) throws -> LogicNode {
            try #require(LogicNode.compile(try JSONValue(parsing: rule), evaluators: [:]))
        }
        func same(_ planned: String, _ general: String, isPlan: (LogicNode) -> Bool) throws {
            let plan = try compiled(planned), generic = try compiled(general)
            #expect(isPlan(plan), "\(planned) compiles to a plan")
            #expect(!isPlan(generic), "\(general) takes the general path")
            let keys = ["", "u-1", "user-42", "ünï", "jon@company.com"] + (0..<200).map { "user-\($0 * 7919)" }
            let attributes: [[String: JSONValue]] = [
                [:], ["k": "bucket-key"], ["k": ""], ["k": 7], ["k": ["a", 1]], ["v": "2.1.0"], ["v": "v2.0.9-rc.1"],
                ["v": "2.1"], ["v": 3], ["v": 2.5], ["v": "not a version"], ["v": nil], ["v": "1.0.0+build"],
            ]
            for key in keys {
                for attrs in attributes {
                    let env = LogicEnvironment(attributes: attrs, targetingKey: key, flagKey: "flag", timestamp: 1)
                    let a = try plan.evaluate(.root, env), b = try generic.evaluate(.root, env)
                    #expect(a == b, "\(planned) for \(key), \(attrs)")
                }
            }
        }
        let isFractional: (LogicNode) -> Bool = { if case .fractional = $0 { true } else { false } }
        let isSemVer: (LogicNode) -> Bool = { if case .semVer = $0 { true } else { false } }
        try same(
            #"{"fractional": [["a", 50], ["b", 30], ["c", 20]]}"#,
            #"{"fractional": [["a", 50], ["b", 30], {"if": [true, ["c", 20], null]}]}"#, isPlan: isFractional)
        try same(
            #"{"fractional": [{"var": "k"}, ["a", 1], ["b"], ["c", -4], ["d", 0]]}"#,
            #"{"fractional": [{"var": "k"}, ["a", 1], ["b"], ["c", -4], {"if": [true, ["d", 0], null]}]}"#,
            isPlan: isFractional)
        try same(
            #"{"fractional": ["fixed", ["a", 0], ["b", 0]]}"#,
            #"{"fractional": ["fixed", ["a", 0], {"if": [true, ["b", 0], null]}]}"#, isPlan: isFractional)
        for op in ["=", "!=", "<", "<=", ">", ">=", "^", "~"] {
            try same(
                #"{"sem_ver": [{"var": "v"}, "\#(op)", "2.1.0"]}"#,
                #"{"sem_ver": [{"var": "v"}, "\#(op)", {"if": [true, "2.1.0", null]}]}"#, isPlan: isSemVer)
        }
        try same(
            #"{"sem_ver": [{"var": "v"}, ">=", 2]}"#, #"{"sem_ver": [{"var": "v"}, ">=", {"if": [true, 2, null]}]}"#,
            isPlan: isSemVer)
    }

    @Test func conditionalsAndLogic() throws {
        try Self.check(#"{"if": [true, "a", "b"]}"#, "a")
        try Self.check(#"{"if": [false, "a", "b"]}"#, "b")
        try Self.check(#"{"if": [false, "a"]}"#, nil)
        try Self.check(#"{"if": [false, "a", 0, "b", "c"]}"#, "c")
        try Self.check(#"{"if": []}"#, nil)
        try Self.check(#"{"if": ["only"]}"#, "only")
        try Self.check(#"{"?:": [[], "a", "b"]}"#, "b")
        try Self.check(#"{"and": [1, "x", 0, "y"]}"#, 0)
        try Self.check(#"{"and": [1, "x"]}"#, "x")
        try Self.check(#"{"and": []}"#, nil)
        try Self.check(#"{"or": [0, "", "z", "w"]}"#, "z")
        try Self.check(#"{"or": [0, false]}"#, false)
        try Self.check(#"{"!": [[]]}"#, true)
        try Self.check(#"{"!": {}}"#, false)
        try Self.check(#"{"!!": ["0"]}"#, true)
        try Self.check(#"{"!!": [0.0]}"#, false)
        // Laziness: the branch not taken never runs (an unknown operator there is no error).
        try Self.check(#"{"if": [true, "a", {"nope": 1}]}"#, "a")
        try Self.check(#"{"or": [1, {"nope": 1}]}"#, 1)
        #expect(throws: LogicError.self) { try Self.evaluate(#"{"if": [false, "a", {"nope": 1}]}"#) }
    }

    @Test func equalityLooseAndStrict() throws {
        try Self.check(#"{"==": [1, "1"]}"#, true)
        try Self.check(#"{"==": [1, 1.0]}"#, true)
        try Self.check(#"{"==": [true, 1]}"#, true)
        try Self.check(#"{"==": ["true", true]}"#, false)
        try Self.check(#"{"==": [null, null]}"#, true)
        try Self.check(#"{"==": ["", null]}"#, false)
        try Self.check(#"{"==": [0, null]}"#, true)
        try Self.check(#"{"==": ["a,b", ["a", "b"]]}"#, true)
        try Self.check(#"{"==": [[1], [1]]}"#, false)
        try Self.check(#"{"!=": ["a", "b"]}"#, true)
        try Self.check(#"{"===": [1, "1"]}"#, false)
        try Self.check(#"{"===": [1, 1.0]}"#, true)
        try Self.check(#"{"===": [[1, "a"], [1, "a"]]}"#, true)
        try Self.check(#"{"!==": ["a", "a"]}"#, false)
        // Code points, not canonical equivalence: precomposed é is not e + U+0301.
        try Self.check(#"{"==": ["\u00e9", "e\u0301"]}"#, false)
    }

    @Test func ordering() throws {
        try Self.check(#"{"<": [1, 2]}"#, true)
        try Self.check(#"{"<": ["10", 9]}"#, false)
        try Self.check(#"{"<": ["a", "b"]}"#, true)
        try Self.check(#"{"<": ["B", "a"]}"#, true)
        try Self.check(#"{"<": [1, 2, 3]}"#, true)
        try Self.check(#"{"<": [1, 3, 2]}"#, false)
        try Self.check(#"{"<=": [2, 2, 3]}"#, true)
        try Self.check(#"{">": [3, 2]}"#, true)
        try Self.check(#"{">=": [2, "2"]}"#, true)
        try Self.check(#"{"<": ["x", 1]}"#, false)
        try Self.check(#"{">": ["x", 1]}"#, false)
        try Self.check(#"{"<": [null, 1]}"#, true)
    }

    @Test func arithmetic() throws {
        try Self.check(#"{"+": [1, 2]}"#, 3)
        try Self.check(#"{"+": [1, "2"]}"#, 3.0)
        try Self.check(#"{"+": []}"#, 0)
        try Self.check(#"{"+": "3.5"}"#, 3.5)
        try Self.check(#"{"-": [5, 2]}"#, 3)
        try Self.check(#"{"-": [5]}"#, -5)
        try Self.check(#"{"*": [2, 2.5]}"#, 5.0)
        try Self.check(#"{"/": [4, 2]}"#, 2.0)
        try Self.check(#"{"%": [7, 3]}"#, 1)
        try Self.check(#"{"%": [-1, 3]}"#, 2)
        try Self.check(#"{"%": [1, -3]}"#, -2)
        try Self.check(#"{"min": [3, 1, 2]}"#, 1)
        try Self.check(#"{"max": [3, "4", 2]}"#, 4.0)
        try Self.check(#"{"min": [true, 2.5]}"#, true)
        try Self.check(#"{"min": [2, false, "1"]}"#, false)
        try Self.check(#"{"+": [9223372036854775807, 1]}"#, .double(9.223372036854775808e18))
        #expect(throws: LogicError.failed("division by zero")) { try Self.evaluate(#"{"/": [1, 0]}"#) }
        #expect(throws: LogicError.failed("modulo by zero")) { try Self.evaluate(#"{"%": [1, 0]}"#) }
        guard case .double(let nan) = try Self.evaluate(#"{"+": ["x"]}"#) else { Issue.record("not a double"); return }
        #expect(nan.isNaN)
    }

    @Test func stringsAndArrays() throws {
        try Self.check(#"{"cat": ["a", 1, 2.5, true, null, [1, 2]]}"#, "a12.5Truenull1,2")
        try Self.check(#"{"in": [false, "is False"]}"#, true)
        try Self.check(#"{"cat": [0.1, 1.0, 1e21]}"#, "0.111e+21")
        try Self.check(#"{"substr": ["jsonlogic", 4]}"#, "logic")
        try Self.check(#"{"substr": ["jsonlogic", -5]}"#, "logic")
        try Self.check(#"{"substr": ["jsonlogic", 1, 3]}"#, "son")
        try Self.check(#"{"substr": ["jsonlogic", 4, -2]}"#, "log")
        try Self.check(#"{"substr": ["héllo😀", 1, 5]}"#, "éllo😀")
        try Self.check(#"{"in": ["Spring", "Springfield"]}"#, true)
        try Self.check(#"{"in": [1, [1.0, 2]]}"#, true)
        try Self.check(#"{"in": ["x", 5]}"#, false)
        try Self.check(#"{"merge": [[1, 2], 3, [[4]]]}"#, [1, 2, 3, [4]])
        try Self.check(#"{"missing": ["a", "b"]}"#, ["b"], ["a": 1])
        try Self.check(#"{"missing": [["a", "b"]]}"#, ["a", "b"], ["a": ""])
        try Self.check(#"{"missing_some": [1, ["a", "b"]]}"#, [], ["a": 1])
        try Self.check(#"{"missing_some": [2, ["a", "b"]]}"#, ["b"], ["a": 1])
        try Self.check(#"{"map": [[1, 2], {"*": [{"var": ""}, 2]}]}"#, [2, 4])
        try Self.check(#"{"filter": [[1, 2, 3], {"%": [{"var": ""}, 2]}]}"#, [1, 3])
        try Self.check(#"{"reduce": [[1, 2, 3], {"+": [{"var": "current"}, {"var": "accumulator"}]}, 10]}"#, 16)
        try Self.check(#"{"all": [[1, 2], {">": [{"var": ""}, 0]}]}"#, true)
        try Self.check(#"{"all": [[], {">": [{"var": ""}, 0]}]}"#, false)
        try Self.check(#"{"some": [[0, 2], {">": [{"var": ""}, 1]}]}"#, true)
        try Self.check(#"{"none": [[0, 1], {">": [{"var": ""}, 1]}]}"#, true)
        try Self.check(#"{"map": [{"var": "xs"}, {"var": "n"}]}"#, ["a", nil], ["xs": [["n": "a"], ["m": 1]]])
        try Self.check(#"{"log": "x"}"#, "x")
        // An object of more than one member is a value, not an operation.
        try Self.check(#"{"a": 1, "b": 2}"#, ["a": 1, "b": 2])
    }

    @Test func referencesToSharedEvaluators() throws {
        let evaluators: [String: JSONValue] = [
            "is_ada": ["==": [["var": "name"], "ada"]],
            "loop": ["$ref": "loop"],
        ]
        #expect(try Self.evaluate(#"{"$ref": "is_ada"}"#, ["name": "ada"], evaluators: evaluators) == true)
        #expect(throws: LogicError.self) { try Self.evaluate(#"{"$ref": "missing"}"#, evaluators: evaluators) }
        #expect(throws: LogicError.self) { try Self.evaluate(#"{"$ref": "loop"}"#, evaluators: evaluators) }
    }

    /// A `var` path's first segments are classified when the rule is compiled.
    @Test func variablePathsAreClassifiedOnce() {
        typealias Path = LogicNode.VariablePath
        let cases: [(String, Path.Head, Int, Bool)] = [
            ("", .whole, 0, true),
            ("plan", .attribute("plan"), 1, false),
            ("user.name", .attribute("user"), 1, false),
            ("targetingKey", .targetingKey, 1, false),
            ("targetingKey.length", .targetingKey, 1, false),
            ("$flagd", .flagd, 1, true),
            ("$flagd.flagKey", .flagdFlagKey, 2, false),
            ("$flagd.flagKey.length", .flagdFlagKey, 2, false),
            ("$flagd.timestamp", .flagdTimestamp, 2, true),
            ("$flagd.other", .flagd, 1, true),
            ("$flagdx.flagKey", .attribute("$flagdx"), 1, false),
            (".", .attribute(""), 1, false),
        ]
        for (text, head, restStart, readsClock) in cases {
            let path = Path(text: text)
            #expect(path.head == head, "\(text)")
            #expect(path.restStart == restStart, "\(text)")
            #expect(path.mayReadTimestamp == readsClock, "\(text)")
        }
        let segments = Path(text: "a.length.3.03.-1.").segments
        #expect(segments.map(\.name) == ["a", "length", "3", "03", "-1", ""])
        #expect(segments.map(\.isLength) == [false, true, false, false, false, false])
        #expect(segments.map(\.index) == [nil, nil, 3, nil, nil, nil])
        // A rule that reads only `$flagd.flagKey` does not need the clock.
        let node = LogicNode.compile(["==": [["var": "$flagd.flagKey"], "f"]], evaluators: [:])
        #expect(node?.mayReadTimestamp == false)
    }

    /// What a `var` path reads, written independently of the implementation: the whole data
    /// as one object, walked segment by segment with names compared byte for byte.
    static func oracle(_ path: String, _ data: JSONValue) -> JSONValue? {
        if path.isEmpty { return data }
        var current = data
        for segment in path.split(separator: ".", omittingEmptySubsequences: false).map(String.init) {
            switch current {
            case .object(let members):
                guard let member = members.first(where: { Array($0.key.utf8) == Array(segment.utf8) }) else {
                    return nil
                }
                current = member.value
            case .array(let items):
                if segment == "length" { return .int(Int64(items.count)) }
                guard let index = Int(segment), index >= 0, String(index) == segment, index < items.count else {
                    return nil
                }
                current = items[index]
            case .string(let text):
                let scalars = Array(text.unicodeScalars)
                if segment == "length" { return .int(Int64(scalars.count)) }
                guard let index = Int(segment), index >= 0, String(index) == segment, index < scalars.count else {
                    return nil
                }
                current = .string(String(scalars[index]))
            default:
                return nil
            }
        }
        if case .null = current { return nil }
        return current
    }

    /// Seeded random paths over contexts of few and of many attributes (the scan and the
    /// dictionary read), with `$flagd` and `targetingKey` shadowing attributes, `é` against
    /// `e` + U+0301, indexes, `length`, nulls: a constant path, the same path computed at run
    /// time, and the same path inside `map` over the data all read what the oracle reads.
    @Test(arguments: [UInt64(1), 51, 2026])
    func variablePathsReadWhatAnIndependentWalkReads(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let names = [
            "plan", "user", "name", "tags", "0", "1", "01", "length", "$flagd", "flagKey", "timestamp",
            "targetingKey", "", "caf\u{E9}", "cafe\u{301}", "nothing",
        ]
        let user: JSONValue = [
            "name": "ad\u{E9}", "tags": ["a", nil, ["length": 9]], "nothing": nil, "caf\u{E9}": 1, "0": "zero",
        ]
        let small: [String: JSONValue] = [
            "plan": "pro", "user": user, "nothing": nil, "$flagd": ["flagKey": "mine"], "targetingKey": "shadowed",
            "caf\u{E9}": "composed",
        ]
        var large = small
        for i in 0..<12 { large["extra\(i)"] = .int(Int64(i)) }
        for attributes in [small, large] {
            for targetingKey in ["", "tk-\u{1F600}"] {
                let env = LogicEnvironment(
                    attributes: attributes, targetingKey: targetingKey, flagKey: "the-flag", timestamp: 1_700_000_000)
                let root = env.rootObject
                for _ in 0..<400 {
                    let depth = Int(rng.next() % 5)
                    let path = (0..<depth).map { _ in names[Int(rng.next() % UInt64(names.count))] }
                        .joined(separator: ".")
                    let expected = Self.oracle(path, root) ?? "DEFAULT"
                    let rules: [(String, JSONValue)] = [
                        ("constant", ["var": [.string(path), "DEFAULT"]]),
                        ("computed", ["var": [["cat": [.string(path)]], "DEFAULT"]]),
                    ]
                    for (kind, rule) in rules {
                        let node = try #require(LogicNode.compile(rule, evaluators: [:]))
                        let value = try node.evaluate(.root, env)
                        #expect(value == expected, "\(kind) \(path.debugDescription), \(attributes.count) attributes")
                    }
                    // Inside `map`, the item is the data (`""` gives the item itself, null included).
                    let item = try #require(LogicNode.compile(["var": [.string(path), "DEFAULT"]], evaluators: [:]))
                    let itemValue = try item.evaluate(.item(user), env)
                    let itemExpected = path.isEmpty ? user : (Self.oracle(path, user) ?? "DEFAULT")
                    #expect(itemValue == itemExpected, "item \(path.debugDescription)")
                }
            }
        }
    }
}
