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

    @Test("--timeout inf, 1e300, nan, 0 and -1 are refused with the allowed range, not a trap",
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

    @Test("a truncated body is a lost connection and is retried")
    func truncatedBodyRetried() async throws {
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
}
