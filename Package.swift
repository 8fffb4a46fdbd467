// swift-tools-version:6.0
import PackageDescription

// Halyard: a feature-flag engine with lock-free, nanosecond reads.
//
// Layout:
//   Sources/Halyard            the library (Values, Context, Snapshot, Sync, Exposure, Cache, Client)
//   Sources/CHalyardAtomics    C11 atomics and the hazard-pointer records used by the snapshot store
//   Sources/CZlib              zlib through a system-library target (Debian: zlib1g-dev)
//   Sources/CCurl              libcurl through a system-library target, Linux only (Debian: libcurl4-openssl-dev)
//   Sources/HalyardTesting     an in-memory control plane for application tests (SPEC §10)
//   Benchmarks/                the read-latency harness (`swift run -c release halyard-bench`) and the
//                              others (`halyard-bench-*`, e.g. `halyard-bench-transport`)
//   Fuzz/                      libFuzzer harnesses, in a package of their own (see docs/fuzzing.md)

// The upcoming language features every Swift target opts into: `any` spelled out for
// existentials, imports internal unless a file says `public import`, and members visible only
// from modules a file imports itself.
let upcoming: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "Halyard",
    platforms: [.macOS(.v13), .iOS(.v15), .tvOS(.v15), .watchOS(.v8)],
    products: [
        .library(name: "Halyard", targets: ["Halyard"]),
        .library(name: "HalyardTesting", targets: ["HalyardTesting"]),
        .executable(name: "halyard-bench", targets: ["HalyardBenchmarks"]),
        .executable(name: "halyard-bench-context", targets: ["ContextBenchmarks"]),
        .executable(name: "halyard-bench-exposures", targets: ["ExposureBenchmarks"]),
        .executable(name: "halyard-bench-transport", targets: ["TransportBenchmarks"]),
        .executable(name: "halyard-bench-service", targets: ["ServiceBenchmarks"]),
    ],
    targets: [
        .target(name: "CHalyardAtomics"),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .target(
            name: "Halyard",
            dependencies: ["CHalyardAtomics", "CZlib", .target(name: "CCurl", condition: .when(platforms: [.linux]))],
            swiftSettings: upcoming
        ),
        .target(name: "HalyardTesting", dependencies: ["Halyard"], swiftSettings: upcoming),
        .target(name: "CMallocCounter", path: "Benchmarks/CMallocCounter"),
        .target(name: "BenchmarkSupport", path: "Benchmarks/BenchmarkSupport", swiftSettings: upcoming),
        .executableTarget(
            name: "HalyardBenchmarks",
            dependencies: ["Halyard", "CMallocCounter", "BenchmarkSupport"],
            path: "Benchmarks/HalyardBenchmarks",
            swiftSettings: upcoming + [.unsafeFlags(["-Ounchecked"])]
        ),
        .executableTarget(
            name: "ContextBenchmarks",
            dependencies: ["Halyard"],
            path: "Benchmarks/ContextBenchmarks",
            swiftSettings: upcoming + [.unsafeFlags(["-Ounchecked"])]
        ),
        .executableTarget(
            name: "ExposureBenchmarks",
            dependencies: ["Halyard"],
            path: "Benchmarks/ExposureBenchmarks",
            swiftSettings: upcoming + [.unsafeFlags(["-Ounchecked"])]
        ),
        .executableTarget(
            name: "TransportBenchmarks",
            dependencies: ["Halyard", "BenchmarkSupport"],
            path: "Benchmarks/TransportBenchmarks",
            swiftSettings: upcoming
        ),
        .target(name: "CMallocInfo", path: "Benchmarks/CMallocInfo"),
        .executableTarget(
            name: "ServiceBenchmarks",
            dependencies: ["Halyard", "HalyardTesting", "BenchmarkSupport", "CMallocInfo"],
            path: "Benchmarks/ServiceBenchmarks",
            swiftSettings: upcoming
        ),
        .testTarget(
            name: "HalyardTests", dependencies: ["Halyard", "HalyardTesting", "CHalyardAtomics"],
            swiftSettings: upcoming),
    ],
    swiftLanguageModes: [.v6]
)
