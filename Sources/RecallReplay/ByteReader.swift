import Foundation

/// Reads a file (or standard input) a chunk at a time, byte by byte, counting lines: memory
/// stays at one chunk however large the file is.
struct ByteReader {
    private let handle: FileHandle
    private let closesHandle: Bool
    private let chunkSize: Int
    private var buffer: [UInt8] = []
    private var position = 0
    private var atEnd = false
    /// The 1-based line of the next byte.
    private(set) var line = 1

    /// Opens `path` (`-` for standard input).
    init(path: String, chunkSize: Int = 1 << 16) throws {
        if path == "-" {
            handle = .standardInput
            closesHandle = false
        } else {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw ReplayInputError(line: 0, "\(path): no such file")
            }
            guard !isDirectory.boolValue else {
                throw ReplayInputError(line: 0, "\(path): is a directory, not a HAR capture or an access log")
            }
            guard let opened = FileHandle(forReadingAtPath: path) else {
                throw ReplayInputError(line: 0, "\(path): cannot be read (check its permissions)")
            }
            handle = opened
            closesHandle = true
        }
        self.chunkSize = max(1, chunkSize)
    }

    /// Closes the file (not standard input).
    func close() {
        if closesHandle { try? handle.close() }
    }

    /// The next byte without consuming it; nil at the end.
    mutating func peek() throws -> UInt8? {
        if position == buffer.count { try fill() }
        return position < buffer.count ? buffer[position] : nil
    }

    /// The next byte; nil at the end.
    mutating func next() throws -> UInt8? {
        if position == buffer.count { try fill() }
        guard position < buffer.count else { return nil }
        let byte = buffer[position]
        position += 1
        if byte == UInt8(ascii: "\n") { line += 1 }
        return byte
    }

    /// The first byte from the current position on that is not in `skipped`, without consuming
    /// anything: the bytes looked at are read ahead and kept, so a pipe or a FIFO (which cannot
    /// be read twice) loses none of them. Nil when the input ends, or `limit` bytes were all in
    /// `skipped`.
    mutating func firstByte(skipping skipped: Set<UInt8>, limit: Int) throws -> UInt8? {
        var index = position
        while index - position < limit {
            if index == buffer.count {
                guard let data = try read() else { return nil }
                buffer.append(contentsOf: data)
            }
            if !skipped.contains(buffer[index]) { return buffer[index] }
            index += 1
        }
        return nil
    }

    /// The next line without its terminator (`\n` or `\r\n`); nil at the end. A line longer than
    /// `limit` bytes is an error (a binary file or another format, not a log line).
    mutating func nextLine(limit: Int) throws -> [UInt8]? {
        var bytes: [UInt8] = []
        let number = line
        while true {
            if position == buffer.count { try fill() }
            guard position < buffer.count else { return bytes.isEmpty ? nil : bytes }
            let slice = buffer[position...]
            if let newline = slice.firstIndex(of: UInt8(ascii: "\n")) {
                bytes.append(contentsOf: buffer[position..<newline])
                position = newline + 1
                line += 1
                if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
                return bytes
            }
            bytes.append(contentsOf: slice)
            position = buffer.count
            if bytes.count > limit {
                throw ReplayInputError(line: number, "a line longer than \(limit) bytes: not a text log")
            }
        }
    }

    private mutating func fill() throws {
        guard let data = try read() else {
            buffer = []
            position = 0
            return
        }
        buffer = [UInt8](data)
        position = 0
    }

    /// The next chunk of the input; nil at its end.
    private mutating func read() throws -> Data? {
        guard !atEnd else { return nil }
        let data: Data?
        do {
            data = try handle.read(upToCount: chunkSize)
        } catch {
            throw ReplayInputError(line: line, "read failed: \(error.localizedDescription)")
        }
        guard let data, !data.isEmpty else {
            atEnd = true
            return nil
        }
        return data
    }
}
