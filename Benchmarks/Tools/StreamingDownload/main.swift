import AsyncHTTPClient
import Foundation
import Recall
import RecallAsyncHTTPClient
import RecallTesting
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Large downloads, side by side in one run, from the loopback origin (origin_server.py's
// `stream=N`: N bytes written 64 KiB at a time, never held whole):
//
//   swift run -c release StreamingDownload [--mib 1024] [--rounds 3] [--ahc-mib 64] [--inner ahc|urlsession] [--slow-delegate-us 20] [--miss-only]
//
// (`--miss-only`: plain, the stored miss and the disk write alone — for a profile of the miss;
// `--miss-cc no-store` makes that miss one the cache does not store.)
//
// - plain: an unmodified URLSession task with a data delegate;
// - recall miss: the same session set up with `sendThroughRecall` over a pipeline with an
//   HTTPCache on a DiskStorage (default limits), a new URL each round; the pipeline's own
//   transport is AsyncHTTPClient's (`--inner ahc`, the default) or a URLSessionTransport
//   (`--inner urlsession`: on Linux every URLSession's work runs on one shared serial queue, so
//   the inner session's transfer and the deliveries to the outer one take turns on it);
// - recall again: the same URL once more (a disk hit when the body was stored, else a miss);
// - recall no-store: a body answered `Cache-Control: no-store` through the same session;
// - recall over byteLimit: a `max-age` body through a session over an HTTPCache whose DiskStorage
//   has its default limits (256 MiB): refused at its head, passed through;
// - disk write: the body's size written beside the cache's files in 1 MiB writes, then fsync'd —
//   the disk's sustained write rate, which may pace a stored miss (`miss-throughput-of-bound` is
//   the miss over the slower of plain and the disk);
// - cat: the cache's file read sequentially in 64 KiB reads (when one was stored);
// - ahc: `--ahc-mib` MiB through a pipeline over AsyncHTTPClientTransport with an HTTPCache.
//
// - plain, slow delegate: plain again, its data delegate taking `--slow-delegate-us` µs (20) per
//   chunk, as a consumer a little slower than the network would: what corelibs holds meanwhile;
// - forward floor: the miss's floor — the simplest URLProtocol over a plain inner URLSession,
//   without Recall (each callback of the inner session handed to the client on the loading
//   thread): what any URLProtocol that fetches with URLSession gets here;
// - protocol floor: the cache's file served by the simplest URLProtocol (preads handed to the
//   client on the loading thread): what any URLProtocol gets from URLSession here;
// - pipeline hit: the same URL through the pipeline alone, its body read as it comes.
//
// For each: time to the first byte at the delegate (or reader), throughput, and the peak resident
// memory added over the phase (the kernel's high-water mark, reset before each phase through
// /proc/self/clear_refs). The last lines read `streaming-ratio NAME R`.

struct Settings {
    var mib = 1024
    var rounds = 3
    var ahcMiB = 64
    var inner = "ahc"
    var hits = 1
    var slowDelegateMicros = 20
    var missOnly = false
    var missCacheControl = "max-age=600"

    init(_ arguments: [String]) {
        var arguments = arguments.makeIterator()
        while let argument = arguments.next() {
            switch argument {
            case "--mib": mib = arguments.next().flatMap(Int.init) ?? mib
            case "--rounds": rounds = arguments.next().flatMap(Int.init) ?? rounds
            case "--ahc-mib": ahcMiB = arguments.next().flatMap(Int.init) ?? ahcMiB
            case "--inner": inner = arguments.next() ?? inner
            case "--hits": hits = arguments.next().flatMap(Int.init) ?? hits
            case "--slow-delegate-us": slowDelegateMicros = arguments.next().flatMap(Int.init) ?? slowDelegateMicros
            case "--miss-only": missOnly = true
            case "--miss-cc": missCacheControl = arguments.next() ?? missCacheControl
            default:
                print(
                    "usage: StreamingDownload [--mib N] [--rounds N] [--ahc-mib N] [--inner ahc|urlsession] [--hits N] [--slow-delegate-us N] [--miss-only [--miss-cc CACHE-CONTROL]]"
                )
                exit(2)
            }
        }
    }
}

/// One phase's figures.
struct Measure {
    var firstByte: Double
    var seconds: Double
    var bytes: Int
    var peakAddedMiB: Double
    var note = ""

    var throughput: Double { Double(bytes) / seconds / 1_048_576 }

    func line(_ name: String) -> String {
        String(
            format: "%-14@ first byte %8.2f ms  %8.1f MiB/s  %6.2f s  peak +%6.1f MiB  %@",
            name as NSString, firstByte * 1000, throughput, seconds, peakAddedMiB, note as NSString)
    }
}

/// The process's resident memory now and its high-water mark since the last reset, in KiB.
enum Resident {
    static func read(_ field: String) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "0") ?? 0
        }
        return 0
    }

    /// Resets the high-water mark to the current resident size (Linux 4.0+).
    static func resetPeak() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    /// glibc's `malloc_trim` (not in Swift's Glibc module), where there is one.
    private typealias Trim = @convention(c) (Int) -> Int32
    private static let trim = dlsym(dlopen(nil, RTLD_NOW), "malloc_trim").map { unsafeBitCast($0, to: Trim.self) }

    /// Runs `body`, giving the peak resident memory it added, in MiB.
    static func peakAdded(_ body: () async throws -> Void) async rethrows -> Double {
        // Memory an earlier phase freed goes back to the kernel first: else it stays resident in
        // malloc's arenas, the baseline starts high, and this phase's peak hides under it.
        _ = trim?(0)
        resetPeak()
        let baseline = read("VmRSS")
        try await body()
        return max(0, read("VmHWM") - baseline) / 1024
    }
}

