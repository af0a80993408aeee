import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue #11, §2, byte ranges, second half (RFC 9111 §3.3–3.4): `206` answers stored as pieces
/// of their representation, pieces with one strong validator combined, and only the missing
/// bytes asked of the origin. The first half (ranges served from a stored full response) is in
/// `CacheRFCRulesTests`.
@Suite("HTTPCache: partial content", .timeLimit(.minutes(1)))
struct CacheRangeTests {
    // MARK: PartialContent

    /// `pieces.insert(bounds, bytes:)`, expecting it to succeed or not (`#expect` cannot take a mutating call).
    static func insert(
        _ pieces: inout PartialContent, _ bounds: ClosedRange<Int>, bytes: Data, expecting: Bool,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let inserted = pieces.insert(bounds, bytes: bytes)
        #expect(inserted == expecting, sourceLocation: sourceLocation)
    }

    @Test("pieces: inserted pieces merge when they touch or overlap, stay apart otherwise, newer bytes win")
    func insertMerges() {
        var pieces = PartialContent(length: 10)
        Self.insert(&pieces, 2...3, bytes: Data("23".utf8), expecting: true)
        Self.insert(&pieces, 7...8, bytes: Data("78".utf8), expecting: true)
        #expect(pieces.pieces.map(\.bounds) == [2...3, 7...8])
        Self.insert(&pieces, 4...4, bytes: Data("4".utf8), expecting: true)  // touches 2...3
        #expect(pieces.pieces.map(\.bounds) == [2...4, 7...8])
        Self.insert(&pieces, 3...7, bytes: Data("ABCDE".utf8), expecting: true)  // overlaps both
        #expect(pieces.pieces.map(\.bounds) == [2...8])
        #expect(pieces.bytes(in: 2...8) == Data("2ABCDE8".utf8))
        #expect(!pieces.isComplete)
        Self.insert(&pieces, 0...9, bytes: Data("0123456789".utf8), expecting: true)
        #expect(pieces.isComplete)
    }

    @Test("pieces: bytes that do not fit their bounds or the length, or one piece too many, change nothing")
    func insertRefuses() {
        var pieces = PartialContent(length: 100)
        Self.insert(&pieces, 0...3, bytes: Data("abc".utf8), expecting: false)
        Self.insert(&pieces, 98...100, bytes: Data("abc".utf8), expecting: false)
        for index in 0..<PartialContent.maxPieces { Self.insert(&pieces, (index * 4)...(index * 4), bytes: Data("x".utf8), expecting: true) }
        let before = pieces
        Self.insert(&pieces, 90...90, bytes: Data("y".utf8), expecting: false)
        #expect(pieces == before)
    }

    @Test("pieces: covers, and the one span of missing bytes to ask for")
    func coverAndMissing() {
        var pieces = PartialContent(length: 100)
        pieces.insert(0...9, bytes: Data(count: 10))
        pieces.insert(20...29, bytes: Data(count: 10))
        #expect(pieces.covers(2...8) && pieces.covers(20...29))
        #expect(!pieces.covers(5...25))
        #expect(pieces.missing(in: 0...9) == nil)
        #expect(pieces.missing(in: 0...99) == 10...99)
        #expect(pieces.missing(in: 5...25) == 10...19)
        #expect(pieces.missing(in: 0...29) == 10...19)
        #expect(pieces.missing(in: 40...50) == 40...50)
    }

    @Test("pieces: Content-Range values with a known length only")
    func contentRanges() {
        #expect(PartialContent.contentRange("bytes 0-4/10")! == (0...4, 10))
        #expect(PartialContent.contentRange("Bytes  5-9/10")! == (5...9, 10))
        for bad in ["bytes 0-4/*", "bytes */10", "bytes 5-4/10", "bytes 0-10/10", "items 0-1/2", "bytes 0-4", "bytes a-b/10", ""] {
            #expect(PartialContent.contentRange(bad) == nil, "\(bad)")
        }
    }

    @Test("pieces: read back from a stored entry, which must agree with its body; complete pieces become a 200")
    func entryRoundTrip() throws {
        var pieces = PartialContent(length: 10)
        pieces.insert(1...2, bytes: Data("12".utf8))
        pieces.insert(6...9, bytes: Data("6789".utf8))
        let template = entry(["ETag": "\"t\"", "Content-Range": "bytes 6-9/10", "Content-Length": "4"], status: 206, body: "6789")
        let stored = pieces.entry(headers: template.headers, like: template)
        #expect(stored.status == 206)
        #expect(stored.headers.values(for: "Content-Range") == ["bytes 1-2/10", "bytes 6-9/10"])
        #expect(stored.headers["Content-Length"] == nil)
        #expect(PartialContent(stored) == pieces)
        var torn = stored
        torn.body = Data("126789x".utf8)
        #expect(PartialContent(torn) == nil, "a body longer than its pieces")
        torn.body = Data("12678".utf8)
        #expect(PartialContent(torn) == nil, "a body shorter than its pieces")
        var mixed = stored
        mixed.headers.add("Content-Range", "bytes 0-0/11")
        #expect(PartialContent(mixed) == nil, "pieces of two lengths")
        var unordered = stored
        unordered.headers["Content-Range"] = nil
        unordered.headers.add("Content-Range", "bytes 6-9/10")
        unordered.headers.add("Content-Range", "bytes 1-2/10")
        #expect(PartialContent(unordered) == nil, "pieces out of order")
        #expect(PartialContent(entry([:], status: 200, body: "x")) == nil)
        pieces.insert(0...9, bytes: Data("0123456789".utf8))
        let full = pieces.entry(headers: template.headers, like: template)
        #expect(full.status == 200 && full.headers["Content-Length"] == "10" && full.headers["Content-Range"] == nil)
        #expect(String(decoding: full.body, as: UTF8.self) == "0123456789")
    }

