import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// Issue #11, §2: RFC 9111 / RFC 9110 rules of the second edition, over the mock transport
/// (and the offline answer also end to end over a real socket).
@Suite("HTTPCache: RFC rules of the second edition", .timeLimit(.minutes(1)))
struct CacheRFCRulesTests {
    // MARK: Methods

    @Test(
        "a non-error answer to an unknown (extension) method invalidates the URI and same-origin Location/Content-Location",
        arguments: StorageKind.allCases, ["PROPFIND", "M-SEARCH", "POST"])
    func unknownMethodsInvalidate(storage: StorageKind, method: String) async throws {
        let h = CacheHarness(over: storage)
        for path in ["/x", "/moved", "/located"] { h.origin(path, headers: ["Cache-Control": "max-age=600"]) }
        h.origin(
            "/x", method: method, status: 207,
            headers: ["Location": "/moved", "Content-Location": "https://origin.test/located"])
        for path in ["/x", "/moved", "/located"] { try await h.get(path) }
        for path in ["/x", "/moved", "/located"] { #expect(try await h.get(path).source == .cache, "\(path) was not stored") }
        try await h.pipeline.send(h.request("/x", method: method)).collected()
        for path in ["/x", "/moved", "/located"] {
            #expect(try await h.get(path).source == .network, "\(path) survived \(method)")
        }
    }

    @Test("RequestMethod: safe and idempotent as RFC 9110 defines; unknown methods are unsafe")
    func methodSemantics() {
        #expect(RequestMethod.get.isSafe && RequestMethod.head.isSafe && RequestMethod("options").isSafe && RequestMethod.trace.isSafe)
        #expect(!RequestMethod.put.isSafe && RequestMethod.put.isIdempotent && RequestMethod.delete.isIdempotent)
        #expect(!RequestMethod.post.isIdempotent && RequestMethod.post.invalidatesCaches)
        #expect(RequestMethod("propfind") == RequestMethod(rawValue: "PROPFIND"))
        #expect(RequestMethod("PROPFIND").invalidatesCaches && !RequestMethod("M-SEARCH").isIdempotent)
        #expect(RequestMethod(URLRequest(url: URL(string: "https://x.test/")!)) == .get)
    }

    // MARK: Stored fields

    @Test("Connection, the fields it names and the other hop-by-hop fields are not stored (RFC 9111 §3.1)", arguments: StorageKind.allCases)
    func connectionFields(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin(
            "/c",
            headers: [
                "Cache-Control": "max-age=600", "Connection": "X-Hop, close", "X-Hop": "1",
                "Keep-Alive": "timeout=5", "Upgrade": "h2c", "Trailer": "X-T", "X-Kept": "yes"
            ])
        try await h.get("/c")
        let hit = try await h.get("/c")
        #expect(hit.source == .cache)
        for name in ["Connection", "X-Hop", "Keep-Alive", "Upgrade", "Trailer"] { #expect(hit.headers[name] == nil, "\(name)") }
        #expect(hit.headers["X-Kept"] == "yes")
    }

    @Test("a 200 carrying Content-Range is stored and returned with the field", arguments: StorageKind.allCases)
    func contentRangeOn200(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/cr", headers: ["Cache-Control": "max-age=600", "Content-Range": "bytes 0-3/4"], body: "full")
        try await h.get("/cr")
        let hit = try await h.get("/cr")
        #expect(hit.source == .cache)
        #expect(hit.headers["Content-Range"] == "bytes 0-3/4")
    }

    // MARK: Age

    @Test(
        "Age: the first member of a list counts, on one line or several; invalid values are ignored",
        arguments: StorageKind.allCases,
        [
            (["7200, 0"], false), (["0, 7200"], true), (["7200", "0"], false), (["0", "7200"], true),
            (["abc"], true), (["-5"], true), (["1.5"], true), ([" 7200 "], false)
        ])
    func ageParsing(storage: StorageKind, row: ([String], Bool)) async throws {
        let (values, fresh) = row
        let h = CacheHarness(over: storage)
        var headers: HeaderFields = ["Cache-Control": "max-age=3600"]
        for value in values { headers.add("Age", value) }
        h.origin("/age", headers: headers)
        try await h.get("/age")
        #expect((try await h.get("/age").source == .cache) == fresh, "Age \(values)")
    }

    @Test("a copy served after delay carries an Age", arguments: StorageKind.allCases)
    func servedAge(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/aged", headers: ["Cache-Control": "max-age=600", "Age": "30"])
        try await h.get("/aged")
        h.now.advance(12)
        #expect(try await h.get("/aged").headers["Age"] == "42")
    }

    // MARK: HTTP dates

    @Test(
        "HTTP dates: the three RFC 9110 forms parse",
        arguments: [
            "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"
        ])
    func validDates(text: String) {
        #expect(HTTPDate.parse(text, now: Date(timeIntervalSince1970: 1_700_000_000)) == Date(timeIntervalSince1970: 784_111_777))
    }

    @Test(
        "HTTP dates are strict: sloppy spellings are not dates, so such an Expires means stale",
        arguments: [
            "Sun, 06 Nov 1994  08:49:37 GMT", " Sun, 06 Nov 1994 08:49:37 GMT", "Sun 06 Nov 1994 08:49:37 GMT",
            "Sun, 06-Nov-1994 08:49:37 GMT", "Sun, 06.Nov.1994 08:49:37 GMT", "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49:37 +0000",
            "sun, 06 nov 1994 08:49:37 utc", "Sun, 06 Nov 1994 08:49:37 G@T", "Sunday, 06-Nov-94 08:49:37 UTC",
            "Sunday,06-Nov-94 08:49:37 GMT", "Sun Nov 6 08:49:37 1994", "Sun Nov  6 08:49:37 94", "Xyz, 06 Nov 1994 08:49:37 GMT"
        ])
    func strictDates(text: String) async throws {
        #expect(HTTPDate.parse(text) == nil && HTTPDate.parse(text, namesInAnyCase: true) == nil)
        // (A leading space is optional whitespace around the field value, which the field
        // parser removes before the date is read: RFC 9110 §5.5. Only the parser sees it.)
        if !text.hasPrefix(" ") { #expect(try await Self.servedFromCache(expires: text) == false) }
    }

    @Test(
        "Expires with its day, month or GMT in another case is the same date (#39); other dates stay strict",
        arguments: [
            "sun, 06 nov 1994 08:49:37 gmt", "SUN, 06 NOV 1994 08:49:37 GMT", "Sun, 06 nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 gmt", "sunday, 06-NOV-94 08:49:37 Gmt", "sun nov  6 08:49:37 1994"
        ])
    func expiresInAnyCase(text: String) async throws {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(HTTPDate.parse(text, now: now, namesInAnyCase: true) == Date(timeIntervalSince1970: 784_111_777))
        #expect(HTTPDate.parse(text, now: now) == nil, "strict unless asked")
        #expect(try await Self.servedFromCache(expires: text) == true)
    }

    @Test("the control: the same Expires in IMF-fixdate keeps the response fresh", arguments: StorageKind.allCases)
    func strictDatesControl(storage: StorageKind) async throws {
        #expect(try await Self.servedFromCache(expires: "Sun, 06 Nov 1994 08:49:37 GMT", over: storage) == true)
    }

    /// Whether a response stored at 08:19:37 on 6 Nov 1994, with `Date` 08:00:00 and this
    /// `Expires`, is served from cache a moment later (fresh until 08:49:37 if `Expires` is a date).
    static func servedFromCache(expires: String, over storage: StorageKind = .memory) async throws -> Bool {
        let h = CacheHarness(over: storage)
        h.now.advance(784_111_777 - 1_800 - 1_700_000_000)  // the clock at 08:19:37
        h.origin("/exp", headers: ["Expires": expires, "Date": "Sun, 06 Nov 1994 08:00:00 GMT"])
        try await h.get("/exp")
        return try await h.get("/exp").source == .cache
    }

    // MARK: Validators

    @Test("an unquoted ETag from a sloppy origin is sent back quoted, and a quoted 304 matches it", arguments: StorageKind.allCases)
    func unquotedETag(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/tag", [(200, ["Cache-Control": "max-age=0", "ETag": "abc"], "body"), (304, ["ETag": "\"abc\""], "")])
        try await h.get("/tag")
        let second = try await h.get("/tag")
        #expect(second.source == .revalidated)
        #expect(second.bodyText == "body")
        #expect(h.mock.requests(for: "/tag").last?.value(forHTTPHeaderField: "If-None-Match") == "\"abc\"")
    }

    @Test(
        "no stored variant matches the request's Vary fields: their entity tags are offered, and a 304 naming one serves it (RFC 9111 §4.3.1)",
        arguments: StorageKind.allCases)
    func alternatesRevalidated(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.mock.route("GET", "/v") { request in
            if request.value(forHTTPHeaderField: "If-None-Match") == "\"v-a\"" {
                return RecallResponse(status: 304, headers: ["ETag": "\"v-a\"", "Cache-Control": "max-age=600", "Vary": "X-Variant"])
            }
            return .text("representation a", headers: ["Cache-Control": "max-age=600", "ETag": "\"v-a\"", "Vary": "X-Variant"])
        }
        try await h.get("/v", headers: ["X-Variant": "a"])
        let other = try await h.get("/v", headers: ["X-Variant": "b"])
        #expect(other.source == .revalidated)
        #expect(other.bodyText == "representation a")
        #expect(h.mock.requests(for: "/v").last?.value(forHTTPHeaderField: "If-None-Match") == "\"v-a\"")
        #expect(try await h.get("/v", headers: ["X-Variant": "b"]).source == .cache)  // stored for b now
        #expect(try await h.get("/v", headers: ["X-Variant": "a"]).source == .cache)  // a kept
        #expect(h.mock.count(for: "/v") == 2)
    }

    // MARK: POST

    @Test(
        "a POST response with explicit freshness and Content-Location naming its own URI answers a later GET (RFC 9110 §9.3.3)", arguments: StorageKind.allCases
    )
    func postContentLocation(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/doc", method: "POST", headers: ["Cache-Control": "max-age=600", "Content-Location": "/doc"], body: "created")
        h.origin("/doc", body: "from GET")
        try await h.pipeline.send(h.request("/doc", method: "POST")).collected()
        let get = try await h.get("/doc")
        #expect(get.source == .cache)
        #expect(get.bodyText == "created")
        #expect(h.mock.requests(for: "/doc").filter { $0.httpMethod == "GET" }.isEmpty)
    }

    @Test(
        "a POST response without Content-Location, with another one, or without explicit freshness is not stored",
        arguments: StorageKind.allCases,
        [
            ["Cache-Control": "max-age=600"], ["Cache-Control": "max-age=600", "Content-Location": "/other"],
            ["Content-Location": "/doc2"]
        ])
    func postNotStored(storage: StorageKind, headers: [String: String]) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/doc2", method: "POST", headers: HeaderFields(headers), body: "created")
        h.origin("/doc2", body: "from GET")
        try await h.pipeline.send(h.request("/doc2", method: "POST")).collected()
        #expect(try await h.get("/doc2").bodyText == "from GET")
    }

    // MARK: HEAD

    @Test("a 200 to HEAD with matching validators freshens the stored GET response (RFC 9111 §4.3.5)", arguments: StorageKind.allCases)
    func headFreshens(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/h", headers: ["Cache-Control": "max-age=10", "ETag": "\"a\"", "X-Version": "1"], body: "full body")
        h.origin("/h", method: "HEAD", headers: ["Cache-Control": "max-age=1000", "ETag": "\"a\"", "X-Version": "2"], body: "")
        try await h.get("/h")
        h.now.advance(20)  // stale
        let head = try await h.pipeline.send(h.request("/h", method: "HEAD")).collected()
        #expect(head.status == 200)
        let get = try await h.get("/h")
        #expect(get.source == .cache)  // fresh again, for max-age=1000
        #expect(get.bodyText == "full body")
        #expect(get.headers["X-Version"] == "2")
        #expect(h.mock.count(for: "/h") == 2)  // the first GET and the HEAD
    }

    @Test("a 200 to HEAD with another validator shows the stored GET response is outdated: it is dropped", arguments: StorageKind.allCases)
    func headOutdates(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/h2", headers: ["Cache-Control": "max-age=10", "ETag": "\"a\""], body: "old body")
        h.origin("/h2", method: "HEAD", headers: ["Cache-Control": "max-age=1000", "ETag": "\"b\""], body: "")
        try await h.get("/h2")
        h.now.advance(20)
        try await h.pipeline.send(h.request("/h2", method: "HEAD")).collected()
        h.origin("/h2", headers: ["Cache-Control": "max-age=10", "ETag": "\"b\""], body: "new body")
        let get = try await h.get("/h2")
        #expect(get.source == .network)
        #expect(get.bodyText == "new body")
        // Dropped, not merely stale: the GET went out without validators of the old response.
        #expect(h.mock.requests(for: "/h2").last?.value(forHTTPHeaderField: "If-None-Match") == nil)
    }

    @Test(
        "a 200 to HEAD without validators freshens a stored response without validators, keeps the fields it does not carry, updates those it does",
        arguments: StorageKind.allCases)
    func headWithoutValidatorsFreshens(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/plain", headers: ["Cache-Control": "max-age=2", "Template-A": "1", "Template-B": "kept"], body: "full body")
        h.origin("/plain", method: "HEAD", headers: ["Cache-Control": "max-age=1000", "Template-A": "2"], body: "")
        try await h.get("/plain")
        h.now.advance(10)  // stale, and nothing to validate with: the HEAD goes to the origin as it is
        let head = try await h.pipeline.send(h.request("/plain", method: "HEAD")).collected()
        #expect(head.source == .network)
        #expect(h.mock.requests(for: "/plain").last?.httpMethod == "HEAD")
        let get = try await h.get("/plain")
        #expect(get.source == .cache)  // fresh for max-age=1000
        #expect(get.bodyText == "full body")
        #expect(get.headers["Template-A"] == "2")
        #expect(get.headers["Template-B"] == "kept")
        #expect(h.mock.count(for: "/plain") == 2)
    }

    @Test(
        "a HEAD answer that updates the stored GET response keeps its body when the transport streams bodies, and carries the fields only the stored response has"
    )
    func headOverStreamedBodies() async throws {
        let h = CacheHarness(transport: { StreamedBodies(inner: $0) })
        h.origin("/s", headers: ["Cache-Control": "max-age=2", "Template-A": "1"], body: "the stored body")
        h.origin("/s", method: "HEAD", headers: ["Cache-Control": "max-age=1000", "Set-Cookie": "seen=1"], body: "")
        #expect(try await h.get("/s").collected().bodyText == "the stored body")
        h.now.advance(10)
        let head = try await h.pipeline.send(h.request("/s", method: "HEAD")).collected()
        #expect(head.source == .network && head.status == 200)
        #expect(head.headers["Template-A"] == "1", "the stored field the answer lacks")
        #expect(head.headers["Set-Cookie"] == "seen=1", "the answer's own fields, stored or not")
        let get = try await h.get("/s").collected()
        #expect(get.source == .cache)
        #expect(get.bodyText == "the stored body")
        #expect(get.headers["Cache-Control"] == "max-age=1000")
    }

    @Test(
        "a 200 to HEAD is not a match when only one side has a validator, or another Content-Length: the stored GET is dropped",
        arguments: [
            ["Cache-Control": "max-age=1000", "ETag": "\"new\""], ["Cache-Control": "max-age=1000", "Last-Modified": "Wed, 01 Jan 2020 00:00:00 GMT"],
            ["Cache-Control": "max-age=1000", "Content-Length": "99"]
        ] as [HeaderFields])
    func headMismatchOutdates(headFields: HeaderFields) async throws {
        let h = CacheHarness()
        h.origin("/m", headers: ["Cache-Control": "max-age=2", "Content-Length": "8"], body: "old body")
        h.origin("/m", method: "HEAD", headers: headFields, body: "")
        try await h.get("/m")
        h.now.advance(10)
        try await h.pipeline.send(h.request("/m", method: "HEAD")).collected()
        h.origin("/m", headers: ["Cache-Control": "max-age=600"], body: "new body")
        #expect(try await h.get("/m").bodyText == "new body")
    }

    @Test(
        "a 304 updates the stored Content-Encoding and, on a full response, Content-Range, like other fields; never Content-Length",
        arguments: StorageKind.allCases)
    func notModifiedUpdatesCodingAndRange(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin(
            "/coded",
            [
                (
                    200,
                    [
                        "Cache-Control": "max-age=2", "ETag": "\"c1\"", "Content-Encoding": "x-coding-a", "Content-Range": "bytes 0-9/10",
                        "Content-Length": "10"
                    ], "0123456789"
                ),
                (
                    304,
                    [
                        "Cache-Control": "max-age=600", "ETag": "\"c1\"", "Content-Encoding": "x-coding-b", "Content-Range": "bytes 0-9/11",
                        "Content-Length": "0"
                    ], ""
                )
            ])
        try await h.get("/coded")
        h.now.advance(10)
        let revalidated = try await h.get("/coded").collected()
        #expect(revalidated.source == .revalidated)
        for response in [revalidated, try await h.get("/coded").collected()] {
            #expect(response.headers["Content-Encoding"] == "x-coding-b")
            #expect(response.headers["Content-Range"] == "bytes 0-9/11")
            #expect(response.headers["Content-Length"] == "10")
            #expect(response.bodyText == "0123456789")
        }
    }

    @Test("a response the origin was slow to generate is served with an Age that counts the delay (RFC 9111 §4.2.3)", arguments: StorageKind.allCases)
    func ageCountsGenerationDelay(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        let now = h.now
        h.mock.route("GET", "/slow") { _ in
            now.advance(5)  // the origin takes 5 s, and dates its answer when it is done
            return .text("slow", headers: ["Cache-Control": "max-age=3600", "Date": HTTPDate.format(now.value)])
        }
        let first = try await h.get("/slow")
        #expect(first.source == .network)
        #expect(first.headers["Age"] == nil)  // first-hand: the origin made it for this request (RFC 9111 §5.1)
        let hit = try await h.get("/slow")
        #expect(hit.source == .cache)
        #expect(hit.headers["Age"] == "5")
    }

    // MARK: Vary

    @Test("Accept-Language is normalized (order, case, quality values) before variants are compared", arguments: StorageKind.allCases)
    func acceptLanguage(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/lang", headers: ["Cache-Control": "max-age=600", "Vary": "Accept-Language"])
        try await h.get("/lang", headers: ["Accept-Language": "en-US, fr;q=0.5, de;q=0.5"])
        #expect(try await h.get("/lang", headers: ["Accept-Language": "de;q=0.50,fr;q=.5 , EN-us"]).source == .cache)
        #expect(try await h.get("/lang", headers: ["Accept-Language": "fr, en-US;q=0.5"]).source == .network)
    }

    /// An origin that answers in the first language of `Accept-Language` it has among
    /// `languages` (else the first of them), with `Content-Language`, varying on the field and
    /// `extraVary`.
    static func languageOrigin(
        _ h: CacheHarness, _ path: String, languages: [String], extraVary: String? = nil,
        contentLanguage: Bool = true
    ) {
        h.mock.route("GET", path) { request in
            let asked = CacheRules.languageRanges(request.value(forHTTPHeaderField: "Accept-Language") ?? "")
                .filter { $0.quality > 0 }.sorted { $0.quality > $1.quality }.map(\.tag)
            let language = asked.first(where: languages.contains) ?? languages[0]
            var headers: HeaderFields = ["Cache-Control": "max-age=600", "Vary": "Accept-Language" + (extraVary.map { ", " + $0 } ?? "")]
            if contentLanguage { headers["Content-Language"] = language }
            return .text("in \(language)", headers: headers)
        }
    }

    @Test("Accept-Language with q-values selects a stored variant by its Content-Language (RFC 9110 §12.5.4)", arguments: StorageKind.allCases)
    func acceptLanguageSelectsByQuality(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        Self.languageOrigin(h, "/select", languages: ["de", "en"])
        // The origin has no French: the German answer to "fr, de" is stored for that request.
        #expect(try await h.get("/select", headers: ["Accept-Language": "fr, de"]).collected().bodyText == "in de")
        // German preferred, French less: the stored German variant answers, though stored for another value.
        let german = try await h.get("/select", headers: ["Accept-Language": "fr;q=0.5, de;q=1.0"]).collected()
        #expect(german.source == .cache)
        #expect(german.bodyText == "in de")
        #expect(german.headers["Content-Language"] == "de")
        // Range "de" matches tag "de"; a request that prefers a language not stored goes to the origin.
        let english = try await h.get("/select", headers: ["Accept-Language": "en, de;q=0.5"]).collected()
        #expect(english.source == .network)
        #expect(english.bodyText == "in en")
        // Both stored: each request gets the one it prefers most.
        #expect(try await h.get("/select", headers: ["Accept-Language": "de;q=0.2, EN"]).collected().bodyText == "in en")
        #expect(try await h.get("/select", headers: ["Accept-Language": "en;q=0.3, de;q=0.9"]).collected().bodyText == "in de")
        #expect(h.hits("/select") == 2)
    }

    @Test("a language variant is not chosen when the request ranks it lower, excludes it, asks for '*', omits the field, or other Vary fields differ")
    func acceptLanguageSelectionRefuses() async throws {
        let h = CacheHarness()
        Self.languageOrigin(h, "/refuse", languages: ["de-ch", "fr"])
        #expect(try await h.get("/refuse", headers: ["Accept-Language": "de-CH"]).collected().bodyText == "in de-ch")
        let refusals: [String?] = [
            "fr, de;q=0.5",  // German acceptable, French preferred: the origin may have French
            "de, de-ch;q=0",  // Swiss German excluded
            "*",  // any language: the origin decides
            "it",  // not stored
            nil  // no Accept-Language: Vary's absent field
        ]
        for accepted in refusals {
            var headers: [String: String] = [:]
            if let accepted { headers["Accept-Language"] = accepted }
            #expect(try await h.get("/refuse", headers: headers).source == .network, "\(accepted ?? "no field") chose the stored variant")
        }
        // Range "de" matches the tag "de-CH": a Swiss variant answers a request for German.
        #expect(try await h.get("/refuse", headers: ["Accept-Language": "de"]).collected().bodyText == "in de-ch")

        let other = CacheHarness()
        Self.languageOrigin(other, "/encoded", languages: ["de"], extraVary: "Accept-Encoding")
        try await other.get("/encoded", headers: ["Accept-Language": "en, de", "Accept-Encoding": "gzip"])
        #expect(try await other.get("/encoded", headers: ["Accept-Language": "de", "Accept-Encoding": "gzip"]).source == .cache)
        #expect(try await other.get("/encoded", headers: ["Accept-Language": "de", "Accept-Encoding": "br"]).source == .network)

        let unlabelled = CacheHarness()
        Self.languageOrigin(unlabelled, "/plain", languages: ["de"], contentLanguage: false)
        try await unlabelled.get("/plain", headers: ["Accept-Language": "en, de"])
        #expect(try await unlabelled.get("/plain", headers: ["Accept-Language": "de"]).source == .network, "no Content-Language, nothing to select by")
    }

    @Test("CacheRules.prefersLanguage: top-quality ranges match a tag or its subtags; q=0 excludes; '*' selects nothing")
    func prefersLanguage() {
        let rules = CacheRules()
        func entry(_ language: String) -> CacheEntry {
            CacheEntry(status: 200, headers: ["Content-Language": language], body: Data(), url: nil, requestTime: Date(), responseTime: Date())
        }
        let rows: [(content: String, accepted: String, prefers: Bool)] = [
            ("de", "fr;q=0.5, de;q=1.0", true), ("de", "de", true), ("DE", "de", true), ("de-CH", "de", true),
            ("de", "de-ch", false), ("de", "fr, de;q=0.9", false), ("de", "de;q=0.5, fr;q=0.5", true),
            ("de", "de, de;q=0", false), ("de-ch", "de, de-ch;q=0", false), ("en, de", "de", true), ("de", "*", false),
            ("de", "de;q=0", false), ("de", "", false), ("", "de", false), ("de", "de;q=abc", true)
        ]
        for row in rows {
            #expect(rules.prefersLanguage(of: entry(row.content), accepted: row.accepted) == row.prefers, "\(row)")
        }
    }

    // MARK: Byte ranges

    @Test(
        "a Range request for a fully stored, fresh response is answered from cache with 206, Content-Range and the bytes",
        arguments: StorageKind.allCases,
        [
            ("bytes=2-5", "2345", "bytes 2-5/10"), ("bytes=7-", "789", "bytes 7-9/10"), ("bytes=-3", "789", "bytes 7-9/10"),
            ("bytes=5-100", "56789", "bytes 5-9/10"), ("bytes=0-0", "0", "bytes 0-0/10"), ("bytes=-20", "0123456789", "bytes 0-9/10"),
            ("Bytes= 1-2", "12", "bytes 1-2/10")
        ])
    func rangeFromCache(storage: StorageKind, row: (String, String, String)) async throws {
        let (field, body, contentRange) = row
        let h = CacheHarness(over: storage)
        h.origin("/bytes", headers: ["Cache-Control": "max-age=600", "Content-Length": "10", "ETag": "\"r\""], body: "0123456789")
        try await h.get("/bytes")
        let partial = try await h.get("/bytes", headers: ["Range": field])
        #expect(partial.status == 206)
        #expect(partial.source == .cache)
        #expect(partial.bodyText == body)
        #expect(partial.headers["Content-Range"] == contentRange)
        #expect(partial.headers["Content-Length"] == String(body.count))
        #expect(partial.headers["ETag"] == "\"r\"")
        #expect(partial.data.startIndex == 0)
        #expect(h.hits("/bytes") == 1)
    }

    @Test("an unsatisfiable range gets 416 with the length; several ranges, If-Range or a stale entry go to the origin", arguments: StorageKind.allCases)
    func rangeEdges(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/b", headers: ["Cache-Control": "max-age=60"], body: "0123456789")
        try await h.get("/b")
        let unsatisfiable = try await h.get("/b", headers: ["Range": "bytes=10-20"])
        #expect(unsatisfiable.status == 416)
        #expect(unsatisfiable.headers["Content-Range"] == "bytes */10")
        #expect(unsatisfiable.data.isEmpty)
        #expect(h.hits("/b") == 1)
        try await h.get("/b", headers: ["Range": "bytes=0-1,4-5"])
        try await h.get("/b", headers: ["Range": "bytes=0-1", "If-Range": "\"x\""])
        try await h.get("/b", headers: ["Range": "items=0-1"])
        #expect(h.hits("/b") == 4)
        h.now.advance(120)  // stale
        try await h.get("/b", headers: ["Range": "bytes=0-1"])
        #expect(h.hits("/b") == 5)
        #expect(try await h.get("/missing", headers: ["Range": "bytes=0-1", "Cache-Control": "only-if-cached"]).status == 504)
    }

    @Test("ByteRange parses single ranges only")
    func byteRangeParsing() {
        #expect(ByteRange(rangeField: "bytes=1-2") == .closed(first: 1, last: 2))
        #expect(ByteRange(rangeField: "bytes=5-") == .from(5))
        #expect(ByteRange(rangeField: "bytes=-5") == .suffix(5))
        for bad in ["bytes=2-1", "bytes=-", "bytes=a-b", "bytes=1-2,3-4", "items=1-2", "bytes=1-2-3", "bytes=99999999999999999999-"] {
            #expect(ByteRange(rangeField: bad) == nil, "\(bad)")
        }
        #expect(ByteRange.suffix(0).bounds(length: 10) == nil)
        #expect(ByteRange.from(0).bounds(length: 0) == nil)
    }

    @Test("end to end: a range of a response stored from the loopback origin is served from cache", arguments: StorageKind.allCases)
    func rangeEndToEnd(storage: StorageKind) async throws {
        let server = try await OriginServer.shared.value
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [HTTPCache()])
        let path = OriginServer.uniquePath("range")
        let url = server.url(path, ["cc": "max-age=600", "size": "1000"])
        #expect(try await pipeline.send(URLRequest(url: url)).collected().data.count == 1000)
        var request = URLRequest(url: url)
        request.setValue("bytes=100-199", forHTTPHeaderField: "Range")
        let partial = try await pipeline.send(request).collected()
        #expect(partial.status == 206)
        #expect(partial.data.count == 100)
        #expect(partial.headers["Content-Range"] == "bytes 100-199/1000")
        #expect(try await server.hits(path) == 1)
    }

    // MARK: Offline answers

    static func offlineHarness(
        cacheControl: String = "max-age=60", configuration: CacheConfiguration = CacheConfiguration(),
        failure: any Error = TransportError(.cannotConnect), over storage: StorageKind = .memory
    ) async throws -> CacheHarness {
        let h = CacheHarness(over: storage, configuration: configuration)
        h.mock.route("GET", "/off", .text("stored", headers: ["Cache-Control": cacheControl]), .error(failure))
        try await h.get("/off")
        h.now.advance(600)  // well past freshness
        return h
    }

    @Test(
        "disconnected: refused, reset, DNS failure or an open breaker serve the stored response stale",
        arguments: [TransportError.Code.cannotConnect, .connectionLost, .dnsFailure])
    func offlineServesStale(kind: TransportError.Code) async throws {
        let h = try await Self.offlineHarness(failure: TransportError(kind))
        let response = try await h.get("/off")
        #expect(response.source == .stale)
        #expect(response.bodyText == "stored")
        #expect(h.cache.statistics.staleServed[.disconnected] == 1)
    }

    @Test("disconnected: a circuit breaker refusing counts as disconnected")
    func offlineBreaker() async throws {
        let h = try await Self.offlineHarness(failure: CircuitOpenError(partition: "origin.test", retryIn: .seconds(5)))
        #expect(try await h.get("/off").source == .stale)
    }

    @Test("not disconnected: a timeout or a 5xx is not served stale (that is stale-if-error's job)", arguments: StorageKind.allCases)
    func notOffline(storage: StorageKind) async throws {
        let timeout = try await Self.offlineHarness(failure: TransportError(.timedOut))
        await #expect(throws: TransportError.self) { try await timeout.get("/off") }
        let h = CacheHarness(over: storage)
        h.origin("/5xx", [(200, ["Cache-Control": "max-age=60"], "stored"), (503, [:], "down")])
        try await h.get("/5xx")
        h.now.advance(600)
        #expect(try await h.get("/5xx").status == 503)
    }

    @Test("disconnected: must-revalidate, no-cache, request no-cache, request max-stale and the staleness limit forbid it")
    func offlineForbidden() async throws {
        let mustRevalidate = try await Self.offlineHarness(cacheControl: "max-age=60, must-revalidate")
        #expect(try await mustRevalidate.get("/off").status == 504)
        let noCache = try await Self.offlineHarness(cacheControl: "max-age=60, no-cache")
        await #expect(throws: TransportError.self) { try await noCache.get("/off") }
        let requestNoCache = try await Self.offlineHarness()
        await #expect(throws: TransportError.self) { try await requestNoCache.get("/off", headers: ["Cache-Control": "no-cache"]) }
        let maxStale = try await Self.offlineHarness()
        await #expect(throws: TransportError.self) { try await maxStale.get("/off", headers: ["Cache-Control": "max-stale=10"]) }
        var short = CacheConfiguration()
        short.maxDisconnectedStaleness = 100
        let limited = try await Self.offlineHarness(configuration: short)
        await #expect(throws: TransportError.self) { try await limited.get("/off") }
        var off = CacheConfiguration()
        off.servesStaleWhenDisconnected = false
        let disabled = try await Self.offlineHarness(configuration: off)
        await #expect(throws: TransportError.self) { try await disabled.get("/off") }
    }

    @Test("end to end: the origin's port stops answering (connection refused); the stored response is served stale")
    func offlineEndToEnd() async throws {
        let server = try await OriginServer.shared.value
        let refusedPort = try Self.closedPort()
        let cache = HTTPCache()
        let down = Locked(false)
        let transport = ClosureTransport { request in
            var request = request
            if down.withLock({ $0 }), var components = URLComponents(url: request.url!, resolvingAgainstBaseURL: false) {
                components.port = refusedPort
                request.url = components.url
            }
            return try await URLSessionTransport().send(request).collected()
        }
        let pipeline = Pipeline(transport: transport, hooks: [cache], retrierFactory: .exponentialBackoff(base: .milliseconds(1), maxAttempts: 2))
        let url = server.url(OriginServer.uniquePath("offline"), ["cc": "max-age=0"])
        #expect(try await pipeline.send(URLRequest(url: url)).collected().source == .network)
        down.withLock { $0 = true }
        let offline = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(offline.source == .stale)
        #expect(offline.status == 200)
        #expect(cache.statistics.staleServed[.disconnected] == 1)
    }

    @Test("end to end: a 304 that does not match is followed by one unconditional request, and the caller gets a 200")
    func unmatched304EndToEnd() async throws {
        let server = try await OriginServer.shared.value
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let path = OriginServer.uniquePath("bad304")
        let url = server.url(path, ["cc": "max-age=0", "etag": "v1", "bad304": "1"])
        #expect(try await pipeline.send(URLRequest(url: url)).collected().status == 200)
        let second = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(second.status == 200)
        #expect(second.source == .network)
        #expect(!second.data.isEmpty)
        #expect(try await server.hits(path) == 3)
        #expect(cache.statistics.refetched == 1)
    }

    /// A loopback port nothing listens on (bound, then closed).
    static func closedPort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Hands `inner`'s answers with their bodies as streams, as network transports do.
struct StreamedBodies: Transport {
    let inner: any Transport
    func send(_ request: URLRequest) async throws -> RecallResponse {
        var response = try await inner.send(request)
        let bytes = try await response.body.collect(upTo: 1 << 30)
        response.body = ResponseBody.producing(expectedLength: bytes.count, url: response.url) { writer in
            if !bytes.isEmpty { try await writer.write(bytes) }
        }
        return response
    }
}

/// A transport made of a closure.
struct ClosureTransport: Transport {
    let body: @Sendable (URLRequest) async throws -> RecallResponse
    init(_ body: @escaping @Sendable (URLRequest) async throws -> RecallResponse) { self.body = body }
    func send(_ request: URLRequest) async throws -> RecallResponse { try await body(request) }
}
