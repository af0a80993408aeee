import Foundation

extension BodyTee {
    /// The body the caller reads while `upstream` is stored into `writing`, a record that can be
    /// read back (``RecordReadingBack``): the upstream is appended to the record at the disk's pace,
    /// never the caller's, and the caller reads the body back from the record at its own (but for
    /// the first chunk, handed over as it passes: the first byte waits for no write). One
    /// copy of the body goes to disk, and a caller slower than the network holds up neither the
    /// download nor the store: what it has not read yet is in the record already. (The other
    /// way, ``body(passing:keepingUpTo:into:spill:url:behind:ended:)``, passes each chunk to the
    /// caller, so a transport that cannot wait — `URLSessionTransport` on Linux — kept the unread
    /// bytes in a temporary file of their own, written once more.)
    ///
    /// What ``BodyTee`` promises holds: `ended` runs once — `.written` when every byte was
    /// appended (the store commits it), `.tooLarge` at once when the record refuses a chunk,
    /// `.incomplete` when the upstream fails or the caller leaves — and the caller sees the end
    /// only after it ran. A refused record still gives the caller every byte: those appended from
    /// the record, the rest as they pass. A caller that leaves (drops or discards the body) stops
    /// the download; one that holds the body unread lets it download and be stored.
    static func followed(
        passing upstream: ResponseBody, into writing: any RecordWriting, readingBack bytes: WrittenBytes, url: URL?,
        ended: @escaping @Sendable (Kept) async -> Void
    ) -> ResponseBody {
        let (body, writer) = ResponseBody.makeStream(expectedLength: upstream.expectedLength, url: url)
        let progress = AppendedBytes()
        // The bytes the record refused, and every one after them: passed on at the caller's pace.
        let (rest, restWriter) = ResponseBody.makeStream(url: url)
        let pump = TaskCensus.task {
            var refused = false
            var handedOverFirst = false
            do {
                for try await chunk in upstream {
                    // The first chunk goes to the caller at once, not after its write and read-back
                    // (the first byte waits for neither).
                    let handedOver = !handedOverFirst
                    if handedOver {
                        handedOverFirst = true
                        progress.first(chunk)
                    }
                    if !refused {
                        do {
                            try await writing.append(chunk)
                            progress.appended(chunk.count)
                            continue
                        } catch {
                            refused = true
                            await writing.abandon()
                            progress.refuse()
                            await ended(.tooLarge)  // (at once: nobody need wait for the end)
                        }
                    }
                    if !handedOver { try await restWriter.write(chunk) }
                }
            } catch {
                upstream.discard()  // (the caller left, or the upstream failed: either way it stops)
                if refused {
                    restWriter.finish(throwing: error)
                } else {
                    await writing.abandon()
                    await ended(.incomplete)
                    progress.end(.failure(error))
                }
                return
            }
            guard !refused else { return restWriter.finish() }
            await ended(.written(writing))
            progress.end(.success(()))
        }
        TaskCensus.task {
            var offset = 0
            while true {
                // The next piece for the caller: the first chunk as it passed, else what the record
                // has after `offset`; or the end of what comes from the record.
                let piece: Data
                switch await progress.next(after: offset) {
                case .first(let chunk):
                    piece = chunk
                case .bytes(let appended):
                    guard let read = bytes.read(min(appended - offset, BodyStream.joinedUpTo), at: offset) else {
                        // (The pump ends first, `ended` with it: the caller sees the end after it.)
                        pump.cancel()
                        rest.discard()
                        await pump.value
                        writer.finish(throwing: TransportError(.other, url: url, message: "the body stored on disk could not be read back"))
                        return
                    }
                    piece = read
                case .rest:
                    do {
                        for try await chunk in rest { try await writer.write(chunk) }
                        writer.finish()
                    } catch {
                        rest.discard()
                        writer.finish(throwing: error)
                    }
                    return
                case .end(let result):
                    rest.discard()
                    switch result {
                    case .success: writer.finish()
                    case .failure(let error): writer.finish(throwing: error)
                    }
                    return
                }
                do {
                    try await writer.write(piece)
                } catch {
                    rest.discard()  // (the caller left: the pump was cancelled)
                    return
                }
                offset += piece.count
            }
        }
        // The caller stopped reading: stop the upstream (its producer cancels the download).
        writer.onTermination { pump.cancel() }
        return body
    }
}
