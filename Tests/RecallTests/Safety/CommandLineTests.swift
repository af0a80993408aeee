import Foundation
import Recall
import Testing

/// Issue #10, point 13: `recall get` tells the truth. Runs the real `recall` binary.
@Suite("Safety: the recall command line tells the truth", .timeLimit(.minutes(1)))
struct CommandLineTests {
    /// Runs `recall` with `arguments`, killing it after `seconds`.
    static func run(_ arguments: [String], seconds: Double = 20) async throws -> ChildProcess.Result {
        try await ChildProcess.run("recall", arguments, deadline: .milliseconds(Int(seconds * 1000)))
    }

    @Test(
        "--timeout inf, 1e300, nan, 0 and -1 are refused with the allowed range, not a trap",
        arguments: ["inf", "1e300", "nan", "0", "-1"])
    func badTimeouts(value: String) async throws {
        let result = try await Self.run(["get", "--timeout", value, "http://127.0.0.1:9/"])
        #expect(result.status == 2)
        #expect(result.error.contains("--timeout takes seconds from 0.001 to 86400"))
    }

    @Test("--retries past the cap is refused, not clamped silently")
    func retriesCap() async throws {
        let result = try await Self.run(["get", "--retries", "99999", "http://127.0.0.1:9/"])
        #expect(result.status == 2)
        #expect(result.error.contains("1 to \(RetryPolicy.attemptLimit)"))
    }

    @Test("no arguments: the usage goes to standard error with a failing status")
    func noArguments() async throws {
        let result = try await Self.run([])
        #expect(result.status == 2)
        #expect(result.output.isEmpty)
        #expect(result.error.contains("USAGE"))
        #expect(try await Self.run(["--help"]).status == 0)
    }

