import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `recall get URL`: one request through a pipeline, printing what came back and what the
/// cache and the retrier did.
enum GetCommand {
    static func run(_ arguments: [String]) async -> Int32 {
        var urlText: String?
        var verbose = false
        var attempts = 3
        var timeout = defaultTimeout
        var timeoutGiven = false
        var cacheDirectory: String?
        var maxBody = defaultMaxBody
        var maxBodyGiven = false
        var outputPath: String?
        var fields: [(String, String)] = []
        var cursor = ArgumentCursor(arguments)
        func value() -> String? { cursor.value() }
        while let argument = cursor.next() {
            switch argument {
            case "-h", "--help":
                print(Usage.get)
                return 0
            case "-v", "--verbose":
                verbose = true
            case "--retries":
                let limit = RetryPolicy.attemptLimit
                guard let text = value(), let number = Int(text), (1...limit).contains(number) else {
                    return usage("--retries takes the number of attempts in all, 1 to \(limit)")
                }
                attempts = number
            case "--timeout":
                guard let text = value(), let seconds = Double(text), seconds.isFinite, seconds >= 0.001, seconds <= 86_400 else {
                    return usage("--timeout takes seconds from 0.001 to 86400 (one day)")
                }
                timeout = .milliseconds(Int64((seconds * 1000).rounded()))
                timeoutGiven = true
            case "--cache-dir":
                guard let text = value(), !text.isEmpty else { return usage("--cache-dir needs a directory path (not an empty one)") }
                cacheDirectory = text
            case "--max-body":
                guard let text = value(), let bytes = parseSize(text), (1...maxBodyLimit).contains(bytes) else {
                    return usage("--max-body takes a size from 1 byte to 4 GB, such as 500KB, 256MB or 2GB")
                }
                maxBody = bytes
                maxBodyGiven = true
            case "-o", "--output":
                guard let text = value(), !text.isEmpty else { return usage("--output needs a file path for the body") }
                outputPath = text
            case "-H":
                guard let text = value(), let colon = text.firstIndex(of: ":") else { return usage("-H needs 'Name: value'") }
                fields.append(
                    (
                        String(text[..<colon]).trimmingCharacters(in: .whitespaces),
                        String(text[text.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
                    ))
            default:
                guard urlText == nil, !argument.hasPrefix("-") else { return usage("unexpected argument '\(argument)'") }
                urlText = argument
            }
        }
        guard let urlText else { return usage("a URL is required") }
        guard var components = URLComponents(string: urlText), let scheme = components.scheme?.lowercased(),
            ["http", "https"].contains(scheme), components.host?.isEmpty == false
        else {
            return usage("'\(urlText)' is not an http(s) URL")
        }
        components.scheme = scheme  // `HTTP://…` is valid, but not every transport accepts it
        guard let url = components.url else { return usage("'\(urlText)' is not an http(s) URL") }

        let storage: any CacheStorage
        if let cacheDirectory {
            do {
                storage = TieredStorage(memory: MemoryStorage(), lower: try DiskStorage(directory: URL(fileURLWithPath: cacheDirectory)))
            } catch let error as CacheStorageError where error.code == .locked {
                // Another process has the cache open: the user's request still deserves an answer.
                printError("recall get: warning: not using the cache in \(cacheDirectory): \(error.reason); fetching without it")
                storage = MemoryStorage()
            } catch {
                printError("recall get: \(error)")
                return 1
            }
        } else {
            storage = MemoryStorage()
        }
        let cache = HTTPCache(storage: storage)
        var policy = RetryPolicy(maxAttempts: attempts)
        policy.attemptTimeout = timeout
        let pipeline = Pipeline(transport: URLSessionTransport(maxResponseBodyBytes: maxBody), hooks: [cache], retrierFactory: .policy(policy))
        var request = URLRequest(url: url)
        for (name, value) in fields { request.addValue(value, forHTTPHeaderField: name) }
        let context = RecallContext(originalRequest: request)
        let status: Int32
        do {
            // (Collected whole: the transport's maxResponseBodyBytes bounds it.)
            let response = try await pipeline.send(request, context: context).collected()
            let body = response.body.bytes ?? Data()
            print("HTTP \(response.status) \(HTTPURLResponse.localizedString(forStatusCode: response.status))")
            if verbose { print(response.headers.description) }
            print("")
            status = try writeBody(body, to: outputPath) ? 0 : 1
            print("\n— \(describe(response.source)), \(context.attempts) attempt\(context.attempts == 1 ? "" : "s"), \(body.count) bytes")
            if verbose { context.events.forEach { print("  \($0)") } }
        } catch let error as TransportError where error.code == .other && error.message.contains("maxResponseBodyBytes") {
            let limit = maxBodyGiven ? "the --max-body of" : "the default limit of"
            printError(
                "recall get: the response body is larger than \(limit) \(sizeText(maxBody)) (\(maxBody) bytes); "
                    + "nothing was kept. Allow more with --max-body SIZE (up to 4 GB; the body is held in memory)")
            if verbose { context.events.forEach { printError("  \($0)") } }
            status = 1
        } catch let error as TransportError where error.code == .timedOut {
            let limit = timeoutGiven ? "the --timeout of" : "the default per-attempt timeout of"
            printError(
                "recall get: no response within \(limit) \(seconds(timeout)) s (\(context.attempts) attempt\(context.attempts == 1 ? "" : "s")); "
                    + "the server may be down or slow: try again later, or allow more time with --timeout SECONDS")
            if verbose { context.events.forEach { printError("  \($0)") } }
            status = 1
        } catch {
            printError("recall get: \(error)")
            if verbose { context.events.forEach { printError("  \($0)") } }
            status = 1
        }
        // Let the disk cache's queued writes land before the process exits.
        await storage.flush()
        return status
    }

    /// The per-attempt timeout when `--timeout` is not given: a hanging server gets a clear
    /// answer in bounded time instead of silence.
    static let defaultTimeout: Duration = .seconds(30)

    /// The largest response body accepted when `--max-body` is not given: the body is held in
    /// memory, so a huge or endless one fails early with a clear reason instead of exhausting it.
    static let defaultMaxBody = 64 << 20

    /// The largest `--max-body`.
    static let maxBodyLimit = 4 << 30

    /// Writes the body, as bytes, to `path` or to standard output — except a binary body to a
    /// terminal, which it replaces with a line saying what it is. False when `path` cannot be written.
    static func writeBody(_ body: Data, to path: String?) throws -> Bool {
        if let path {
            do {
                try body.write(to: URL(fileURLWithPath: path))
            } catch {
                printError("recall get: the body could not be written to \(path): \(error.localizedDescription)")
                return false
            }
            print("<\(body.count) bytes written to \(path)>")
            return true
        }
        if isatty(STDOUT_FILENO) != 0, !isText(body) {
            print("<\(body.count) bytes of binary data, not written to a terminal: use --output FILE, or redirect standard output>")
            return true
        }
        fflush(nil)  // what print has buffered goes first
        try FileHandle.standardOutput.write(contentsOf: body)
        print("")
        return true
    }

    /// Whether `body` is UTF-8 text without control characters other than tab, CR and LF
    /// (checked without making a String of it).
    static func isText(_ body: Data) -> Bool {
        var bytes = body.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&bytes) {
            case .scalarValue(let scalar):
                if scalar.value < 0x20, scalar != "\t", scalar != "\n", scalar != "\r" { return false }
                if scalar.value == 0x7F { return false }
            case .emptyInput:
                return true
            case .error:
                return false
            }
        }
    }

