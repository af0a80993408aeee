import Foundation
import Recall
import Testing
#if canImport(Glibc)
    import Glibc
#endif

/// Runs the `recall-crash-writer` child process (built next to the test bundle).
enum CrashWriter {
    static func launch(_ arguments: [String]) throws -> (Process, Pipe) {
        try ChildProcess.launch("recall-crash-writer", arguments)
    }

    /// What the writer prints up to its first `committed` line (all it printed, when it exits
    /// before): it is writing from then on, however long a loaded machine took to start it.
    /// Read on a dispatch thread, not the test's.
    static func firstCommit(_ output: Pipe) async -> Data {
        let descriptor = output.fileHandleForReading.fileDescriptor
        return await withCheckedContinuation { (done: CheckedContinuation<Data, Never>) in
            DispatchQueue.global().async {
                var seen = Data()
                var buffer = [UInt8](repeating: 0, count: 4_096)
                while !String(decoding: seen, as: UTF8.self).contains("committed") {
                    let count = read(descriptor, &buffer, buffer.count)
                    if count < 0, errno == EINTR { continue }
                    if count <= 0 { break }
                    seen.append(contentsOf: buffer[0..<count])
                }
                done.resume(returning: seen)
            }
        }
    }

    /// The body the writer stores for `index` at `version` (mirrors Tests/CrashWriter/main.swift).
    static func body(index: Int, version: Int) -> Data {
        let size = 64 + (index * 7919 + version * 104_729) % 20_000
        // (Byte i repeats every 256 bytes: one period, repeated; see `Data.repeating`.)
        return Data.repeating(Data((0..<256).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index &+ version) }), count: size)
    }
}

@Suite("Reliability: crash safety with SIGKILL, real write failures", .serialized, .timeLimit(.minutes(3)))
struct CrashSafetyTests {
    @Test("20+ rounds of SIGKILL mid-write: reopening never fails, never serves a torn or mismatched body, keeps committed entries")
    func killNine() async throws {
        guard FileManager.default.isExecutableFile(atPath: ChildProcess.url("recall-crash-writer").path) else {
            Issue.record("recall-crash-writer was not built next to the tests at \(ChildProcess.url("recall-crash-writer").path)")
            return
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recall-crash-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        var committed: [Int: Int] = [:]  // index → last version the writer reported on disk
        var generator = SystemRandomNumberGenerator()
        var verified = 0
        for round in 1...24 {
            let (process, output) = try CrashWriter.launch([directory.path, String(round)])
            var pending = Data()
            // Every other round, the random while starts once the writer reports its first
            // commit, so that rounds surely kill it mid-write however slowly a loaded machine
            // starts it (from its launch, all 24 whiles could end before it wrote anything);
            // the other rounds may kill it anywhere, in its start too.
            if round.isMultiple(of: 2) { pending = await CrashWriter.firstCommit(output) }
            // Let it write for a random while; what it reports as committed is read after the kill.
            let deadline = ContinuousClock.now + .milliseconds(Int.random(in: 20...150, using: &generator))
            while ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal)
            pending.append(output.fileHandleForReading.readDataToEndOfFile())
            for line in String(decoding: pending, as: UTF8.self).split(separator: "\n") {
                let parts = line.split(separator: " ")
                guard parts.count == 3, parts[0] == "committed", let index = Int(parts[1]), let version = Int(parts[2]) else { continue }
                committed[index] = max(committed[index] ?? 0, version)
            }

            let storage = try DiskStorage(directory: directory, byteLimit: 1 << 30, entryLimit: 1 << 20)
            for index in 0..<500 {
                guard let record = await storage.record(for: "https://crash.test/entry/\(index)") else {
                    #expect(committed[index] == nil, "round \(round): committed entry \(index) is missing")
                    continue
                }
                let entry = try #require(record.variants.first)
                let version = Int(entry.headers["X-Version"] ?? "") ?? -1
                #expect(record.key == "https://crash.test/entry/\(index)")
                #expect(entry.headers["X-Index"] == String(index))
                #expect(entry.body == CrashWriter.body(index: index, version: version), "round \(round): torn or mismatched body for \(index)")
                #expect(version >= (committed[index] ?? 0), "round \(round): entry \(index) went back to an older version")
                verified += 1
            }
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains(".tmp-") }
            #expect(leftovers.isEmpty)
        }
        #expect(!committed.isEmpty)
        #expect(verified > 0)
    }

    @Test("real write failures (file size limit, EFBIG): counted, nothing half-written, no older copy left in place")
    func writeFailures() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recall-efbig-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (process, output) = try CrashWriter.launch([directory.path, "1", "--fsize-limit", "8000"])
        process.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let parts = text.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(parts.first == "stats")
        let failures = Int(parts.dropFirst().first ?? "") ?? -1
        let stored = Int(parts.dropFirst(2).first ?? "") ?? -1
        #expect(failures > 0, "some entries are larger than the limit and must fail: \(text)")
        #expect(stored > 0)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(files.filter { $0.contains(".tmp-") }.isEmpty)
        // Everything on disk reads back whole, and it is always the newer version: where version 2
        // failed, version 1 was removed rather than left to be served as if current.
        let storage = try DiskStorage(directory: directory)
        var readable = 0, replacedByFailure = 0
        for index in 0..<40 {
            if let record = await storage.record(for: "https://crash.test/entry/\(index)") {
                #expect(record.variants.first?.headers["X-Version"] == "2", "entry \(index) kept an older version")
                #expect(record.variants.first?.body == CrashWriter.body(index: index, version: 2))
                readable += 1
            } else if CrashWriter.body(index: index, version: 1).count < 7000 {
                replacedByFailure += 1  // version 1 fitted, so it was written and then removed
            }
        }
        #expect(readable == stored)
        #expect(replacedByFailure > 0, "the test must cover an older copy being removed")
        #expect(storage.statistics.corruptRemoved == 0)
    }

    @Test("a second process on the same cache directory gets a clear error")
    func secondProcessLocked() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recall-lock-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (process, output) = try CrashWriter.launch([directory.path, "1"])
        // Wait until the writer has the directory open (it reports its first commit).
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains("committed") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        #expect(throws: CacheStorageError.self) { try DiskStorage(directory: directory) }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        _ = try DiskStorage(directory: directory)  // free again once the holder is gone
    }
}