/// A data delegate that counts bytes and notes when the first and last arrive.
final class Download: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// Time the delegate takes per chunk, in µs (a consumer slower than the network).
    let delayMicros: UInt32
    private let lock = NSLock()
    private var start = ContinuousClock.now
    private var first: ContinuousClock.Instant?
    private var received = 0
    private var done: CheckedContinuation<(firstByte: Double, seconds: Double, bytes: Int, failure: String), Never>?

    func run(_ session: URLSession, _ url: URL) async -> (firstByte: Double, seconds: Double, bytes: Int, failure: String) {
        await withCheckedContinuation { continuation in
            lock.lock()
            start = .now
            first = nil
            received = 0
            done = continuation
            lock.unlock()
            session.dataTask(with: url).resume()
        }
    }

    init(delayMicros: UInt32 = 0) {
        self.delayMicros = delayMicros
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if delayMicros > 0 { usleep(delayMicros) }
        lock.lock()
        if first == nil { first = .now }
        received += data.count
        lock.unlock()
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        lock.lock()
        let now = ContinuousClock.now
        let answer = ((first ?? now) - start, now - start, received, error.map { "\($0)" } ?? "")
        let continuation = done
        done = nil
        lock.unlock()
        continuation?.resume(returning: (answer.0.seconds, answer.1.seconds, answer.2, answer.3))
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}

final class CacheRoutes: RecallURLProtocol {
    static let mine = URLProtocolRoutes()
    override class var routes: URLProtocolRoutes { mine }
}

/// The routes of the session over the cache with DiskStorage's default limits.
final class SmallCacheRoutes: RecallURLProtocol {
    static let mine = URLProtocolRoutes()
    override class var routes: URLProtocolRoutes { mine }
}

/// The floor of any URLProtocol on this platform: reads a file (the `file` query item) with
/// `pread`s of `pieceSize` bytes and hands each to the client at once, on the loading thread —
/// no pipeline, no cache, no hop between threads but the session's own.
final class FloorProtocol: URLProtocol {
    static let pieceSize = 256 << 10

