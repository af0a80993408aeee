import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("RecallTesting doubles and HeaderFields", .timeLimit(.minutes(1)))
struct TestDoublesTests {
    @Test("MockTransport routes by method and path, plays sequences, records requests")
    func mockRouting() async throws {
        let mock = MockTransport()
        mock.route("GET", "/a", .error(TransportError(.connectionLost)), .status(503), .text("ok"))
        mock.route("POST", "/a", .text("posted", status: 201))
        mock.route(nil, "/any") { request in .text(request.httpMethod ?? "?") }
        let url = URL(string: "https://x.test/a")!
        await #expect(throws: TransportError(.connectionLost)) { try await mock.send(URLRequest(url: url)) }
        #expect(try await mock.send(URLRequest(url: url)).status == 503)
        #expect(try await mock.send(URLRequest(url: url)).bodyText == "ok")
        #expect(try await mock.send(URLRequest(url: url)).bodyText == "ok")
        var post = URLRequest(url: url)
        post.httpMethod = "POST"
        #expect(try await mock.send(post).status == 201)
        var delete = URLRequest(url: URL(string: "https://x.test/any")!)
        delete.httpMethod = "DELETE"
        #expect(try await mock.send(delete).bodyText == "DELETE")
        let unrouted = try await mock.send(URLRequest(url: URL(string: "https://x.test/nothing")!))
        #expect(unrouted.status == 501)
        #expect(mock.count(for: "/a") == 5)
        #expect(mock.requests.count == 7)
        mock.reset()
        #expect(mock.requests.isEmpty)
        await #expect(throws: TransportError.self) { try await mock.send(URLRequest(url: url)) }
    }

    @Test("MockTransport matches path and query when the route has a query")
    func mockQuery() async throws {
        let mock = MockTransport()
        mock.route("GET", "/q?x=1", .text("one"))
        #expect(try await mock.send(URLRequest(url: URL(string: "https://x.test/q?x=1")!)).bodyText == "one")
        #expect(try await mock.send(URLRequest(url: URL(string: "https://x.test/q?x=2")!)).status == 501)
    }

