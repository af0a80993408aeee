import Foundation

/// The body of a ``RecallResponse``: bytes at hand, a stream of chunks as they arrive, or a body
/// kept in a cache's store and read from there (a hit on a large response).
///
/// A transport that streams (``URLSessionTransport``, AsyncHTTPClient's) hands its response over
/// as soon as the head is in, with a streamed body (one of at most ``collectedUpTo`` bytes comes
/// whole); the cache tees it into storage as it passes, and `RecallURLProtocol` gives each chunk
/// to the session as it comes. Bodies built from bytes (a memory hit, a test double,
/// ``RecallResponse/text(_:status:headers:url:)``) are whole.
///
/// Read a body once, by iterating it (`for try await chunk in response.body`), or collect it:
///
/// ```swift
/// let response = try await pipeline.send(request)
/// let data = try await response.body.collect(upTo: 8 << 20)   // at most 8 MiB
/// ```
///
/// A streamed body can be read **once**, by one reader; a second iteration throws
/// ``ResponseBodyError`` `consumed`. Whole bodies, and bodies kept in a store, can be read any
/// number of times (``isStreamed`` is true for the latter: they are read in pieces). A streamed
/// body that ends before its `Content-Length` ends with ``TransportError`` `connectionLost`
/// (one that goes past it, with `other`): a short body never reads as a complete one. Dropping a
/// streamed body unread, or cancelling the task that reads it, stops its producer (the download
/// is cancelled, nothing of it is stored as complete).
public struct ResponseBody: AsyncSequence, Sendable, Hashable {
    /// A chunk of the body.
    public typealias Element = Data

    private enum Content: Sendable {
        case bytes(Data)
        case stream(Reader)
        /// Kept in a store, read from it each time the body is read (so it can be read again).
        case stored(StoredBodyFile, ClosedRange<Int>?)
    }

    private let content: Content

    /// A whole body of `data`.
    public init(_ data: Data = Data()) {
        content = .bytes(data)
    }

    private init(reader: Reader) {
        content = .stream(reader)
    }

    /// A body kept in a store (`bounds`: a range of it), read from there as it is read.
    init(stored file: StoredBodyFile, bounds: ClosedRange<Int>? = nil) {
        content = .stored(file, bounds)
    }

    /// The bytes of `bounds` of this body, when it can give them without reading the rest:
    /// whole bytes, or a body kept in a store (read from there by seeking); nil for a stream.
    func slice(_ bounds: ClosedRange<Int>) -> ResponseBody? {
        switch content {
        case .bytes(let data):
            let start = data.startIndex
            return ResponseBody(data.subdata(in: (start + bounds.lowerBound)..<(start + bounds.upperBound + 1)))
        case .stored(let file, nil):
            return ResponseBody(stored: file, bounds: bounds)
        case .stored(let file, let outer?):
            return ResponseBody(stored: file, bounds: (outer.lowerBound + bounds.lowerBound)...(outer.lowerBound + bounds.upperBound))
        case .stream:
            return nil
        }
    }

    /// No bytes.
    public static var empty: ResponseBody { ResponseBody() }

    /// The longest body Recall's transports collect before they hand the response over, by its
    /// `Content-Length` (64 KiB): a body that small arrives whole with its head — a stream would
    /// cost more than it saves — and a cache stores it without a tee.
    public static let collectedUpTo = 64 << 10

    /// A streamed body and the ``Writer`` that feeds it. `expectedLength`: the length the body
    /// must reach (a `Content-Length` of an identity-coded body), checked at its end; nil when
    /// unknown. `highWater`: how many bytes waiting for the reader make ``Writer/write(_:)`` wait
    /// (``Writer/yield(_:)`` never waits: what it adds waits in memory until it is read).
    public static func makeStream(expectedLength: Int? = nil, url: URL? = nil, highWater: Int = 1 << 20) -> (ResponseBody, Writer) {
        let stream = BodyStream(expectedLength: expectedLength, url: url, highWater: highWater)
        return (ResponseBody(reader: Reader(stream)), Writer(stream: stream))
    }