    override class func canInit(with request: URLRequest) -> Bool { request.url?.host == "floor.invalid" }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        guard let url = request.url, let client,
            let path = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first(where: { $0.name == "file" })?.value
        else { return }
        let descriptor = open(path, O_RDONLY)
        defer { close(descriptor) }
        var info = stat()
        fstat(descriptor, &info)
        let size = Int(info.st_size)
        client.urlProtocol(
            self,
            didReceive: HTTPURLResponse(
                url: url, statusCode: 200, httpVersion: "HTTP/1.1",
                headerFields: ["Content-Length": "\(size)"])!,
            cacheStoragePolicy: .notAllowed)
        var offset = 0
        while offset < size {
            let count = min(Self.pieceSize, size - offset)
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 16)
            let read = pread(descriptor, buffer, count, off_t(offset))
            guard read > 0 else { buffer.deallocate(); break }
            offset += read
            client.urlProtocol(self, didLoad: Data(bytesNoCopy: buffer, count: read, deallocator: .custom { pointer, _ in pointer.deallocate() }))
        }
        client.urlProtocolDidFinishLoading(self)
    }

    override func stopLoading() {}
}

/// The floor of a miss through any URLProtocol that fetches with URLSession here: it forwards the
/// request (its host `forward.invalid` replaced by the `to` query item's) to a plain inner session
/// and hands each of that session's callbacks to the client on the loading thread, taken with
/// libdispatch's `dispatch_get_current_queue` — the client's calls go there (corelibs' client
/// methods synchronize with the session's work queue, where the inner session's callbacks run too:
/// a call from one of them would wait for itself) — without Recall.
final class ForwardProtocol: URLProtocol {
    private typealias CurrentQueue = @convention(c) () -> OpaquePointer?
    private typealias Retain = @convention(c) (OpaquePointer) -> Void
    private typealias AsyncF = @convention(c) (OpaquePointer, UnsafeMutableRawPointer?, @convention(c) (UnsafeMutableRawPointer?) -> Void) -> Void
    nonisolated(unsafe) private static let library = dlopen(nil, RTLD_NOW)
    private static let current = unsafeBitCast(dlsym(library, "dispatch_get_current_queue"), to: CurrentQueue.self)
    private static let retain = unsafeBitCast(dlsym(library, "dispatch_retain"), to: Retain.self)
    private static let release = unsafeBitCast(dlsym(library, "dispatch_release"), to: Retain.self)
    private static let asyncF = unsafeBitCast(dlsym(library, "dispatch_async_f"), to: AsyncF.self)
    /// The inner session, made before any load (making one on the work queue would wait for itself).
    static let inner = URLSession(configuration: .ephemeral, delegate: InnerDelegate.shared, delegateQueue: nil)

    private var loading: OpaquePointer?
    private var innerTask: URLSessionDataTask?

