import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Recall
import Testing

@Suite("CacheLocator: where a request's responses are stored")
struct CacheLocatorTests {
    private static func locator(namespace: String = "") -> CacheLocator {
        var configuration = CacheConfiguration()
        configuration.namespace = namespace
        return CacheLocator(configuration: configuration, partitioner: CachePartitioner(secret: [1, 2, 3], configuration: configuration))
    }

    private static func request(_ text: String) -> URLRequest { URLRequest(url: URL(string: text)!) }

    @Test("equivalent URLs share a key; the namespace prefixes it; secret query values are hashed; user information is noted")
    func keys() throws {
        let plain = Self.locator()
        let first = try #require(plain.location(of: Self.request("HTTPS://Example.com:443/a?b=2&a=1")))
        let second = try #require(plain.location(of: Self.request("https://example.com/a?a=1&b=2")))
        #expect(first.key == second.key)
        #expect(!first.userinfo)
        #expect(Self.locator(namespace: "tenant").location(of: Self.request("https://example.com/a?a=1&b=2"))?.key == "tenant|" + first.key)
        let secret = try #require(plain.location(of: Self.request("https://example.com/a?api_key=hunter2")))
        #expect(!secret.key.contains("hunter2"))
        #expect(plain.location(of: Self.request("https://user:pw@example.com/a"))?.userinfo == true)
        #expect(plain.location(of: URLRequest(url: URL(string: "https://example.com/" + String(repeating: "x", count: 20_000))!)) == nil)
    }

    @Test("a location is remembered only once told to, and then comes from the memo")
    func memo() throws {
        let locator = Self.locator()
        let url = URL(string: "https://example.com/remembered")!
        let fresh = try #require(locator.location(ofText: url.absoluteString))
        #expect(!fresh.remembered)
        #expect(locator.location(ofText: url.absoluteString)?.remembered == false, "not remembered before remember(_:for:)")
        locator.remember(fresh, for: url)
        let again = try #require(locator.location(ofText: url.absoluteString))
        #expect(again.remembered)
        #expect(again.key == fresh.key && again.stripe == fresh.stripe && again.epochStripe == fresh.epochStripe)
    }
}
