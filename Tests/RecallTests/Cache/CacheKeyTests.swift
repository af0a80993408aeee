import Foundation
@testable import Recall
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Canonical cache keys", .timeLimit(.minutes(1)))
struct CacheKeyTests {
    let policy = CacheKeyPolicy()

    func key(_ text: String, _ policy: CacheKeyPolicy = CacheKeyPolicy()) -> String? {
        policy.key(for: URLRequest(url: URL(string: text)!))
    }

    @Test(
        "equivalent spellings give one key",
        arguments: [
            ("HTTP://Example.COM/a", "http://example.com/a"),
            ("http://example.com:80/a", "http://example.com/a"),
            ("https://example.com:443/a", "https://example.com/a"),
            ("http://example.com", "http://example.com/"),
            ("http://example.com/a/./b/../c", "http://example.com/a/c"),
            ("http://example.com/%7Euser/%61", "http://example.com/~user/a"),
            ("http://example.com/a%2fb", "http://example.com/a%2Fb"),
            ("http://example.com/a#fragment", "http://example.com/a"),
            ("http://example.com/a?b=2&a=1", "http://example.com/a?a=1&b=2"),
            ("http://example.com/a?", "http://example.com/a"),
            ("http://example.com/a?x=1&&y=2", "http://example.com/a?x=1&y=2"),
            ("http://example.com/a?q=%7e", "http://example.com/a?q=~")
        ])
    func equivalent(lhs: String, rhs: String) {
        #expect(key(lhs) != nil)
        #expect(key(lhs) == key(rhs))
    }

    @Test(
        "different resources give different keys",
        arguments: [
            ("http://example.com/a", "https://example.com/a"),
            ("http://example.com/a", "http://example.com:8080/a"),
            ("http://example.com/a", "http://example.com/A"),
            ("http://example.com/a?x=1", "http://example.com/a?x=2"),
            ("http://example.com/a?x=1&x=2", "http://example.com/a?x=2&x=1"),
            ("http://example.com/a?x=a+b", "http://example.com/a?x=a%20b"),
            ("http://example.com/a%2Fb", "http://example.com/a/b"),
            ("http://example.com/a?k=%26", "http://example.com/a?k=&"),
            ("http://example.com/a", "http://example.org/a"),
            ("http://example.com/a/", "http://example.com/a")
        ])
    func different(lhs: String, rhs: String) {
        #expect(key(lhs) != key(rhs))
    }

    @Test("repeated names keep their order; names are sorted stably")
    func repeatedNames() {
        #expect(key("http://x.test/?b=1&a=2&b=0&a=1") == "http://x.test/?a=2&a=1&b=1&b=0")
    }

    @Test("ignored query parameters, exact and by prefix")
    func ignoredParameters() {
        let policy = CacheKeyPolicy(ignoredQueryParameters: ["utm_*", "fbclid"])
        #expect(key("http://x.test/a?utm_source=x&id=1&fbclid=abc&utm_medium=y", policy) == key("http://x.test/a?id=1"))
        #expect(key("http://x.test/a?utm=1", policy) != key("http://x.test/a"))
    }

    @Test("configured request header fields join the key")
    func headersInKey() {
        let policy = CacheKeyPolicy(headersInKey: ["Accept-Language"])
        var en = URLRequest(url: URL(string: "http://x.test/a")!)
        en.setValue("en", forHTTPHeaderField: "Accept-Language")
        var fr = en
        fr.setValue("fr", forHTTPHeaderField: "accept-language")
        #expect(policy.key(for: en) != policy.key(for: fr))
        var spaced = en
        spaced.setValue("  en ", forHTTPHeaderField: "Accept-Language")
        #expect(policy.key(for: en) == policy.key(for: spaced))
    }

    @Test("non-http URLs and over-long keys are not cached")
    func uncacheable() {
        #expect(key("ftp://x.test/a") == nil)
        #expect(key("file:///tmp/a") == nil)
        #expect(key("http://x.test/" + String(repeating: "a", count: 9000)) == nil)
    }

