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

    @Test("an answer belongs to the URL that answered, in the partition of what was sent; an answer not from the network belongs nowhere")
    func exchange() throws {
        let locator = Self.locator()
        let request = Self.request("https://example.com/a")
        let location = try #require(locator.location(of: request))
        let state = CacheRequestState(
            cache: HTTPCache(), location: location, method: .get, partition: "", inScope: [], requestTime: Date(),
            since: InvalidationEpochs().snapshot(stripe: location.epochStripe), record: nil,
            mode: .fetching(stored: nil), lead: nil)
        let answer = RecallResponse(status: 200)
        let (same, target) = locator.exchange(answer, for: request, sent: request, lifetime: nil, at: Date(), state: state)
        #expect(target?.key == location.key && !same.redirected)
        var moved = answer
        moved.url = URL(string: "https://example.com/b")
        let (redirected, elsewhere) = locator.exchange(moved, for: request, sent: request, lifetime: nil, at: Date(), state: state)
        #expect(redirected.redirected && redirected.answered.url == moved.url)
        #expect(elsewhere?.key == locator.location(of: Self.request("https://example.com/b"))?.key)
        var credentialed = request
        credentialed.setValue("Bearer token", forHTTPHeaderField: "Authorization")
        let (sent, _) = locator.exchange(answer, for: request, sent: credentialed, lifetime: nil, at: Date(), state: state)
        #expect(sent.partition != same.partition, "a credential added below the cache partitions what it stores")
        var cached = answer
        cached.source = .cache
        #expect(locator.exchange(cached, for: request, sent: request, lifetime: nil, at: Date(), state: state).1 == nil)
    }

    @Test("an unsafe request's targets: their GET keys, leaving out URLs that cannot be cached")
    func invalidationKeys() throws {
        let locator = Self.locator()
        var post = Self.request("https://example.com/a")
        post.httpMethod = "POST"
        let urls = [
            URL(string: "https://example.com/a")!, URL(string: "https://example.com/" + String(repeating: "x", count: 20_000))!,
            URL(string: "https://example.com/b?y=2&x=1")!
        ]
        let expected = try [
            #require(locator.location(of: Self.request("https://example.com/a"))?.key),
            #require(locator.location(of: Self.request("https://example.com/b?x=1&y=2"))?.key)
        ]
        #expect(locator.keys(of: urls, like: post) == expected)
    }
}
