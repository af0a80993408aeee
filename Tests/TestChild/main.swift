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
//     other test's allocations blur the measurement. Then 8,100-byte URLs under eviction.
//
//   recall-test-child limits [SLOW_URL]
//     Runs the time-limit scenarios of the retry layer against transports that ignore
//     cancellation (they answer only once released, after every scenario was measured, whatever
//     happens to the task that asked, however slow the machine) and prints one line per
//     scenario: "<scenario> elapsedMs <ms> outcome <what the caller got> …".
//     With SLOW_URL (a loopback origin slow to answer), also through URLSessionTransport,
//     whose attempts run in the caller's task (it responds to cancellation).
//     Alone in its process, so no other test keeps the cooperative thread pool busy and the
//     milliseconds measured are the pipeline's own.
//
//   recall-test-child protocol-cancel [TASKS] [MAX_DELAY_US] [both|handler|async]
//     Sends TASKS requests, eight at a time, through a plain URLSession whose configuration
//     sends through Recall (RecallURLProtocol, over a transport answering after a random
//     0–3 ms): half with `data(from:)` in a Swift task cancelled after a random 0–MAX_DELAY_US
//     microseconds (3,000 by default), half as completion-handler tasks cancelled with
//     `URLSessionTask.cancel()` (or all of one kind); prints "finished N answered A cancelled C". A delivery that
//     reaches the session after its task was cancelled crashes the process (corelibs' task
//     registry), which only a child process can show.
//
//   recall-test-child tee DIR URL [--hold] [--fsize-limit BYTES]
//     Downloads URL through a pipeline with an HTTPCache on a DiskStorage in DIR (entry limit
//     256 KiB: a larger body is stored in pieces as it streams). With --hold, prints "teeing N"
//     after the first chunk and waits to be killed (SIGKILL mid-tee); else reads the body to its
//     end and prints "received N stores S tooLarge T writeFailures W". --fsize-limit caps the
//     size of any file the process writes (RLIMIT_FSIZE, SIGXFSZ ignored): a full disk.
//
//   recall-test-child stalled-uploads [N]
//     Starts N uploads through RecallURLProtocol whose body streams block in `read` until
//     released, times an unrelated in-process request once all N reads are blocked, cancels the
//     uploads and releases the streams; prints "blocked N unrelatedMs MS closed C". Reads that
//     block threads Swift concurrency needs freeze the process, which only a child can show.
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
                        timedOut.withLock { $0 += 1 }  // the attempt timeout fired (the only failure this loop meets)
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
        ("tiny", 0, 2, 8), ("small", 10, 3, 12), ("typical", 100, 6, 24), ("headers", 0, 20, 40), ("1KB", 1000, 10, 20), ("10KB", 10_000, 12, 20)
    ]
    let count = 10_000
    var kept: [MemoryStorage] = []  // never freed, so every shape grows the heap afresh
    let pattern = (0..<16_384).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    for shape in shapes {
        let storage = MemoryStorage(byteLimit: 1 << 40, countLimit: 1 << 30, entryLimit: 1 << 30)
        let before = residentBytes()
        for index in 0..<count {
            var headers: HeaderFields = ["Cache-Control": "max-age=60"]
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
    memoryChurn()
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
    func outcome(_ result: Result<RecallResponse, any Error>) -> String {
        switch result {
        case .success(let response): "response\(response.status)"
        case .failure(let error as TransportError): error.code.name
        case .failure(let error as RetryError): error.code.name
        case .failure(is CancellationError): "cancelled"
        case .failure(is CircuitOpenError): "circuitOpen"
        case .failure(let error): "\(type(of: error))"
        }
    }
    func timed(_ pipeline: Pipeline) async -> (Duration, Result<RecallResponse, any Error>) {
        let start = ContinuousClock.now
        let result = await Task { try await pipeline.send(request) }.result
        return (ContinuousClock.now - start, result)
    }
    // Transports that answer only when released (below, once everything is measured): no
    // answer can beat a limit, however late a loaded machine runs the timers.
    var transports: [StubbornTransport] = []

    let slow = StubbornTransport()
    transports.append(slow)
    let (timeoutElapsed, timeoutResult) = await timed(Pipeline(transport: slow, retrierFactory: .policy(policy(attemptTimeout: .milliseconds(200)))))
    print("attemptTimeout elapsedMs \(milliseconds(timeoutElapsed)) outcome \(outcome(timeoutResult))")

    // A deadline several attempt timeouts long (and reached before the 10 attempts are), so that a
    // timer firing late still leaves room for a retry.
    let retried = StubbornTransport()
    transports.append(retried)
    let deadlinePolicy = policy(maxAttempts: 10, attemptTimeout: .milliseconds(250), deadline: .seconds(2))
    let (deadlineElapsed, deadlineResult) = await timed(Pipeline(transport: retried, retrierFactory: .policy(deadlinePolicy)))
    print("deadline elapsedMs \(milliseconds(deadlineElapsed)) outcome \(outcome(deadlineResult)) attempts \(retried.started)")

    let ignoring = StubbornTransport()
    transports.append(ignoring)
    let pipeline = Pipeline(transport: ignoring)
    let call = Task { try await pipeline.send(request) }
    await ignoring.waitUntilStarted()  // the attempt is under way
    let cancelledAt = ContinuousClock.now
    call.cancel()
    let cancelled = await call.result
    print("cancel elapsedMs \(milliseconds(ContinuousClock.now - cancelledAt)) outcome \(outcome(cancelled))")

    let hanging = StubbornTransport()
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

    // The abandoned attempts answer now, in the background; their late answers change nothing.
    for transport in transports { transport.release() }
    for transport in transports { await transport.waitUntilIdle() }
    let started = transports.reduce(0) { $0 + $1.started }
    let finished = transports.reduce(0) { $0 + $1.finished }
    print("background started \(started) finished \(finished) stillOpen \(breaker.state(of: "stubborn.test") == .open)")
}

/// Answers after a random 0–3 ms.
struct JitteryTransport: Transport {
    func send(_ request: URLRequest) async throws -> RecallResponse {
        try await Task.sleep(for: .microseconds(Int.random(in: 0...3_000)))
        return RecallResponse(status: 200, headers: ["Content-Type": "text/plain"], body: Data("answer".utf8), url: request.url)
    }
}

func protocolCancel(tasks: Int, maxDelay: Int, kinds: String) async {
    let configuration = URLSessionConfiguration.ephemeral
    do { try configuration.sendThroughRecall(Pipeline(transport: JitteryTransport()), hosts: ["cancel.test"]) } catch { fail("\(error)") }
    let session = URLSession(configuration: configuration)
    let url = URL(string: "https://cancel.test/item")!
    let finished = Locked(0), answered = Locked(0), cancelled = Locked(0)
    @Sendable func count(_ error: (any Error)?) {
        if let error {
            guard (error as? URLError)?.code == .cancelled || error is CancellationError else { fail("unexpected error \(error)") }
            cancelled.withLock { $0 += 1 }
        } else {
            answered.withLock { $0 += 1 }
        }
        finished.withLock { $0 += 1 }
    }
    // Eight at a time, so that answers come within the cancellations' reach.
    await withTaskGroup(of: Void.self) { group in
        for worker in 0..<8 {
            group.addTask {
                for index in stride(from: worker, to: tasks, by: 8) {
                    let delay = Duration.microseconds(Int.random(in: 0...maxDelay))
                    if kinds == "async" || (kinds == "both" && index.isMultiple(of: 2)) {
                        let call = Task { try await session.data(from: url) }
                        try? await Task.sleep(for: delay)
                        call.cancel()
                        switch await call.result {
                        case .success: count(nil)
                        case .failure(let error): count(error)
                        }
                    } else {
                        let done = CompletionSignal()
                        let task = session.dataTask(with: url) { _, _, error in
                            count(error)
                            done.signal()
                        }
                        task.resume()
                        try? await Task.sleep(for: delay)
                        task.cancel()
                        await done.wait()
                    }
                }
            }
        }
    }
    print("finished \(finished.withLock { $0 }) answered \(answered.withLock { $0 }) cancelled \(cancelled.withLock { $0 })")
}

/// Signalled once by a completion handler; waited for by the task that started it.
final class CompletionSignal: Sendable {
    private let state = Locked<(signalled: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.signalled { fail("a completion handler was called twice") }
            state.signalled = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.signalled { return true }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }
}

/// A body stream whose first read blocks until ``release()`` (then it ends); counts reads begun and closes.
final class StalledStream: InputStream {
    static let blocked = Locked(0)
    static let closed = Locked(0)
    private let gate = DispatchSemaphore(value: 0)
    private var status: Stream.Status = .notOpen

    init() { super.init(data: Data()) }

    override func open() { status = .open }
    override func close() {
        status = .closed
        StalledStream.closed.withLock { $0 += 1 }
    }
    override var streamStatus: Stream.Status { status }
    override var hasBytesAvailable: Bool { true }
    private let released = Locked(false)

    /// Blocks the first read until released; once released, the stream has ended.
    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        if released.withLock({ $0 }) { return 0 }
        StalledStream.blocked.withLock { $0 += 1 }
        gate.wait()
        buffer.pointee = 65
        return 1
    }
    func release() {
        released.withLock { $0 = true }
        gate.signal()
    }
}