    override class func canInit(with request: URLRequest) -> Bool { request.url?.host == "forward.invalid" }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        loading = Self.current()
        if let loading { Self.retain(loading) }
        guard let url = request.url, let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let to = components.queryItems?.first(where: { $0.name == "to" })?.value, let target = URL(string: to)
        else { return }
        // (Off the work queue: making a task synchronizes with it.)
        let load = UncheckedLoad(load: self)
        DispatchQueue.global().async {
            let task = Self.inner.dataTask(with: target)
            InnerDelegate.shared.register(task.taskIdentifier, load.load)
            load.load.innerTask = task
            task.resume()
        }
    }

    private struct UncheckedLoad: @unchecked Sendable { let load: ForwardProtocol }

    override func stopLoading() { innerTask?.cancel() }

    /// Runs `body` on the loading thread.
    func deliver(_ body: @escaping () -> Void) {
        guard let loading else { return body() }
        let box = Unmanaged.passRetained(Delivery(body)).toOpaque()
        Self.asyncF(loading, box) { raw in Unmanaged<Delivery>.fromOpaque(raw!).takeRetainedValue().body() }
    }

    func finish() {
        if let loading { Self.release(loading) }
        loading = nil
    }

    private final class Delivery {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// The inner session's delegate: hands each callback to its protocol's client.
    final class InnerDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        static let shared = InnerDelegate()
        private let lock = NSLock()
        private var loads: [Int: ForwardProtocol] = [:]

        func register(_ id: Int, _ load: ForwardProtocol) {
            lock.lock()
            loads[id] = load
            lock.unlock()
        }

        private func load(_ id: Int, removing: Bool = false) -> ForwardProtocol? {
            lock.lock()
            defer { lock.unlock() }
            return removing ? loads.removeValue(forKey: id) : loads[id]
        }

        func urlSession(
            _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
            completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
        ) {
            if let load = load(dataTask.taskIdentifier) {
                load.deliver { load.client?.urlProtocol(load, didReceive: response, cacheStoragePolicy: .notAllowed) }
            }
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            guard let load = load(dataTask.taskIdentifier) else { return }
            load.deliver { load.client?.urlProtocol(load, didLoad: data) }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            guard let load = load(task.taskIdentifier, removing: true) else { return }
            load.deliver {
                if let error { load.client?.urlProtocol(load, didFailWithError: error) } else { load.client?.urlProtocolDidFinishLoading(load) }
                load.finish()
            }
        }
    }
}

let settings = Settings(Array(CommandLine.arguments.dropFirst()))
let size = settings.mib << 20
let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Tests/RecallTests/Support/origin_server.py")
let origin = try LoopbackOrigin(script: script)
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recall-streaming-\(UUID().uuidString.prefix(8))")
let disk = try DiskStorage(directory: directory, byteLimit: 4 << 30)  // (room for the body: it is written in pieces, never held whole)
let cache = HTTPCache(storage: disk)
let innerTransport: any Transport = settings.inner == "urlsession" ? URLSessionTransport() : AsyncHTTPClientTransport(client: .shared)
let pipeline = Pipeline(transport: innerTransport, hooks: [cache])

// The cases the cache does not store, through the same session shape: `no-store` through the
// cache above, and a `max-age` body over a DiskStorage with its default limits (256 MiB: refused
// at its head, as the issue's new user met it).
let smallDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("recall-streaming-small-\(UUID().uuidString.prefix(8))")
let smallPipeline = Pipeline(
    transport: settings.inner == "urlsession" ? URLSessionTransport() : AsyncHTTPClientTransport(client: .shared),
    hooks: [HTTPCache(storage: try DiskStorage(directory: smallDirectory))])
let smallConfiguration = URLSessionConfiguration.ephemeral
try smallConfiguration.sendThroughRecall(smallPipeline, protocolClass: SmallCacheRoutes.self)
let smallDelegate = Download()
let small = URLSession(configuration: smallConfiguration, delegate: smallDelegate, delegateQueue: nil)

let plainDelegate = Download()
let plain = URLSession(configuration: .ephemeral, delegate: plainDelegate, delegateQueue: nil)
let recallDelegate = Download()
let configuration = URLSessionConfiguration.ephemeral
try configuration.sendThroughRecall(pipeline, protocolClass: CacheRoutes.self)
let recall = URLSession(configuration: configuration, delegate: recallDelegate, delegateQueue: nil)
let slowDelegate = Download(delayMicros: UInt32(max(0, settings.slowDelegateMicros)))
let slowPlain = URLSession(configuration: .ephemeral, delegate: slowDelegate, delegateQueue: nil)
_ = ForwardProtocol.inner
let forwardDelegate = Download()
let forwardConfiguration = URLSessionConfiguration.ephemeral
forwardConfiguration.protocolClasses = [ForwardProtocol.self]
let forward = URLSession(configuration: forwardConfiguration, delegate: forwardDelegate, delegateQueue: nil)
let floorDelegate = Download()
let floorConfiguration = URLSessionConfiguration.ephemeral
floorConfiguration.protocolClasses = [FloorProtocol.self]
let floor = URLSession(configuration: floorConfiguration, delegate: floorDelegate, delegateQueue: nil)

