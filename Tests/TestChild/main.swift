// A child process for Recall's tests, for what cannot run inside the test process:
//
//   recall-test-child race URL [WORKERS] [REQUESTS]
//     Sends WORKERS × REQUESTS GETs through a pipeline over URLSessionTransport with a 20 ms
//     attempt timeout to a loopback origin answering after a random 0–40 ms, so cancellations
//     race completions hundreds of times; prints "finished N answered A timedOut T". The parent kills it when it has
//     not finished in time: a hang (the corelibs cancellation deadlock) fails the test instead
//     of freezing the test run.
//
//   recall-test-child memory
//     Stores 10,000 records of several shapes in MemoryStorages and prints, per shape,
//     "shape <name> measured <bytes per record> accounted <bytes per record>": the growth of
//     the resident set against the storage's own byte accounting. Alone in its process, so no
//     other test's allocations blur the measurement.
import Foundation
import Recall
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let arguments = CommandLine.arguments

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("recall-test-child: \(message)\n".utf8))
    exit(2)
}

func race(base: URL, workers: Int, requests: Int) async {
    var policy = RetryPolicy(maxAttempts: 1)
    policy.attemptTimeout = .milliseconds(20)
    let pipeline = Pipeline(transport: URLSessionTransport(), retrierFactory: .policy(policy))
    let finished = Locked(0), answered = Locked(0), timedOut = Locked(0)
    await withTaskGroup(of: Void.self) { group in
        for worker in 0..<workers {
            group.addTask {
                var random = SeededRandomSource(seed: UInt64(worker + 1))
                for _ in 0..<requests {
                    var components = URLComponents(url: base, resolvingAgainstBaseURL: false)!
                    components.queryItems = [URLQueryItem(name: "delay_ms", value: "\(Int.random(in: 0...40, using: &random))")]
                    do {
                        _ = try await pipeline.send(URLRequest(url: components.url!))
                        answered.withLock { $0 += 1 }
                    } catch {
                        timedOut.withLock { $0 += 1 } // the attempt timeout fired (the only failure this loop meets)
                    }
                    finished.withLock { $0 += 1 }
                }
            }
        }
    }
    print("finished \(finished.withLock { $0 }) answered \(answered.withLock { $0 }) timedOut \(timedOut.withLock { $0 })")
}

func residentBytes() -> Int {
    let text = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? "0 0"
    return (Int(text.split(separator: " ")[1]) ?? 0) * Int(getpagesize())
}

func memory() {
    let shapes: [(name: String, body: Int, fields: Int, valueLength: Int)] = [
        ("tiny", 0, 2, 8), ("small", 10, 3, 12), ("typical", 100, 6, 24), ("headers", 0, 20, 40), ("1KB", 1000, 10, 20), ("10KB", 10_000, 12, 20),
    ]
    let count = 10_000
    var kept: [MemoryStorage] = [] // never freed, so every shape grows the heap afresh
    let pattern = (0..<16_384).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    for shape in shapes {
        let storage = MemoryStorage(byteLimit: 1 << 40, countLimit: 1 << 30, entryLimit: 1 << 30)
        let before = residentBytes()
        for index in 0..<count {
            var headers: HTTPHeaders = ["Cache-Control": "max-age=60"]
            for field in 1..<shape.fields {
                headers.add("X-Field-\(field)", String(repeating: "v", count: shape.valueLength - 6) + String(100_000 + index))
            }
            // Exactly sized, as the cache stores bodies (it compacts what the transport appended).
            let body = pattern.withUnsafeBytes { Data(bytes: $0.baseAddress!, count: shape.body) }
            let entry = CacheEntry(status: 200, headers: headers, body: body, url: nil, requestTime: Date(), responseTime: Date())
            storage.storeNow(CacheRecord(key: "https://api.example.com/v1/items/\(index)?page=\(index % 7)", variants: [entry]))
        }
        let measured = (residentBytes() - before) / count
        print("shape \(shape.name) measured \(measured) accounted \(storage.statistics.bytes / count)")
        kept.append(storage)
    }
    withExtendedLifetime(kept) {}
}

switch arguments.dropFirst().first {
case "race":
    guard arguments.count >= 3, let base = URL(string: arguments[2]) else { fail("usage: race URL [WORKERS] [REQUESTS]") }
    await race(base: base, workers: arguments.count > 3 ? Int(arguments[3]) ?? 4 : 4,
               requests: arguments.count > 4 ? Int(arguments[4]) ?? 150 : 150)
case "memory":
    memory()
default:
    fail("usage: recall-test-child race URL [WORKERS] [REQUESTS] | memory")
}