    // MARK: The strategy, on values

    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    static let strategy = CacheStrategy(
        rules: CacheRules(),
        partitioner: CachePartitioner(
            secret: Array(repeating: 7, count: 32),
            configuration: CacheConfiguration()))

    func entry(_ fields: [String: String], status: Int, body: String) -> CacheEntry {
        var headers = HeaderFields(fields)
        headers["Date"] = HTTPDate.format(Self.t0)
        return CacheEntry(status: status, headers: headers, body: Data(body.utf8), url: nil, requestTime: Self.t0, responseTime: Self.t0)
    }

    /// Stored pieces 2...5 and 8...9 of "0123456789", strong tag "t", fresh for 100 s.
    func storedPieces(cacheControl: String = "max-age=100", tag: String = "\"t\"") -> CacheEntry {
        var pieces = PartialContent(length: 10)
        pieces.insert(2...5, bytes: Data("2345".utf8))
        pieces.insert(8...9, bytes: Data("89".utf8))
        return pieces.entry(
            headers: entry(["Cache-Control": cacheControl, "ETag": tag], status: 206, body: "").headers,
            like: entry([:], status: 206, body: ""))
    }

    func request(_ fields: [String: String]) -> URLRequest {
        var request = URLRequest(url: URL(string: "https://origin.test/r")!)
        for (name, value) in fields { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    func before(_ range: String, stored: CacheEntry?, age: Double = 0, fields: [String: String] = [:]) -> CacheStrategyTests.Outcome {
        let request = request(fields.merging(["Range": range]) { $1 })
        guard case .range(let byteRange) = Self.strategy.route(request, RequestFacts(request)) else { return .bypass }
        let record = stored.map { CacheRecord(key: "k", variants: [$0]) }
        return CacheStrategyTests.Outcome(
            Self.strategy.before(
                request, range: byteRange, record: record, partition: "",
                inScope: [], now: Self.t0 + age))
    }

    @Test("before: fresh pieces answer ranges they hold; the origin is asked only for the bytes they lack")
    func beforePieces() {
        let stored = storedPieces()
        #expect(before("bytes=2-5", stored: stored) == .partial(status: 206, contentRange: "bytes 2-5/10", body: "2345"))
        #expect(before("bytes=3-4", stored: stored) == .partial(status: 206, contentRange: "bytes 3-4/10", body: "34"))
        #expect(before("bytes=-2", stored: stored) == .partial(status: 206, contentRange: "bytes 8-9/10", body: "89"))
        #expect(before("bytes=20-", stored: stored) == .partial(status: 416, contentRange: "bytes */10", body: ""))
        #expect(before("bytes=0-9", stored: stored) == .range(sent: "bytes=0-7", ifRange: "\"t\"", keepsStored: true))
        #expect(before("bytes=4-", stored: stored) == .range(sent: "bytes=6-7", ifRange: "\"t\"", keepsStored: true))
        #expect(before("bytes=0-3", stored: stored) == .range(sent: "bytes=0-1", ifRange: "\"t\"", keepsStored: true))
    }

    @Test("before: stale pieces are asked for again (If-Range confirms them); only-if-cached gets 504; max-stale serves them")
    func beforeStalePieces() {
        let stored = storedPieces()
        #expect(before("bytes=2-5", stored: stored, age: 200) == .range(sent: "bytes=2-5", ifRange: "\"t\"", keepsStored: true))
        #expect(before("bytes=2-5", stored: stored, age: 200, fields: ["Cache-Control": "only-if-cached"]) == .gatewayTimeout)
        #expect(before("bytes=0-9", stored: stored, fields: ["Cache-Control": "only-if-cached"]) == .gatewayTimeout)
        #expect(before("bytes=2-5", stored: stored, age: 200, fields: ["Cache-Control": "max-stale"]) == .stale(.maxStale))
    }

    @Test("before: pieces never answer a request without Range; a plain GET asks only for the bytes they lack when they have a strong tag")
    func piecesAnswerOnlyRanges() {
        func plain(
            _ stored: CacheEntry, method: String = "GET", policy: URLRequest.CachePolicy = .useProtocolCachePolicy,
            fields: [String: String] = [:]
        ) -> CacheStrategyTests.Outcome {
            var request = request(fields)
            request.httpMethod = method
            request.cachePolicy = policy
            let record = CacheRecord(key: "k", variants: [stored])
            return CacheStrategyTests.Outcome(
                Self.strategy.before(
                    request, RequestFacts(request), record: record, partition: "", inScope: [],
                    now: Self.t0))
        }
        // Fresh or stale: If-Range confirms the pieces, and a 206 completes them.
        #expect(plain(storedPieces()) == .complete(sent: "bytes=0-7", ifRange: "\"t\""))
        #expect(plain(storedPieces(cacheControl: "no-cache")) == .complete(sent: "bytes=0-7", ifRange: "\"t\""))
        #expect(plain(storedPieces(), method: "HEAD") == .fetch(keepsStored: false))
        #expect(plain(storedPieces(), policy: .reloadIgnoringLocalCacheData) == .fetch(keepsStored: false))
        #expect(plain(storedPieces(), fields: ["Cache-Control": "only-if-cached"]) == .gatewayTimeout)
        // Pieces without a strong tag are never combined: the plain GET goes as it is.
        #expect(plain(storedPieces(tag: "W/\"t\"")) == .fetch(keepsStored: false))
        // A representation longer than the storage keeps as one record streams from the origin instead.
        let small = CacheStrategy(
            rules: CacheRules(), partitioner: CachePartitioner(secret: [7], configuration: CacheConfiguration()),
            completionLimit: 9)
        let get = request([:])
        let before = small.before(
            get, RequestFacts(get), record: CacheRecord(key: "k", variants: [storedPieces()]), partition: "",
            inScope: [], now: Self.t0)
        #expect(CacheStrategyTests.Outcome(before) == .fetch(keepsStored: false))
    }

    /// The answer to a plain `GET` completing `stored` (sent for `sent`, with `If-Range`).
    func afterCompletion(_ status: Int, _ fields: [String: String], body: String, sent: String, stored: CacheEntry) -> CacheStrategy.After {
        var sentRequest = request(["Range": sent])
        if let tag = stored.etag { sentRequest.setValue(tag, forHTTPHeaderField: "If-Range") }
        var headers = HeaderFields(fields)
        headers["Date"] = HTTPDate.format(Self.t0)
        let exchange = CacheStrategy.Exchange(
            request: request([:]), sent: sentRequest, answered: sentRequest, method: .get,
            requestTime: Self.t0, now: Self.t0)
        return Self.strategy.after(
            RecallResponse(status: status, headers: headers, body: Data(body.utf8)), mode: .completing(stored: stored),
            exchange: exchange)
    }

    @Test("after completing: a 206 that makes the pieces whole answers the plain GET with a 200 and is stored as one")
    func afterCompletionAnswersWhole() {
        let next = afterCompletion(
            206,
            [
                "ETag": "\"t\"", "Cache-Control": "max-age=100", "Content-Range": "bytes 0-7/10", "Content-Length": "8",
                "Set-Cookie": "a=b"
            ], body: "01234567", sent: "bytes=0-7", stored: storedPieces())
        guard case .storeAndAnswer(let entry, let answer) = next else { Issue.record("\(next)"); return }
        #expect(entry.status == 200 && String(decoding: entry.body, as: UTF8.self) == "0123456789" && entry.headers["Content-Range"] == nil)
        #expect(answer.status == 200 && answer.bodyText == "0123456789" && answer.source == .network)
        #expect(answer.headers["Content-Range"] == nil && answer.headers["Content-Length"] == "10" && answer.headers["Set-Cookie"] == "a=b")
    }

    @Test("after completing: a 206 that cannot make the pieces whole, or a 416, sends the plain GET again; a 200 is stored as the answer")
    func afterCompletionFallsBack() {
        let refusals: [(Int, [String: String], String)] = [
            (206, ["ETag": "\"t\"", "Content-Range": "bytes 0-1/10"], "01"),  // leaves a gap
            (206, ["ETag": "\"u\"", "Content-Range": "bytes 0-7/10"], "01234567"),  // another representation
            (206, ["Cache-Control": "max-age=100", "Content-Range": "bytes 0-7/10"], "01234567"),  // no strong tag: not combined
            (206, ["ETag": "\"t\"", "Content-Range": "bytes 0-7/11"], "01234567"),  // another length
            (416, ["Content-Range": "bytes */4"], "")
        ]
        for (status, fields, body) in refusals {
            let next = afterCompletion(status, fields, body: body, sent: "bytes=0-7", stored: storedPieces())
            guard case .refetch(let again, removing: false) = next else { Issue.record("\(status) \(fields): \(next)"); continue }
            #expect(again.value(forHTTPHeaderField: "Range") == nil && again.value(forHTTPHeaderField: "If-Range") == nil)
        }
        let changed = afterCompletion(
            200, ["ETag": "\"u\"", "Cache-Control": "max-age=100"], body: "abcdefghij", sent: "bytes=0-7",
            stored: storedPieces())
        guard case .store(let entry) = changed else { Issue.record("\(changed)"); return }
        #expect(entry.status == 200 && String(decoding: entry.body, as: UTF8.self) == "abcdefghij")
        #expect(CacheStrategyTests.Next(afterCompletion(503, [:], body: "", sent: "bytes=0-7", stored: storedPieces())) == .pass)
    }

    func after(
        _ status: Int, _ fields: [String: String], body: String, caller: String, sent: String,
        stored: CacheEntry?
    ) -> CacheStrategy.After {
        let callerRequest = request(["Range": caller])
        var sentRequest = request(["Range": sent])
        if let tag = stored?.etag { sentRequest.setValue(tag, forHTTPHeaderField: "If-Range") }
        var headers = HeaderFields(fields)
        headers["Date"] = HTTPDate.format(Self.t0)
        let exchange = CacheStrategy.Exchange(
            request: callerRequest, sent: sentRequest, answered: sentRequest, method: .get,
            requestTime: Self.t0, now: Self.t0)
        return Self.strategy.after(
            RecallResponse(status: status, headers: headers, body: Data(body.utf8)),
            mode: .ranging(ByteRange(rangeField: caller)!, stored: stored), exchange: exchange)
    }

    @Test("after: a 206 for the missing bytes completes the pieces; the caller's range is answered from them")
    func afterCompletes() throws {
        let next = after(
            206, ["ETag": "\"t\"", "Cache-Control": "max-age=100", "Content-Range": "bytes 0-7/10"], body: "01234567",
            caller: "bytes=0-9", sent: "bytes=0-7", stored: storedPieces())
        guard case .storeAndAnswer(let entry, let answer) = next else { Issue.record("\(next)"); return }
        #expect(entry.status == 200 && String(decoding: entry.body, as: UTF8.self) == "0123456789")
        #expect(answer.status == 206 && answer.bodyText == "0123456789" && answer.headers["Content-Range"] == "bytes 0-9/10")
    }

    @Test("after: a 206 that leaves a gap is stored as pieces; one for the caller's own range is returned as it is")
    func afterPieces() throws {
        let partial = after(
            206, ["ETag": "\"t\"", "Content-Range": "bytes 0-0/10"], body: "0", caller: "bytes=0-3", sent: "bytes=0-1",
            stored: storedPieces())
        // The origin answered less than asked (0-0 of 0-1): the caller's range is sent again as it is.
        guard case .refetch(let again, removing: false) = partial else { Issue.record("\(partial)"); return }
        #expect(again.value(forHTTPHeaderField: "Range") == "bytes=0-3" && again.value(forHTTPHeaderField: "If-Range") == nil)
        let asIs = after(
            206, ["ETag": "\"t\"", "Content-Range": "bytes 0-0/10"], body: "0", caller: "bytes=0-0", sent: "bytes=0-0",
            stored: storedPieces())
        guard case .store(let entry) = asIs else { Issue.record("\(asIs)"); return }
        #expect(entry.status == 206 && entry.headers.values(for: "Content-Range") == ["bytes 0-0/10", "bytes 2-5/10", "bytes 8-9/10"])
    }

    @Test("after: pieces of another tag, a weak tag, an unknown length or a body that does not fit are not combined or stored")
    func afterRefuses() {
        let other = after(
            206, ["ETag": "\"u\"", "Content-Range": "bytes 0-1/10"], body: "ab", caller: "bytes=0-1", sent: "bytes=0-1",
            stored: storedPieces())
        guard case .store(let entry) = other else { Issue.record("\(other)"); return }
        #expect(entry.headers.values(for: "Content-Range") == ["bytes 0-1/10"], "another tag starts new pieces")
        for (fields, body) in [
            (["ETag": "W/\"t\"", "Content-Range": "bytes 0-1/10"], "01"),
            (["ETag": "\"t\"", "Content-Range": "bytes 0-1/*"], "01"),
            (["ETag": "\"t\"", "Content-Range": "bytes 0-1/10"], "012"),
            (["Content-Range": "bytes 0-1/10"], "01"),
            (["Content-Range": "bytes 0-1/10", "Cache-Control": "max-age=0"], "01"),
            (["Content-Range": "bytes 0-1/10", "Expires": "0"], "01"),
            (["Content-Range": "bytes 0-1/10", "Expires": HTTPDate.format(Self.t0.addingTimeInterval(-60))], "01"),
            (["Content-Range": "bytes 0-1/10", "ETag": "W/\"t\"", "Cache-Control": "max-age=0"], "01"),
            (["ETag": "\"t\"", "Content-Range": "bytes 0-1/10", "Cache-Control": "no-store"], "01"),
            (["ETag": "\"t\"", "Content-Range": "bytes 0-1/10", "Content-Encoding": "gzip"], "01")
        ] {
            let next = after(206, fields, body: body, caller: "bytes=0-1", sent: "bytes=0-1", stored: nil)
            #expect(CacheStrategyTests.Next(next) == .pass, "\(fields) \(body)")
        }
    }

    @Test("after: a 206 confirming a stale full response freshens it; a 200 (the representation changed) is stored and cut to the range")
    func afterFull() {
        let full = entry(["Cache-Control": "max-age=10", "ETag": "\"t\"", "X-Version": "old"], status: 200, body: "0123456789")
        let confirmed = after(
            206, ["ETag": "\"t\"", "Content-Range": "bytes 0-1/10", "X-Version": "new"], body: "01",
            caller: "bytes=0-1", sent: "bytes=0-1", stored: full)
        guard case .store(let merged) = confirmed else { Issue.record("\(confirmed)"); return }
        #expect(merged.status == 200 && merged.body.count == 10 && merged.headers["X-Version"] == "new")
        #expect(merged.headers["Content-Range"] == nil)
        let changed = after(
            200, ["ETag": "\"u\"", "Cache-Control": "max-age=10"], body: "abcdefghij", caller: "bytes=0-1", sent: "bytes=0-1",
            stored: full)
        guard case .storeAndAnswer(let entry, let answer) = changed else { Issue.record("\(changed)"); return }
        #expect(entry.status == 200 && answer.status == 206 && answer.bodyText == "ab")
        let gone = after(416, ["Content-Range": "bytes */5"], body: "", caller: "bytes=8-9", sent: "bytes=6-7", stored: storedPieces())
        #expect(CacheStrategyTests.Next(gone) == .discard(status: 206), "only the pieces, not the URL's other responses")
        let unstorable = after(
            200, ["Cache-Control": "no-store"], body: "0123456789", caller: "bytes=0-1", sent: "bytes=6-7",
            stored: storedPieces())
        #expect(CacheStrategyTests.Next(unstorable) == .discard(status: 206), "a new representation that may not be stored outdates the pieces")
    }

    @Test("after: combining keeps the fields only older pieces had (RFC 9111 §3.4); newer ones replace the same names")
    func combineKeepsOlderFields() {
        var old = storedPieces()
        old.headers.add("X-Old", "kept")
        old.headers.add("X-Version", "old")
        let next = after(
            206, ["ETag": "\"t\"", "Content-Range": "bytes 6-7/10", "X-Version": "new", "Cache-Control": "max-age=100"],
            body: "67", caller: "bytes=6-7", sent: "bytes=6-7", stored: old)
        guard case .store(let combined) = next else { Issue.record("\(next)"); return }
        #expect(combined.headers["X-Old"] == "kept" && combined.headers.values(for: "X-Version") == ["new"])
        #expect(PartialContent(combined)?.pieces.map(\.bounds) == [2...9])
    }

    @Test("a record with the most fields a response may have and 16 pieces reads back (the reader allows their Content-Range fields)")
    func manyFieldsAndPiecesReadBack() throws {
        var pieces = PartialContent(length: 100)
        for index in 0..<PartialContent.maxPieces { pieces.insert((index * 4)...(index * 4), bytes: Data("x".utf8)) }
        var fields = HeaderFields()
        for index in 0..<(CacheRecordCodec.maxFields - 1) { fields.add("X-F\(index)", "v") }
        fields.add("ETag", "\"t\"")
        let stored = pieces.entry(headers: fields, like: entry([:], status: 206, body: ""))
        #expect(stored.headers.count > CacheRecordCodec.maxFields)
        let decoded = try CacheRecordCodec.decode(CacheRecordCodec.encode(CacheRecord(key: "k", variants: [stored])))
        #expect(decoded.variants.first.flatMap(PartialContent.init)?.pieces.count == PartialContent.maxPieces)
    }

    // MARK: Through the cache, over the mock transport

    /// Routes GET `path` to a server that answers single byte ranges of `body` as servers do:
    /// `206` with `Content-Range`, the whole `200` when `If-Range` names another tag.
    func rangeOrigin(_ h: CacheHarness, _ path: String, body: String, tag: String? = "\"t\"", cacheControl: String = "max-age=600") {
        let now = h.now
        h.mock.route("GET", path) { request in
            var headers: HeaderFields = ["Cache-Control": cacheControl, "Date": HTTPDate.format(now.value)]
            if let tag { headers["ETag"] = tag }
            let bytes = Data(body.utf8)
            let matches = request.value(forHTTPHeaderField: "If-Range").map { $0 == tag } ?? true
            guard matches, let field = request.value(forHTTPHeaderField: "Range"), let range = ByteRange(rangeField: field),
                let bounds = range.bounds(length: bytes.count)
            else {
                headers["Content-Length"] = String(bytes.count)
                return RecallResponse(status: 200, headers: headers, body: bytes, url: request.url)
            }
            headers["Content-Range"] = "bytes \(bounds.lowerBound)-\(bounds.upperBound)/\(bytes.count)"
            return RecallResponse(status: 206, headers: headers, body: bytes.subdata(in: bounds.lowerBound..<(bounds.upperBound + 1)), url: request.url)
        }
    }

    func ranges(_ h: CacheHarness, _ path: String) -> [String] {
        h.mock.requests(for: path).map { ($0.value(forHTTPHeaderField: "Range") ?? "-") + " " + ($0.value(forHTTPHeaderField: "If-Range") ?? "-") }
    }

    @Test("a stored 206 answers the range it holds; a longer range asks only for the rest, and the whole becomes a stored 200", arguments: StorageKind.allCases)
    func resumeDownload(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        rangeOrigin(h, "/file", body: "0123456789abcdefghij")
        let first = try await h.get("/file", headers: ["Range": "bytes=0-9"])
        #expect(first.status == 206 && first.bodyText == "0123456789" && first.source == .network)
        let again = try await h.get("/file", headers: ["Range": "bytes=3-5"])
        #expect(again.status == 206 && again.bodyText == "345" && again.source == .cache)
        #expect(again.headers["Content-Range"] == "bytes 3-5/20" && again.headers["Content-Length"] == "3")
        let rest = try await h.get("/file", headers: ["Range": "bytes=0-"])
        #expect(rest.status == 206 && rest.bodyText == "0123456789abcdefghij" && rest.headers["Content-Range"] == "bytes 0-19/20")
        #expect(ranges(h, "/file") == ["bytes=0-9 -", "bytes=10-19 \"t\""], "only the missing bytes were asked for")
        let whole = try await h.get("/file")
        #expect(whole.status == 200 && whole.source == .cache && whole.bodyText == "0123456789abcdefghij")
        #expect(whole.headers["Content-Length"] == "20" && whole.headers["Content-Range"] == nil)
        #expect(h.hits("/file") == 2)
        #expect(h.cache.statistics.hits == 2 && h.cache.statistics.misses == 2)
    }

    @Test(
        "a plain GET is never answered from pieces alone: it asks only for the rest and gets the whole 200; pieces of another partition are never used",
        arguments: StorageKind.allCases)
    func piecesAreNotResponses(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        rangeOrigin(h, "/p", body: "0123456789")
        try await h.get("/p", headers: ["Range": "bytes=0-4"])
        let plain = try await h.get("/p").collected()
        #expect(plain.status == 200 && plain.source == .network && plain.bodyText == "0123456789")
        #expect(plain.headers["Content-Range"] == nil && plain.headers["Content-Length"] == "10")
        #expect(ranges(h, "/p") == ["bytes=0-4 -", "bytes=5-9 \"t\""], "only the missing bytes, under If-Range")
        let again = try await h.get("/p").collected()
        #expect(again.status == 200 && again.source == .cache && again.bodyText == "0123456789")
        let other = HTTPCache(storage: h.cache.storage, now: { h.now.value })
        let pipeline = Pipeline(transport: h.mock, hooks: [other])
        let request = h.request("/p", headers: ["Range": "bytes=0-4", "Authorization": "Bearer someone-else"])
        #expect(try await pipeline.send(request).collected().source == .network)
    }

    @Test("a plain GET whose stored pieces are outdated gets the new whole 200 (If-Range did not match), which is stored", arguments: StorageKind.allCases)
    func completionOfChangedRepresentation(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        rangeOrigin(h, "/c", body: "0123456789", tag: "\"old\"")
        try await h.get("/c", headers: ["Range": "bytes=0-4"])
        rangeOrigin(h, "/c", body: "abcdefghij", tag: "\"new\"")
        let plain = try await h.get("/c").collected()
        #expect(plain.status == 200 && plain.bodyText == "abcdefghij")
        #expect(try await h.get("/c").collected().source == .cache)
        #expect(try await h.get("/c", headers: ["Range": "bytes=0-1"]).collected().bodyText == "ab")
        #expect(h.hits("/c") == 2)
    }

    @Test(
        "a piece without a validator, with explicit freshness, answers the same range and ranges inside it (a-b, a-, -n) from cache",
        arguments: StorageKind.allCases)
    func pieceWithoutValidator(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        rangeOrigin(h, "/n", body: "abcd01234", tag: nil, cacheControl: "max-age=3600")
        let first = try await h.get("/n", headers: ["Range": "bytes=-5"]).collected()
        #expect(first.status == 206 && first.bodyText == "01234" && first.headers["Content-Range"] == "bytes 4-8/9")
        for (range, body, contentRange) in [
            ("bytes=-5", "01234", "bytes 4-8/9"), ("bytes=6-7", "23", "bytes 6-7/9"),
            ("bytes=6-", "234", "bytes 6-8/9"), ("bytes=-1", "4", "bytes 8-8/9"), ("bytes=4-8", "01234", "bytes 4-8/9")
        ] {
            let answer = try await h.get("/n", headers: ["Range": range]).collected()
            #expect(answer.source == .cache, "\(range)")
            #expect(answer.status == 206 && answer.bodyText == body && answer.headers["Content-Range"] == contentRange, "\(range)")
        }
        #expect(h.hits("/n") == 1)
        // Outside the piece: the caller's range goes as it is (nothing to combine under), and its answer replaces the piece.
        let outside = try await h.get("/n", headers: ["Range": "bytes=0-5"]).collected()
        #expect(outside.source == .network && outside.bodyText == "abcd01")
        #expect(ranges(h, "/n").last == "bytes=0-5 -")
        #expect(try await h.get("/n", headers: ["Range": "bytes=1-2"]).collected().source == .cache)
        #expect(try await h.get("/n", headers: ["Range": "bytes=7-8"]).collected().source == .network, "the older piece was replaced")
        // A plain GET is not completed from it: it goes as it is.
        let plain = try await h.get("/n").collected()
        #expect(plain.status == 200 && plain.bodyText == "abcd01234")
        #expect(ranges(h, "/n").last == "- -")
    }

    @Test(
        "a piece without a strong validator never replaces the stored full response: a stale one with Last-Modified is still revalidated for a plain GET",
        arguments: StorageKind.allCases)
    func weakPieceKeepsFullResponse(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        let modified = HTTPDate.format(h.now.value.addingTimeInterval(-3600))
        h.mock.route("GET", "/w") { request in
            if request.value(forHTTPHeaderField: "If-Modified-Since") == modified {
                return RecallResponse(
                    status: 304, headers: ["Cache-Control": "max-age=60", "Date": HTTPDate.format(h.now.value)], body: Data(), url: request.url)
            }
            if request.value(forHTTPHeaderField: "Range") == "bytes=0-1" {
                return RecallResponse(
                    status: 206, headers: ["Cache-Control": "max-age=60", "Content-Range": "bytes 0-1/10", "Date": HTTPDate.format(h.now.value)],
                    body: Data("01".utf8), url: request.url)
            }
            return RecallResponse(
                status: 200, headers: ["Cache-Control": "max-age=10", "Last-Modified": modified, "Date": HTTPDate.format(h.now.value)],
                body: Data("0123456789".utf8), url: request.url)
        }
        try await h.get("/w").collected()
        h.now.advance(20)  // the full response is stale; it has no strong ETag, so the range goes as it is
        #expect(try await h.get("/w", headers: ["Range": "bytes=0-1"]).collected().bodyText == "01")
        #expect(try await h.get("/w", headers: ["Range": "bytes=0-1"]).collected().source == .cache, "the piece is stored")
        let plain = try await h.get("/w").collected()
        #expect(plain.source == .revalidated && plain.bodyText == "0123456789")
        #expect(h.mock.requests(for: "/w").last?.value(forHTTPHeaderField: "If-Modified-Since") == modified)
    }

    @Test(
        "completion: a 206 streamed without Content-Length is collected and combined; a no-store GET is not completed; a refetch keeps the other partitions' responses"
    )
    func completionEdges() async throws {
        // Bodies streamed with no declared length, as a transport gives a 206 without Content-Length.
        let h = CacheHarness(transport: { mock in
            ClosureTransport { request in
                var response = try await mock.send(request)
                let bytes = response.body.bytes ?? Data()
                response.headers.remove("Content-Length")
                response.body = ResponseBody.producing(expectedLength: nil, url: response.url) { writer in try await writer.write(bytes) }
                return response
            }
        })
        rangeOrigin(h, "/u", body: "0123456789")
        try await h.get("/u", headers: ["Range": "bytes=0-4"]).collected()
        let whole = try await h.get("/u").collected()
        #expect(whole.status == 200 && whole.bodyText == "0123456789")
        #expect(ranges(h, "/u") == ["bytes=0-4 -", "bytes=5-9 \"t\""], "one request for the rest, not a refetch")
        #expect(try await h.get("/u").collected().source == .cache)

        let plain = CacheHarness()
        rangeOrigin(plain, "/n", body: "0123456789")
        try await plain.get("/n", headers: ["Range": "bytes=0-4"]).collected()
        #expect(try await plain.get("/n", headers: ["Cache-Control": "no-store"]).collected().bodyText == "0123456789")
        #expect(ranges(plain, "/n").last == "- -", "no-store: sent as it is")

        // Another partition's full response survives this partition's completion that had to be sent again.
        let other = CacheHarness()
        other.mock.route("GET", "/p") { request in
            var headers: HeaderFields = ["ETag": "\"t\"", "Cache-Control": "max-age=600", "Date": HTTPDate.format(other.now.value)]
            switch (request.value(forHTTPHeaderField: "Range"), request.value(forHTTPHeaderField: "If-Range")) {
            case ("bytes=0-4", nil):
                headers["Content-Range"] = "bytes 0-4/10"
                return RecallResponse(status: 206, headers: headers, body: Data("01234".utf8), url: request.url)
            case (_?, _?):  // the completion: answered short, so the plain GET goes again
                headers["Content-Range"] = "bytes 5-6/10"
                return RecallResponse(status: 206, headers: headers, body: Data("56".utf8), url: request.url)
            default:
                return RecallResponse(status: 200, headers: headers, body: Data("0123456789".utf8), url: request.url)
            }
        }
        try await other.get("/p", headers: ["Authorization": "Bearer a"]).collected()
        try await other.get("/p", headers: ["Range": "bytes=0-4"]).collected()
        let again = try await other.get("/p").collected()
        #expect(again.status == 200 && again.bodyText == "0123456789")
        #expect(try await other.get("/p", headers: ["Authorization": "Bearer a"]).collected().source == .cache, "the other partition's response stayed")
        #expect(try await other.get("/p").collected().source == .cache)
    }

    @Test("a piece without a strong validator and without explicit freshness is not stored")
    func pieceWithoutValidatorOrFreshness() async throws {
        let h = CacheHarness()
        h.mock.route("GET", "/h") { request in
            RecallResponse(
                status: 206,
                headers: [
                    "Content-Range": "bytes 0-1/4", "Last-Modified": "Wed, 01 Jan 2020 00:00:00 GMT",
                    "ETag": "W/\"weak\""
                ], body: Data("ab".utf8), url: request.url)
        }
        try await h.get("/h", headers: ["Range": "bytes=0-1"]).collected()
        #expect(try await h.get("/h", headers: ["Range": "bytes=0-1"]).collected().source == .network)
    }

    @Test("a 416 drops only the pieces it outdates: another partition's stored pieces of the URL stay", arguments: StorageKind.allCases)
    func rangeNotSatisfiableKeepsOthers(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        rangeOrigin(h, "/g", body: "0123456789")
        let other = Pipeline(transport: h.mock, hooks: [h.cache])
        var theirs = h.request("/g", headers: ["Range": "bytes=0-4", "Authorization": "Bearer someone-else"])
        #expect(try await other.send(theirs).collected().source == .network)
        #expect(try await other.send(theirs).collected().source == .cache, "their pieces are stored")
        try await h.get("/g", headers: ["Range": "bytes=0-4"])
        h.mock.route("GET", "/g") { request in
            RecallResponse(status: 416, headers: ["Content-Range": "bytes */5", "ETag": "\"t\""], url: request.url)
        }
        let refused = try await h.get("/g", headers: ["Range": "bytes=0-9"])
        #expect(refused.status == 416)
        #expect(try await h.get("/g", headers: ["Range": "bytes=0-4"]).status == 416, "our pieces are gone")
        theirs.setValue("bytes=1-3", forHTTPHeaderField: "Range")
        let kept = try await other.send(theirs).collected()
        #expect(kept.source == .cache && kept.bodyText == "123", "another partition's pieces are not removed with ours")
    }

    @Test("a 206 made by combining stored bytes with fetched ones carries the origin's own fields (Set-Cookie)", arguments: StorageKind.allCases)
    func combinedAnswerKeepsOriginFields(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        rangeOrigin(h, "/k", body: "0123456789")
        try await h.get("/k", headers: ["Range": "bytes=0-4"])
        let now = h.now
        h.mock.route("GET", "/k") { request in
            RecallResponse(
                status: 206,
                headers: [
                    "ETag": "\"t\"", "Cache-Control": "max-age=600", "Date": HTTPDate.format(now.value),
                    "Content-Range": "bytes 5-9/10", "Set-Cookie": "session=abc"
                ],
                body: Data("56789".utf8), url: request.url)
        }
        let answer = try await h.get("/k", headers: ["Range": "bytes=2-9"])
        #expect(answer.status == 206 && answer.bodyText == "23456789" && answer.headers["Content-Range"] == "bytes 2-9/10")
        #expect(answer.headers["Set-Cookie"] == "session=abc", "the caller's answer came from the origin with this field")
        #expect(try await h.get("/k").headers["Set-Cookie"] == nil, "and the stored response never holds it")
    }

    @Test("a suffix range of an empty stored response answers that empty 200 (RFC 9110 §14.1.1: satisfiable, no byte to send)", arguments: StorageKind.allCases)
    func suffixOfEmpty(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.mock.route("GET", "/empty") { request in
            RecallResponse(status: 200, headers: ["Cache-Control": "max-age=600", "Content-Length": "0"], body: Data(), url: request.url)
        }
        try await h.get("/empty")
        let answer = try await h.get("/empty", headers: ["Range": "bytes=-5"])
        #expect(answer.status == 200 && answer.data.isEmpty && answer.source == .cache)
        #expect(try await h.get("/empty", headers: ["Range": "bytes=0-4"]).status == 416, "a range from a first byte is not satisfiable")
    }

    @Test("the representation changed: If-Range gets the new whole 200, which is stored and cut to the caller's range", arguments: StorageKind.allCases)
    func changedRepresentation(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        rangeOrigin(h, "/c", body: "0123456789", tag: "\"v1\"")
        try await h.get("/c", headers: ["Range": "bytes=0-4"])
        rangeOrigin(h, "/c", body: "ABCDEFGHIJ", tag: "\"v2\"")
        let answer = try await h.get("/c", headers: ["Range": "bytes=0-9"])
        #expect(answer.status == 206 && answer.bodyText == "ABCDEFGHIJ", "never old bytes mixed with new ones")
        #expect(ranges(h, "/c").last == "bytes=5-9 \"v1\"")
        #expect(try await h.get("/c").bodyText == "ABCDEFGHIJ")
        #expect(h.hits("/c") == 2)
    }

    @Test("stale pieces: the range goes out with If-Range; a 206 confirms and refreshes them", arguments: StorageKind.allCases)
    func stalePieces(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        rangeOrigin(h, "/s", body: "0123456789", cacheControl: "max-age=60")
        try await h.get("/s", headers: ["Range": "bytes=0-4"])
        h.now.advance(120)
        #expect(try await h.get("/s", headers: ["Range": "bytes=0-4"]).source == .network)
        #expect(ranges(h, "/s").last == "bytes=0-4 \"t\"")
        #expect(try await h.get("/s", headers: ["Range": "bytes=1-2"]).source == .cache, "refreshed by the 206")
        #expect(h.hits("/s") == 2)
    }

    @Test("a stale full response: a range goes out with If-Range, and the 206 freshens the whole", arguments: StorageKind.allCases)
    func staleFullConfirmed(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        rangeOrigin(h, "/f", body: "0123456789", cacheControl: "max-age=60")
        try await h.get("/f")
        h.now.advance(120)
        let part = try await h.get("/f", headers: ["Range": "bytes=2-3"])
        #expect(part.status == 206 && part.bodyText == "23")
        #expect(ranges(h, "/f").last == "bytes=2-3 \"t\"")
        let whole = try await h.get("/f")
        #expect(whole.source == .cache && whole.bodyText == "0123456789")
        #expect(h.hits("/f") == 2)
    }

    @Test("an origin that answers less than the missing bytes: the caller's range is sent again as it is", arguments: StorageKind.allCases)
    func shortAnswer(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        rangeOrigin(h, "/short", body: "0123456789")
        try await h.get("/short", headers: ["Range": "bytes=0-4"])
        let now = h.now
        let played = Locked(0)
        h.mock.route("GET", "/short") { request in
            let call = played.withLock { count -> Int in
                count += 1; return count
            }
            let headers: HeaderFields = [
                "ETag": "\"t\"", "Cache-Control": "max-age=600", "Date": HTTPDate.format(now.value),
                "Content-Range": call == 1 ? "bytes 5-5/10" : "bytes 0-9/10"
            ]
            return RecallResponse(status: 206, headers: headers, body: Data((call == 1 ? "5" : "0123456789").utf8), url: request.url)
        }
        let answer = try await h.get("/short", headers: ["Range": "bytes=0-9"])
        #expect(answer.status == 206 && answer.bodyText == "0123456789")
        #expect(ranges(h, "/short").suffix(2) == ["bytes=5-9 \"t\"", "bytes=0-9 -"])
    }

    @Test("pieces survive a restart on disk (format version 4, which older readers take for corrupt)")
    func piecesOnDisk() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let mock = MockTransport()
        let now = TestNow()
        do {
            let disk = try DiskStorage(directory: directory)
            let h = CacheHarness(storage: disk)
            rangeOrigin(h, "/d", body: "0123456789")
            try await h.get("/d", headers: ["Range": "bytes=0-4"])
            await disk.flush()
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".rce") }
        #expect(files.count == 1)
        let bytes = try Data(contentsOf: directory.appendingPathComponent(files[0]))
        #expect(bytes[4] == CacheRecordCodec.partialVersion)
        #expect(CacheRecordCodec.encode(CacheRecord(key: "k", variants: [entry([:], status: 200, body: "x")]))[4] == CacheRecordCodec.version)
        let reopened = HTTPCache(storage: try DiskStorage(directory: directory), now: { now.value })
        var request = URLRequest(url: URL(string: "https://origin.test/d")!)
        request.setValue("bytes=1-3", forHTTPHeaderField: "Range")
        let answer = try await Pipeline(transport: mock, hooks: [reopened]).send(request).collected()
        #expect(answer.source == .cache && answer.bodyText == "123" && mock.requests.isEmpty)
    }

