import Foundation
import Recall
import RecallServices
import Synchronization
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `recall demo`: a scripted workload through a full pipeline against ``DemoService``.
enum DemoCommand {
    struct Step {
        let path: String
        let note: String
        var concurrency = 1
    }

    static let workload: [Step] = [
        Step(path: "/items/1", note: "first fetch: a miss, stored (max-age=30)"),
        Step(path: "/items/1", note: "fresh: answered from cache"),
        Step(path: "/items/1?utm_source=newsletter", note: "utm_* ignored by the key: same entry"),
        Step(path: "/items/2", note: "another item: a miss"),
        Step(path: "/prices", note: "no-cache: stored, but every use revalidates"),
        Step(path: "/prices", note: "revalidated with If-None-Match, 304 merged"),
        Step(path: "/flaky", note: "503 twice, Retry-After: 0, then 200"),
        Step(path: "/news", note: "stored already stale (max-age=1, stale-if-error=300)"),
        Step(path: "/news", note: "origin 500: stale-if-error serves the stored copy"),
        Step(path: "/down", note: "always 503: backoff, then give up"),
        Step(path: "/items/3", note: "burst of 8 concurrent misses: coalesced", concurrency: 8),
        Step(path: "/items/2", note: "fresh: answered from cache")
    ]

    static func run(_ arguments: [String]) async -> Int32 {
        var seed: UInt64 = 1
        var quiet = false
        var cursor = ArgumentCursor(arguments)
        while let argument = cursor.next() {
            switch argument {
            case "-h", "--help":
                print(Usage.demo)
                return 0
            case "--quiet":
                quiet = true
            case "--seed":
                guard let value = cursor.value().flatMap(UInt64.init) else {
                    printError("recall demo: --seed needs a whole number")
                    return 2
                }
                seed = value
            default:
                printError("recall demo: unknown option '\(argument)'\n\n\(Usage.demo)")
                return 2
            }
        }
        do {
            try await demo(seed: seed, quiet: quiet)
            return 0
        } catch {
            printError("recall demo failed: \(error)")
            return 1
        }
    }

    static func demo(seed: UInt64, quiet: Bool) async throws {
        let service = DemoService()
        let router = ServiceRouter()
        try await router.register(service, as: "catalog")
        var configuration = CacheConfiguration()
        configuration.keyPolicy.ignoredQueryParameters = ["utm_*"]
        let cache = HTTPCache(storage: MemoryStorage(), configuration: configuration)
        let pipeline = Pipeline(
            transport: router,
            hooks: [cache],
            retrierFactory: .exponentialBackoff(
                base: .milliseconds(20), cap: .milliseconds(200), maxAttempts: 3,
                random: SeededRandomSource(seed: seed))
        )
        let clock = ContinuousClock()
        let start = clock.now
        var rows: [[String]] = []
        var retries = 0
        for (number, step) in workload.enumerated() {
            let url = router.url(for: "catalog").appendingPathComponent(String(step.path.split(separator: "?")[0]))
            var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
            if let query = step.path.split(separator: "?").dropFirst().first { components.percentEncodedQuery = String(query) }
            let request = URLRequest(url: components.url!)
            let outcomes = try await withThrowingTaskGroup(of: (RecallResponse, RecallContext).self) { group in
                for _ in 0..<step.concurrency {
                    group.addTask {
                        let context = RecallContext(originalRequest: request)
                        return (try await pipeline.send(request, context: context), context)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let statuses = Set(outcomes.map { $0.0.status }).sorted().map(String.init).joined(separator: "/")
            let sources = Dictionary(grouping: outcomes, by: { outcome(of: $0.0) }).map {
                "\($0.value.count == 1 && step.concurrency == 1 ? "" : "\($0.value.count)× ")\($0.key)"
            }.sorted().joined(separator: ", ")
            let attempts = outcomes.map { $0.1.attempts }.reduce(0, +)
            retries += outcomes.map { $0.1.retries }.reduce(0, +)
            rows.append([
                "\(number + 1)", "GET \(step.path)" + (step.concurrency > 1 ? " ×\(step.concurrency)" : ""), statuses, sources,
                "\(attempts)", step.note
            ])
        }
        // The same service through the typed API: an OutEndpoint decoded from the cached entry.
        let hitsBefore = cache.statistics.hits
        let originBefore = service.totalHits
        let item = try await DemoAPI.GetItem(id: 2).call(on: DemoAPI(router: router, cache: cache))
        rows.append([
            "\(workload.count + 1)", "GetItem(id: 2) (typed endpoint)", "200",
            cache.statistics.hits > hitsBefore ? "hit" : "network", "\(service.totalHits - originBefore)",
            "decoded Item(name: \"\(item.name)\") from the same cache"
        ])
        let elapsed = start.duration(to: clock.now)
        let statistics = cache.statistics
        let requests = workload.reduce(0) { $0 + $1.concurrency } + 1
        if !quiet {
            print("recall demo — \(requests) requests through Pipeline(HTTPCache + exponential backoff) to an in-process service\n")
            print(table(header: ["#", "request", "status", "outcome", "attempts", "what happened"], rows: rows))
            print("")
        }
        let ratio = String(format: "%.1f", statistics.hitRatio * 100)
        print(
            """
            summary
              requests            \(requests)
              reached the origin  \(service.totalHits)
              cache               \(statistics.hits) hits, \(statistics.misses) misses, \(statistics.revalidated) revalidated, \(statistics.stale) stale, \(statistics.coalesced) coalesced
              hit ratio           \(ratio) %
              retries             \(retries)
              elapsed             \(String(format: "%.1f", Double(elapsed.components.attoseconds) * 1e-15 + Double(elapsed.components.seconds) * 1000)) ms
            """)
    }

    static func outcome(of response: RecallResponse) -> String {
        switch response.source {
        case .network: "network"
        case .cache: "hit"
        case .revalidated: "revalidated"
        case .stale: "stale"
        }
    }

    static func table(header: [String], rows: [[String]]) -> String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.enumerated().map { index, row in
            let line = row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
            return index == 0 ? line + "\n" + widths.map { String(repeating: "─", count: $0) }.joined(separator: "  ") : line
        }.joined(separator: "\n")
    }
}

func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
