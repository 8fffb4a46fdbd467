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
}
