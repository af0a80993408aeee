// swift-tools-version: 6.1
import PackageDescription

// Recall over AsyncHTTPClient (server-side Swift: Vapor, Hummingbird): a Transport that sends
// through an HTTPClient the caller owns. Its own package, so Recall itself keeps no dependencies.
let package = Package(
    name: "RecallAsyncHTTPClient",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RecallAsyncHTTPClient", targets: ["RecallAsyncHTTPClient"])
    ],
    dependencies: [
        .package(name: "Recall", path: "../.."),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2")
    ],
    targets: [
        .target(
            name: "RecallAsyncHTTPClient",
            dependencies: [
                .product(name: "Recall", package: "Recall"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio")
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .executableTarget(
            name: "ConformanceProxy",
            dependencies: [
                "RecallAsyncHTTPClient",
                .product(name: "Recall", package: "Recall"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio")
            ]
        ),
        .testTarget(
            name: "RecallAsyncHTTPClientTests",
            dependencies: [
                "RecallAsyncHTTPClient",
                .product(name: "Recall", package: "Recall"),
                .product(name: "RecallTesting", package: "Recall"),
                .product(name: "AsyncHTTPClient", package: "async-http-client")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
