// swift-tools-version: 6.1
import PackageDescription

// Recall for OpenAPI-generated clients (swift-openapi-runtime): a ClientMiddleware that runs
// Recall's hooks (the HTTP cache) and retrier around the rest of the client's chain. Its own
// package, so Recall itself keeps no dependencies.
let package = Package(
    name: "RecallOpenAPI",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "RecallOpenAPI", targets: ["RecallOpenAPI"])
    ],
    dependencies: [
        .package(name: "Recall", path: "../.."),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // Tests only: the generated client runs over the URLSession transport, and over
        // AsyncHTTPClient's, which streams bodies on Linux too (URLSession's buffers them there).
        .package(url: "https://github.com/apple/swift-openapi-urlsession", from: "1.4.0"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client", from: "1.5.0")
    ],
    targets: [
        .target(
            name: "RecallOpenAPI",
            dependencies: [
                .product(name: "Recall", package: "Recall"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types")
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .testTarget(
            name: "RecallOpenAPITests",
            dependencies: [
                "RecallOpenAPI",
                .product(name: "Recall", package: "Recall"),
                .product(name: "RecallTesting", package: "Recall"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types")
            ],
            exclude: ["openapi.yaml", "openapi-generator-config.yaml", "Generated/README.md"]
        )
    ],
    swiftLanguageModes: [.v6]
)
