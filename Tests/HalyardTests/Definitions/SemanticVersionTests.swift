import Testing

@testable import Halyard

/// `sem_ver`'s version reading and SemVer 2.0.0 precedence.
@Suite struct SemanticVersionTests {
    @Test(arguments: [
        "1.0.0", "v1.0.0", "V1.0.0", "1.0", "1", "1.0.0+build.7", "1.0.0-alpha.1", "0.0.0",
        "1.0.0-0.3.7", "1.0.0-x-y-z.--", "1.2.3-rc.1+exp.sha.5114f85", "18446744073709551616.0.0",
    ])
    func accepted(_ text: String) {
        #expect(SemanticVersion(text) != nil)
    }

    @Test(arguments: [
        "", "v", "vv1.0.0", "1.0.0.0", "01.0.0", "1.02.0", "1.0.0-", "1.0.0-01", "1.0.0+",
        "1.0.0-a..b", "1.0.0+a..b", "a.b.c", " 1.0.0", "1.0.0 ", "1.-1.0", "１.0.0", "1.0.0-é", "not-a-version",
    ])
    func refused(_ text: String) {
        #expect(SemanticVersion(text) == nil)
    }

    @Test func precedenceFollowsTheSpecification() throws {
        // SemVer 2.0.0 §11's example chain.
        let chain = [
            "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
            "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0", "10.0.0", "18446744073709551616.0.0",
        ]
        let versions = try chain.map { try #require(SemanticVersion($0)) }
        for i in versions.indices {
            for j in versions.indices {
                #expect((SemanticVersion.order(versions[i], versions[j]) < 0) == (i < j), "\(chain[i]) vs \(chain[j])")
            }
        }
        let withBuild = try #require(SemanticVersion("1.0.0+other"))
        #expect(SemanticVersion.order(withBuild, versions[7]) == 0)
    }

    @Test func aCompiledComparisonAgreesWithTheFullReading() throws {
        // Seeded: a compiled `sem_ver` (constant operator and version; a plain context version
        // compared as three integers) against the operator applied to the two versions parsed
        // in full, for versions that take the integer path and versions that do not (leading
        // zeros, pre-releases, build metadata, 19-digit parts, `v`, too many parts, junk).
        var rng = SplitMix64(seed: 5_154)
        let parts = ["0", "1", "2", "9", "10", "01", "00", "123456789012345678", "1234567890123456789", ""]
        func version() -> String {
            var text = Bool.random(using: &rng) ? "" : ["v", "V", "vv", " "].randomElement(using: &rng) ?? ""
            let count = Int.random(in: 1...4, using: &rng)
            text += (0..<count).map { _ in parts.randomElement(using: &rng) ?? "0" }.joined(separator: ".")
            if Int.random(in: 0..<4, using: &rng) == 0 {
                text += ["-rc.1", "-0", "-alpha", "+b.7", "-", "x"].randomElement(using: &rng) ?? ""
            }
            return text
        }
        let operators = ["=", "!=", "<", "<=", ">", ">=", "^", "~"]
        var fast = 0
        var compared = 0
        // Written out: the same core with and without a pre-release, missing parts, `v`.
        let pairs = [
            ("1.2.3", "1.2.3-rc.1"), ("1.2.3", "1.2.3"), ("v1.2", "1.2.0"), ("1", "1.0.0-0"), ("1.2.3", "1.2.4-a"),
            ("2", "1.9.9"), ("1.10.0", "1.9.0"), ("0.0.0", "0.0.0-0"),
            ("123456789012345678.0.1", "123456789012345678.0.1-x"),
        ]
        for (text, constant) in pairs {
            for op in operators {
                let rule: JSONValue = ["sem_ver": [["var": "version"], .string(op), .string(constant)]]
                let node = try #require(LogicNode.compile(rule, evaluators: [:]))
                let env = LogicEnvironment(
                    attributes: ["version": .string(text)], targetingKey: "u", flagKey: "f", timestamp: 0)
                let reference = CustomOperators.semVer([.string(text), .string(op), .string(constant)])
                #expect(try node.evaluate(.root, env) == reference, "\(text) \(op) \(constant)")
                #expect(SemanticVersion.plainCore(text) != nil, "\(text) takes the integer path")
            }
        }
        for _ in 0..<400 {
            let constant = version()
            guard SemanticVersion(constant) != nil else { continue }
            let op = operators.randomElement(using: &rng) ?? "="
            let rule: JSONValue = ["sem_ver": [["var": "version"], .string(op), .string(constant)]]
            let node = try #require(LogicNode.compile(rule, evaluators: [:]))
            for _ in 0..<20 {
                let text = version()
                if SemanticVersion.plainCore(text) != nil { fast += 1 }
                let env = LogicEnvironment(
                    attributes: ["version": .string(text)], targetingKey: "u", flagKey: "f", timestamp: 0)
                let compiled = try node.evaluate(.root, env)
                let reference = CustomOperators.semVer([.string(text), .string(op), .string(constant)])
                #expect(compiled == reference, "\(text) \(op) \(constant)")
                compared += 1
            }
        }
        #expect(compared > 2_000 && fast > 100, "\(fast) plain of \(compared)")
    }
}
