import Foundation

/// A streamed body passed on to the caller while a copy is kept for the cache (``body(passing:keepingUpTo:into:spill:url:behind:ended:)``):
/// each chunk goes to the caller as it arrives (at the caller's pace) and into the copy — in memory up to a
/// limit, and past it (or from the start, for a body declared larger) into a record written in
/// pieces, when the storage stores in pieces.
///
/// The copy is handed over only for a body that arrived whole — every byte, its length
/// checked (``BodyStream``); a body that fails, that the caller stops reading or cancels, or
/// that outgrows what the storage takes, keeps nothing (``Kept``), so no entry ever claims to
/// hold a body that did not arrive complete. `ended` runs once: as soon as nothing more can be
/// kept, else when the body ends — and the caller sees its body end (or fail) only after
/// `ended` has run: a store made there is in place when the caller's read returns. A body
/// written into a record that can be read back goes the other way round, at the disk's pace
/// (``followed(passing:into:readingBack:url:ended:)``), with the same promises.
enum BodyTee {
    /// What the tee kept once the body has ended.
    enum Kept: Sendable {
        /// The whole body, kept in memory.
        case complete(Data)
        /// The whole body, appended to this record written in pieces: commit it.
        case written(any RecordWriting)
        /// The body was longer than the storage takes, or the storage failed to take it (a full
        /// disk): passed on, not kept.
        case tooLarge
        /// The body did not arrive whole (failed, or the caller stopped reading).
        case incomplete

        var isTooLarge: Bool {
            if case .tooLarge = self { return true }
            return false
        }
    }

    /// The body the caller reads: `upstream` passed on, its copy kept in memory up to `limit`
    /// bytes, and appended to `writing` when given (a body declared larger than the limit) or,
    /// once it outgrows the limit, to the record `spill` begins (the bytes so far first) — `nil`
    /// from `spill`, and the body is too large to keep. `behind` runs when the caller falls behind
    /// (``ResponseBody/makeStream(expectedLength:url:highWater:)``'s high-water mark waits
    /// unread): from then on the copy is kept at the caller's pace, so nobody else should wait for it.
    static func body(
        passing upstream: ResponseBody, keepingUpTo limit: Int, into writing: (any RecordWriting)? = nil,
        spill: (@Sendable () async -> (any RecordWriting)?)? = nil, url: URL?, behind: (@Sendable () -> Void)? = nil,
        ended: @escaping @Sendable (Kept) async -> Void
    ) -> ResponseBody {
        let (body, writer) = ResponseBody.makeStream(expectedLength: upstream.expectedLength, url: url)
        let pump = TaskCensus.task {
            var memory: Data? = writing == nil ? Data() : nil
            var spool = writing.map(Spool.init)
            do {
                for try await chunk in upstream {
                    if let count = memory?.count {
                        if count + chunk.count <= limit {
                            memory?.append(chunk)
                        } else {
                            let kept = memory ?? Data()
                            memory = nil
                            if let spill, let record = await spill() { spool = Spool(record) }
                            if let started = spool, !(await started.write(kept)) { spool = await started.abandon() }
                            if spool == nil { await ended(.tooLarge) }  // (at once: nobody need wait for the end)
                        }
                    }
                    if let current = spool, !(await current.write(chunk)) {
                        spool = await current.abandon()
                        await ended(.tooLarge)
                    }
                    try await writer.write(chunk, onWait: behind)
                }
            } catch {
                if let spool { await spool.abandon() }
                if memory != nil || spool != nil { await ended(.incomplete) }  // (else it ended as too large)
                writer.finish(throwing: error)
                return
            }
            if let memory { await ended(.complete(memory)) }
            if let spool { await ended(await spool.finish() ? .written(spool.writing) : .tooLarge) }
            writer.finish()
        }
        // The caller stopped reading: stop the upstream (its producer cancels the download).
        writer.onTermination { pump.cancel() }
        return body
    }

    /// The most bytes waiting for the disk while a body streams into a store (8 MiB).
    static let spooled = 8 << 20

    /// A record written in pieces, fed through a spool by a task of its own, so that the caller
    /// does not wait for the disk (at most ``spooled`` bytes wait for it).
    private struct Spool: Sendable {
        let writing: any RecordWriting
        private let spooler: ResponseBody.Writer
        /// Whether every byte reached `writing` (a refusal leaves the spool: writes to it then fail).
        private let disk: Task<Bool, Never>

        init(_ writing: any RecordWriting) {
            let (spool, spooler) = ResponseBody.makeStream(highWater: BodyTee.spooled)
            self.writing = writing
            self.spooler = spooler
            disk = TaskCensus.task {
                do {
                    for try await chunk in spool { try await writing.append(chunk) }
                    return true
                } catch {
                    spool.discard()
                    return false
                }
            }
        }

        /// Queues `chunk` for the record; `false` when the record refused an earlier one.
        func write(_ chunk: Data) async -> Bool {
            do {
                try await spooler.write(chunk)
                return true
            } catch {
                return false
            }
        }

        /// The body ended whole: whether every byte reached the record.
        func finish() async -> Bool {
            spooler.finish()
            guard await disk.value else {
                await writing.abandon()
                return false
            }
            return true
        }

        /// Abandons the record — the body failed, or the record refused a chunk — without writing
        /// what still waits in the spool. Returns nil, the spool to go on with.
        @discardableResult
        func abandon() async -> Spool? {
            disk.cancel()
            spooler.finish(throwing: CancellationError())
            _ = await disk.value
            await writing.abandon()
            return nil
        }
    }
}