func stalledUploads(count: Int) async {
    let configuration = URLSessionConfiguration.ephemeral
    let origin = MockTransport()
    origin.route(nil, "/upload", .text("stored"))
    origin.route("GET", "/unrelated", .text("ok"))
    do { try configuration.sendThroughRecall(Pipeline(transport: origin), hosts: ["upload.test"]) } catch { fail("\(error)") }
    let session = URLSession(configuration: configuration)
    let streams = (0..<count).map { _ in StalledStream() }
    let tasks = streams.map { stream -> URLSessionDataTask in
        var request = URLRequest(url: URL(string: "https://upload.test/upload")!)
        request.httpMethod = "POST"
        request.httpBodyStream = stream
        let task = session.dataTask(with: request) { _, _, _ in }
        task.resume()
        return task
    }
    let begun = ContinuousClock.now
    while StalledStream.blocked.withLock({ $0 }) < count, ContinuousClock.now - begun < .seconds(60) {
        try? await Task.sleep(for: .milliseconds(5))
    }
    let blocked = StalledStream.blocked.withLock { $0 }
    let start = ContinuousClock.now
    _ = try? await Task { try await Pipeline(transport: origin).send(URLRequest(url: URL(string: "https://other.test/unrelated")!)) }.value
    let elapsed = ContinuousClock.now - start
    tasks.forEach { $0.cancel() }
    streams.forEach { $0.release() }
    let end = ContinuousClock.now + .seconds(60)
    while StalledStream.closed.withLock({ $0 }) < count, ContinuousClock.now < end { try? await Task.sleep(for: .milliseconds(10)) }
    let ms = Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
    print("blocked \(blocked) unrelatedMs \(ms) closed \(StalledStream.closed.withLock { $0 })")
}