    @Test("ManualClock wakes sleepers only when advanced past their deadline")
    func manualClock() async throws {
        let clock = ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(5)) }
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(4))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        try await task.value
        #expect(clock.sleeperCount == 0)
        #expect(clock.now.offset == .seconds(5))
        #expect(clock.sleeps == [.seconds(5)])
    }

    @Test("ManualClock sleep is cancellable")
    func manualClockCancel() async throws {
        let clock = ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(5)) }
        await clock.waitForSleepers(1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test("HeaderFields: case-insensitive names, order and repeated fields kept")
    func headers() {
        var headers: HeaderFields = ["Cache-Control": "max-age=1", "Set-Cookie": "a=1", "set-cookie": "b=2"]
        #expect(headers["cache-control"] == "max-age=1")
        #expect(headers.values(for: "SET-COOKIE") == ["a=1", "b=2"])
        #expect(headers["Set-Cookie"] == "a=1, b=2")
        headers["set-cookie"] = "c=3"
        #expect(headers.fields.map(\.name) == ["Cache-Control", "Set-Cookie"])
        #expect(headers.values(for: "Set-Cookie") == ["c=3"])
        headers.add("Vary", "  Accept  ")
        #expect(headers["vary"] == "Accept")
        headers["Cache-Control"] = nil
        #expect(!headers.contains("cache-control"))
        #expect(headers.count == 2)
        #expect(HeaderFields.namesEqual("ETag", "etag"))
        #expect(!HeaderFields.namesEqual("ETag", "etags"))
    }

    @Test("HeaderFields: a copy with one more field (a hit's Age) reads, changes, compares and hashes as if the field were appended")
    func appendedField() {
        let stored: HeaderFields = ["Cache-Control": "max-age=60", "ETag": "\"v1\"", "age": "3"]
        let served = stored.appending("Age", "10")
        var expected = stored
        expected.add("Age", "10")
        #expect(stored.count == 3)  // the original is untouched
        #expect(served == expected)
        #expect(served.hashValue == expected.hashValue)
        #expect(served.fields == expected.fields)
        #expect(Array(served).map(\.value) == ["max-age=60", "\"v1\"", "3", "10"])
        #expect(served.count == 4)
        #expect(!served.isEmpty)
        #expect(served.values(for: "AGE") == ["3", "10"])
        #expect(served["Age"] == "3, 10")
        #expect(served.contains("age"))
        #expect(served.dictionary == expected.dictionary)
        #expect(served.description == expected.description)
        #expect(served != stored)
        // Every change sees the appended field where it stands.
        var changed = served
        changed.add("Vary", "Accept")
        #expect(changed.fields.map(\.name) == ["Cache-Control", "ETag", "age", "Age", "Vary"])
        changed["AGE"] = "11"
        #expect(changed.fields.map(\.name) == ["Cache-Control", "ETag", "age", "Vary"])
        #expect(changed["age"] == "11")
        changed.remove("age")
        #expect(changed.fields.map(\.name) == ["Cache-Control", "ETag", "Vary"])
        // Appending twice keeps both, in order; replacing reads the appended field too.
        let twice = served.appending("X-Cache", "hit")
        #expect(twice.fields.map(\.name) == ["Cache-Control", "ETag", "age", "Age", "X-Cache"])
        #expect(served.replacing("Age", with: "12").fields.map(\.value) == ["max-age=60", "\"v1\"", "12"])
        #expect(HeaderFields().appending("Age", "0").fields == [HeaderFields.Field(name: "Age", value: "0")])
    }

    @Test("RecallResponse converts to HTTPURLResponse")
    func httpURLResponse() {
        let response = RecallResponse(status: 304, headers: ["ETag": "\"x\""], url: URL(string: "https://x.test/a"))
        let http = response.httpURLResponse()
        #expect(http.statusCode == 304)
        #expect(http.value(forHTTPHeaderField: "etag") == "\"x\"")
        #expect(http.url?.absoluteString == "https://x.test/a")
        let back = RecallResponse(http, body: Data())
        #expect(back.headers["ETag"] == "\"x\"")
    }

    @Test("a Foundation response becomes a RecallResponse with every field, sorted by name, values trimmed")
    func fromFoundation() throws {
        let url = try #require(URL(string: "https://x.test/b"))
        let http = try #require(
            HTTPURLResponse(
                url: url, statusCode: 200, httpVersion: "HTTP/1.1",
                headerFields: ["Vary": "Accept", "Cache-Control": " max-age=60 ", "X-Trace": "1", "ETag": "\"e\"", "Age": "3"]))
        let response = RecallResponse(http, body: Data("ok".utf8))
        #expect(response.status == 200)
        #expect(response.url == url)
        // (Foundation may respell names it knows; the order is by the names it hands over.)
        let names = response.headers.fields.map(\.name)
        #expect(names == names.sorted())
        #expect(Set(names.map { $0.lowercased() }) == ["vary", "cache-control", "x-trace", "etag", "age"])
        #expect(response.headers["cache-control"] == "max-age=60")
        #expect(response.headers["ETag"] == "\"e\"")
        // Equal Foundation responses give equal values, whatever order Foundation keeps: the same
        // fields from a table of another size and insertion order (so iterated in another order).
        var reordered = [String: String](minimumCapacity: 96)
        for (name, value) in [("Age", "3"), ("ETag", "\"e\""), ("X-Trace", "1"), ("Cache-Control", " max-age=60 "), ("Vary", "Accept")] {
            reordered[name] = value
        }
        let other = try #require(HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: reordered))
        #expect(RecallResponse(other, body: Data("ok".utf8)).headers == response.headers)
    }
}
