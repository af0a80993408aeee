import Foundation

/// A streamed body read within the retrier's time limits: the per-attempt timeout bounds each
/// **silence** (the wait for the next chunk from the transport, not the time the caller takes),
/// and the deadline bounds the whole exchange, body included. A limit that passes ends the body
/// with ``TransportError`` `timedOut` (the retrier has decided already: it is not retried) and
/// stops the transport's download.
enum TimedBody {
    /// `body` bounded by `silence` per chunk and by `remaining` in all, measured on `time`; `body`
    /// itself when it is whole, kept in a cache's store (read from the store, not transferred:
    /// the store's own reads are not timed), or there is no limit.
    static func body(_ body: ResponseBody, silence: Duration?, remaining: Duration?, time: TimeSource, url: URL?) -> ResponseBody {
        guard body.isStreamed, !body.isKeptInStore, silence != nil || remaining != nil else { return body }
        let end = remaining.map { time.now() + $0 }
        let chunks = Chunks(body)
        return .producing(expectedLength: body.expectedLength, url: url) { writer in
            while true {
                let left = end.map { $0 - time.now() }
                let limit = [silence, left].compactMap { $0 }.min()
                let chunk: Data?
                do {
                    chunk = try await AttemptRace.run(timeout: limit, time: time) { try await chunks.next() }
                } catch is AttemptRace.TimedOut {
                    let passed =
                        left.map { $0 == limit } ?? false
                        ? "the deadline passed while the body streamed"
                        : "no body bytes arrived for \(silence?.formatted ?? "")"
                    throw TransportError(.timedOut, url: url, message: passed)
                }
                guard let chunk else { return }
                try await writer.write(chunk)
            }
        }
    }

    /// The upstream body's iterator, read by one task at a time (each wait runs in a task of
    /// its own, so the timer can cut it).
    private final class Chunks: @unchecked Sendable {
        private var iterator: ResponseBody.Iterator

        init(_ body: ResponseBody) {
            iterator = body.makeAsyncIterator()
        }

        func next() async throws -> Data? {
            try await iterator.next()
        }
    }
}
