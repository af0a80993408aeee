import Foundation

/// A JSON reader over a ``ByteReader`` that hands out the elements of one array deep in a
/// document (a HAR's `log.entries`) one at a time, so that memory holds one element, never the
/// document. Everything else is checked for syntax and skipped.
struct StreamingJSONReader {
    private var reader: ByteReader
    /// Strings longer than this are kept as their length only.
    let stringLimit: Int
    /// Nesting deeper than this is refused (no stack overflow on hostile input).
    let depthLimit = 64
    /// Bytes one element may hold once long strings are dropped.
    let elementLimit: Int
    private var kept = 0

    init(reader: ByteReader, stringLimit: Int = 1 << 20, elementLimit: Int = 64 << 20) {
        self.reader = reader
        self.stringLimit = stringLimit
        self.elementLimit = elementLimit
    }

    var line: Int { reader.line }

    /// Walks the document, calling `body` with each element of the array at `path` (object keys
    /// from the top) and the line it starts on. Returns false when the path was not found.
    mutating func forEachElement(at path: [String], _ body: (JSONValue, Int) throws -> Void) throws -> Bool {
        try skipByteOrderMark()
        var found = false
        try walk(path: path[...], depth: 0, found: &found, body)
        try skipSpaceChecked()
        if let byte = try reader.peek() {
            throw error("unexpected \(describe(byte)) after the end of the JSON document")
        }
        return found
    }

    private mutating func walk(
        path: ArraySlice<String>, depth: Int, found: inout Bool,
        _ body: (JSONValue, Int) throws -> Void
    ) throws {
        try skipSpaceChecked()
        guard let first = path.first else {
            // At the array: hand out its elements.
            try expect(UInt8(ascii: "["), "an array")
            found = true
            try skipSpaceChecked()
            if try reader.peek() == UInt8(ascii: "]") { _ = try reader.next(); return }
            while true {
                try skipSpaceChecked()
                let start = reader.line
                kept = 0
                let element = try value(depth: depth + 1, keep: true)
                try body(element, start)
                try skipSpaceChecked()
                guard let byte = try reader.next() else { throw truncated("an array") }
                if byte == UInt8(ascii: "]") { return }
                guard byte == UInt8(ascii: ",") else { throw error("expected ',' or ']' in an array, found \(describe(byte))") }
            }
        }
        guard try reader.peek() == UInt8(ascii: "{") else {
            _ = try value(depth: depth, keep: false)
            return
        }
        _ = try reader.next()
        try skipSpaceChecked()
        if try reader.peek() == UInt8(ascii: "}") { _ = try reader.next(); return }
        while true {
            try skipSpaceChecked()
            let key = try string(keep: true)
            try skipSpaceChecked()
            try expect(UInt8(ascii: ":"), "':' after an object key")
            if key == .string(first), !found {
                try walk(path: path.dropFirst(), depth: depth + 1, found: &found, body)
            } else {
                _ = try value(depth: depth + 1, keep: false)
            }
            try skipSpaceChecked()
            guard let byte = try reader.next() else { throw truncated("an object") }
            if byte == UInt8(ascii: "}") { return }
            guard byte == UInt8(ascii: ",") else { throw error("expected ',' or '}' in an object, found \(describe(byte))") }
        }
    }