    @Test("end to end: a plain GET with a piece stored asks the loopback origin only for the rest; a piece without ETag answers ranges inside it")
    func completionEndToEnd() async throws {
        let server = try await OriginServer.shared.value
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let pattern = Data("0123456789abcdefghijklmnopqrstuvwxyz".utf8)
        let expected = Data((0..<1000).map { pattern[$0 % pattern.count] })

        let path = OriginServer.uniquePath("complete")
        let url = server.url(path, ["cc": "max-age=600", "size": "1000", "etag": "v1", "ranges": "1"])
        var first = URLRequest(url: url)
        first.setValue("bytes=0-299", forHTTPHeaderField: "Range")
        #expect(try await pipeline.send(first).collected().status == 206)
        let whole = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(whole.status == 200 && whole.data == expected && whole.headers["Content-Range"] == nil)
        let asked = try await server.lastRange(path)
        #expect(asked.range == "bytes=300-999" && asked.ifRange == "\"v1\"", "only the missing bytes, under If-Range")
        #expect(try await pipeline.send(URLRequest(url: url)).collected().source == .cache)
        #expect(try await server.hits(path) == 2)

        let untagged = OriginServer.uniquePath("untagged")
        let plainURL = server.url(untagged, ["cc": "max-age=600", "size": "1000", "ranges": "1"])
        var tail = URLRequest(url: plainURL)
        tail.setValue("bytes=-500", forHTTPHeaderField: "Range")
        let piece = try await pipeline.send(tail).collected()
        #expect(piece.status == 206 && piece.data == expected.suffix(500) && piece.headers["ETag"] == nil)
        for (range, bytes) in [("bytes=600-700", expected[600...700]), ("bytes=900-", expected[900...]), ("bytes=-10", expected.suffix(10))] {
            var inner = URLRequest(url: plainURL)
            inner.setValue(range, forHTTPHeaderField: "Range")
            let answer = try await pipeline.send(inner).collected()
            #expect(answer.source == .cache && answer.status == 206 && answer.data == Data(bytes), "\(range)")
        }
        #expect(try await server.hits(untagged) == 1)
    }

