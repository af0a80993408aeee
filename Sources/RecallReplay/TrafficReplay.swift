import Foundation
import Recall

/// The report of `recall replay FILE` (and of the HitRates tool's `--har` and `--log`): what
/// Recall would have done with a user's real traffic.
public enum TrafficReplay {
    /// The input's format.
    public enum Format: String, Sendable {
        /// A HAR 1.2 capture.
        case har
        /// An access log in Common or Combined Log Format.
        case log
    }

    /// The default cache sizes, as shares of the working set.
    public static let defaultFractions = [0.01, 0.05, 0.1, 0.25, 0.5]

    /// Reads `path` (`-`: standard input) and returns the report as text: for a HAR, the replay
    /// through `HTTPCache`; for both, the eviction policies at each size next to Belady.
    /// Writes an SVG chart to `chartPath` when given.
    ///
    /// Without `format`, the name decides (`.har`, `.json` or `.log`), else the first byte that
    /// is not white space (`{`: a HAR). The input is opened and read once, detection included,
    /// so a pipe, a FIFO, `<(…)` or standard input works as well as a file.
    /// - Throws: ``ReplayInputError`` naming the line of malformed input; file errors;
    ///   ``ReplayOutputError`` for a chart path that cannot be written — checked before the
    ///   replay, and if the write fails all the same, with the report.
    public static func report(
        path: String, format: Format? = nil, fractions: [Double] = defaultFractions, bytes: [Int] = [],
        chartPath: String? = nil
    ) async throws -> String {
        if let chartPath { try checkWritable(chartPath) }
        var lines: [String] = []
        let trace: Trace
        let name = path == "-" ? "standard input" : URL(fileURLWithPath: path).lastPathComponent
        // One reader for detection and the replay: a pipe, a FIFO or `<(…)` cannot be read twice.
        var reader = try ByteReader(path: path)
        let chosen: Format
        if let known = format ?? formatNamed(path) {
            chosen = known
        } else {
            chosen = try detectFormat(&reader)
        }
        switch chosen {
        case .har:
            let entries = try HARReader.read(HARReader(reader: reader))
            lines.append(describe(await HTTPCacheReplay.run(entries), name: name))
            trace = Trace.objects(of: entries, name: name)
        case .log:
            let (logTrace, count) = try Trace.objects(of: AccessLogReader(reader: reader), name: name)
            lines.append(
                "\(name): access log, \(count) lines, \(logTrace.requests.count) GET requests answered 200, 203 or 304 "
                    + "(\(logTrace.objectCount) distinct targets). An access log has no Cache-Control or validators: only the "
                    + "eviction policies are compared.")
            trace = logTrace
        }
        let (objects, workingSet) = trace.workingSet
        guard !trace.requests.isEmpty, workingSet > 0 else {
            lines.append("\nNo GET requests answered 200, 203 or 304 with a known size: no eviction replay.")
            return lines.joined(separator: "\n")
        }
        let sizes =
            EvictionComparison.shares(fractions, of: trace)
            + bytes.map { EvictionComparison.CacheSize(label: byteText($0), bytes: $0) }
        lines.append(
            "\nEviction policies at cache sizes given as shares of the working set (\(byteText(workingSet)) in "
                + "\(objects) objects): Recall's MemoryStorage with each policy, next to Belady's offline optimum (exact "
                + "for equal sizes, the usual heuristic otherwise), over the \(trace.requests.count) GET requests answered 200, 203 "
                + "or 304; freshness not considered.\n")
        let comparison = EvictionComparison(trace: trace, sizes: sizes, evictions: EvictionComparison.policies)
        lines.append(comparison.markdown)
        if let chartPath {
            do {
                try comparison.svg.write(toFile: chartPath, atomically: true, encoding: .utf8)
            } catch {
                throw ReplayOutputError(
                    path: chartPath, reason: "the chart could not be written (\(error.localizedDescription))",
                    report: lines.joined(separator: "\n"))
            }
            lines.append("\nwrote \(chartPath)")
        }
        return lines.joined(separator: "\n")
    }

