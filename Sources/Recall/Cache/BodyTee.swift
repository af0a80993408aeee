import Foundation

/// A streamed body passed on to the caller while a copy is kept for the cache: each chunk goes
/// to the caller as it arrives (at the caller's pace) and into the copy, up to a limit.
///
/// The copy is handed over only for a body that arrived whole — every byte, its length
/// checked (``BodyStream``) — and fits the limit; a body that fails, that the caller stops
/// reading or cancels, or that outgrows the limit, keeps nothing (``Kept``), so no entry ever
/// claims to hold a body that did not arrive complete. `ended` runs once: as soon as the body
/// outgrows the limit, else when it ends — and the caller sees its body end (or fail) only after
/// `ended` has run: a store made there is in place when the caller's read returns.
enum BodyTee {
    /// What the tee kept once the body has ended.
    enum Kept: Sendable {
        /// The whole body.
        case complete(Data)
        /// The body was longer than the limit: passed on, not kept.
        case tooLarge
        /// The body did not arrive whole (failed, or the caller stopped reading).
        case incomplete

        var isTooLarge: Bool {
            if case .tooLarge = self { return true }
            return false
        }
    }

    /// The body the caller reads: `upstream` passed on, a copy of at most `limit` bytes kept and
    /// given to `ended` when the body has ended.
    static func body(passing upstream: ResponseBody, keepingUpTo limit: Int, url: URL?,
                     ended: @escaping @Sendable (Kept) async -> Void) -> ResponseBody {
        let (body, writer) = ResponseBody.makeStream(expectedLength: upstream.expectedLength, url: url)
        let pump = TaskCensus.task {
            var copy: Data? = Data()
            do {
                for try await chunk in upstream {
                    if let count = copy?.count {
                        if count + chunk.count <= limit {
                            copy?.append(chunk)
                        } else {
                            copy = nil
                            await ended(.tooLarge) // (at once: nothing will be kept, nobody need wait for the end)
                        }
                    }
                    try await writer.write(chunk)
                }
            } catch {
                if copy != nil { await ended(.incomplete) }
                writer.finish(throwing: error)
                return
            }
            if let copy { await ended(.complete(copy)) }
            writer.finish()
        }
        // The caller stopped reading: stop the upstream (its producer cancels the download).
        writer.onTermination { pump.cancel() }
        return body
    }

    /// The body the caller reads: `upstream` passed on, each chunk also appended to `writing` (a
    /// record stored in pieces, for a body too large for memory) by a task of its own, so that the
    /// caller does not wait for the disk (at most ``spooled`` bytes wait for it). `ended` gets
    /// ``Kept/complete(_:)`` with no bytes when the whole body is in `writing` (commit it there),
    /// ``Kept/tooLarge`` as soon as `writing` refuses a chunk (the rest is only passed on), or
    /// ``Kept/incomplete``; it runs before the caller sees the body end, as above.
    static func body(passing upstream: ResponseBody, into writing: any RecordWriting, url: URL?,
                     ended: @escaping @Sendable (Kept) async -> Void) -> ResponseBody {
        let (body, writer) = ResponseBody.makeStream(expectedLength: upstream.expectedLength, url: url)
        let (spool, spooler) = ResponseBody.makeStream(highWater: spooled)
        // Whether every byte reached `writing` (a refusal leaves the spool: the pump stops feeding it).
        let disk = TaskCensus.task { () -> Bool in
            do {
                for try await chunk in spool { try await writing.append(chunk) }
                return true
            } catch {
                spool.discard()
                return false
            }
        }
        let pump = TaskCensus.task {
            var keeping = true
            do {
                for try await chunk in upstream {
                    if keeping {
                        do {
                            try await spooler.write(chunk)
                        } catch {
                            keeping = false
                            await writing.abandon()
                            await ended(.tooLarge)
                        }
                    }
                    try await writer.write(chunk)
                }
            } catch {
                spooler.finish(throwing: error)
                if keeping {
                    _ = await disk.value
                    await writing.abandon()
                    await ended(.incomplete)
                }
                writer.finish(throwing: error)
                return
            }
            if keeping {
                spooler.finish()
                if await disk.value {
                    await ended(.complete(Data()))
                } else {
                    await writing.abandon()
                    await ended(.tooLarge)
                }
            }
            writer.finish()
        }
        writer.onTermination { pump.cancel() }
        return body
    }

    /// The most bytes waiting for the disk while a body streams into a store (8 MiB).
    static let spooled = 8 << 20
}
