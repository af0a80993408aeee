import Foundation
import Recall
import Testing

/// `CacheEntry` keeps its fields in one copy-on-write object: it must still behave exactly as a
/// value with stored properties did.
@Suite("CacheEntry: a value with shared storage")
struct CacheEntryTests {
    static func entry() -> CacheEntry {
        CacheEntry(
            status: 200, headers: ["Cache-Control": "max-age=60", "ETag": "\"a\""], body: Data("one".utf8),
            url: URL(string: "https://x.test/a"), requestTime: Date(timeIntervalSince1970: 1),
            responseTime: Date(timeIntervalSince1970: 2))
    }

    @Test("changing a copy, whole or in place, leaves the original as it was; the parsed facts follow the headers")
    func copiesAreIndependent() {
        let original = Self.entry()
        var copy = original
        copy.headers["Cache-Control"] = "no-store"  // in place (_modify): the facts must be parsed again
        copy.headers.remove("ETag")
        copy.body[0] = UInt8(ascii: "t")
        copy.body.append(contentsOf: Data("!".utf8))
        copy.varyValues.append(HeaderFields.Field(name: "accept", value: "text/html"))
        #expect(copy.cacheControl.noStore && copy.cacheControl.maxAge == nil && copy.etag == nil)
        #expect(copy.body == Data("tne!".utf8) && copy.varyValues.count == 1)
        #expect(original.cacheControl.maxAge == 60 && !original.cacheControl.noStore && original.etag == "\"a\"")
        #expect(original.body == Data("one".utf8) && original.varyValues.isEmpty)
        copy = original
        copy.headers = ["Cache-Control": "max-age=5"]  // whole
        #expect(copy.cacheControl.maxAge == 5 && original.cacheControl.maxAge == 60)
    }

    @Test("every field takes part in equality, and equal entries hash equally (also in separate storage)")
    func equality() {
        let original = Self.entry()
        let twin = Self.entry()
        #expect(twin == original && twin.hashValue == original.hashValue)
        let changes: [(String, (inout CacheEntry) -> Void)] = [
            ("status", { $0.status = 203 }),
            ("headers", { $0.headers["Age"] = "1" }),
            ("body", { $0.body = Data("two".utf8) }),
            ("url", { $0.url = URL(string: "https://x.test/b") }),
            ("requestTime", { $0.requestTime = Date(timeIntervalSince1970: 3) }),
            ("responseTime", { $0.responseTime = Date(timeIntervalSince1970: 4) }),
            ("varyValues", { $0.varyValues = [HeaderFields.Field(name: "accept", value: "*/*")] }),
            ("partition", { $0.partition = "p" }),
            ("assignedLifetime", { $0.assignedLifetime = 5 })
        ]
        for (name, change) in changes {
            var changed = twin
            change(&changed)
            #expect(changed != original, "\(name)")
            #expect(twin == original, "changing a copy's \(name) changed the original")
        }
    }

    @Test("printed and dumped with its fields, not its storage")
    func described() {
        let text = String(describing: Self.entry())
        #expect(text.contains("status: 200") && text.contains("max-age=60") && !text.contains("Storage"), "\(text)")
    }
}
