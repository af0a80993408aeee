// swift-tools-version: 6.1
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny")
]

let package = Package(
    name: "Recall",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Recall", targets: ["Recall"]),
        .library(name: "RecallServices", targets: ["RecallServices"]),
        .library(name: "RecallTesting", targets: ["RecallTesting"]),
        .library(name: "RecallReplay", targets: ["RecallReplay"]),
        .executable(name: "recall", targets: ["RecallCLI"])
    ],
    targets: [
        .target(name: "Recall", swiftSettings: strict),
        // The typed APIs of the seed libraries: HttpService, endpoints, WebServiceProxy, ServiceRouter.
        .target(name: "RecallServices", dependencies: ["Recall"], swiftSettings: strict),
        .target(name: "RecallTesting", dependencies: ["Recall"], swiftSettings: strict),
        // Hit-ratio replays of traces, HAR captures and access logs (`recall replay`, Benchmarks/).
        .target(name: "RecallReplay", dependencies: ["Recall"], swiftSettings: strict),
        .executableTarget(name: "RecallCLI", dependencies: ["Recall", "RecallServices", "RecallReplay"], swiftSettings: strict),
        // A child process the reliability tests kill with SIGKILL mid-write (not a product).
        .executableTarget(name: "recall-crash-writer", dependencies: ["Recall"], path: "Tests/CrashWriter", swiftSettings: strict),
        // A child process for tests that cannot run inside the test process (not a product).
        .executableTarget(name: "recall-test-child", dependencies: ["Recall", "RecallTesting"], path: "Tests/TestChild", swiftSettings: strict),
        .testTarget(
            name: "RecallTests",
            dependencies: ["Recall", "RecallServices", "RecallTesting", "RecallReplay"],
            resources: [.copy("Support/origin_server.py")],
            swiftSettings: strict
        )
    ],
    swiftLanguageModes: [.v6]
)
