import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Feeds a streamed body from a producer that cannot wait — a `URLSession` delegate callback,
/// whose transfer swift-corelibs-foundation cannot pause (`suspend()` during one traps) — in
/// bounded memory: chunks go to the body while less than `memoryLimit` waits there unread; past
/// it, they are appended to a temporary file (unlinked at once: it goes with its descriptor), and
/// a task of its own feeds the body from the file at the reader's pace. Once the reader has caught
/// up, chunks go to the body directly again and the file is emptied.
///
/// The bytes reach the reader in the order they came, whole, then the end (or the error) after
/// them; when the reader leaves, ``yield(_:)`` says so (stop producing) and the file is closed.
final class SpillingWriter: Sendable {
    /// Unread bytes in the body past which chunks go to the file (2 MiB).
    static let defaultMemoryLimit = 2 << 20
    /// The most bytes the task reads from the file at a time.
    static let pieceSize = 256 << 10

    private struct State {
        /// The file, once a chunk went there; bytes `[read, written)` of it wait for the reader.
        var file: Int32 = -1
        var read = 0, written = 0
        /// The task feeding the body from the file runs (chunks go to the file until it caught up).
        var draining = false
        /// The body's end, once given, to deliver after the bytes in the file.
        var end: Result<Void, any Error>?
        /// The reader left, or the file could not be written: stop.
        var stopped = false
    }

    private let writer: ResponseBody.Writer
    private let memoryLimit: Int
    private let state = Locked(State())

    init(_ writer: ResponseBody.Writer, memoryLimit: Int = SpillingWriter.defaultMemoryLimit) {
        self.writer = writer
        self.memoryLimit = memoryLimit
    }

    deinit {
        let file = state.withLock { $0.file }
        if file >= 0 { close(file) }
    }

    /// Adds `chunk` without waiting; `false` when the reader has left or the file failed (stop
    /// producing). Calls must not overlap (a session's delegate callbacks do not).
    @discardableResult
    func yield(_ chunk: Data) -> Bool {
        enum Route { case body, file, stop }
        let route = state.withLock { state -> Route in
            if state.stopped { return .stop }
            if !state.draining, writer.unread + chunk.count <= memoryLimit { return .body }
            return .file
        }
        switch route {
        case .stop: return false
        case .body: return writer.yield(chunk)
        case .file: return spill(chunk)
        }
    }

    /// Ends the body — complete, or failed with `error` — after every byte given before.
    func finish(throwing error: (any Error)? = nil) {
        let now = state.withLock { state -> Bool in
            guard state.draining else { return true }
            state.end = error.map { .failure($0) } ?? .success(())
            return false
        }
        if now { writer.finish(throwing: error) }
    }

    /// Appends `chunk` to the file (made on first use) and starts the task that drains it, unless
    /// it runs. (Written under the lock: the task never empties the file under a write.)
    private func spill(_ chunk: Data) -> Bool {
        let outcome = state.withLock { state -> (stored: Bool, drain: Bool) in
            if state.file < 0 { state.file = Self.temporaryFile() }
            guard state.file >= 0, Self.write(chunk, to: state.file, at: state.written) else {
                state.stopped = true
                return (false, false)
            }
            state.written += chunk.count
            defer { state.draining = true }
            return (true, !state.draining)
        }
        guard outcome.stored else {
            writer.finish(throwing: TransportError(.other, url: nil, message: "the body could not be kept on disk while its reader was behind"))
            return false
        }
        if outcome.drain { TaskCensus.task { await self.drain() } }
        return true
    }

    /// Feeds the body from the file at the reader's pace until it has caught up, then lets chunks
    /// go to the body directly again (and the end, when it came meanwhile).
    private func drain() async {
        while true {
            let next = state.withLock { state -> (file: Int32, offset: Int, count: Int)? in
                guard !state.stopped, state.read < state.written else {
                    // Caught up (or stopped): the file is emptied, chunks go to the body again.
                    state.draining = false
                    if state.file >= 0 { _ = ftruncate(state.file, 0) }
                    state.read = 0
                    state.written = 0
                    return nil
                }
                return (state.file, state.read, min(Self.pieceSize, state.written - state.read))
            }
            guard let next else { break }
            guard let piece = Self.read(next.count, from: next.file, at: next.offset) else {
                state.withLock { $0.stopped = true }
                writer.finish(throwing: TransportError(.other, url: nil, message: "the body kept on disk could not be read back"))
                return
            }
            do {
                try await writer.write(piece)
            } catch {
                state.withLock { $0.stopped = true }  // the reader left
                return
            }
            state.withLock { $0.read += piece.count }
        }
        let end = state.withLock { state -> Result<Void, any Error>? in
            defer { state.end = nil }
            return state.stopped ? nil : state.end
        }
        switch end {
        case .success?: writer.finish()
        case .failure(let error)?: writer.finish(throwing: error)
        case nil: break
        }
    }

    /// A new file in the temporary directory, unlinked (it lives as long as its descriptor), or -1.
    private static func temporaryFile() -> Int32 {
        var template = Array((NSTemporaryDirectory() + "/recall-body-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { return -1 }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        return descriptor
    }

    /// Writes all of `data` at `offset`; whether it could.
    private static func write(_ data: Data, to file: Int32, at offset: Int) -> Bool {
        data.withUnsafeBytes { buffer -> Bool in
            var done = 0
            while done < buffer.count {
                let count = pwrite(file, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return false }
                done += count
            }
            return true
        }
    }

    /// Reads `count` bytes at `offset`, or nil.
    private static func read(_ count: Int, from file: Int32, at offset: Int) -> Data? {
        var data = Data(count: count)
        let complete = data.withUnsafeMutableBytes { buffer -> Bool in
            var done = 0
            while done < count {
                let got = pread(file, buffer.baseAddress! + done, count - done, off_t(offset + done))
                if got < 0, errno == EINTR { continue }
                guard got > 0 else { return false }
                done += got
            }
            return true
        }
        return complete ? data : nil
    }
}