/// One download through `session`, begun from rest: the disk's dirty pages written back (`sync`: the
/// kernel writes the last round's gigabyte back in its own time), and the sessions' work queue idle
/// (on Linux every session's work runs on one queue, and a session goes on tidying up a finished
/// gigabyte there after its delegate heard the end: the next `resume()` reached `startLoading` 3–15
/// ms later instead of 0.3 ms, in whichever phase came next).
func phase(_ session: URLSession, _ delegate: Download, _ url: URL) async -> Measure {
    sync()
    await withCheckedContinuation { (idle: CheckedContinuation<Void, Never>) in session.getAllTasks { _ in idle.resume() } }
    var result: (firstByte: Double, seconds: Double, bytes: Int, failure: String) = (0, 0, 0, "")
    let peak = await Resident.peakAdded { result = await delegate.run(session, url) }
    return Measure(
        firstByte: result.firstByte, seconds: result.seconds, bytes: result.bytes, peakAddedMiB: peak,
        note: result.failure.isEmpty ? "" : "failed: \(result.failure)")
}

/// Writes `size` bytes to a new file beside the cache's in 1 MiB writes, then `fsync`s it: the
/// disk's sustained write rate, which may pace a stored miss.
func diskWrite() -> Measure {
    sync()
    let path = directory.appendingPathComponent("disk-write-\(UUID().uuidString.prefix(8))").path
    defer { unlink(path) }
    let piece = [UInt8](repeating: 7, count: 1 << 20)
    let start = ContinuousClock.now
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    var total = 0
    while total < size {
        let count = piece.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if count <= 0 { break }
        total += count
    }
    fsync(descriptor)
    close(descriptor)
    return Measure(firstByte: 0, seconds: (ContinuousClock.now - start).seconds, bytes: total, peakAddedMiB: 0)
}

/// Reads `path` sequentially in 64 KiB reads, as `cat` does.
func catFile(_ path: String) -> Measure {
    let start = ContinuousClock.now
    let descriptor = open(path, O_RDONLY)
    defer { close(descriptor) }
    var buffer = [UInt8](repeating: 0, count: 64 << 10)
    var total = 0
    var first: ContinuousClock.Instant?
    while true {
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count <= 0 { break }
        if first == nil { first = .now }
        total += count
    }
    let now = ContinuousClock.now
    return Measure(firstByte: ((first ?? now) - start).seconds, seconds: (now - start).seconds, bytes: total, peakAddedMiB: 0)
}

/// Sends `url` through the pipeline and reads the answer's body as it comes (no URLSession).
func pipelineRead(_ url: URL) async -> Measure {
    var first = 0.0, bytes = 0, failure = ""
    let start = ContinuousClock.now
    let peak = await Resident.peakAdded {
        do {
            let response = try await pipeline.send(URLRequest(url: url))
            for try await chunk in response.body {
                if bytes == 0 { first = (ContinuousClock.now - start).seconds }
                bytes += chunk.count
            }
        } catch {
            failure = "failed: \(error)"
        }
    }
    return Measure(firstByte: first, seconds: (ContinuousClock.now - start).seconds, bytes: bytes, peakAddedMiB: peak, note: failure)
}

/// The CPU time this process has used, user and system, in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
    return user + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}

print(
    "StreamingDownload: \(settings.mib) MiB from the loopback origin, \(settings.rounds) rounds, inner transport \(settings.inner); AHC \(settings.ahcMiB) MiB")
