import Foundation

/// The chunks of one streamed body between the code that receives them (a transport, the cache's
/// tee) and the one code that reads them: a buffer, a wait for the reader, and the
/// checks every streamed body gets in one place.
///
/// - The length: a body that ends before its expected length (a `Content-Length`) ends with
///   ``TransportError`` `connectionLost`; one that goes past it, with ``TransportError`` `other`.
///   A body that ends early is never read as complete.
/// - The reader leaving: when the reader stops early (its task cancelled, the body dropped
///   unread or half read), the writer's `onTermination` runs once, so the producer stops (a data
///   task is cancelled, a file closed) and anything kept for the body (a cache's write) is
///   abandoned. It does not run for a body read to its end.
/// - Pace: ``write(_:)`` waits while `highWater` bytes or more wait to be read, so a producer
///   that can wait (a task reading a client's stream) goes at the reader's pace; ``yield(_:)``
///   never waits, for producers called back by others (a session's delegate): what they add
///   waits in memory until it is read.
final class BodyStream: Sendable {
    private struct State {
        var chunks: [Data] = []
        var head = 0
        var buffered = 0
        var received = 0
        /// How the body ended, once the writer has finished it.
        var end: Result<Void, any Error>?
        /// The reader has been given the end (nil, or the failure).
        var endDelivered = false
        /// The reader left before the end.
        var readerLeft = false
        var iterated = false
        /// The reader waiting for the next chunk.
        var reader: CheckedContinuation<Data?, any Error>?
        /// Writers waiting for the reader to take chunks.
        var writers: [CheckedContinuation<Void, any Error>] = []
        /// Runs when the reader leaves before the end.
        var termination: (@Sendable () -> Void)?

        /// What the reader gets now: a chunk — the chunks waiting, joined up to ``joinedUpTo``
        /// bytes, so that a reader behind its producer catches up in fewer, larger reads — the
        /// end, or nil (it must wait).
        mutating func next() -> Result<Data?, any Error>? {
            if head < chunks.count {
                // The chunks to join, then one buffer of their size (appending to the first would
                // grow it again and again, leaving a trail of freed sizes in the allocator).
                var end = head + 1
                var size = chunks[head].count
                while end < chunks.count, size + chunks[end].count <= BodyStream.joinedUpTo {
                    size += chunks[end].count
                    end += 1
                }
                var chunk: Data
                if end == head + 1 {
                    chunk = chunks[head]
                } else {
                    chunk = Data(capacity: size)
                    for index in head..<end { chunk.append(chunks[index]) }
                }
                for index in head..<end { chunks[index] = Data() }
                head = end
                buffered -= chunk.count
                if head == chunks.count {
                    chunks.removeAll(keepingCapacity: true)
                    head = 0
                } else if head >= 1024, head * 2 >= chunks.count {
                    chunks.removeFirst(head)  // (a reader that never drains the buffer: keep it compact)
                    head = 0
                }
                return .success(chunk)
            }
            if readerLeft { return .failure(CancellationError()) }
            guard let end else { return nil }
            endDelivered = true
            return end.map { nil }
        }
    }

    /// The most bytes one read joins from the chunks waiting (1 MiB).
    static let joinedUpTo = 1 << 20

    /// The length the body must have, when known.
    let expectedLength: Int?
    /// The URL the body answers, for errors.
    let url: URL?
    private let highWater: Int
    private let state = Locked(State())

    init(expectedLength: Int?, url: URL?, highWater: Int) {
        self.expectedLength = expectedLength
        self.url = url
        self.highWater = max(1, highWater)
    }

    /// The bytes written and not yet read.
    var unread: Int { state.withLock { $0.buffered } }

