import Foundation

/// Reads a HAR 1.2 capture (what browsers' developer tools and many proxies export) entry by
/// entry, streaming: memory holds one entry at a time, whatever the file's size, and bodies
/// (`content.text`) are never kept.
///
/// A file that is not JSON, is cut short, or has no `log.entries` array is an error naming the
/// line. An entry that lacks a field a replay needs (a URL, a start time, a method) is an
/// error naming the entry and its line.
public struct HARReader {
    private var json: StreamingJSONReader
    private let formatter = ISO8601DateFormatter()
    private let fractional = ISO8601DateFormatter()

    /// Opens `path` (`-` for standard input). `chunkSize` is how much is read at a time.
    public init(path: String, chunkSize: Int = 1 << 16) throws {
        self.init(reader: try ByteReader(path: path, chunkSize: chunkSize))
    }

    /// Reads from `reader`, from where it stands (bytes it read ahead included).
    init(reader: ByteReader) {
        json = StreamingJSONReader(reader: reader, stringLimit: Self.stringLimit)
        formatter.formatOptions = [.withInternetDateTime]
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    }

    /// Calls `body` with each entry in file order; returns the number of entries.
    public mutating func forEach(_ body: (HAREntry) throws -> Void) throws -> Int {
        defer { json.close() }
        var count = 0
        let dates = (formatter, fractional)
        let found = try json.forEachElement(at: ["log", "entries"]) { value, line in
            count += 1
            try body(try Self.entry(value, number: count, line: line, dates: dates))
        }
        guard found else {
            throw ReplayInputError(line: 0, "no log.entries array: not a HAR capture (export one with 'Save all as HAR')")
        }
        return count
    }

    /// Reads every entry of `path`, sorted by start time (entries that start together keep their order).
    public static func read(path: String) throws -> [HAREntry] {
        try read(HARReader(path: path))
    }

    /// Reads every entry `reader` hands out, sorted by start time.
    static func read(_ reader: HARReader) throws -> [HAREntry] {
        var reader = reader
        var entries: [HAREntry] = []
        _ = try reader.forEach { entries.append($0) }
        // Captures are usually in order already: then no sorted copy is made.
        guard zip(entries, entries.dropFirst()).contains(where: { $0.started > $1.started }) else { return entries }
        return entries.enumerated().sorted { ($0.element.started, $0.offset) < ($1.element.started, $1.offset) }.map(\.element)
    }

    private static func entry(
        _ value: JSONValue, number: Int, line: Int,
        dates: (ISO8601DateFormatter, ISO8601DateFormatter)
    ) throws -> HAREntry {
        func fail(_ reason: String) -> ReplayInputError {
            ReplayInputError(line: line, "entry \(number): \(reason)")
        }
        guard case .object = value else { throw fail("not a JSON object") }
        guard let startedText = value["startedDateTime"]?.string else { throw fail("no startedDateTime") }
        guard let started = dates.1.date(from: startedText) ?? dates.0.date(from: startedText) else {
            throw fail("startedDateTime '\(startedText)' is not an ISO 8601 date")
        }
        guard let request = value["request"], case .object = request else { throw fail("no request object") }
        guard let method = request["method"]?.string, !method.isEmpty else { throw fail("no request.method") }
        guard let url = request["url"]?.string, !url.isEmpty else { throw fail("no request.url") }
        let response = value["response"] ?? .null
        let status = response["status"]?.number.map { Int(max(0, min($0, 999))) } ?? 0
        let contentSize = response["content"]?["size"]?.number
        let bodySize = response["bodySize"]?.number
        let size = [contentSize, bodySize].compactMap { $0 }.first { $0 >= 0 }.map { Int(min($0, Double(Int32.max))) }
        var clientCache = HAREntry.ClientCache.network
        switch value["_fromCache"]?.string {
        case "memory": clientCache = .memory
        case "disk": clientCache = .disk
        default:
            if let before = value["cache"]?["beforeRequest"], case .object = before { clientCache = .disk }
        }
        return HAREntry(
            started: started, method: method.uppercased(), url: url,
            requestHeaders: try fields(request["headers"], of: "request", fail),
            status: status, responseHeaders: try fields(response["headers"], of: "response", fail), bodySize: size,
            clientCache: clientCache, line: line)
    }

    /// The longest string kept (a longer one is only its length: ``JSONValue/omittedString(_:)``).
    static let stringLimit = 1 << 20

    private static func fields(
        _ value: JSONValue?, of message: String,
        _ fail: (String) -> ReplayInputError
    ) throws -> [(name: String, value: String)] {
        guard let value, value != .null else { return [] }
        guard let items = value.array else { throw fail("\(message).headers is not an array") }
        return try items.compactMap { item in
            if case .omittedString(let length)? = item["name"] {
                throw fail(
                    "a \(message) header field name of \(length) bytes, longer than the \(stringLimit >> 20) MiB "
                        + "this tool reads in a string: not a capture it can replay")
            }
            if case .omittedString(let length)? = item["value"] {
                let name = item["name"]?.string.map { "'\($0.prefix(64))'" } ?? "without a name"
                throw fail(
                    "the \(message) header field \(name) has a value of \(length) bytes, longer than the "
                        + "\(stringLimit >> 20) MiB this tool reads in a string (no server sends or accepts such a field)")
            }
            guard let name = item["name"]?.string, let text = item["value"]?.string else {
                throw fail("a \(message) header field without a name or a value (each needs both, as strings)")
            }
            return name.hasPrefix(":") ? nil : (name, text)
        }
    }
}