var plains: [Measure] = [], misses: [Measure] = [], agains: [Measure] = [], cats: [Measure] = []
var floors: [Measure] = [], pipelineHits: [Measure] = [], forwards: [Measure] = [], slowPlains: [Measure] = []
var disks: [Measure] = [], noStores: [Measure] = [], overLimits: [Measure] = []
for round in 1...settings.rounds {
    let url = origin.url("/large-\(round)", [("stream", "\(size)"), ("cc", settings.missOnly ? settings.missCacheControl : "max-age=600")])
    let bare = await phase(plain, plainDelegate, url)
    print(bare.line("plain"))
    plains.append(bare)
    if !settings.missOnly {
        var forwarded = URLComponents(string: "http://forward.invalid/")!
        forwarded.queryItems = [URLQueryItem(name: "to", value: origin.url("/forward-\(round)", [("stream", "\(size)")]).absoluteString)]
        let floorMiss = await phase(forward, forwardDelegate, forwarded.url!)
        print(floorMiss.line("forward floor"))
        forwards.append(floorMiss)
    }
    let cpu = processCPUSeconds()
    var miss = await phase(recall, recallDelegate, url)
    miss.note += String(format: "%.2f CPU-s, ", processCPUSeconds() - cpu)
    await disk.flush()
    miss.note += cache.statistics.stores > round - 1 ? "stored" : "not stored"
    print(miss.line("recall miss"))
    misses.append(miss)
    if settings.missOnly {
        let written = diskWrite()
        print(written.line("disk write"))
        disks.append(written)
        continue
    }
    var hit = false
    for _ in 1...max(1, settings.hits) {
        let hitsBefore = cache.statistics.hits
        var again = await phase(recall, recallDelegate, url)
        hit = cache.statistics.hits > hitsBefore
        again.note += hit ? "a hit" : "a miss again"
        print(again.line("recall again"))
        agains.append(again)
    }
    let sizes = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).map { name -> (String, Int) in
        let path = directory.appendingPathComponent(name).path
        return (path, ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0)
    }
    if hit, let file = sizes.max(by: { $0.1 < $1.1 })?.0 {
        let cat = catFile(file)
        print(cat.line("cat"))
        cats.append(cat)
        var fileURL = URLComponents(string: "http://floor.invalid/")!
        fileURL.queryItems = [URLQueryItem(name: "file", value: file)]
        let bare = await phase(floor, floorDelegate, fileURL.url!)
        print(bare.line("protocol floor"))
        floors.append(bare)
        let direct = await pipelineRead(url)
        print(direct.line("pipeline hit"))
        pipelineHits.append(direct)
    }
    let noStore = await phase(recall, recallDelegate, origin.url("/no-store-\(round)", [("stream", "\(size)"), ("cc", "no-store")]))
    print(noStore.line("recall no-store"))
    noStores.append(noStore)
    let overLimit = await phase(small, smallDelegate, origin.url("/over-limit-\(round)", [("stream", "\(size)"), ("cc", "max-age=600")]))
    print(overLimit.line("recall over byteLimit"))
    overLimits.append(overLimit)
    let written = diskWrite()
    print(written.line("disk write"))
    disks.append(written)
    let slow = await phase(slowPlain, slowDelegate, origin.url("/slow-\(round)", [("stream", "\(size)")]))
    print(slow.line("plain, slow"))
    slowPlains.append(slow)
}

let plainFirst = median(plains.map(\.firstByte)), missFirst = median(misses.map(\.firstByte))
print(String(format: "streaming-ratio miss-first-byte-added-ms %.2f", (missFirst - plainFirst) * 1000))
print(String(format: "streaming-ratio miss-throughput %.3f", median(misses.map(\.throughput)) / median(plains.map(\.throughput))))
print(String(format: "streaming-ratio miss-peak-added-mib %.1f", median(misses.map(\.peakAddedMiB))))
let diskRate = median(disks.map(\.throughput))
print(String(format: "streaming-ratio disk-write-of-plain %.3f", diskRate / median(plains.map(\.throughput))))
print(String(format: "streaming-ratio miss-throughput-of-bound %.3f", median(misses.map(\.throughput)) / min(diskRate, median(plains.map(\.throughput)))))
/// Removes the caches' directories — gigabytes a run — before the tool ends. (Top-level `defer`s
/// did it before and left 70 GB behind over a day's runs: `exit` skips them.)
func removeCaches() {
    try? FileManager.default.removeItem(at: directory)
    try? FileManager.default.removeItem(at: smallDirectory)
}

