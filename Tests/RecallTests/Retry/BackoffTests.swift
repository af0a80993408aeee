import Foundation
import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Backoff, jitter and HTTP dates", .timeLimit(.minutes(1)))
struct BackoffTests {
    @Test("constant, linear and exponential shapes; the cap applies before jitter")
    func shapes() {
        #expect((1...4).map { Backoff.constant(.seconds(2)).delay(forRetry: $0) } == Array(repeating: .seconds(2), count: 4))
        let linear = Backoff.linear(base: .seconds(1), increment: .milliseconds(500), cap: .seconds(2))
        #expect((1...4).map { linear.delay(forRetry: $0) } == [.seconds(1), .milliseconds(1500), .seconds(2), .seconds(2)])
        let exponential = Backoff.exponential(base: .milliseconds(100), multiplier: 2, cap: .seconds(1))
        #expect(
            (1...6).map { exponential.delay(forRetry: $0) }
                == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)])
        // Hostile parameters never overflow or go negative.
        #expect(exponential.delay(forRetry: Int.max) == .seconds(1))
        #expect(Backoff.exponential(base: .seconds(-5), multiplier: .infinity, cap: .seconds(3)).delay(forRetry: 3) == .zero)
    }

    @Test("jitter stays in its range", arguments: Jitter.allCases)
    func jitterRanges(jitter: Jitter) {
        let backoff = Backoff.exponential(base: .milliseconds(100), multiplier: 2, cap: .seconds(5))
        let random = SeededRandomSource(seed: 7)
        var previous = backoff.base
        for retry in 1...200 {
            let delay = backoff.delay(forRetry: retry % 8 + 1)
            let jittered = jitter.apply(to: delay, previous: previous, backoff: backoff, random: random)
            switch jitter {
            case .none: #expect(jittered == delay)
            case .full: #expect(jittered >= .zero && jittered <= delay)
            case .equal: #expect(jittered >= delay / 2 && jittered <= delay)
            case .decorrelated: #expect(jittered >= backoff.base && jittered <= backoff.cap)
            }
            previous = jittered
        }
    }

    @Test("golden: the delay sequence for seed 42 with full jitter is pinned")
    func goldenSequence() async throws {
        let mock = MockTransport()
        mock.route("GET", "/flaky", .status(503))
        let clock = ManualClock(autoAdvance: true)
        let factory: BackoffRetrierFactory = .exponentialBackoff(
            base: .milliseconds(100), multiplier: 2, cap: .seconds(10),
            jitter: .full, maxAttempts: 6, random: SeededRandomSource(seed: 42))
        let pipeline = Pipeline(transport: mock, retrierFactory: factory, clock: clock)
        _ = try await pipeline.send(URLRequest(url: URL(string: "https://x.test/flaky")!))
        let milliseconds = clock.sleeps.map { Int(($0 / .milliseconds(1)).rounded()) }
        #expect(milliseconds == Self.goldenFullJitterSeed42)
        #expect(mock.count(for: "/flaky") == 6)
    }

    /// Full jitter over 100, 200, 400, 800, 1600 ms with SplitMix64(seed: 42), computed
    /// independently in Python; a change here changes every seeded user's delays.
    static let goldenFullJitterSeed42 = [74, 32, 111, 275, 61]

    @Test("HTTP dates: IMF-fixdate, RFC 850 and asctime parse to the same instant")
    func httpDates() throws {
        let expected = Date(timeIntervalSince1970: 784_111_777)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", now: Date(timeIntervalSince1970: 1_700_000_000)) == expected)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == expected)
        #expect(HTTPDate.format(expected) == "Sun, 06 Nov 1994 08:49:37 GMT")
        for bad in [
            "", "yesterday", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun, 29 Feb 2023 08:00:00 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", String(repeating: "9", count: 500),
            "Sun, 06 Nov 1994 08:49:37 PST", "0", "-1"
        ] {
            #expect(HTTPDate.parse(bad) == nil, "\(bad) should not parse")
        }
        #expect(HTTPDate.parse("Thu, 29 Feb 2024 00:00:00 GMT") != nil)
        // Found by scripts/fuzz.sh: years before 1000 must be zero-padded to four digits.
        let early = try #require(HTTPDate.parse("Wed, 05 Dec 0559 01:53:15 GMT"))
        #expect(HTTPDate.format(early) == "Wed, 05 Dec 0559 01:53:15 GMT")  // weekday checked with Python
    }

    @Test("format and parse round-trip over a wide range of dates")
    func roundTrip() {
        let random = SeededRandomSource(seed: 1)
        for _ in 0..<2000 {
            let date = Date(timeIntervalSince1970: (random.nextUnit() * 8_000_000_000).rounded(.down) - 1_000_000_000)
            #expect(HTTPDate.parse(HTTPDate.format(date)) == date)
        }
    }

    @Test("Retry-After: delta-seconds, dates, and hostile values")
    func retryAfterParsing() {
        let now = Date(timeIntervalSince1970: 784_111_777)
        #expect(RetryAfter.parse("120", now: now) == .seconds(120))
        #expect(RetryAfter.parse(" 0 ", now: now) == .zero)
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:50:07 GMT", now: now) == .seconds(30))
        #expect(RetryAfter.parse("Sunday, 06-Nov-94 08:50:07 GMT", now: now) == .seconds(30))
        #expect(RetryAfter.parse("Sun Nov  6 08:50:07 1994", now: now) == .seconds(30))
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:00:00 GMT", now: now) == .zero)
        #expect(RetryAfter.parse("99999999999999999999999999999", now: now) == RetryAfter.ceiling)
        for hostile in ["-5", "1.5", "soon", "", "0x10", "Sun, 06 Nov 1994"] {
            #expect(RetryAfter.parse(hostile, now: now) == nil, "\(hostile)")
        }
    }
}
