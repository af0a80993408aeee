import Foundation
@testable import Recall
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The cache's decisions on values: no storage, no pipeline, no clock but a number. Each table
/// row is one rule of docs/caching.md; the end-to-end suites show the same rules through a pipeline.
@Suite("CacheStrategy: every decision on values")
struct CacheStrategyTests {
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    static let url = URL(string: "https://origin.test/r")!
    static let strategy = CacheStrategy(
        rules: CacheRules(),
        partitioner: CachePartitioner(
            secret: Array(repeating: 7, count: 32),
            configuration: CacheConfiguration()))

    static func request(
        _ method: String = "GET", _ fields: [String: String] = [:],
        policy: URLRequest.CachePolicy = .useProtocolCachePolicy, url: URL = url
    ) -> URLRequest {
        var request = URLRequest(url: url, cachePolicy: policy)
        request.httpMethod = method
        for (name, value) in fields { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    /// A response stored at `t0` (its `Date`), with `fields`.
    static func entry(_ fields: [String: String], status: Int = 200, body: String = "0123456789") -> CacheEntry {
        var headers = HeaderFields(fields)
        headers["Date"] = HTTPDate.format(t0)
        return CacheEntry(status: status, headers: headers, body: Data(body.utf8), url: nil, requestTime: t0, responseTime: t0)
    }

    // MARK: Route

    struct RouteRow: Sendable, CustomTestStringConvertible {
        var rule: String
        var method = "GET"
        var fields: [String: String] = [:]
        var route: CacheStrategy.Route
        var testDescription: String { rule }
    }

    static let routes: [RouteRow] = [
        RouteRow(rule: "GET is looked up", route: .lookup),
        RouteRow(rule: "HEAD is looked up (answered from a stored GET)", method: "HEAD", route: .lookup),
        RouteRow(rule: "POST invalidates", method: "POST", route: .invalidate),
        RouteRow(rule: "PUT invalidates", method: "PUT", route: .invalidate),
        RouteRow(rule: "DELETE invalidates", method: "DELETE", route: .invalidate),
        RouteRow(rule: "PATCH invalidates", method: "PATCH", route: .invalidate),
        RouteRow(rule: "a lower-case method is the same method", method: "post", route: .invalidate),
        RouteRow(rule: "an extension method is unsafe: it invalidates", method: "PROPFIND", route: .invalidate),
        RouteRow(rule: "OPTIONS is safe and not cached: bypass", method: "OPTIONS", route: .bypass),
        RouteRow(rule: "a caller's If-None-Match is the caller's conditional request", fields: ["If-None-Match": "\"a\""], route: .callerConditional),
        RouteRow(
            rule: "a caller's If-Modified-Since likewise", fields: ["If-Modified-Since": "Tue, 14 Nov 2023 22:13:20 GMT"],
            route: .callerConditional),
        RouteRow(
            rule: "one byte range is answered from a stored full response", fields: ["Range": "bytes=2-5"],
            route: .range(ByteRange(rangeField: "bytes=2-5")!)),
        RouteRow(rule: "several ranges go to the origin", fields: ["Range": "bytes=0-1,4-5"], route: .bypass),
        RouteRow(rule: "If-Range with Range goes to the origin", fields: ["Range": "bytes=0-1", "If-Range": "\"a\""], route: .bypass),
        RouteRow(rule: "a range of a HEAD goes to the origin", method: "HEAD", fields: ["Range": "bytes=0-1"], route: .bypass),
        RouteRow(rule: "another range unit goes to the origin", fields: ["Range": "items=0-1"], route: .bypass)
    ]

    @Test("route: from the method and fields alone", arguments: routes)
    func route(row: RouteRow) {
        let request = Self.request(row.method, row.fields)
        #expect(Self.strategy.route(request, RequestFacts(request)) == row.route)
    }

    // MARK: Before the network

    /// What ``CacheStrategy/before`` decided, in a form a table can state.
    enum Outcome: Equatable, Sendable {
        case fresh, stale(StaleReason), refresh(conditional: Bool), validate(String), fetch(keepsStored: Bool), gatewayTimeout, bypass
        case partial(status: Int, contentRange: String, body: String)
        /// Sent to the origin for a range: the `Range` and `If-Range` that went out, and whether a
        /// stored response (full or pieces) was kept to freshen or complete.
        case range(sent: String?, ifRange: String?, keepsStored: Bool)
        /// A plain `GET` sent for the bytes stored pieces lack: the `Range` and `If-Range` that went out.
        case complete(sent: String?, ifRange: String?)

        init(_ before: CacheStrategy.Before) {
            switch before {
            case .serve(let response, nil) where response.status == 206 || response.status == 416:
                self = .partial(
                    status: response.status, contentRange: response.headers["Content-Range"] ?? "",
                    body: String(decoding: response.data, as: UTF8.self))
            case .serve(_, nil): self = .fresh
            case .serve(_, let reason?): self = .stale(reason)
            case .serveAndRefresh(_, _, let mode): self = .refresh(conditional: mode.isValidating)
            case .send(let request, .validating):
                self = .validate(
                    ["If-None-Match", "If-Modified-Since"].compactMap { name in
                        request.value(forHTTPHeaderField: name).map { "\(name): \($0)" }
                    }.joined(separator: "; "))
            case .send(let request, .ranging(_, let stored)):
                self = .range(
                    sent: request.value(forHTTPHeaderField: "Range"), ifRange: request.value(forHTTPHeaderField: "If-Range"),
                    keepsStored: stored != nil)
            case .send(let request, .completing):
                self = .complete(sent: request.value(forHTTPHeaderField: "Range"), ifRange: request.value(forHTTPHeaderField: "If-Range"))
            case .send(_, let mode): self = .fetch(keepsStored: mode.stored != nil)
            case .gatewayTimeout: self = .gatewayTimeout
            case .bypass: self = .bypass
            }
        }
    }

    struct BeforeRow: Sendable, CustomTestStringConvertible {
        var rule: String
        var fields: [String: String] = [:]
        var method = "GET"
        var policy: URLRequest.CachePolicy = .useProtocolCachePolicy
        /// The stored response's fields; `nil`: nothing stored.
        var stored: [String: String]?
        var status = 200
        /// Seconds since the response was stored.
        var age: Double = 0
        var outcome: Outcome
        var testDescription: String { rule }
    }

    static let fresh = ["Cache-Control": "max-age=100", "ETag": "\"v1\""]

    static let befores: [BeforeRow] = [
        BeforeRow(rule: "nothing stored: fetch", stored: nil, outcome: .fetch(keepsStored: false)),
        BeforeRow(
            rule: "nothing stored and only-if-cached: 504", fields: ["Cache-Control": "only-if-cached"], stored: nil,
            outcome: .gatewayTimeout),
        BeforeRow(
            rule: "nothing stored and .returnCacheDataDontLoad: 504", policy: .returnCacheDataDontLoad, stored: nil,
            outcome: .gatewayTimeout),
        BeforeRow(rule: "fresh (max-age): served", stored: fresh, age: 50, outcome: .fresh),
        BeforeRow(rule: "HEAD is answered from a fresh stored GET", method: "HEAD", stored: fresh, age: 50, outcome: .fresh),
        BeforeRow(rule: "Expires − Date gives the lifetime", stored: ["Expires": HTTPDate.format(t0 + 60)], age: 30, outcome: .fresh),
        BeforeRow(rule: "an invalid Expires means stale", stored: ["Expires": "0"], age: 1, outcome: .fetch(keepsStored: true)),
        BeforeRow(
            rule: "an Expires that is not an IMF-fixdate is invalid: stale, no heuristic either",
            stored: ["Expires": "Thu, 01-Jan-2099 00:00:00 GMT", "Last-Modified": HTTPDate.format(t0 - 86_400)],
            age: 1, outcome: .validate("If-Modified-Since: \(HTTPDate.format(t0 - 86_400))")),
        BeforeRow(
            rule: "heuristic freshness: 10 % of Date − Last-Modified", stored: ["Last-Modified": HTTPDate.format(t0 - 1000)],
            age: 99, outcome: .fresh),
        BeforeRow(
            rule: "heuristic freshness ends", stored: ["Last-Modified": HTTPDate.format(t0 - 1000)], age: 101,
            outcome: .validate("If-Modified-Since: \(HTTPDate.format(t0 - 1000))")),
        BeforeRow(
            rule: "no heuristic freshness for a status not cacheable by default", stored: ["Last-Modified": HTTPDate.format(t0 - 1000)],
            status: 302, age: 1, outcome: .validate("If-Modified-Since: \(HTTPDate.format(t0 - 1000))")),
        BeforeRow(rule: "the stored Age counts", stored: ["Cache-Control": "max-age=100", "Age": "90"], age: 20, outcome: .fetch(keepsStored: true)),
        BeforeRow(rule: "stale with an ETag: validated with If-None-Match", stored: fresh, age: 101, outcome: .validate("If-None-Match: \"v1\"")),
        BeforeRow(
            rule: "an unquoted ETag is sent back quoted", stored: ["Cache-Control": "max-age=1", "ETag": "v1"], age: 5,
            outcome: .validate("If-None-Match: \"v1\"")),
        BeforeRow(
            rule: "stale with both validators: both sent",
            stored: [
                "Cache-Control": "max-age=1", "ETag": "W/\"w\"",
                "Last-Modified": HTTPDate.format(t0)
            ], age: 5,
            outcome: .validate("If-None-Match: W/\"w\"; If-Modified-Since: \(HTTPDate.format(t0))")),
        BeforeRow(
            rule: "stale without validators: fetched, the stored response kept for errors", stored: ["Cache-Control": "max-age=1"],
            age: 5, outcome: .fetch(keepsStored: true)),
        BeforeRow(
            rule: "request no-cache: validate a fresh response", fields: ["Cache-Control": "no-cache"], stored: fresh, age: 1,
            outcome: .validate("If-None-Match: \"v1\"")),
        BeforeRow(
            rule: "Pragma: no-cache without Cache-Control: validate", fields: ["Pragma": "no-cache"], stored: fresh, age: 1,
            outcome: .validate("If-None-Match: \"v1\"")),
        BeforeRow(
            rule: "Pragma is ignored beside Cache-Control", fields: ["Pragma": "no-cache", "Cache-Control": "max-stale=0"],
            stored: fresh, age: 1, outcome: .fresh),
        BeforeRow(
            rule: "request max-age=0: validate", fields: ["Cache-Control": "max-age=0"], stored: fresh, age: 1,
            outcome: .validate("If-None-Match: \"v1\"")),
        BeforeRow(
            rule: "request max-age=N refuses older responses", fields: ["Cache-Control": "max-age=10"], stored: fresh, age: 20,
            outcome: .validate("If-None-Match: \"v1\"")),
        BeforeRow(
            rule: "request min-fresh=N wants N s of freshness left", fields: ["Cache-Control": "min-fresh=60"], stored: fresh, age: 50,
            outcome: .validate("If-None-Match: \"v1\"")),
        BeforeRow(
            rule: "request max-stale: any staleness", fields: ["Cache-Control": "max-stale"], stored: fresh, age: 10_000,
            outcome: .stale(.maxStale)),
        BeforeRow(
            rule: "request max-stale=N: at most N s stale", fields: ["Cache-Control": "max-stale=10"], stored: fresh, age: 120,
            outcome: .validate("If-None-Match: \"v1\"")),
        BeforeRow(
            rule: "must-revalidate beats max-stale", fields: ["Cache-Control": "max-stale"],
            stored: ["Cache-Control": "max-age=1, must-revalidate", "ETag": "\"m\""], age: 5, outcome: .validate("If-None-Match: \"m\"")),
        BeforeRow(
            rule: "response no-cache: validated before every use", stored: ["Cache-Control": "max-age=100, no-cache", "ETag": "\"n\""],
            age: 1, outcome: .validate("If-None-Match: \"n\"")),
        BeforeRow(
            rule: "response no-cache=\"field\": validated before every use",
            stored: ["Cache-Control": "max-age=100, no-cache=\"X-A\"", "ETag": "\"n\""], age: 1, outcome: .validate("If-None-Match: \"n\"")),
        BeforeRow(
            rule: "stale-while-revalidate: served stale, refreshed conditionally",
            stored: ["Cache-Control": "max-age=10, stale-while-revalidate=30", "ETag": "\"s\""], age: 20,
            outcome: .refresh(conditional: true)),
        BeforeRow(
            rule: "stale-while-revalidate without validators: refreshed unconditionally",
            stored: ["Cache-Control": "max-age=10, stale-while-revalidate=30"], age: 20, outcome: .refresh(conditional: false)),
        BeforeRow(
            rule: "past the stale-while-revalidate window: validate",
            stored: ["Cache-Control": "max-age=10, stale-while-revalidate=30", "ETag": "\"s\""], age: 50,
            outcome: .validate("If-None-Match: \"s\"")),
        BeforeRow(
            rule: "only-if-cached with a stale response it may not use: 504", fields: ["Cache-Control": "only-if-cached"],
            stored: fresh, age: 500, outcome: .gatewayTimeout),
        BeforeRow(
            rule: "only-if-cached, max-stale: the stale response", fields: ["Cache-Control": "only-if-cached, max-stale"],
            stored: fresh, age: 500, outcome: .stale(.maxStale)),
        BeforeRow(
            rule: ".returnCacheDataElseLoad: any age", policy: .returnCacheDataElseLoad, stored: fresh, age: 1e6,
            outcome: .stale(.cachePolicy)),
        BeforeRow(
            rule: ".returnCacheDataDontLoad: any age", policy: .returnCacheDataDontLoad, stored: fresh, age: 1e6,
            outcome: .stale(.cachePolicy)),
        BeforeRow(
            rule: ".reloadIgnoringLocalCacheData: fetched, no validators, nothing kept", policy: .reloadIgnoringLocalCacheData,
            stored: fresh, age: 1, outcome: .fetch(keepsStored: false)),
        BeforeRow(
            rule: ".reloadRevalidatingCacheData: validate a fresh response", policy: .reloadRevalidatingCacheData,
            stored: fresh, age: 1, outcome: .validate("If-None-Match: \"v1\"")),
        BeforeRow(
            rule: ".reloadRevalidatingCacheData: not an immutable fresh response", policy: .reloadRevalidatingCacheData,
            stored: ["Cache-Control": "max-age=100, immutable"], age: 1, outcome: .fresh),
        BeforeRow(
            rule: "a status cacheable only with explicit freshness is served while fresh", stored: ["Cache-Control": "max-age=100"],
            status: 302, age: 1, outcome: .fresh)
    ]

    @Test("before: what a looked-up request does with what is stored", arguments: befores)
    func before(row: BeforeRow) {
        let record = row.stored.map { CacheRecord(key: "k", variants: [Self.entry($0, status: row.status)]) }
        let before = Self.strategy.before(
            Self.request(row.method, row.fields, policy: row.policy), record: record, partition: "",
            inScope: [], now: Self.t0 + row.age)
        #expect(Outcome(before) == row.outcome)
    }

    static let ranges: [BeforeRow] = [
        BeforeRow(
            rule: "bytes=a-b of a fresh 200", fields: ["Range": "bytes=2-5"], stored: fresh,
            outcome: .partial(status: 206, contentRange: "bytes 2-5/10", body: "2345")),
        BeforeRow(
            rule: "bytes=a- of a fresh 200", fields: ["Range": "bytes=7-"], stored: fresh,
            outcome: .partial(status: 206, contentRange: "bytes 7-9/10", body: "789")),
        BeforeRow(
            rule: "bytes=-n of a fresh 200", fields: ["Range": "bytes=-3"], stored: fresh,
            outcome: .partial(status: 206, contentRange: "bytes 7-9/10", body: "789")),
        BeforeRow(
            rule: "an end past the length is clamped", fields: ["Range": "bytes=8-100"], stored: fresh,
            outcome: .partial(status: 206, contentRange: "bytes 8-9/10", body: "89")),
        BeforeRow(
            rule: "a range that selects nothing: 416", fields: ["Range": "bytes=50-"], stored: fresh,
            outcome: .partial(status: 416, contentRange: "bytes */10", body: "")),
        BeforeRow(
            rule: "a stale stored response with a strong ETag: the range goes out with If-Range (a 206 confirms it)",
            fields: ["Range": "bytes=0-1"], stored: fresh, age: 500,
            outcome: .range(sent: "bytes=0-1", ifRange: "\"v1\"", keepsStored: true)),
        BeforeRow(
            rule: "a stale stored response with a weak ETag: the range goes out as it is",
            fields: ["Range": "bytes=0-1"], stored: ["Cache-Control": "max-age=100", "ETag": "W/\"v1\""], age: 500,
            outcome: .range(sent: "bytes=0-1", ifRange: nil, keepsStored: false)),
        BeforeRow(
            rule: "a stale-while-revalidate full response: the range is served, the whole refreshed",
            fields: ["Range": "bytes=0-1"], stored: ["Cache-Control": "max-age=100, stale-while-revalidate=100"], age: 150,
            outcome: .refresh(conditional: false)),
        BeforeRow(
            rule: "nothing stored: the range goes out as it is", fields: ["Range": "bytes=0-1"], stored: nil,
            outcome: .range(sent: "bytes=0-1", ifRange: nil, keepsStored: false)),
        BeforeRow(
            rule: "nothing stored, only-if-cached: 504", fields: ["Range": "bytes=0-1", "Cache-Control": "only-if-cached"],
            stored: nil, outcome: .gatewayTimeout),
        BeforeRow(
            rule: "a stored 404 does not answer ranges", fields: ["Range": "bytes=0-1"], stored: fresh, status: 404,
            outcome: .range(sent: "bytes=0-1", ifRange: nil, keepsStored: false))
    ]

    @Test("before a range: 206 or 416 from a usable stored full response, else the origin", arguments: ranges)
    func beforeRange(row: BeforeRow) throws {
        let request = Self.request(row.method, row.fields)
        guard case .range(let range) = Self.strategy.route(request, RequestFacts(request)) else {
            Issue.record("not routed as a range")
            return
        }
        let record = row.stored.map { CacheRecord(key: "k", variants: [Self.entry($0, status: row.status)]) }
        let before = Self.strategy.before(request, range: range, record: record, partition: "", inScope: [], now: Self.t0 + row.age)
        #expect(Outcome(before) == row.outcome)
    }

    // MARK: Records

    /// A stored response of `partition`, varying on `Accept-Language` when `language` is given.
    static func variant(_ tag: String, partition: String, language: String? = nil, status: Int = 200) -> CacheEntry {
        var fields = ["Cache-Control": "max-age=100", "ETag": "\"\(tag)\""]
        if language != nil { fields["Vary"] = "Accept-Language" }
        var entry = entry(fields, status: status)
        entry.partition = partition
        if let language { entry.varyValues = [HeaderFields.Field(name: "accept-language", value: language)] }
        return entry
    }

    /// The entity tags of `entries`, unquoted.
    static func tags(_ entries: [CacheEntry]) -> [String] {
        entries.compactMap { $0.etag?.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
    }

    @Test("records: a store keeps other partitions and this partition's other Vary variants, replaces its own, within maxVariants")
    func recordStoring() {
        let existing = CacheRecord(
            key: "k",
            variants: [
                Self.variant("p-en", partition: "p", language: "en"), Self.variant("p-fr", partition: "p", language: "fr"),
                Self.variant("q", partition: "q")
            ])
        let english = Self.strategy.records.write(storing: Self.variant("p-en-2", partition: "p", language: "en"), key: "k", over: existing, expiring: false)
            .record
        #expect(Self.tags(english.variants) == ["p-en-2", "p-fr", "q"])
        let plain = Self.strategy.records.write(storing: Self.variant("p", partition: "p"), key: "k", over: existing, expiring: false).record
        #expect(Self.tags(plain.variants) == ["p", "q"], "no Vary: it replaces every response of its partition")
        var configuration = CacheConfiguration()
        configuration.maxVariants = 2
        let capped = CacheStrategy(rules: CacheRules(configuration: configuration), partitioner: CachePartitioner(secret: [7], configuration: configuration))
        let kept = capped.records.write(storing: Self.variant("p-de", partition: "p", language: "de"), key: "k", over: existing, expiring: false).record
        #expect(Self.tags(kept.variants) == ["p-de", "p-en"], "the newest first, at most maxVariants")
        #expect(Self.strategy.records.write(storing: Self.variant("new", partition: "p"), key: "k", over: nil, expiring: false).record.variants.count == 1)
        // Over what the lookup found: a write only when it keeps none of it (else the writer reads afresh).
        let alone = Self.strategy.records.write(
            storing: Self.variant("p2", partition: "p"), key: "k", found: CacheRecord(key: "k", variants: [Self.variant("p", partition: "p")]), expiring: true)
        #expect(alone.map { Self.tags($0.record.variants) } == ["p2"])
        #expect(
            Self.strategy.records.write(storing: Self.variant("p2", partition: "p"), key: "k", found: existing, expiring: false) == nil, "keeps q: read afresh")
        #expect(Self.strategy.records.write(storing: Self.variant("p2", partition: "p"), key: "k", found: nil, expiring: false)?.record.variants.count == 1)
    }

    @Test("records: a discard removes only the response of the same partition, Vary values and kind (piece or whole)")
    func recordDiscarding() {
        let record = CacheRecord(
            key: "k",
            variants: [
                Self.variant("p-en", partition: "p", language: "en"), Self.variant("p-fr", partition: "p", language: "fr"),
                Self.variant("q-en", partition: "q", language: "en"), Self.variant("p-en-piece", partition: "p", language: "en", status: 206)
            ])
        let kept = Self.strategy.records.variants(of: record, without: Self.variant("outdated", partition: "p", language: "en"))
        #expect(Self.tags(kept) == ["p-fr", "q-en", "p-en-piece"])
    }

    @Test("records: the caller's 304 freshens the stored response it matches, and only one with a validator")
    func recordFreshening() {
        let record = CacheRecord(key: "k", variants: [Self.variant("v1", partition: "")])
        let request = Self.request("GET", ["If-None-Match": "\"v1\""])
        func freshened(_ fields: HeaderFields) -> CacheEntry? {
            Self.strategy.records.freshened(
                record, with: RecallResponse(status: 304, headers: fields), for: request, partition: "", inScope: [],
                requestTime: Self.t0 + 50, responseTime: Self.t0 + 50)
        }
        let merged = freshened(["ETag": "\"v1\"", "Cache-Control": "max-age=600"])
        #expect(merged?.headers["Cache-Control"] == "max-age=600")
        #expect(merged?.body == Data("0123456789".utf8))
        #expect(freshened(["ETag": "\"v2\""]) == nil, "another representation")
        #expect(freshened(["Cache-Control": "max-age=600"]) == nil, "no validator")
        #expect(
            Self.strategy.records.freshened(
                record, with: RecallResponse(status: 304, headers: ["ETag": "\"v1\""]), for: request, partition: "other",
                inScope: [], requestTime: Self.t0, responseTime: Self.t0) == nil, "another partition")
    }

    @Test("before: a response answers only its own partition and its Vary values; other variants' tags are offered")
    func partitionsAndVariants() {
        let english = CacheEntry(
            status: 200, headers: ["Cache-Control": "max-age=100", "Vary": "Accept-Language", "ETag": "\"en\""],
            body: Data(), url: nil, requestTime: Self.t0, responseTime: Self.t0,
            varyValues: [HeaderFields.Field(name: "accept-language", value: "en")], partition: "p")
        let record = CacheRecord(key: "k", variants: [english])
        func outcome(_ fields: [String: String], partition: String) -> Outcome {
            Outcome(Self.strategy.before(Self.request("GET", fields), record: record, partition: partition, inScope: [], now: Self.t0))
        }
        #expect(outcome(["Accept-Language": "en"], partition: "p") == .fresh)
        #expect(outcome(["Accept-Language": "EN"], partition: "p") == .fresh, "normalized before comparing")
        #expect(outcome(["Accept-Language": "en"], partition: "q") == .fetch(keepsStored: false), "another partition")
        #expect(outcome(["Accept-Language": "fr"], partition: "p") == .validate("If-None-Match: \"en\""), "§4.3.1: offered")
        #expect(outcome(["Accept-Language": "fr"], partition: "q") == .fetch(keepsStored: false), "never another partition's tags")
    }

    // MARK: After the network

    /// What ``CacheStrategy/after`` decided, in a form a table can state.
    enum Next: Equatable, Sendable {
        case pass, store(status: Int), revalidated(header: String), serveStale(StaleReason), staleNotMarked, remove, discard(status: Int)
        case invalidate([String], storesPost: Bool)
        case refetch(removing: Bool, conditional: Bool), freshen
        case storeAndAnswer(status: Int, answer: Int)
        case discardAndAnswer(status: Int, answer: Int)

        init(_ after: CacheStrategy.After) {
            switch after {
            case .pass: self = .pass
            case .store(let entry): self = .store(status: entry.status)
            case .storeAndAnswer(let entry, let answer): self = .storeAndAnswer(status: entry.status, answer: answer.status)
            case .revalidated(let entry, let answer):
                // The answer is the merged entry, as revalidated.
                let same = answer.source == .revalidated && answer.headers["X-Version"] == entry.headers["X-Version"]
                self = .revalidated(header: same ? entry.headers["X-Version"] ?? "" : "answer not made from the entry")
            case .serveStale(let answer, let reason): self = answer.source == .stale ? .serveStale(reason) : .staleNotMarked
            case .remove: self = .remove
            case .discard(let entry): self = .discard(status: entry.status)
            case .discardAndAnswer(let entry, let answer): self = .discardAndAnswer(status: entry.status, answer: answer.status)
            case .invalidate(let urls, let post): self = .invalidate(urls.map(\.path), storesPost: post != nil)
            case .refetch(let request, let removing):
                self = .refetch(removing: removing, conditional: request.value(forHTTPHeaderField: "If-None-Match") != nil)
            case .freshen: self = .freshen
            }
        }
    }

    enum Sent: Sendable { case fetching, fetchingWithStored, validating, validatingAlternate, invalidating, callerConditional, refetching }

    struct AfterRow: Sendable, CustomTestStringConvertible {
        var rule: String
        var method = "GET"
        var sent: Sent
        var stored: [String: String] = ["Cache-Control": "max-age=10", "ETag": "\"v1\"", "X-Version": "stored"]
        var status: Int
        var fields: [String: String] = [:]
        var source: RecallResponse.Source = .network
        var redirected = false
        var age: Double = 20
        var next: Next
        var testDescription: String { rule }
    }

    static let afters: [AfterRow] = [
        AfterRow(rule: "a 200 with max-age is stored", sent: .fetching, status: 200, fields: ["Cache-Control": "max-age=60"], next: .store(status: 200)),
        AfterRow(rule: "a 200 without freshness is stored (heuristically cacheable status)", sent: .fetching, status: 200, next: .store(status: 200)),
        AfterRow(rule: "a 302 without freshness is not stored", sent: .fetching, status: 302, next: .pass),
        AfterRow(
            rule: "a 302 with max-age is stored", sent: .fetching, status: 302, fields: ["Cache-Control": "max-age=60"],
            next: .store(status: 302)),
        AfterRow(rule: "no-store is not stored", sent: .fetching, status: 200, fields: ["Cache-Control": "no-store"], next: .pass),
        AfterRow(
            rule: "must-understand with a known status overrides no-store", sent: .fetching, status: 200,
            fields: ["Cache-Control": "no-store, must-understand, max-age=60"], next: .store(status: 200)),
        AfterRow(rule: "Vary: * is not stored", sent: .fetching, status: 200, fields: ["Vary": "*"], next: .pass),
        AfterRow(
            rule: "a 206 to a request without Range is not stored", sent: .fetching, status: 206,
            fields: ["Content-Range": "bytes 0-1/9", "ETag": "\"p\""], next: .pass),
        AfterRow(
            rule: "a 200 carrying Content-Range is stored", sent: .fetching, status: 200, fields: ["Content-Range": "bytes 0-9/10"],
            next: .store(status: 200)),
        AfterRow(rule: "a response served by an inner hook is not stored", sent: .fetching, status: 200, source: .cache, next: .pass),
        AfterRow(
            rule: "an answer that cannot be stored removes the stored response it replaces", sent: .fetchingWithStored, status: 200,
            fields: ["Cache-Control": "no-store"], next: .remove),
        AfterRow(rule: "a 5xx does not remove the stored response", sent: .fetchingWithStored, status: 500, next: .pass),
        AfterRow(
            rule: "a redirected answer does not remove the stored response of the URL looked up", sent: .fetchingWithStored,
            status: 200, fields: ["Cache-Control": "no-store"], redirected: true, next: .pass),
        AfterRow(
            rule: "a matching 304 is merged and served (its fields replace the stored ones)", sent: .validating, status: 304,
            fields: ["ETag": "\"v1\"", "X-Version": "from-304"], next: .revalidated(header: "from-304")),
        AfterRow(
            rule: "a weak ETag matches a strong one in a 304 (weak comparison)", sent: .validating, status: 304,
            fields: ["ETag": "W/\"v1\""], next: .revalidated(header: "stored")),
        AfterRow(
            rule: "a 304 without validators confirms the stored response", sent: .validating, status: 304,
            next: .revalidated(header: "stored")),
        AfterRow(
            rule: "a 304 naming another ETag: removed, refetched unconditionally", sent: .validating, status: 304,
            fields: ["ETag": "\"v2\""], next: .refetch(removing: true, conditional: false)),
        AfterRow(
            rule: "a redirected 304: refetched, the URL looked up keeps its response", sent: .validating, status: 304,
            fields: ["ETag": "\"v1\""], redirected: true, next: .refetch(removing: false, conditional: false)),
        AfterRow(
            rule: "a 304 naming another variant's ETag confirms that variant (§4.3.1)", sent: .validatingAlternate, status: 304,
            fields: ["ETag": "\"v1\""], next: .revalidated(header: "stored")),
        AfterRow(
            rule: "a 304 naming no offered ETag: refetched", sent: .validatingAlternate, status: 304, fields: ["ETag": "\"zz\""],
            next: .refetch(removing: true, conditional: false)),
        AfterRow(
            rule: "a 200 to a validation replaces the stored response", sent: .validating, status: 200,
            fields: ["Cache-Control": "max-age=60"], next: .store(status: 200)),
        AfterRow(
            rule: "a 304 after a refetch is passed through, never refetched again", sent: .refetching, status: 304,
            fields: ["ETag": "\"v2\""], next: .pass),
        AfterRow(
            rule: "stale-if-error: a 500 within the window serves the stored response", sent: .validating,
            stored: ["Cache-Control": "max-age=10, stale-if-error=60", "ETag": "\"v1\""], status: 500, next: .serveStale(.staleIfError)),
        AfterRow(
            rule: "stale-if-error covers 502", sent: .validating,
            stored: ["Cache-Control": "max-age=10, stale-if-error=60"], status: 502, next: .serveStale(.staleIfError)),
        AfterRow(
            rule: "stale-if-error covers 503", sent: .validating,
            stored: ["Cache-Control": "max-age=10, stale-if-error=60"], status: 503, next: .serveStale(.staleIfError)),
        AfterRow(
            rule: "stale-if-error covers 504", sent: .validating,
            stored: ["Cache-Control": "max-age=10, stale-if-error=60"], status: 504, next: .serveStale(.staleIfError)),
        AfterRow(
            rule: "stale-if-error does not cover 501 (a 501 is cacheable by default: it replaces the stored response)",
            sent: .fetchingWithStored, stored: ["Cache-Control": "max-age=10, stale-if-error=60"], status: 501, next: .store(status: 501)),
        AfterRow(
            rule: "past the stale-if-error window the 500 passes", sent: .validating,
            stored: ["Cache-Control": "max-age=10, stale-if-error=5"], status: 500, next: .pass),
        AfterRow(
            rule: "must-revalidate forbids stale-if-error", sent: .validating,
            stored: ["Cache-Control": "max-age=10, stale-if-error=60, must-revalidate"], status: 500, next: .pass),
        AfterRow(
            rule: "a HEAD 200 whose validators match updates the stored GET response (§4.3.5)", method: "HEAD", sent: .validating,
            status: 200, fields: ["ETag": "\"v1\"", "Cache-Control": "max-age=99"], next: .storeAndAnswer(status: 200, answer: 200)),
        AfterRow(
            rule: "a HEAD 200 with another ETag discards that stored GET response (the URL's others stay)", method: "HEAD", sent: .validating,
            status: 200, fields: ["ETag": "\"v2\""], next: .discard(status: 200)),
        AfterRow(
            rule: "a HEAD 200 without validators cannot confirm a stored GET response that has them: it is discarded", method: "HEAD",
            sent: .validating, status: 200, next: .discard(status: 200)),
        AfterRow(
            rule: "a HEAD 200 whose ETag matches updates the stored GET response though it omits a Last-Modified the GET had", method: "HEAD",
            sent: .validating, stored: ["Cache-Control": "max-age=10", "ETag": "\"v1\"", "Last-Modified": "Wed, 01 Jan 2020 00:00:00 GMT"],
            status: 200, fields: ["ETag": "\"v1\""], next: .storeAndAnswer(status: 200, answer: 200)),
        AfterRow(rule: "a HEAD 404 changes nothing", method: "HEAD", sent: .validating, status: 404, next: .pass),
        AfterRow(
            rule: "POST 200 invalidates its URI and same-origin Location / Content-Location", method: "POST", sent: .invalidating,
            status: 201, fields: ["Location": "/a", "Content-Location": "https://origin.test/b"],
            next: .invalidate(["/r", "/a", "/b"], storesPost: false)),
        AfterRow(
            rule: "another origin's Location is not invalidated", method: "PUT", sent: .invalidating, status: 200,
            fields: ["Location": "https://elsewhere.test/a", "Content-Location": "http://origin.test/b"],
            next: .invalidate(["/r"], storesPost: false)),
        AfterRow(rule: "an error answer to an unsafe method invalidates nothing", method: "DELETE", sent: .invalidating, status: 404, next: .pass),
        AfterRow(
            rule: "a 3xx answer to an unsafe method invalidates", method: "PROPFIND", sent: .invalidating, status: 303,
            next: .invalidate(["/r"], storesPost: false)),
        AfterRow(
            rule: "POST with Content-Location of its own URI and max-age is stored for GET (RFC 9110 §9.3.3)", method: "POST",
            sent: .invalidating, status: 200, fields: ["Content-Location": "/r", "Cache-Control": "max-age=60"],
            next: .invalidate(["/r", "/r"], storesPost: true)),
        AfterRow(
            rule: "POST with Content-Location of its URI but no explicit freshness is not stored", method: "POST",
            sent: .invalidating, status: 200, fields: ["Content-Location": "/r"], next: .invalidate(["/r", "/r"], storesPost: false)),
        AfterRow(
            rule: "POST with Content-Location of another URI is not stored", method: "POST", sent: .invalidating, status: 200,
            fields: ["Content-Location": "/other", "Cache-Control": "max-age=60"], next: .invalidate(["/r", "/other"], storesPost: false)),
        AfterRow(rule: "the caller's conditional request: a 304 freshens", sent: .callerConditional, status: 304, next: .freshen),
        AfterRow(rule: "the caller's conditional request: a 200 is passed", sent: .callerConditional, status: 200, next: .pass)
    ]

    @Test("after: what an answer from the origin does", arguments: afters)
    func after(row: AfterRow) {
        let stored = Self.entry(row.stored)
        let mode: CacheStrategy.Mode =
            switch row.sent {
            case .fetching: .fetching(stored: nil)
            case .fetchingWithStored: .fetching(stored: stored)
            case .validating: .validating(stored: stored, alternates: [])
            case .validatingAlternate: .validating(stored: nil, alternates: [stored])
            case .invalidating: .invalidating
            case .callerConditional: .callerConditional
            case .refetching: .refetching
            }
        // A validating request as it may reach onSuccess: carrying the validators it went out with.
        let validators =
            [.validating, .validatingAlternate].contains(row.sent)
            ? ["If-None-Match": "\"v1\"", "If-Modified-Since": HTTPDate.format(Self.t0)] : [:]
        let request = Self.request(row.method, validators)
        var exchange = CacheStrategy.Exchange(
            request: request, sent: request, answered: request, method: RequestMethod(request),
            requestTime: Self.t0 + row.age, now: Self.t0 + row.age)
        exchange.redirected = row.redirected
        let response = RecallResponse(status: row.status, headers: HeaderFields(row.fields), body: Data("new".utf8), url: Self.url, source: row.source)
        #expect(Next(Self.strategy.after(response, mode: mode, exchange: exchange)) == row.next)
    }

    @Test("after: what is stored is stripped of fields never stored, and carries the request's partition and Vary values")
    func storedEntry() throws {
        let request = Self.request("GET", ["Accept-Encoding": "gzip"])
        var exchange = CacheStrategy.Exchange(
            request: request, sent: request, answered: request, method: .get,
            requestTime: Self.t0, now: Self.t0 + 1)
        exchange.partition = "p1"
        let response = RecallResponse(
            status: 200,
            headers: [
                "Cache-Control": "max-age=5", "Set-Cookie": "s=1", "Vary": "Accept-Encoding",
                "Connection": "X-Hop", "X-Hop": "1"
            ], body: Data("b".utf8))
        guard case .store(let entry) = Self.strategy.after(response, mode: .fetching(stored: nil), exchange: exchange) else {
            Issue.record("not stored")
            return
        }
        #expect(entry.headers["Set-Cookie"] == nil && entry.headers["X-Hop"] == nil && entry.headers["Connection"] == nil)
        #expect(entry.partition == "p1" && entry.varyValues == [HeaderFields.Field(name: "accept-encoding", value: "gzip")])
        #expect(entry.requestTime == Self.t0 && entry.responseTime == Self.t0 + 1)
    }

    // MARK: After a failure

    struct FailureRow: Sendable, CustomTestStringConvertible {
        var rule: String
        var stored: [String: String]?
        var fields: [String: String] = [:]
        var error: TransportError.Code?
        var age: Double = 20
        var outcome: String
        var testDescription: String { rule }
    }

    static let failures: [FailureRow] = [
        FailureRow(rule: "nothing stored: the error", stored: nil, error: .cannotConnect, outcome: "fail"),
        FailureRow(
            rule: "stale-if-error serves the stored response on a transport error",
            stored: ["Cache-Control": "max-age=10, stale-if-error=60"], error: .timedOut, outcome: "stale staleIfError"),
        FailureRow(
            rule: "request stale-if-error=N also allows it", stored: ["Cache-Control": "max-age=10"],
            fields: ["Cache-Control": "stale-if-error=60"], error: .timedOut, outcome: "stale staleIfError"),
        FailureRow(
            rule: "disconnected (connection refused): stale served (§4.2.4)", stored: ["Cache-Control": "max-age=10"],
            error: .cannotConnect, outcome: "stale disconnected"),
        FailureRow(
            rule: "disconnected (DNS failure): stale served", stored: ["Cache-Control": "max-age=10"], error: .dnsFailure,
            outcome: "stale disconnected"),
        FailureRow(
            rule: "disconnected (connection lost): stale served", stored: ["Cache-Control": "max-age=10"], error: .connectionLost,
            outcome: "stale disconnected"),
        FailureRow(rule: "a timeout is not a disconnection", stored: ["Cache-Control": "max-age=10"], error: .timedOut, outcome: "fail"),
        FailureRow(
            rule: "disconnected, but no-cache forbids it", stored: ["Cache-Control": "max-age=10, no-cache"], error: .cannotConnect,
            outcome: "fail"),
        FailureRow(
            rule: "disconnected, but the request's no-cache forbids it", stored: ["Cache-Control": "max-age=10"],
            fields: ["Cache-Control": "no-cache"], error: .cannotConnect, outcome: "fail"),
        FailureRow(
            rule: "disconnected, beyond the request's max-stale", stored: ["Cache-Control": "max-age=10"],
            fields: ["Cache-Control": "max-stale=5"], error: .cannotConnect, outcome: "fail"),
        FailureRow(
            rule: "disconnected, beyond maxDisconnectedStaleness (a week)", stored: ["Cache-Control": "max-age=10"],
            error: .cannotConnect, age: 8 * 86_400, outcome: "fail"),
        FailureRow(
            rule: "must-revalidate and unreachable: 504", stored: ["Cache-Control": "max-age=10, must-revalidate"],
            error: .cannotConnect, outcome: "504"),
        FailureRow(
            rule: "cancellation is never answered from cache", stored: ["Cache-Control": "max-age=10, stale-if-error=60"],
            error: nil, outcome: "fail")
    ]

    @Test(
        "after a failure: stale where stale-if-error or a disconnection allows, 504 for must-revalidate, else the error",
        arguments: failures)
    func afterFailure(row: FailureRow) {
        let mode: CacheStrategy.Mode = .fetching(stored: row.stored.map { Self.entry($0) })
        let error: any Error = row.error.map { TransportError($0, message: "test") } ?? CancellationError()
        let failure = Self.strategy.afterFailure(error, mode: mode, request: Self.request("GET", row.fields), now: Self.t0 + row.age)
        let outcome =
            switch failure {
            case .fail: "fail"
            case .serveStale(let answer, let reason): answer.source == .stale ? "stale \(reason)" : "stale answer not marked stale"
            case .gatewayTimeout(let answer): answer.status == 504 ? "504" : "gateway timeout answered \(answer.status)"
            }
        #expect(outcome == row.outcome)
    }

    @Test("after a failure of an unsafe method or the caller's conditional request: the error, never a stored response")
    func failureWithoutStored() {
        for mode in [CacheStrategy.Mode.invalidating, .callerConditional, .refetching] {
            #expect(
                Self.strategy.afterFailure(
                    TransportError(.cannotConnect, message: "x"), mode: mode, request: Self.request(),
                    now: Self.t0) == .fail)
        }
    }
}

extension CacheStrategy {
    /// The decision for `request`, reading its ``RequestFacts`` as the cache does.
    func before(_ request: URLRequest, record: CacheRecord?, partition: String, inScope: Set<String>, now: Date) -> Before {
        before(request, RequestFacts(request), record: record, partition: partition, inScope: inScope, now: now)
    }

    /// The decision for `request`'s `range`, reading its ``RequestFacts`` as the cache does.
    func before(
        _ request: URLRequest, range: ByteRange, record: CacheRecord?, partition: String, inScope: Set<String>,
        now: Date
    ) -> Before {
        before(request, RequestFacts(request), range: range, record: record, partition: partition, inScope: inScope, now: now)
    }
}
