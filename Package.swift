// swift-tools-version:6.0
import PackageDescription

// Halyard: a feature-flag engine with lock-free, nanosecond reads.
//
// Layout:
//   Sources/Halyard            the library, one folder per concern (docs/architecture.md has the map):
//                              Values, Context, Layout, Snapshot, Transport, OFREP, Streaming, Refresh,
//                              Exposure, Cache, Reads, Client, Service, SharedCache, Support; a subfolder
//                              belongs to its folder (Service/Cache, Service/Memo, Service/Fetching, ...,
//                              SharedCache/Redis, Exposure/OTLP, Transport/Curl, Transport/URLSession)
//   Sources/CHalyardAtomics    C11 atomics, the hazard-pointer records of the snapshot store, image ranges
//   Sources/CZlib              zlib through a system-library target (Debian: zlib1g-dev)
//   Sources/CHalyardCurl       libcurl loaded at run time (dlopen), Linux only: no libcurl header or -dev package
//   Sources/HalyardTesting     an in-memory control plane for application tests (SPEC §10)
//   Sources/HalyardCLI         the `halyard` command (docs/cli.md); its code is in Sources/HalyardCLICore
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
        .executable(name: "halyard", targets: ["HalyardCLI"]),
        .executable(name: "halyard-bench", targets: ["HalyardBenchmarks"]),
        .executable(name: "halyard-bench-context", targets: ["ContextBenchmarks"]),
        .executable(name: "halyard-bench-exposures", targets: ["ExposureBenchmarks"]),
        .executable(name: "halyard-bench-transport", targets: ["TransportBenchmarks"]),
        .executable(name: "halyard-bench-cache", targets: ["CacheBenchmarks"]),
        .executable(name: "halyard-bench-service", targets: ["ServiceBenchmarks"]),
        .executable(name: "halyard-bench-stream", targets: ["StreamBenchmarks"]),
        .executable(name: "halyard-bench-fleet", targets: ["FleetBenchmarks"]),
        .executable(name: "halyard-bench-definitions", targets: ["DefinitionsBenchmarks"]),
        .executable(name: "halyard-release-stress", targets: ["ReleaseStress"]),
    ],
    targets: [
        .target(name: "CHalyardAtomics"),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // libcurl at run time (dlopen of libcurl.so.4): nothing of libcurl is needed to build.
        .target(name: "CHalyardCurl", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        .target(
            name: "Halyard",
            dependencies: [
                "CHalyardAtomics", "CZlib", .target(name: "CHalyardCurl", condition: .when(platforms: [.linux])),
            ],
            swiftSettings: upcoming
        ),
        .target(name: "HalyardTesting", dependencies: ["Halyard"], swiftSettings: upcoming),
        .target(name: "HalyardCLICore", dependencies: ["Halyard"], swiftSettings: upcoming),
        .executableTarget(name: "HalyardCLI", dependencies: ["HalyardCLICore"], swiftSettings: upcoming),
        .target(name: "CMallocCounter", path: "Benchmarks/CMallocCounter"),
        .target(
            name: "BenchmarkSupport", dependencies: ["Halyard"], path: "Benchmarks/BenchmarkSupport",
            swiftSettings: upcoming),
        .executableTarget(
            name: "HalyardBenchmarks",
            dependencies: ["Halyard", "CMallocCounter", "BenchmarkSupport"],
            path: "Benchmarks/HalyardBenchmarks",
            swiftSettings: upcoming + [.unsafeFlags(["-Ounchecked"])]
        ),
        .executableTarget(
            name: "ContextBenchmarks",
            dependencies: ["Halyard", "BenchmarkSupport"],
            path: "Benchmarks/ContextBenchmarks",
            swiftSettings: upcoming + [.unsafeFlags(["-Ounchecked"])]
        ),
        .executableTarget(
            name: "ExposureBenchmarks",
            dependencies: ["Halyard", "CMallocCounter", "BenchmarkSupport"],
            path: "Benchmarks/ExposureBenchmarks",
            swiftSettings: upcoming + [.unsafeFlags(["-Ounchecked"])]
        ),
        .executableTarget(
            name: "TransportBenchmarks",
            dependencies: ["Halyard", "BenchmarkSupport"],
            path: "Benchmarks/TransportBenchmarks",
            swiftSettings: upcoming
        ),
        .executableTarget(
            name: "CacheBenchmarks",
            dependencies: ["Halyard", "HalyardTesting", "BenchmarkSupport"],
            path: "Benchmarks/CacheBenchmarks",
            swiftSettings: upcoming
        ),
        // Writes cache entries through the real file store until killed (CacheProcessTests).
        .executableTarget(
            name: "CacheWriterProcess", dependencies: ["Halyard"], path: "Tests/CacheWriterProcess",
            swiftSettings: upcoming),
        .target(name: "CMallocInfo", path: "Benchmarks/CMallocInfo"),
        .executableTarget(
            name: "ServiceBenchmarks",
            dependencies: ["Halyard", "HalyardTesting", "BenchmarkSupport", "CMallocInfo"],
            path: "Benchmarks/ServiceBenchmarks",
            swiftSettings: upcoming
        ),
        // The warm path under callgrind (no async main: valgrind 3.19 crashes on one).
        .executableTarget(
            name: "halyard-warm-path", dependencies: ["Halyard", "HalyardTesting", "BenchmarkSupport"],
            path: "Benchmarks/ServiceWarmPath",
            swiftSettings: upcoming),
        // Propagation latency of changes: streaming vs polling.
        .executableTarget(
            name: "StreamBenchmarks", dependencies: ["Halyard", "BenchmarkSupport"],
            path: "Benchmarks/StreamBenchmarks",
            swiftSettings: upcoming),
        // A fleet of service processes on one redis-server (SPEC §15): with and without the L2.
        .executableTarget(
            name: "FleetBenchmarks", dependencies: ["Halyard", "HalyardTesting", "BenchmarkSupport"],
            path: "Benchmarks/FleetBenchmarks",
            swiftSettings: upcoming),
        // flagd definitions evaluated in process (SPEC §17): ns per evaluation, 1,000 flags compiled.
        .executableTarget(
            name: "DefinitionsBenchmarks", dependencies: ["Halyard", "BenchmarkSupport"],
            path: "Benchmarks/DefinitionsBenchmarks",
            swiftSettings: upcoming + [.unsafeFlags(["-Ounchecked"])]),
        // Every hazard-protected read against a publisher, for `-c release` builds (.ci/run): only
        // there does the ARC optimizer move retains (docs/architecture.md).
        .executableTarget(
            name: "ReleaseStress", dependencies: ["Halyard"], path: "Tests/ReleaseStress", swiftSettings: upcoming),
        // glibc's mallinfo2 / malloc_trim for TransportProcessTests (not in Swift's Glibc module).
        .target(name: "CHalyardTestMalloc", path: "Tests/CHalyardTestMalloc"),
        .testTarget(
            name: "HalyardTests",
            // HalyardCLI: `swift test` builds the `halyard` binary the CLI tests run as a subprocess.
            dependencies: [
                "Halyard", "HalyardTesting", "CHalyardAtomics", "HalyardCLICore", "HalyardCLI", "CHalyardTestMalloc",
            ],
            swiftSettings: upcoming),
    ],
    swiftLanguageModes: [.v6]
)
