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
    ],
    targets: [
        .executableTarget(
            name: "RecallBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Recall", package: "Recall"),
                .product(name: "RecallTesting", package: "Recall"),
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
            name: "MissOverhead",
            dependencies: [.product(name: "Recall", package: "Recall"), .product(name: "RecallTesting", package: "Recall")],
            path: "Tools/MissOverhead"
        ),
    ],
    swiftLanguageModes: [.v6]
)