    /// Runs `action` once when the reader leaves before the end (at once if it has left already).
    func onTermination(_ action: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            guard state.readerLeft else {
                state.termination = action
                return false
            }
            return !state.endDelivered
        }
        if now { action() }
    }

    // MARK: Writing

    /// Adds `chunk` without waiting; `false` when the reader has left or the body has ended
    /// (stop producing).
    @discardableResult
    func yield(_ chunk: Data) -> Bool {
        enum Outcome { case refused, overLength, accepted(CheckedContinuation<Data?, any Error>?) }
        let outcome = state.withLock { state -> Outcome in
            guard !state.readerLeft, state.end == nil else { return .refused }
            guard !chunk.isEmpty else { return .accepted(nil) }
            state.received += chunk.count
            if let expected = expectedLength, state.received > expected { return .overLength }
            if let reader = state.reader {
                state.reader = nil
                return .accepted(reader)  // (a reader waits only on an empty buffer)
            }
            state.chunks.append(chunk)
            state.buffered += chunk.count
            return .accepted(nil)
        }
        switch outcome {
        case .refused:
            return false
        case .overLength:
            finish(throwing: TransportError(.other, url: url, message: "the body went past its Content-Length of \(expectedLength ?? 0) bytes"))
            return false
        case .accepted(let reader):
            reader?.resume(returning: chunk)
            return true
        }
    }

    /// Adds `chunk`, first waiting while the high-water mark waits to be read — calling `onWait`,
    /// when given, as it begins to wait (the reader is behind). Throws `CancellationError` when
    /// the reader has left or the body has ended (stop producing).
    func write(_ chunk: Data, onWait: (@Sendable () -> Void)? = nil) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let proceed = state.withLock { state -> Bool? in
                if state.readerLeft || state.end != nil { return nil }
                guard state.buffered >= highWater else { return true }
                state.writers.append(continuation)
                return false
            }
            switch proceed {
            case nil: continuation.resume(throwing: CancellationError())
            case true?: continuation.resume()
            case false?: onWait?()
            }
        }
        guard yield(chunk) else { throw CancellationError() }
    }

    /// Ends the body: complete when `error` is nil (checked against the expected length), or
    /// failed with `error`. Later calls, and calls after the reader left, do nothing.
    func finish(throwing error: (any Error)? = nil) {
        let (reader, end) = state.withLock { state -> (CheckedContinuation<Data?, any Error>?, Result<Void, any Error>?) in
            guard state.end == nil, !state.readerLeft else { return (nil, nil) }
            if let error {
                state.end = .failure(error)
            } else if let expected = expectedLength, state.received < expected {
                state.end = .failure(TransportError.bodyEnded(after: state.received, of: expected, url: url))
            } else {
                state.end = .success(())
            }
            guard state.buffered == 0, let reader = state.reader else { return (nil, state.end) }
            state.reader = nil
            state.endDelivered = true
            return (reader, state.end)
        }
        if let reader, let end { reader.resume(with: end.map { nil }) }
        if case .failure(let error)? = end { wakeWriters(throwing: error) }
    }

    private func wakeWriters(throwing error: (any Error)? = nil, onlyBelowHighWater: Bool = false) {
        let writers = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            guard !onlyBelowHighWater || state.buffered < highWater else { return [] }
            defer { state.writers = [] }
            return state.writers
        }
        for writer in writers {
            if let error { writer.resume(throwing: error) } else { writer.resume() }
        }
    }

    // MARK: Reading

    /// Marks the one iteration the body allows; `false` when it was iterated already.
    func beginIteration() -> Bool {
        state.withLock { state in
            defer { state.iterated = true }
            return !state.iterated
        }
    }

    /// The next chunk, or `nil` at the end of a complete body; throws the body's failure, or
    /// `CancellationError` when the calling task is cancelled (the reader then leaves).
    func next() async throws -> Data? {
        if Task.isCancelled {
            leave()
            throw CancellationError()
        }
        if let ready = state.withLock({ $0.next() }) {
            wakeWriters(onlyBelowHighWater: true)
            return try ready.get()
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data?, any Error>) in
                let now = state.withLock { state -> Result<Data?, any Error>? in
                    guard let now = state.next() else {
                        state.reader = continuation
                        return nil
                    }
                    return now
                }
                if let now { continuation.resume(with: now) }
                wakeWriters(onlyBelowHighWater: true)
            }
        } onCancel: {
            leave()
        }
    }

    /// The reader leaves: the buffer is dropped, a waiting read and waiting writers end with
    /// `CancellationError`, and the termination action runs unless the reader had the end.
    func leave() {
        let (reader, writers, termination) = state.withLock { state in
            guard !state.readerLeft else {
                return (CheckedContinuation<Data?, any Error>?.none, [CheckedContinuation<Void, any Error>](), (@Sendable () -> Void)?.none)
            }
            state.readerLeft = true
            state.chunks = []
            state.head = 0
            state.buffered = 0
            defer { state.reader = nil; state.writers = []; state.termination = nil }
            return (state.reader, state.writers, state.endDelivered ? nil : state.termination)
        }
        reader?.resume(throwing: CancellationError())
        for writer in writers { writer.resume(throwing: CancellationError()) }
        termination?()
    }
}