    @Test("an uppercase scheme works end to end")
    func uppercaseScheme() async throws {
        let server = try await OriginServer.shared.value
        let url = server.url(OriginServer.uniquePath("upper")).absoluteString.replacingOccurrences(of: "http://", with: "HTTP://")
        let result = try await Self.run(["get", url])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("HTTP 200"))
    }

    @Test("a cache directory under a file gets a plain reason, not a Cocoa error number")
    func pathUnderFile() async throws {
        let file = temporaryDirectory().path + "-file"
        defer { unlink(file) }
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        let result = try await Self.run(["get", "--cache-dir", file + "/cache", "http://127.0.0.1:9/"])
        #expect(result.status == 1)
        #expect(result.error.contains("Not a directory"))
        #expect(!result.error.contains("NSCocoaErrorDomain"))
    }

    @Test("a hanging server: a bounded wait and an account of what happened (the default timeout is 30 s)")
    func hangingServer() async throws {
        let server = try await OriginServer.shared.value
        // The origin holds its answer for 30 s, so that no timer a loaded machine runs late lets it through.
        let url = server.url(OriginServer.uniquePath("hang"), ["delay_ms": "30000"]).absoluteString
        let result = try await Self.run(["get", "--timeout", "0.2", "--retries", "2", url])
        #expect(result.status == 1)
        #expect(result.error.contains("no response within the --timeout of 0.2 s (2 attempts)"))
    }

    @Test("the help states the default per-attempt timeout")
    func defaultTimeoutDocumented() async throws {
        let help = try await Self.run(["get", "--help"])
        #expect(help.status == 0)
        #expect(help.output.contains("(default 30)"))
    }

    /// A small body (at most `ResponseBody.collectedUpTo` by its Content-Length) arrives with its
    /// head, so a cut one fails the attempt, which the retrier retries. (A larger body streams
    /// after the head: cut, it is the reader's error — StreamingTests.)
    @Test("a truncated small body is a lost connection, retried and then reported")
    func truncatedBodyReported() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("cut")
        let result = try await Self.run(["get", "--retries", "3", "-v", server.url(path, ["truncate": "1", "size": "50"]).absoluteString])
        #expect(result.status == 1)
        #expect(result.error.contains("connectionLost"))
        #expect(try await server.hits(path) == 3)
    }

    @Test("a second process on the same cache directory still fetches, without the cache, and says so")
    func lockedCacheDirectory() async throws {
        let server = try await OriginServer.shared.value
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let holder = try DiskStorage(directory: directory)
        let result = try await Self.run(["get", "--cache-dir", directory.path, server.url(OriginServer.uniquePath("locked")).absoluteString])
        #expect(result.status == 0)
        #expect(result.output.contains("HTTP 200"))
        #expect(result.error.contains("warning: not using the cache"))
        withExtendedLifetime(holder) {}
    }

    // Review point 11: a response size limit, and bodies written as bytes.

    /// The bytes `stream=N` sends: 0, 1, … 255, 0, … (not UTF-8).
    static func pattern(_ count: Int) -> Data { Data((0..<count).map { UInt8(truncatingIfNeeded: $0) }) }

    @Test("a binary body is written to standard output as its bytes, between the status line and the account")
    func binaryBodyAsBytes() async throws {
        let server = try await OriginServer.shared.value
        let result = try await Self.run(["get", server.url(OriginServer.uniquePath("binary"), ["stream": "1000"]).absoluteString])
        #expect(result.status == 0, "\(result.error)")
        let expected = Data("HTTP 200 OK\n\n".utf8) + Self.pattern(1000) + Data("\n\n— from the network".utf8)
        #expect(result.outputData.range(of: expected) != nil, "\(result.outputData.prefix(80).map { $0 })")
    }

    @Test("--output FILE writes the body alone to FILE")
    func outputFile() async throws {
        let server = try await OriginServer.shared.value
        let file = temporaryDirectory().path + "-body.bin"
        defer { unlink(file) }
        let result = try await Self.run(["get", "-o", file, server.url(OriginServer.uniquePath("file"), ["stream": "70000"]).absoluteString])
        #expect(result.status == 0, "\(result.error)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == Self.pattern(70_000))
        #expect(result.output.contains("<70000 bytes written to \(file)>"))
        #expect(result.outputData.count < 1_000)
    }

    @Test(
        "--max-body: a larger body fails with a reason naming the limit, with or without a Content-Length",
        arguments: ["given", "omit"])
    func maxBody(length: String) async throws {
        let server = try await OriginServer.shared.value
        var query = ["stream": "5000"]
        if length == "omit" { query["length"] = "omit" }
        let result = try await Self.run(["get", "--max-body", "1KB", server.url(OriginServer.uniquePath("max"), query).absoluteString])
        #expect(result.status == 1)
        #expect(result.error.contains("larger than the --max-body of 1 KB (1024 bytes)"), "\(result.error)")
        #expect(!result.output.contains("HTTP 200"))
        let fits = try await Self.run(["get", "--max-body", "5000", server.url(OriginServer.uniquePath("fits"), query).absoluteString])
        #expect(fits.status == 0, "\(fits.error)")
    }

    @Test(
        "the default limit (64 MB): a 2 GiB body is refused early and the process stays small",
        arguments: ["given", "omit"])
    func defaultMaxBody(length: String) async throws {
        let server = try await OriginServer.shared.value
        var query = ["stream": String(2 << 30)]
        if length == "omit" { query["length"] = "omit" }
        let result = try await Self.run(["get", server.url(OriginServer.uniquePath("huge"), query).absoluteString], seconds: 60)
        #expect(result.status == 1)
        #expect(result.error.contains("larger than the default limit of 64 MB"), "\(result.error)")
        #expect(result.error.contains("--max-body"))
        // The limit plus a buffer's growth and the process itself; 2.5 GB before the limit existed.
        #expect(result.peakResidentBytes > 0 && result.peakResidentBytes < 512 << 20, "peak resident \(result.peakResidentBytes >> 20) MB")
    }

    @Test(
        "--max-body refuses what is not a size from 1 byte to 4 GB, and the help states the default",
        arguments: ["lots", "0", "5GB", "-1", "1e300"])
    func badMaxBody(value: String) async throws {
        let result = try await Self.run(["get", "--max-body", value, "http://127.0.0.1:9/"])
        #expect(result.status == 2)
        #expect(result.error.contains("--max-body takes a size from 1 byte to 4 GB"))
        let help = try await Self.run(["get", "--help"])
        #expect(help.output.contains("(default 64MB)"))
    }
}
