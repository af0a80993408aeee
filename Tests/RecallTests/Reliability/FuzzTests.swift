import Foundation
import Recall
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Random-input property tests of every parser that reads untrusted text. The iteration count
/// comes from RECALL_FUZZ_ITERATIONS (20,000 by default; scripts/fuzz.sh runs 200,000 in release).
@Suite("Reliability: fuzzed parsers", .timeLimit(.minutes(10)))
struct FuzzTests {
    static let iterations = ProcessInfo.processInfo.environment["RECALL_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 20_000

    /// Text built from pieces that parsers care about, plus random bytes and Unicode.
    static func hostile(_ rng: inout SeededRandomSource, pieces: [String]) -> String {
        let extra = [
            "\"", "\\", ",", "=", ";", " ", "\t", "%", "%%", "%zz", "%2", "..", "/", "?", "#", "&", "\u{0}", "é", "😀",
            "-1", "99999999999999999999999", "0", "1.5", "GMT", "Sun,", "Nov", "-", ":", "[", "]", "@"
        ]
        let all = pieces + extra
        var text = ""
        for _ in 0..<Int.random(in: 0...12, using: &rng) {
            if Int.random(in: 0..<8, using: &rng) == 0 {
                text.unicodeScalars.append(Unicode.Scalar(UInt8.random(in: 0...127, using: &rng)))
            } else {
                text += all.randomElement(using: &rng)!
            }
        }
        return text
    }

    @Test("Cache-Control: never crashes; delta-seconds are never negative nor above 2^31")
    func cacheControl() {
        var rng = SeededRandomSource(seed: 1)
        let pieces = [
            "max-age", "s-maxage", "no-cache", "no-store", "max-stale", "min-fresh", "stale-if-error", "stale-while-revalidate",
            "private", "public", "must-revalidate", "immutable", "60", "\"60\""
        ]
        for _ in 0..<Self.iterations {
            let directives = CacheDirectives(Self.hostile(&rng, pieces: pieces))
            for name in ["max-age", "min-fresh", "stale-if-error", "stale-while-revalidate"] {
                if let value = directives.seconds(name) { #expect(value >= 0 && value <= 2_147_483_648) }
            }
            _ = (directives.noCache, directives.noCacheFields, directives.maxStale, directives.isPrivate)
        }
    }

    @Test("HTTP dates: never crash; whatever parses formats back to the same instant")
    func httpDates() {
        var rng = SeededRandomSource(seed: 2)
        let pieces = ["Sun, ", "Sunday, ", "06", " Nov ", "1994", "94", " 08:49:37", " GMT", "Feb", "29", "-Nov-", "  6", "24:00:00", "23:59:60"]
        var parsed = 0
        for iteration in 0..<Self.iterations {
            var text = Self.hostile(&rng, pieces: pieces)
            if iteration % 4 == 0 {
                // A valid date, sometimes with one character changed.
                text = HTTPDate.format(Date(timeIntervalSince1970: Double(Int64.random(in: -5_000_000_000...50_000_000_000, using: &rng))))
                if Bool.random(using: &rng), !text.isEmpty {
                    var scalars = Array(text.unicodeScalars)
                    scalars[Int.random(in: 0..<scalars.count, using: &rng)] = Unicode.Scalar(UInt8.random(in: 32...126, using: &rng))
                    text = String(String.UnicodeScalarView(scalars))
                }
            }
            if let date = HTTPDate.parse(text) {
                parsed += 1
                #expect(HTTPDate.parse(HTTPDate.format(date)) == date)
            }
        }
        #expect(parsed >= Self.iterations / 8)
    }

    @Test("Retry-After: never crashes; the hint is between zero and the ceiling")
    func retryAfter() {
        var rng = SeededRandomSource(seed: 3)
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let pieces = ["120", "0", "Sun, 06 Nov 1994 08:49:37 GMT", "Wed, 21 Oct 2099 07:28:00 GMT", "18446744073709551616"]
        for _ in 0..<Self.iterations {
            if let hint = RetryAfter.parse(Self.hostile(&rng, pieces: pieces), now: now) {
                #expect(hint >= .zero && hint <= RetryAfter.ceiling)
            }
        }
    }

    @Test("Vary: never crashes; names are lowercased and trimmed")
    func vary() {
        var rng = SeededRandomSource(seed: 4)
        let rules = CacheRules()
        let pieces = ["Accept", "accept-encoding", "*", "Cookie", ", ", "User-Agent"]
        for _ in 0..<Self.iterations {
            let headers = HeaderFields([("Vary", Self.hostile(&rng, pieces: pieces)), ("vary", Self.hostile(&rng, pieces: pieces))])
            for name in rules.varyNames(of: headers) {
                #expect(name == name.lowercased())
                #expect(!name.isEmpty)
            }
        }
    }

    @Test("key canonicalization: never crashes, is idempotent, and keeps scheme and host")
    func canonicalization() {
        var rng = SeededRandomSource(seed: 5)
        let policy = CacheKeyPolicy(ignoredQueryParameters: ["utm_*"])
        let pieces = [
            "http://", "https://", "HTTP://", "a.test", "A.Test", ":80", ":443", ":8080", "/", "./", "../", "%2e", "%7E", "%7e",
            "?", "&", "=", "utm_x", "b=2", "a=1", "#frag", "user@", "[::1]"
        ]
        var checked = 0
        for _ in 0..<Self.iterations {
            let text = Self.hostile(&rng, pieces: pieces)
            guard let url = URL(string: text), let canonical = policy.canonicalURL(url) else { continue }
            checked += 1
            #expect(canonical.hasPrefix("http://") || canonical.hasPrefix("https://"))
            if let again = URL(string: canonical) {
                #expect(policy.canonicalURL(again) == canonical, "not idempotent: \(text) → \(canonical)")
            }
        }
        #expect(checked > 0)
    }
}
