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
/// When the file cannot be made or written (a full disk), the chunks it would have taken wait in
/// memory instead, after those in the file: nothing of the body is lost, but its memory is no
/// longer bounded until the reader has caught up (then the file is tried again).
///
/// The bytes reach the reader in the order they came, whole, then the end (or the error) after
/// them; when the reader leaves, ``yield(_:)`` says so (stop producing) and the file is closed.
final class SpillingWriter: Sendable {
    /// Unread bytes in the body past which chunks go to the file (2 MiB).
    static let defaultMemoryLimit = 2 << 20
    /// The most bytes the task reads from the file at a time.
    static let pieceSize = 256 << 10

    private struct State {
        /// The file, once a chunk went there; bytes `[read, written)` of it wait for the reader,
        /// then the chunks `held` in memory since the file failed (while any are held, the
        /// chunks after them are held too, to keep their order).
        var file: Int32 = -1
        var read = 0, written = 0
        var held: [Data] = []
        /// The task feeding the body from the file runs (chunks go to the file until it caught up).
        var draining = false
        /// The body's end, once given, to deliver after the bytes in the file.
        var end: Result<Void, any Error>?
        /// The reader left, or the file could not be read back: stop.
        var stopped = false
    }

    private let writer: ResponseBody.Writer
    private let memoryLimit: Int
    private let makeFile: @Sendable () -> Int32
    private let state = Locked(State())

    /// Feeds `writer`, keeping at most `memoryLimit` unread bytes in it; `makeFile` opens the file
    /// (a descriptor, or -1), an unlinked temporary file unless a test fails it on purpose.
    init(
        _ writer: ResponseBody.Writer, memoryLimit: Int = SpillingWriter.defaultMemoryLimit,
        makeFile: @escaping @Sendable () -> Int32 = SpillingWriter.temporaryFile
    ) {
        self.writer = writer
        self.memoryLimit = memoryLimit
        self.makeFile = makeFile
    }

    deinit {
        let file = state.withLock { $0.file }
        if file >= 0 { close(file) }
    }

    /// Adds `chunk` without waiting; `false` when the reader has left (stop producing). Calls must
    /// not overlap (a session's delegate callbacks do not).
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

    /// Appends `chunk` to the file (made on first use) — or, once the file has failed, to the
    /// chunks held in memory — and starts the task that drains them, unless it runs. (Written
    /// under the lock: the task never empties the file under a write.)
    private func spill(_ chunk: Data) -> Bool {
        let drain = state.withLock { state -> Bool in
            if state.held.isEmpty, state.file < 0 { state.file = makeFile() }
            if state.held.isEmpty, state.file >= 0, Self.write(chunk, to: state.file, at: state.written) {
                state.written += chunk.count
            } else {
                state.held.append(chunk)  // (a full disk: it waits in memory, nothing is lost)
            }
            defer { state.draining = true }
            return !state.draining
        }
        if drain { TaskCensus.task { await self.drain() } }
        return true
    }

    /// Feeds the body from the file, then from the chunks held in memory, at the reader's pace
    /// until it has caught up; then lets chunks go to the body directly again (and the end, when
    /// it came meanwhile).
    private func drain() async {
        enum Next {
            case file(Int32, offset: Int, count: Int)
            case held([Data])
            /// Caught up: the body's end, when it came meanwhile (taken with the catching up, so that
            /// an end given after it, behind chunks of a drain that starts anew, is that drain's).
            case caughtUp(Result<Void, any Error>?)
        }
        while true {
            let next = state.withLock { state -> Next in
                if !state.stopped, state.read < state.written {
                    return .file(state.file, offset: state.read, count: min(Self.pieceSize, state.written - state.read))
                }
                if !state.stopped, !state.held.isEmpty {
                    defer { state.held = [] }
                    return .held(state.held)
                }
                // Caught up (or stopped): the file is emptied, chunks go to the body again.
                state.draining = false
                if state.file >= 0 { _ = ftruncate(state.file, 0) }
                state.read = 0
                state.written = 0
                defer { state.end = nil }
                return .caughtUp(state.stopped ? nil : state.end)
            }
            let pieces: [Data]
            switch next {
            case .caughtUp(let end):
                switch end {
                case .success?: writer.finish()
                case .failure(let error)?: writer.finish(throwing: error)
                case nil: break
                }
                return
            case .held(let held):
                pieces = held
            case .file(let file, let offset, let count):
                guard let piece = PositionalRead.bytes(count, of: file, at: offset) else {
                    state.withLock { $0.stopped = true }
                    writer.finish(throwing: TransportError(.other, url: nil, message: "the body kept on disk could not be read back"))
                    return
                }
                pieces = [piece]
            }
            do {
                for piece in pieces { try await writer.write(piece) }
            } catch {
                state.withLock { $0.stopped = true }  // the reader left
                return
            }
            if case .file = next { state.withLock { $0.read += pieces[0].count } }  // (held chunks were never in the file)
        }
    }

    /// A new file in the temporary directory, unlinked (it lives as long as its descriptor), or -1.
    static func temporaryFile() -> Int32 {
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

}