    /// One value; with `keep` false it is checked and dropped.
    private mutating func value(depth: Int, keep: Bool) throws -> JSONValue {
        guard depth <= depthLimit else { throw error("JSON nested deeper than \(depthLimit) levels") }
        try skipSpaceChecked()
        guard let byte = try reader.peek() else { throw truncated("a value") }
        switch byte {
        case UInt8(ascii: "{"):
            _ = try reader.next()
            try account(0, keep)
            var members: [String: JSONValue] = [:]
            try skipSpaceChecked()
            if try reader.peek() == UInt8(ascii: "}") { _ = try reader.next(); return .object(members) }
            while true {
                try skipSpaceChecked()
                let key = try string(keep: keep)
                try skipSpaceChecked()
                try expect(UInt8(ascii: ":"), "':' after an object key")
                let member = try value(depth: depth + 1, keep: keep)
                if keep, case .string(let name) = key { members[name] = member }
                try skipSpaceChecked()
                guard let next = try reader.next() else { throw truncated("an object") }
                if next == UInt8(ascii: "}") { return keep ? .object(members) : .null }
                guard next == UInt8(ascii: ",") else { throw error("expected ',' or '}' in an object, found \(describe(next))") }
            }
        case UInt8(ascii: "["):
            _ = try reader.next()
            try account(0, keep)
            var items: [JSONValue] = []
            try skipSpaceChecked()
            if try reader.peek() == UInt8(ascii: "]") { _ = try reader.next(); return .array(items) }
            while true {
                let item = try value(depth: depth + 1, keep: keep)
                if keep { items.append(item) }
                try skipSpaceChecked()
                guard let next = try reader.next() else { throw truncated("an array") }
                if next == UInt8(ascii: "]") { return keep ? .array(items) : .null }
                guard next == UInt8(ascii: ",") else { throw error("expected ',' or ']' in an array, found \(describe(next))") }
            }
        case UInt8(ascii: "\""):
            return try string(keep: keep)
        case UInt8(ascii: "t"): try literal("true"); try account(0, keep); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); try account(0, keep); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); try account(0, keep); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try number()
        default:
            throw error("expected a JSON value, found \(describe(byte))")
        }
    }

    private mutating func string(keep: Bool) throws -> JSONValue {
        try expect(UInt8(ascii: "\""), "a string")
        var bytes: [UInt8] = []
        var length = 0
        var pendingHigh: UInt16?
        while true {
            guard let byte = try reader.next() else { throw truncated("a string") }
            if byte == UInt8(ascii: "\"") { break }
            var decoded: [UInt8]
            if byte == UInt8(ascii: "\\") {
                guard let escape = try reader.next() else { throw truncated("a string") }
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded = [escape]
                case UInt8(ascii: "b"): decoded = [8]
                case UInt8(ascii: "f"): decoded = [12]
                case UInt8(ascii: "n"): decoded = [10]
                case UInt8(ascii: "r"): decoded = [13]
                case UInt8(ascii: "t"): decoded = [9]
                case UInt8(ascii: "u"):
                    let unit = try hex4()
                    if (0xD800..<0xDC00).contains(unit) {
                        pendingHigh = unit
                        continue
                    }
                    var scalar: Unicode.Scalar?
                    if (0xDC00..<0xE000).contains(unit), let high = pendingHigh {
                        pendingHigh = nil
                        scalar = Unicode.Scalar(0x10000 + ((UInt32(high) - 0xD800) << 10) + (UInt32(unit) - 0xDC00))
                    } else {
                        scalar = Unicode.Scalar(UInt32(unit))
                    }
                    decoded = Array(String(Character(scalar ?? "\u{FFFD}")).utf8)
                default:
                    throw error("invalid escape '\\\(describe(escape))' in a string")
                }
            } else {
                guard byte >= 0x20 else {
                    // (reading a newline already counted the next line)
                    throw ReplayInputError(
                        line: reader.line - (byte == 0x0A ? 1 : 0),
                        "a control character (\(byte)) inside a string; is the line cut?")
                }
                decoded = [byte]
            }
            if pendingHigh != nil {
                pendingHigh = nil
                if keep, length + 3 <= stringLimit { bytes.append(contentsOf: [0xEF, 0xBF, 0xBD]) }
                length += 3
            }
            length += decoded.count
            if keep, length <= stringLimit { bytes.append(contentsOf: decoded) }
        }
        guard keep else { return .null }
        guard length <= stringLimit else {
            try account(0)
            return .omittedString(length)
        }
        try account(length)
        return .string(String(decoding: bytes, as: UTF8.self))
    }

    private mutating func hex4() throws -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard let byte = try reader.next() else { throw truncated("a string") }
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("invalid \\u escape in a string")
            }
            value = value << 4 | UInt16(digit)
        }
        return value
    }

    private mutating func number() throws -> JSONValue {
        var text = ""
        while let byte = try reader.peek(),
            byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        {
            _ = try reader.next()
            text.unicodeScalars.append(Unicode.Scalar(byte))
            guard text.utf8.count <= 64 else { throw error("a number longer than 64 characters") }
        }
        guard let value = Double(text), value.isFinite else { throw error("'\(text)' is not a JSON number") }
        try account(8)
        return .number(value)
    }

    private mutating func literal(_ word: String) throws {
        for expected in word.utf8 {
            guard let byte = try reader.next() else { throw truncated("'\(word)'") }
            guard byte == expected else { throw error("expected '\(word)', found \(describe(byte))") }
        }
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws {
        guard let found = try reader.next() else { throw truncated(what) }
        guard found == byte else { throw error("expected \(what), found \(describe(found))") }
    }

    /// Charges a kept value of `bytes` (plus its slot) to the element being read.
    private mutating func account(_ bytes: Int, _ keep: Bool) throws {
        if keep { try account(bytes) }
    }

    private mutating func account(_ bytes: Int) throws {
        kept += bytes + 16
        if kept > elementLimit {
            throw error("an entry holds more than \(elementLimit >> 20) MiB besides its long strings: not a capture this tool reads")
        }
    }

    /// Skips a UTF-8 byte-order mark, which some tools write first.
    private mutating func skipByteOrderMark() throws {
        guard try reader.peek() == 0xEF else { return }
        for expected: UInt8 in [0xEF, 0xBB, 0xBF] {
            guard try reader.peek() == expected else { throw error("a stray byte at the start: not UTF-8 JSON") }
            _ = try reader.next()
        }
    }

    private mutating func skipSpaceChecked() throws {
        while let byte = try reader.peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
            _ = try reader.next()
        }
    }

    private func describe(_ byte: UInt8) -> String {
        (0x21..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : String(format: "byte 0x%02X", byte)
    }

    private func error(_ reason: String) -> ReplayInputError { ReplayInputError(line: reader.line, reason) }

    private func truncated(_ what: String) -> ReplayInputError {
        ReplayInputError(line: reader.line, "the file ends inside \(what): it is truncated (export it again)")
    }

    func close() { reader.close() }
}