    /// A streamed body whose chunks `produce` writes, in a task of its own: the body ends when
    /// `produce` returns (complete, checked against `expectedLength`) or throws (failed, with its
    /// error); the reader leaving cancels the task. For a transport (or an in-process service)
    /// that reads a body of its own as an async sequence:
    ///
    /// ```swift
    /// ResponseBody.producing(expectedLength: length) { writer in
    ///     for try await chunk in download { try await writer.write(Data(chunk)) }
    /// }
    /// ```
    public static func producing(
        expectedLength: Int? = nil, url: URL? = nil,
        _ produce: @escaping @Sendable (Writer) async throws -> Void
    ) -> ResponseBody {
        let (body, writer) = makeStream(expectedLength: expectedLength, url: url)
        let task = TaskCensus.task {
            do {
                try await produce(writer)
                writer.finish()
            } catch {
                writer.finish(throwing: Task.isCancelled ? CancellationError() : error)
            }
        }
        writer.onTermination { task.cancel() }
        return body
    }

    /// The length a response's body must reach by its `Content-Length`, to check a streamed body
    /// against: nil when the body lawfully differs from it or has none — an answer to `HEAD`, a
    /// `1xx`, `204` or `304` — when a client may decode the bytes (a `Content-Encoding` other than
    /// `identity`) or `Transfer-Encoding` is present, or when the field is not one length: not
    /// `1*DIGIT`, a list of differing values, or more than 18 digits (a size no storage takes, and
    /// one whose sums could overflow). A list of identical values (`5, 5`) is one length.
    public static func declaredLength(status: Int, headers: HeaderFields, requestMethod: String?) -> Int? {
        guard requestMethod?.uppercased() != "HEAD", status >= 200, status != 204, status != 304,
            !headers.contains("Transfer-Encoding"),
            headers.values(for: "Content-Encoding").allSatisfy({ $0.trimmingOWS.lowercased() == "identity" })
        else { return nil }
        return ContentLength(headers).value
    }

    /// The whole body, when its bytes are at hand (not streamed); nil for a streamed body (read
    /// it, or ``collect(upTo:)``).
    public var bytes: Data? {
        if case .bytes(let data) = content { return data }
        return nil
    }

    /// Whether the body is kept in a store and read from there (a cache hit on a large body).
    var isKeptInStore: Bool {
        if case .stored = content { return true }
        return false
    }

    /// Whether the body arrives as a stream (else its ``bytes`` are at hand).
    public var isStreamed: Bool {
        if case .bytes = content { return false }
        return true
    }

    /// The body's length when known: the count of whole bytes, or the length a stream must reach.
    public var expectedLength: Int? {
        switch content {
        case .bytes(let data): data.count
        case .stream(let reader): reader.stream.expectedLength
        case .stored(let file, let bounds): bounds?.count ?? file.count
        }
    }

    /// Every byte of the body, at most `maxBytes`; a longer body throws ``ResponseBodyError``
    /// `tooLarge` (as soon as its expected length or the bytes read pass the limit, and the
    /// stream is then abandoned).
    public func collect(upTo maxBytes: Int) async throws -> Data {
        if let expected = expectedLength, expected > maxBytes {
            discard()
            throw ResponseBodyError.tooLarge(limit: maxBytes)
        }
        if let bytes { return bytes }
        var data = Data()
        // (A declared length is the server's word: reserve no more than a modest start on it.)
        if let expected = expectedLength { data.reserveCapacity(Swift.min(expected, 16 << 20)) }
        for try await chunk in self {
            guard data.count + chunk.count <= maxBytes else {
                discard()  // (a body read from a store stops when its iterator goes)
                throw ResponseBodyError.tooLarge(limit: maxBytes)
            }
            data.append(chunk)
        }
        return data
    }

    /// Stops a streamed body's producer without reading it (nothing for whole bytes): the
    /// download is cancelled, and what waits for the body's end sees it end early.
    public func discard() {
        if case .stream(let reader) = content { reader.stream.leave() }
    }