    @Test("end to end: a download resumed over the loopback origin asks only for the missing bytes and ends as one stored 200")
    func resumeEndToEnd() async throws {
        let server = try await OriginServer.shared.value
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let path = OriginServer.uniquePath("resume")
        let url = server.url(path, ["cc": "max-age=600", "size": "1000", "etag": "v1", "ranges": "1"])
        let pattern = Data("0123456789abcdefghijklmnopqrstuvwxyz".utf8)
        let expected = Data((0..<1000).map { pattern[$0 % pattern.count] })
        var first = URLRequest(url: url)
        first.setValue("bytes=0-399", forHTTPHeaderField: "Range")
        let head = try await pipeline.send(first).collected()
        #expect(head.status == 206 && head.data == expected.prefix(400) && head.source == .network)
        var rest = URLRequest(url: url)
        rest.setValue("bytes=0-", forHTTPHeaderField: "Range")
        let all = try await pipeline.send(rest).collected()
        #expect(all.status == 206 && all.data == expected && all.headers["Content-Range"] == "bytes 0-999/1000")
        let asked = try await server.lastRange(path)
        #expect(asked.range == "bytes=400-999" && asked.ifRange == "\"v1\"", "only the missing bytes, under If-Range")
        let whole = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(whole.status == 200 && whole.source == .cache && whole.data == expected)
        #expect(try await server.hits(path) == 2)
    }
}