    /// Rewrites `url` into an equivalent spelling: case, default port, encoded unreserved
    /// characters, lowercase hex, dot segments, shuffled distinct query names, a fragment.
    static func respell(host: String, segments: [String], query: [(String, String)], using rng: inout SeededRandomSource) -> String {
        let scheme = Bool.random(using: &rng) ? "HTTP" : "http"
        let port = Bool.random(using: &rng) ? ":80" : ""
        let hostSpelling = Bool.random(using: &rng) ? host.uppercased() : host
        var path = ""
        for segment in segments {
            if Bool.random(using: &rng) { path += "/./" + "zz/.." }
            path +=
                "/"
                + segment.map { character -> String in
                    // `.` is unreserved but `%2E` is not equivalent to it in a key (see CacheKeyPolicy).
                    guard Bool.random(using: &rng), character != ".", let ascii = character.asciiValue else { return String(character) }
                    let hex = String(ascii, radix: 16)
                    return "%" + (Bool.random(using: &rng) ? hex.uppercased() : hex)
                }.joined()
        }
        let shuffled = query.shuffled(using: &rng).map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        return "\(scheme)://\(hostSpelling)\(port)\(path.isEmpty ? "/" : path)" + (shuffled.isEmpty ? "" : "?" + shuffled)
            + (Bool.random(using: &rng) ? "#frag" : "")
    }

    @Test("property: 2,000 random equivalent spellings share a key; different resources do not collide")
    func properties() {
        var rng = SeededRandomSource(seed: 2026)
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789-._~")
        var seen: [String: String] = [:]
        for _ in 0..<2000 {
            let host = String((0..<Int.random(in: 1...8, using: &rng)).map { _ in alphabet[Int.random(in: 0..<26, using: &rng)] }) + ".test"
            let segments = (0..<Int.random(in: 0...4, using: &rng)).map { _ in
                String((0..<Int.random(in: 1...6, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
            }
            var names = Set<String>()
            let query: [(String, String)] = (0..<Int.random(in: 0...4, using: &rng)).compactMap { _ in
                let name = String((0..<Int.random(in: 1...4, using: &rng)).map { _ in alphabet[Int.random(in: 0..<26, using: &rng)] })
                guard names.insert(name).inserted else { return nil }
                return (name, String(Int.random(in: 0...999, using: &rng)))
            }
            let canonical =
                "http://\(host)/" + segments.joined(separator: "/")
                + (query.isEmpty ? "" : "?" + query.sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }.joined(separator: "&"))
            let baseKey = key(canonical)
            #expect(baseKey != nil)
            for _ in 0..<3 {
                let spelling = Self.respell(host: host, segments: segments, query: query, using: &rng)
                #expect(key(spelling) == baseKey, "\(spelling) vs \(canonical)")
            }
            if let baseKey, let previous = seen[baseKey] {
                #expect(previous == canonical, "two resources share the key \(baseKey)")
            }
            if let baseKey { seen[baseKey] = canonical }
        }
    }

    @Test("SHA-256 matches the FIPS test vectors")
    func sha256() {
        #expect(SHA256.hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            SHA256.hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(SHA256.hex(String(repeating: "a", count: 1000)) == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }

    @Test("the byte classes of percent-encoding normalization are RFC 3986's sets, for all 256 bytes")
    func byteClasses() {
        let unreserved = Set(("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_~").utf8)
        let allowedRaw = Set("!$&'()*+,;=:@/?.".utf8)  // sub-delims, ":", "@", "/", "?", and "." (never decoded)
        for value in 0...255 {
            let byte = UInt8(value)
            #expect(CacheKeyPolicy.isUnreserved(byte) == unreserved.contains(byte), "byte \(value)")
            #expect(CacheKeyPolicy.isAllowedRaw(byte) == allowedRaw.contains(byte), "byte \(value)")
        }
    }
}
