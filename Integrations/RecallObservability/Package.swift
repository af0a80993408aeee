// swift-tools-version: 6.1
import PackageDescription

// Recall's logs, metrics and traces (swift-log, swift-metrics, swift-distributed-tracing) and a
// swift-service-lifecycle Service for graceful shutdown. Its own package, so Recall itself
// keeps no dependencies.
let package = Package(
    name: "RecallObservability",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RecallObservability", targets: ["RecallObservability"])
    ],
    dependencies: [
        .package(name: "Recall", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0")
    ],
    targets: [
        .target(
            name: "RecallObservability",
            dependencies: [
                .product(name: "Recall", package: "Recall"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .testTarget(
            name: "RecallObservabilityTests",
            dependencies: [
                "RecallObservability",
                .product(name: "Recall", package: "Recall"),
                .product(name: "RecallTesting", package: "Recall"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
