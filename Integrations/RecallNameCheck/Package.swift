// swift-tools-version: 6.1
import PackageDescription

// Proof that Recall's names live beside the server-side ecosystem's: a test that imports Recall
// with Hummingbird, AsyncHTTPClient and NIOHTTP1 (whose HTTPHeaders and HTTPMethod Vapor
// re-exports) and uses every one of their clashing names unqualified. It ships no library.
let package = Package(
    name: "RecallNameCheck",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Recall", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2")
    ],
    targets: [
        .testTarget(
            name: "RecallNameCheckTests",
            dependencies: [
                .product(name: "Recall", package: "Recall"),
                .product(name: "RecallServices", package: "Recall"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