    /// `64KB`, `256MB`, `2GB` (units of 1,024), or a number of bytes; nil for anything else.
    static func parseSize(_ text: String) -> Int? {
        let upper = text.trimmingCharacters(in: .whitespaces).uppercased()
        let units: [(String, Int)] = [("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10), ("B", 1)]
        let (number, scale) = units.first { upper.hasSuffix($0.0) }.map { (String(upper.dropLast($0.0.count)), $0.1) } ?? (upper, 1)
        guard let value = Double(number.trimmingCharacters(in: .whitespaces)), value.isFinite, value >= 0,
            value * Double(scale) < Double(1 << 50)
        else { return nil }
        return Int((value * Double(scale)).rounded())
    }

    /// `64 MB`, `1.5 GB`, `512 bytes`.
    static func sizeText(_ bytes: Int) -> String {
        let units: [(String, Int)] = [("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)]
        guard let (name, scale) = units.first(where: { bytes >= $0.1 }) else { return "\(bytes) bytes" }
        let value = Double(bytes) / Double(scale)
        return (value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)) + " " + name
    }

    static func seconds(_ duration: Duration) -> String {
        let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return value == value.rounded() ? String(Int(value)) : String(format: "%g", value)
    }

    static func describe(_ source: RecallResponse.Source) -> String {
        switch source {
        case .network: "from the network"
        case .cache: "from the cache (fresh)"
        case .revalidated: "from the cache, revalidated with the origin (304)"
        case .stale: "from the cache, stale"
        }
    }

    static func usage(_ problem: String) -> Int32 {
        printError("recall get: \(problem)\n\n\(Usage.get)")
        return 2
    }
}
