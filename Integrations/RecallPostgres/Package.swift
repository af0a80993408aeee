// swift-tools-version: 6.1
import PackageDescription

// Recall's fleet storage: one PostgreSQL table shared by every replica of a service, through
// postgres-nio. Its own package, so Recall itself keeps no dependencies.
let package = Package(
    name: "RecallPostgres",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RecallPostgres", targets: ["RecallPostgres"])
    ],
    dependencies: [
        .package(name: "Recall", path: "../.."),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.65.0")
    ],
    targets: [
        .target(
            name: "RecallPostgres",
            dependencies: [
                .product(name: "Recall", package: "Recall"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio")
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // A PostgreSQL server of its own for the tests and the benchmark.
        .target(name: "RecallPostgresTestSupport", path: "Tests/Support"),
        // Hit latency and throughput against MemoryStorage and DiskStorage, and the origin
        // requests cross-process coalescing saves: `swift run -c release recall-postgres-benchmark`.
        .executableTarget(
            name: "recall-postgres-benchmark",
            dependencies: [
                "RecallPostgres",
                "RecallPostgresTestSupport",
                .product(name: "Recall", package: "Recall"),
                .product(name: "RecallTesting", package: "Recall"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio")
            ],
            path: "Benchmarks"
        ),
        // One replica of a fleet, run as a child process by the multi-process tests.
        .executableTarget(
            name: "recall-postgres-fleet-worker",
            dependencies: [
                "RecallPostgres",
                .product(name: "Recall", package: "Recall"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log")
            ],
            path: "Tests/FleetWorker"
        ),
        .testTarget(
            name: "RecallPostgresTests",
            dependencies: [
                "RecallPostgres",
                "RecallPostgresTestSupport",
                .product(name: "Recall", package: "Recall"),
                .product(name: "RecallTesting", package: "Recall"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