    /// Reads the chunks: once for a streamed body.
    public func makeAsyncIterator() -> Iterator {
        switch content {
        case .bytes(let data): Iterator(whole: data)
        case .stream(let reader): Iterator(reader: reader)
        case .stored(let file, let bounds): Iterator(stored: file.cursor(bounds))
        }
    }

    /// Reads a body's chunks.
    public struct Iterator: AsyncIteratorProtocol {
        private enum Source {
            case whole(Data?)
            case stream(Reader, began: Bool)
            case stored(StoredBodyFile.Cursor)
        }

        private var source: Source

        fileprivate init(whole: Data) {
            source = .whole(whole.isEmpty ? nil : whole)
        }

        fileprivate init(reader: Reader) {
            source = .stream(reader, began: false)
        }

        fileprivate init(stored cursor: StoredBodyFile.Cursor) {
            source = .stored(cursor)
        }

        /// The next chunk, or nil at the end.
        public mutating func next() async throws -> Data? {
            switch source {
            case .whole(let data):
                source = .whole(nil)
                return data
            case .stream(let reader, let began):
                if !began {
                    guard reader.stream.beginIteration() else { throw ResponseBodyError.consumed }
                    source = .stream(reader, began: true)
                }
                return try await reader.stream.next()
            case .stored(var cursor):
                source = .whole(nil)  // (the cursor stays unique while it reads)
                defer { source = .stored(cursor) }
                return try await cursor.next()
            }
        }
    }

    /// Feeds a streamed body (made by ``ResponseBody/makeStream(expectedLength:url:highWater:)``).
    public struct Writer: Sendable {
        fileprivate let stream: BodyStream

        /// Adds `chunk` without waiting; `false` when the reader has left or the body has ended:
        /// stop producing.
        @discardableResult
        public func yield(_ chunk: Data) -> Bool {
            stream.yield(chunk)
        }

        /// Adds `chunk`, first waiting while more than the high-water mark waits to be read;
        /// throws `CancellationError` when the reader has left (stop producing).
        public func write(_ chunk: Data) async throws {
            try await stream.write(chunk)
        }

        /// ``write(_:)``, calling `onWait` when it begins to wait for the reader.
        func write(_ chunk: Data, onWait: (@Sendable () -> Void)?) async throws {
            try await stream.write(chunk, onWait: onWait)
        }

        /// The bytes written and not yet read.
        var unread: Int { stream.unread }

        /// Ends the body: complete (checked against its expected length) when `error` is nil,
        /// else failed with `error`, which the reader gets after the chunks before it.
        public func finish(throwing error: (any Error)? = nil) {
            stream.finish(throwing: error)
        }

        /// Runs `action` once if the reader leaves before the end (cancelled, or the body
        /// dropped): cancel the producer there.
        public func onTermination(_ action: @escaping @Sendable () -> Void) {
            stream.onTermination(action)
        }
    }

    /// The reading side of a stream, shared by the copies of one body: when the last copy goes
    /// (and no iteration holds it), the reader has left.
    fileprivate final class Reader: Sendable {
        let stream: BodyStream

        init(_ stream: BodyStream) {
            self.stream = stream
        }

        deinit {
            stream.leave()
        }
    }

    /// Whole bodies compare by their bytes; streamed ones by identity.
    public static func == (lhs: ResponseBody, rhs: ResponseBody) -> Bool {
        switch (lhs.content, rhs.content) {
        case (.bytes(let a), .bytes(let b)): a == b
        case (.stream(let a), .stream(let b)): a === b
        case (.stored(let a, let x), .stored(let b, let y)): a === b && x == y
        default: false
        }
    }

    /// Hashes the bytes of a whole body, the identity of a stream.
    public func hash(into hasher: inout Hasher) {
        switch content {
        case .bytes(let data): hasher.combine(data)
        case .stream(let reader): hasher.combine(ObjectIdentifier(reader))
        case .stored(let file, let bounds):
            hasher.combine(ObjectIdentifier(file))
            hasher.combine(bounds)
        }
    }
}
