// swift-tools-version:6.0
import Foundation
import PackageDescription

// libFuzzer harnesses for Halyard's parsers. A package of its own so that `swift build` /
// `swift test` at the root never build them (a fuzz harness has no `main`).
// Build and run with ./run.sh (see docs/fuzzing.md).

// A path dependency's identity is the last component of its directory (for example
// "halyard" or "wt-ctx"), so compute it instead of hard-coding it.
let rootIdentity = URL(fileURLWithPath: Context.packageDirectory)
    .deletingLastPathComponent().lastPathComponent.lowercased()
let halyard = Target.Dependency.product(name: "Halyard", package: rootIdentity)

let package = Package(
    name: "HalyardFuzz",
    platforms: [.macOS(.v13)],
    dependencies: [.package(path: "..")],
    targets: [
        // libcrypto, only as an independent SHA-1 for FuzzSHA1 (Debian: libssl-dev).
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .executableTarget(name: "FuzzContext", dependencies: [halyard]),
        .executableTarget(name: "FuzzJSON", dependencies: [halyard]),
        .executableTarget(name: "FuzzSHA1", dependencies: [halyard, "CCrypto"]),
        .executableTarget(name: "FuzzOFREP", dependencies: [halyard]),
        .executableTarget(name: "FuzzCache", dependencies: [halyard]),
        .executableTarget(name: "FuzzEventStream", dependencies: [halyard]),
        .executableTarget(name: "FuzzRESP", dependencies: [halyard]),
    ],
    swiftLanguageModes: [.v6]
)
