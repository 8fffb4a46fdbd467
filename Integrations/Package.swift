// swift-tools-version:6.1
import Foundation
import PackageDescription

// Halyard's integrations with the server-side Swift ecosystem (docs/integrations.md): swift-log,
// swift-metrics, swift-service-lifecycle and swift-configuration. A package of its own, beside
// the core, so that the core keeps no dependencies: `swift build` / `swift test` at the root
// never resolve these packages, and `.ci/run` does not build this one.
//
// Dependencies are the upstream packages by their public URLs and released versions, resolved as
// any user resolves them. Where GitHub cannot be reached, point SwiftPM at local copies with
// mirrors set outside the repository (docs/integrations.md, "Building without GitHub").

// A path dependency's identity is the last component of its directory (for example "halyard"
// or "wt-integrations"), so compute it instead of hard-coding it.
let rootIdentity = URL(fileURLWithPath: Context.packageDirectory)
    .deletingLastPathComponent().lastPathComponent.lowercased()
let halyard = Target.Dependency.product(name: "Halyard", package: rootIdentity)
let halyardTesting = Target.Dependency.product(name: "HalyardTesting", package: rootIdentity)

// The core's upcoming features, and nonisolated async functions that run on their caller's
// executor (as swift-configuration's protocols are declared).
let settings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
]

let package = Package(
    name: "HalyardIntegrations",
    platforms: [.macOS(.v13), .iOS(.v15), .tvOS(.v15), .watchOS(.v8)],
    products: [
        .library(name: "HalyardLogging", targets: ["HalyardLogging"]),
        .library(name: "HalyardMetrics", targets: ["HalyardMetrics"]),
        .library(name: "HalyardServiceLifecycle", targets: ["HalyardServiceLifecycle"]),
        .library(name: "HalyardConfiguration", targets: ["HalyardConfiguration"]),
    ],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.7.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.8.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.0.0"),
    ],
    targets: [
        .target(
            name: "HalyardLogging",
            dependencies: [halyard, .product(name: "Logging", package: "swift-log")],
            swiftSettings: settings),
        .target(
            name: "HalyardMetrics",
            dependencies: [
                halyard, .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: settings),
        .target(
            name: "HalyardServiceLifecycle",
            dependencies: [
                halyard, .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: settings),
        .target(
            name: "HalyardConfiguration",
            dependencies: [halyard, .product(name: "Configuration", package: "swift-configuration")],
            swiftSettings: settings),
        .testTarget(
            name: "HalyardIntegrationsTests",
            dependencies: [
                "HalyardLogging", "HalyardMetrics", "HalyardServiceLifecycle", "HalyardConfiguration",
                halyard, halyardTesting,
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "ConfigurationTesting", package: "swift-configuration"),
            ],
            swiftSettings: settings),
    ],
    swiftLanguageModes: [.v6]
)
