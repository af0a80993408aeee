// swift-tools-version: 6.1
import PackageDescription

// Recall's benchmarks: their own package, so the library keeps no dependencies.
// Run everything with `swift package benchmark` from this folder.
let package = Package(
    name: "RecallBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(name: "Recall", path: ".."),
        .package(name: "RecallAsyncHTTPClient", path: "../Integrations/RecallAsyncHTTPClient"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2")
    ],
    targets: [
        .executableTarget(
            name: "RecallBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Recall", package: "Recall"),
                .product(name: "RecallTesting", package: "Recall"),
                "MissPathParts"
            ],
            path: "Benchmarks/RecallBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "HitRateReplay",
            dependencies: [.product(name: "Benchmark", package: "benchmark"), .product(name: "RecallReplay", package: "Recall")],
            path: "Benchmarks/HitRateReplay",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "HitRates",
            dependencies: [.product(name: "RecallReplay", package: "Recall")],
            path: "Tools/HitRates"
        ),
        .executableTarget(
            name: "HitScaling",
            dependencies: [.product(name: "Recall", package: "Recall"), .product(name: "RecallTesting", package: "Recall")],
            path: "Tools/HitScaling"
        ),
        .executableTarget(
            name: "ConcurrentLoad",
            dependencies: [
                .product(name: "Recall", package: "Recall"),
                .product(name: "RecallAsyncHTTPClient", package: "RecallAsyncHTTPClient"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                "MissPathParts"
            ],
            path: "Tools/ConcurrentLoad"
        ),
        .executableTarget(
            name: "StreamingDownload",
            dependencies: [
                .product(name: "Recall", package: "Recall"),
                .product(name: "RecallTesting", package: "Recall"),
                .product(name: "RecallAsyncHTTPClient", package: "RecallAsyncHTTPClient"),
                .product(name: "AsyncHTTPClient", package: "async-http-client")
            ],
            path: "Tools/StreamingDownload"
        ),
        .executableTarget(
            name: "MissOverhead",
            dependencies: [.product(name: "Recall", package: "Recall"), .product(name: "RecallTesting", package: "Recall"), "MissPathParts"],
            path: "Tools/MissOverhead"
        ),
        .target(
            name: "MissPathParts",
            dependencies: [.product(name: "Recall", package: "Recall")],
            path: "Tools/MissPathParts"
        )
    ],
    swiftLanguageModes: [.v6]
)