if settings.missOnly {
    removeCaches()
    exit(0)
}

// AsyncHTTPClient: a body larger than any cap of the past, streamed through a cached pipeline.
let ahcSize = settings.ahcMiB << 20
let ahcPipeline = Pipeline(transport: AsyncHTTPClientTransport(client: .shared), hooks: [HTTPCache()])
var ahcFirst = 0.0, ahcBytes = 0, ahcFailure = ""
let ahcStart = ContinuousClock.now
let ahcPeak = await Resident.peakAdded {
    do {
        let response = try await ahcPipeline.send(URLRequest(url: origin.url("/ahc", [("stream", "\(ahcSize)"), ("cc", "max-age=600")])))
        for try await chunk in response.body {
            if ahcBytes == 0 { ahcFirst = (ContinuousClock.now - ahcStart).seconds }
            ahcBytes += chunk.count
        }
    } catch {
        ahcFailure = "failed: \(error)"
    }
}
let ahc = Measure(firstByte: ahcFirst, seconds: (ContinuousClock.now - ahcStart).seconds, bytes: ahcBytes, peakAddedMiB: ahcPeak, note: ahcFailure)
print(ahc.line("ahc"))

for (name, measures) in [("no-store", noStores), ("over-limit", overLimits)] {
    print(String(format: "streaming-ratio \(name)-first-byte-added-ms %.2f", (median(measures.map(\.firstByte)) - plainFirst) * 1000))
    print(String(format: "streaming-ratio \(name)-throughput %.3f", median(measures.map(\.throughput)) / median(plains.map(\.throughput))))
    print(String(format: "streaming-ratio \(name)-peak-added-mib %.1f", median(measures.map(\.peakAddedMiB))))
}
print(String(format: "streaming-ratio plain-slow-delegate-peak-added-mib %.1f", median(slowPlains.map(\.peakAddedMiB))))
print(String(format: "streaming-ratio forward-floor-first-byte-added-ms %.2f", (median(forwards.map(\.firstByte)) - plainFirst) * 1000))
print(String(format: "streaming-ratio forward-floor-throughput %.3f", median(forwards.map(\.throughput)) / median(plains.map(\.throughput))))
print(String(format: "streaming-ratio forward-floor-peak-added-mib %.1f", median(forwards.map(\.peakAddedMiB))))
print(String(format: "streaming-ratio miss-first-byte-over-forward-floor-ms %.2f", (missFirst - median(forwards.map(\.firstByte))) * 1000))
if !cats.isEmpty {
    print(String(format: "streaming-ratio hit-first-byte-ms %.2f", median(agains.map(\.firstByte)) * 1000))
    print(String(format: "streaming-ratio hit-throughput %.3f", median(agains.map(\.throughput)) / median(cats.map(\.throughput))))
    print(String(format: "streaming-ratio hit-peak-added-mib %.1f", median(agains.map(\.peakAddedMiB))))
    print(String(format: "streaming-ratio protocol-floor-throughput %.3f", median(floors.map(\.throughput)) / median(cats.map(\.throughput))))
    print(String(format: "streaming-ratio hit-throughput-of-floor %.3f", median(agains.map(\.throughput)) / median(floors.map(\.throughput))))
    print(String(format: "streaming-ratio pipeline-hit-throughput %.3f", median(pipelineHits.map(\.throughput)) / median(cats.map(\.throughput))))
} else {
    print("streaming-ratio hit-throughput n/a (not stored)")
}
print(String(format: "streaming-ratio ahc-peak-added-mib %.1f", ahc.peakAddedMiB))
removeCaches()