/// Long keys under eviction: 8,100-byte URLs stored into a 16 MiB MemoryStorage, three times
/// what it holds, so that the eviction policy's own memory (queues, ghost) counts; printed as a
/// shape of `memory` (per record held).
func memoryChurn() {
    let storage = MemoryStorage(byteLimit: 16 << 20)
    let before = residentBytes()
    let padding = String(repeating: "p", count: 8_100)
    for index in 0..<6_000 {
        let entry = CacheEntry(status: 200, headers: ["Cache-Control": "max-age=60"], body: Data(), url: nil, requestTime: Date(), responseTime: Date())
        storage.storeNow(CacheRecord(key: "https://api.example.com/\(index)?q=\(padding)", variants: [entry]))
    }
    let count = max(1, storage.statistics.count)
    print("shape longKeysEvicting measured \((residentBytes() - before) / count) accounted \(storage.statistics.bytes / count)")
    withExtendedLifetime(storage) {}
}

/// A body streaming into a DiskStorage in `directory` (see the header).
func tee(directory: URL, url: URL, hold: Bool, fsizeLimit: Int?) async {
    if let fsizeLimit {
        signal(SIGXFSZ, SIG_IGN)
        var limit = rlimit(rlim_cur: rlim_t(fsizeLimit), rlim_max: rlim_t(fsizeLimit))
        setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
    }
    do {
        let storage = try DiskStorage(directory: directory, byteLimit: 64 << 20, entryLimit: 256 << 10)
        let cache = HTTPCache(storage: storage)
        let response = try await Pipeline(transport: URLSessionTransport(), hooks: [cache]).send(URLRequest(url: url))
        var received = 0
        for try await chunk in response.body {
            received += chunk.count
            if hold {
                FileHandle.standardOutput.write(Data("teeing \(received)\n".utf8))  // (unbuffered: the parent waits for it)
                while true { try await Task.sleep(for: .seconds(60)) }
            }
        }
        await storage.flush()
        print(
            "received \(received) stores \(cache.statistics.stores) tooLarge \(cache.statistics.notStored[.tooLarge] ?? 0) "
                + "writeFailures \(storage.statistics.writeFailures)")
    } catch {
        fail("tee: \(error)")
    }
}

switch arguments.dropFirst().first {
case "stalled-uploads":
    await stalledUploads(count: arguments.count > 2 ? Int(arguments[2]) ?? 300 : 300)
case "protocol-cancel":
    await protocolCancel(
        tasks: arguments.count > 2 ? Int(arguments[2]) ?? 3_000 : 3_000,
        maxDelay: arguments.count > 3 ? Int(arguments[3]) ?? 3_000 : 3_000, kinds: arguments.count > 4 ? arguments[4] : "both")
case "race":
    guard arguments.count >= 3, let base = URL(string: arguments[2]) else { fail("usage: race URL [WORKERS] [REQUESTS]") }
    await race(
        base: base, workers: arguments.count > 3 ? Int(arguments[3]) ?? 4 : 4,
        requests: arguments.count > 4 ? Int(arguments[4]) ?? 150 : 150)
case "tee":
    guard arguments.count >= 4, let url = URL(string: arguments[3]) else { fail("usage: tee DIR URL [--hold] [--fsize-limit BYTES]") }
    let limit = arguments.firstIndex(of: "--fsize-limit").flatMap { $0 + 1 < arguments.count ? Int(arguments[$0 + 1]) : nil }
    await tee(directory: URL(fileURLWithPath: arguments[2]), url: url, hold: arguments.contains("--hold"), fsizeLimit: limit)
case "memory":
    memory()
case "limits":
    await limits(slowURL: arguments.count > 2 ? URL(string: arguments[2]) : nil)
default:
    fail(
        "usage: recall-test-child race URL [WORKERS] [REQUESTS] | memory | limits [SLOW_URL] | protocol-cancel [TASKS] [MAX_DELAY_US] [both|handler|async] | stalled-uploads [N] | tee DIR URL [--hold] [--fsize-limit BYTES]"
    )
}
