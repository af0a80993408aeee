/// Reads an access log in Common Log Format (`host ident user [time] "request" status bytes`)
/// or Combined Log Format (the same, then `"referer" "user-agent"`), line by line: memory holds
/// one line at a time.
///
/// A line in another format is an error that names the line and says what was expected;
/// blank lines are skipped.
public struct AccessLogReader {
    private var reader: ByteReader
    /// The longest line accepted.
    public static let lineLimit = 64 << 10
    /// The largest response size accepted (sums of sizes then cannot overflow).
    public static let sizeLimit = 4 << 30

    /// Opens `path` (`-` for standard input).
    public init(path: String, chunkSize: Int = 1 << 16) throws {
        reader = try ByteReader(path: path, chunkSize: chunkSize)
    }

    /// Reads from `reader`, from where it stands (bytes it read ahead included).
    init(reader: ByteReader) {
        self.reader = reader
    }

    /// Calls `body` with each entry in file order; returns the number of lines read.
    public mutating func forEach(_ body: (AccessLogEntry) throws -> Void) throws -> Int {
        defer { reader.close() }
        var lines = 0
        while true {
            let number = reader.line
            guard let bytes = try reader.nextLine(limit: Self.lineLimit) else { return lines }
            lines += 1
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            try body(try Self.parse(bytes[...], line: number))
        }
    }

    /// Parses one line.
    public static func parse(_ text: String, line: Int) throws -> AccessLogEntry {
        try parse(Array(text.utf8)[...], line: line)
    }

    static func parse(_ bytes: ArraySlice<UInt8>, line: Int) throws -> AccessLogEntry {
        var scanner = Scanner(bytes: bytes)
        func fail(_ reason: String) -> ReplayInputError {
            ReplayInputError(line: line, "not in Common or Combined Log Format (host ident user [time] \"request\" status bytes): \(reason)")
        }
        for field in ["host", "ident", "user"] {
            guard scanner.token() != nil else { throw fail("no \(field) field") }
            guard scanner.skipSpace() else { throw fail("the line ends after the \(field) field") }
        }
        guard scanner.take(UInt8(ascii: "[")), scanner.upTo(UInt8(ascii: "]")) != nil else {
            throw fail("no [time] after the user field")
        }
        guard scanner.skipSpace(), scanner.take(UInt8(ascii: "\"")), let request = scanner.quoted() else {
            throw fail("no quoted request line after the time")
        }
        guard scanner.skipSpace(), let statusText = scanner.token(), statusText.count == 3,
            let status = Int(String(decoding: statusText, as: UTF8.self)), (100...599).contains(status)
        else {
            throw fail("no three-digit status after the request line")
        }
        guard scanner.skipSpace(), let sizeText = scanner.token() else { throw fail("no size after the status") }
        let size: Int?
        if sizeText.elementsEqual("-".utf8) {
            size = nil
        } else {
            guard let value = Int(String(decoding: sizeText, as: UTF8.self)), value >= 0 else {
                throw fail("the size '\(String(decoding: sizeText, as: UTF8.self))' is not a number of bytes or '-'")
            }
            guard value <= Self.sizeLimit else {
                throw ReplayInputError(line: line, "a response of \(value) bytes, more than \(Self.sizeLimit >> 30) GiB: not a size this tool believes")
            }
            size = value
        }
        let parts = String(decoding: request, as: UTF8.self).split(separator: " ", omittingEmptySubsequences: true)
        // "-" or a garbled request line (a scanner's probe) is logged too: a line, not a request.
        let method = parts.count >= 2 ? String(parts[0]) : ""
        let target = parts.count >= 2 ? String(parts[1]) : ""
        return AccessLogEntry(method: method, target: target, status: status, bytes: size, line: line)
    }

    /// A cursor over one line.
    private struct Scanner {
        let bytes: ArraySlice<UInt8>
        var index: Int

        init(bytes: ArraySlice<UInt8>) {
            self.bytes = bytes
            index = bytes.startIndex
        }

        mutating func token() -> ArraySlice<UInt8>? {
            let start = index
            while index < bytes.endIndex, bytes[index] != 0x20, bytes[index] != 0x09 { index += 1 }
            return index > start ? bytes[start..<index] : nil
        }

        mutating func skipSpace() -> Bool {
            let start = index
            while index < bytes.endIndex, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
            return index > start && index < bytes.endIndex
        }

        mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.endIndex, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func upTo(_ byte: UInt8) -> ArraySlice<UInt8>? {
            let start = index
            while index < bytes.endIndex, bytes[index] != byte { index += 1 }
            guard index < bytes.endIndex else { return nil }
            defer { index += 1 }
            return bytes[start..<index]
        }

        /// The rest of a quoted string (after its opening quote), with `\"` escapes kept as is.
        mutating func quoted() -> ArraySlice<UInt8>? {
            let start = index
            while index < bytes.endIndex {
                if bytes[index] == UInt8(ascii: "\\") {
                    index += 2
                    continue
                }
                if bytes[index] == UInt8(ascii: "\"") {
                    defer { index += 1 }
                    return bytes[start..<index]
                }
                index += 1
            }
            return nil
        }
    }
}
