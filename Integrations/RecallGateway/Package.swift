// swift-tools-version: 6.1
import PackageDescription

// An example to copy: an API gateway (a backend-for-frontend) that proxies an upstream API for
// many users through one shared cache (`CacheAudience.shared`) over AsyncHTTPClient, bodies
// streaming to the caller, in memory or on the fleet's PostgreSQL storage. An executable, not a
// library: it is built and tested with the other packages, and its code is yours to take.
let package = Package(
    name: "RecallGateway",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "recall-gateway", targets: ["RecallGateway"])
    ],
    dependencies: [
        .package(name: "Recall", path: "../.."),
        .package(name: "RecallAsyncHTTPClient", path: "../RecallAsyncHTTPClient"),
        .package(name: "RecallPostgres", path: "../RecallPostgres"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2")
    ],
    targets: [
        .executableTarget(
            name: "RecallGateway",
            dependencies: [
                .product(name: "Recall", package: "Recall"),
                .product(name: "RecallAsyncHTTPClient", package: "RecallAsyncHTTPClient"),
                .product(name: "RecallPostgres", package: "RecallPostgres"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio")
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .testTarget(
            name: "RecallGatewayTests",
            dependencies: [
                "RecallGateway",
                .product(name: "Recall", package: "Recall"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
