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
//
//   recall-test-child limits [SLOW_URL]
//     Runs the time-limit scenarios of the retry layer against a transport that ignores
//     cancellation (it answers seconds later, whatever happens to the task that asked) and
//     prints one line per scenario: "<scenario> elapsedMs <ms> outcome <what the caller got> …".
//     With SLOW_URL (a loopback origin answering after a second), also through URLSessionTransport,
//     whose attempts run in the caller's task (it responds to cancellation).
//     Alone in its process, so no other test keeps the cooperative thread pool busy and the
//     milliseconds measured are the pipeline's own.
import Foundation
import Recall
import RecallTesting
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

func limits(slowURL: URL?) async {
    let request = URLRequest(url: URL(string: "https://stubborn.test/slow")!)
    func policy(maxAttempts: Int = 1, attemptTimeout: Duration? = nil, deadline: Duration? = nil) -> RetryPolicy {
        var policy = RetryPolicy(maxAttempts: maxAttempts, backoff: .constant(.milliseconds(10)), jitter: .none)
        policy.attemptTimeout = attemptTimeout
        policy.deadline = deadline
        policy.budget = nil
        return policy
    }
    func milliseconds(_ duration: Duration) -> String {
        String(format: "%.1f", Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15)
    }
    func outcome(_ result: Result<Response, any Error>) -> String {
        switch result {
        case .success(let response): "response\(response.status)"
        case .failure(let error as TransportError): error.kind.rawValue
        case .failure(let error as RetryError): error.code.name
        case .failure(is CancellationError): "cancelled"
        case .failure(is CircuitOpenError): "circuitOpen"
        case .failure(let error): "\(type(of: error))"
        }
    }
    func timed(_ pipeline: Pipeline) async -> (Duration, Result<Response, any Error>) {
        let start = ContinuousClock.now
        let result = await Task { try await pipeline.send(request) }.result
        return (ContinuousClock.now - start, result)
    }
    var transports: [StubbornTransport] = []

    let slow = StubbornTransport(seconds: 1)
    transports.append(slow)
    let (timeoutElapsed, timeoutResult) = await timed(Pipeline(transport: slow, retrierFactory: .policy(policy(attemptTimeout: .milliseconds(200)))))
    print("attemptTimeout elapsedMs \(milliseconds(timeoutElapsed)) outcome \(outcome(timeoutResult))")

    let retried = StubbornTransport(seconds: 1)
    transports.append(retried)
    let deadlinePolicy = policy(maxAttempts: 5, attemptTimeout: .milliseconds(100), deadline: .milliseconds(300))
    let (deadlineElapsed, deadlineResult) = await timed(Pipeline(transport: retried, retrierFactory: .policy(deadlinePolicy)))
    print("deadline elapsedMs \(milliseconds(deadlineElapsed)) outcome \(outcome(deadlineResult)) attempts \(retried.started)")

    let ignoring = StubbornTransport(seconds: 1)
    transports.append(ignoring)
    let pipeline = Pipeline(transport: ignoring)
    let call = Task { try await pipeline.send(request) }
    try? await Task.sleep(for: .milliseconds(100))
    let cancelledAt = ContinuousClock.now
    call.cancel()
    let cancelled = await call.result
    print("cancel elapsedMs \(milliseconds(ContinuousClock.now - cancelledAt)) outcome \(outcome(cancelled))")

    let hanging = StubbornTransport(seconds: 0.5)
    transports.append(hanging)
    let breaker = CircuitBreaker(minimumCalls: 3, breakDuration: .seconds(60))
    let guarded = Pipeline(transport: hanging.withCircuitBreaker(breaker), retrierFactory: .policy(policy(attemptTimeout: .milliseconds(30))))
    for _ in 0..<3 { _ = await timed(guarded) }
    let openBeforeAnswers = breaker.state(of: "stubborn.test") == .open
    let answeredBeforeOpen = hanging.finished
    let (refusedElapsed, refused) = await timed(guarded)
    print("breaker elapsedMs \(milliseconds(refusedElapsed)) outcome \(outcome(refused)) open \(openBeforeAnswers) answered \(answeredBeforeOpen)")

    if let slowURL {
        let session = URLSessionTransport()
        let timed = Pipeline(transport: session, retrierFactory: .policy(policy(attemptTimeout: .milliseconds(200))))
        let start = ContinuousClock.now
        let result = await Task { try await timed.send(URLRequest(url: slowURL)) }.result
        print("sessionTimeout elapsedMs \(milliseconds(ContinuousClock.now - start)) outcome \(outcome(result))")
        let plain = Pipeline(transport: session)
        let call = Task { try await plain.send(URLRequest(url: slowURL)) }
        try? await Task.sleep(for: .milliseconds(100))
        let cancelledAt = ContinuousClock.now
        call.cancel()
        let cancelled = await call.result
        print("sessionCancel elapsedMs \(milliseconds(ContinuousClock.now - cancelledAt)) outcome \(outcome(cancelled))")
    }

    // The abandoned attempts finish in the background; their late answers change nothing.
    let end = ContinuousClock.now + .seconds(5)
    while transports.contains(where: { $0.finished < $0.started }), ContinuousClock.now < end {
        try? await Task.sleep(for: .milliseconds(10))
    }
    let started = transports.reduce(0) { $0 + $1.started }
    let finished = transports.reduce(0) { $0 + $1.finished }
    print("background started \(started) finished \(finished) stillOpen \(breaker.state(of: "stubborn.test") == .open)")
}

switch arguments.dropFirst().first {
case "race":
    guard arguments.count >= 3, let base = URL(string: arguments[2]) else { fail("usage: race URL [WORKERS] [REQUESTS]") }
    await race(base: base, workers: arguments.count > 3 ? Int(arguments[3]) ?? 4 : 4,
               requests: arguments.count > 4 ? Int(arguments[4]) ?? 150 : 150)
case "memory":
    memory()
case "limits":
    await limits(slowURL: arguments.count > 2 ? URL(string: arguments[2]) : nil)
default:
    fail("usage: recall-test-child race URL [WORKERS] [REQUESTS] | memory | limits [SLOW_URL]")
}
