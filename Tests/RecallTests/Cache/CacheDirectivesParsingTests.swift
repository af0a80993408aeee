import Foundation
import Recall
import Testing

@Suite("Cache-Control parsing on bytes")
struct CacheControlParsingTests {
    /// The parser Recall had before it read bytes (Characters and Substrings): the reference
    /// the byte parser must agree with.
    private static func reference(_ text: String) -> [(String, String?)] {
        func trim(_ text: Substring) -> String {
            String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
        }
        var directives: [(String, String?)] = []
        var chars = Substring(text)
        while !chars.isEmpty {
            chars = chars.drop { $0 == " " || $0 == "\t" || $0 == "," }
            guard !chars.isEmpty else { break }
            let name = chars.prefix { $0 != "=" && $0 != "," }
            chars = chars.dropFirst(name.count)
            var value: String?
            if chars.first == "=" {
                chars = chars.dropFirst()
                chars = chars.drop { $0 == " " || $0 == "\t" }
                if chars.first == "\"" {
                    chars = chars.dropFirst()
                    var unquoted = ""
                    var escaped = false
                    while let character = chars.first {
                        chars = chars.dropFirst()
                        if escaped { unquoted.append(character); escaped = false; continue }
                        if character == "\\" { escaped = true; continue }
                        if character == "\"" { break }
                        unquoted.append(character)
                    }
                    value = unquoted
                    chars = chars.drop { $0 != "," }
                } else {
                    let raw = chars.prefix { $0 != "," }
                    chars = chars.dropFirst(raw.count)
                    value = trim(raw)
                }
            }
            let trimmed = trim(name).lowercased()
            if !trimmed.isEmpty { directives.append((trimmed, value)) }
        }
        return directives
    }

    private static func same(_ text: String) -> Bool {
        let parsed = CacheDirectives(text).directives
        let expected = reference(text)
        return parsed.count == expected.count && zip(parsed, expected).allSatisfy { $0.name == $1.0 && $0.value == $1.1 }
    }

    @Test(
        "agrees with the reference parser on tricky values",
        arguments: [
            "max-age=60", "  Max-Age = 60 , no-cache", "no-cache=\"Set-Cookie, X-Foo\", private",
            "private=\"a\\\"b\", public", "max-age=\"30\"", "max-age=", "=5", ",,,", "", "\t no-store\t",
            "stale-while-revalidate=30,stale-if-error=600", "MUST-REVALIDATE", "x=\"unterminated",
            "a=\"q\\\\\", b", "ext=\"é\\ü\", Ünïcödé-Ext=Ä", "max-age=60 junk, s-maxage = 10 "
        ])
    func tricky(_ text: String) {
        #expect(Self.same(text), "\(text): \(CacheDirectives(text).directives) vs \(Self.reference(text))")
    }

    @Test(
        "delta-seconds: leading zeros count for nothing; a value too large to hold saturates at 2^31",
        arguments: [
            ("max-age=0", 0), ("max-age=00000000000", 0), ("max-age=000000000060", 60),
            ("max-age=0000000002147483647", 2_147_483_647), ("max-age=0002147483649", 2_147_483_648),
            ("max-age=99999999999", 2_147_483_648), ("max-age=100000000000000000000000000000", 2_147_483_648)
        ])
    func deltaSeconds(text: String, seconds: Int) {
        #expect(CacheDirectives(text).maxAge == seconds)
        let name = "s-maxage"
        let other = CacheDirectives(text.replacingOccurrences(of: "max-age", with: name))
        #expect(other.seconds(name) == seconds)
        #expect(CacheDirectives(text.replacingOccurrences(of: "max-age", with: "max-stale")).maxStale == .some(seconds))
    }

    @Test("agrees with the reference parser on 20,000 random values made of the characters that matter")
    func random() {
        var generator = SeededRandomSource(seed: 7)
        let alphabet = Array("aZm-x=\",\\ \t9;é")
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...24, using: &generator)
            let text = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            #expect(Self.same(text), "\(text.debugDescription)")
        }
    }

    @Test("a stored response's Cache-Control fields are parsed each on its own: an unclosed quote does not swallow the next field")
    func repeatedFieldsParsedApart() {
        let cases: [[String]] = [
            ["private=\"Set-Cookie", "no-store"],
            ["no-cache=\"a", "max-age=0"],
            ["max-age=60", "no-transform", "s-maxage=5, must-revalidate"],
            ["max-age=60"]
        ]
        for values in cases {
            let headers = HeaderFields(values.map { ("Cache-Control", $0) } + [("ETag", "\"1\"")])
            let entry = CacheEntry(status: 200, headers: headers, body: Data(), url: nil, requestTime: Date(), responseTime: Date())
            #expect(entry.cacheControl == CacheDirectives(values), "\(values)")
        }
        let entry = CacheEntry(
            status: 200, headers: HeaderFields([("Cache-Control", "private=\"Set-Cookie"), ("Cache-Control", "no-store")]),
            body: Data(), url: nil, requestTime: Date(), responseTime: Date())
        #expect(entry.cacheControl.noStore)
    }
}