    /// Refuses, before any work, a chart path whose directory is missing or not writable, or
    /// that names a directory.
    static func checkWritable(_ path: String) throws {
        let files = FileManager.default
        var isDirectory: ObjCBool = false
        if files.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw ReplayOutputError(path: path, reason: "is a directory: give the chart a file name, such as \(path)/hit-ratio.svg")
        }
        let parent = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard files.fileExists(atPath: parent, isDirectory: &isDirectory) else {
            throw ReplayOutputError(path: path, reason: "the directory \(parent) does not exist")
        }
        guard isDirectory.boolValue else { throw ReplayOutputError(path: path, reason: "\(parent) is not a directory") }
        guard files.isWritableFile(atPath: parent) else {
            throw ReplayOutputError(path: path, reason: "the directory \(parent) is not writable")
        }
    }

    /// The format `path`'s name gives (`.har`, `.json`: a HAR; `.log`: a log), or nil.
    static func formatNamed(_ path: String) -> Format? {
        let lower = path.lowercased()
        if lower.hasSuffix(".har") || lower.hasSuffix(".json") { return .har }
        if lower.hasSuffix(".log") { return .log }
        return nil
    }

    /// The format of what `reader` is about to read, from its first byte that is not white
    /// space or a byte-order mark (a HAR is a JSON object): read ahead, not consumed, so the
    /// replay reads the same bytes.
    static func detectFormat(_ reader: inout ByteReader) throws -> Format {
        let first = try reader.firstByte(skipping: [0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF], limit: 1 << 20)
        return first == UInt8(ascii: "{") ? .har : .log
    }

    /// Cache sizes from text: `1%,10%` → shares of the working set; `64KB,16MB` → bytes; both
    /// may be mixed. Nil for anything else.
    public static func parseSizes(_ text: String) -> (fractions: [Double], bytes: [Int])? {
        var fractions: [Double] = []
        var bytes: [Int] = []
        for part in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).uppercased() }) {
            if part.hasSuffix("%") {
                guard let value = Double(part.dropLast()), value > 0, value <= 100 else { return nil }
                fractions.append(value / 100)
                continue
            }
            let units: [(String, Int)] = [("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10), ("B", 1)]
            guard let (suffix, scale) = units.first(where: { part.hasSuffix($0.0) }),
                let value = Double(part.dropLast(suffix.count)), value > 0, value * Double(scale) < Double(1 << 50)
            else { return nil }
            bytes.append(Int(value * Double(scale)))
        }
        return fractions.isEmpty && bytes.isEmpty ? nil : (fractions, bytes)
    }

    static func describe(_ report: HTTPReplayReport, name: String) -> String {
        func share(_ part: Int, _ whole: Int) -> String {
            whole == 0 ? "0 %" : percent(Double(part) * 100 / Double(whole)) + " %"
        }
        let cache = report.cache
        return """
            \(name): HAR capture, \(report.entries) entries (\(report.replayed) replayed; \(report.skipped) skipped: not http(s), or no response\
            \(report.rangeRequests == 0 ? "" : "; \(report.rangeRequests) range requests not replayed: sizes are replayed, not bytes"))

            Through Recall's HTTPCache (memory storage, a clock following the capture's times):
              hits \(cache.hits), stale \(cache.stale), revalidated \(cache.revalidated) (+\(cache.revalidatedChanged) changed), \
            misses \(cache.misses), not cacheable by method \(cache.bypassed); stored \(cache.stores)
              hit ratio \(percent(cache.hitRatio * 100)) % of \(cache.lookups) lookups
              origin requests \(report.originRequests) of \(report.replayed) (\(report.originRequestsSaved) saved, \
            \(share(report.originRequestsSaved, report.replayed)))
              body bytes from the origin \(byteText(report.originBodyBytes)) of \(byteText(report.bodyBytes)) \
            (\(byteText(report.bytesSaved)) saved, \(share(report.bytesSaved, report.bodyBytes)))
            The capturing client's own cache, as the HAR says: \(report.clientMemoryHits) from memory, \(report.clientDiskHits) \
            from disk, \(report.clientRevalidated) revalidated (304): \(share(report.clientSaved, report.replayed)) of requests \
            without a body from the network
            """
    }
}

/// `1.5 MB`, `512 B`: sizes for people.
func byteText(_ bytes: Int) -> String {
    let units = ["B", "KB", "MB", "GB", "TB"]
    var value = Double(bytes)
    var unit = 0
    while abs(value) >= 1024, unit < units.count - 1 {
        value /= 1024
        unit += 1
    }
    return unit == 0 ? "\(bytes) B" : String(format: "%.1f", value) + " " + units[unit]
}
