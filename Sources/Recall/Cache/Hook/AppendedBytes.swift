import Foundation

/// How far a body written into a record has got, told by the task that writes it to the one that
/// reads it back for the caller (``BodyTee/followed(passing:into:readingBack:url:ended:)``):
/// the first chunk itself (the caller need not wait for its write and read-back), the bytes
/// appended, whether the record refused the rest, and the end.
final class AppendedBytes: Sendable {
    /// What the reader may do after the bytes it has read.
    enum Next: Sendable {
        /// Pass on the body's first bytes, handed over before they were appended.
        case first(Data)
        /// Read the record up to this many bytes of the body.
        case bytes(upTo: Int)
        /// The record refused the bytes after the ones appended: they come another way.
        case rest
        /// The body ended (every byte was appended), complete or failed.
        case end(Result<Void, any Error>)
    }

    private struct State {
        /// The first chunk, until the reader takes it.
        var first: Data?
        var appended = 0
        var refused = false
        var end: Result<Void, any Error>?
        var reader: CheckedContinuation<Void, Never>?
    }

    private let state = Locked(State())

    /// The body's first bytes, before they are appended: the reader passes them on at once and
    /// reads the record after them.
    func first(_ chunk: Data) {
        wake { $0.first = chunk }
    }

    /// `count` more bytes are in the record.
    func appended(_ count: Int) {
        wake { $0.appended += count }
    }

    /// The record took no more: the bytes after the ones appended come another way.
    func refuse() {
        wake { $0.refused = true }
    }

    /// The body ended after the bytes appended — with `result` — and nothing more comes.
    func end(_ result: Result<Void, any Error>) {
        wake { $0.end = result }
    }

    /// What follows the first `offset` bytes, once there is something (it waits until then).
    func next(after offset: Int) async -> Next {
        while true {
            let now = state.withLock { state -> Next? in
                if let first = state.first {
                    state.first = nil
                    return .first(first)
                }
                if state.appended > offset { return .bytes(upTo: state.appended) }
                if state.refused { return .rest }
                return state.end.map { .end($0) }
            }
            if let now { return now }
            await withCheckedContinuation { (reader: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    guard state.first == nil, state.appended <= offset, !state.refused, state.end == nil else { return true }
                    state.reader = reader
                    return false
                }
                if ready { reader.resume() }
            }
        }
    }

    private func wake(_ change: (inout State) -> Void) {
        let reader = state.withLock { state -> CheckedContinuation<Void, Never>? in
            change(&state)
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume()
    }
}
