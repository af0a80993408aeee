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
            case "-H":
                guard let text = value(), let colon = text.firstIndex(of: ":") else { return usage("-H needs 'Name: value'") }
                fields.append((String(text[..<colon]).trimmingCharacters(in: .whitespaces),
                               String(text[text.index(after: colon)...]).trimmingCharacters(in: .whitespaces)))
            default:
                guard urlText == nil, !argument.hasPrefix("-") else { return usage("unexpected argument '\(argument)'") }
                urlText = argument
            }
        }
        guard let urlText else { return usage("a URL is required") }
        guard var components = URLComponents(string: urlText), let scheme = components.scheme?.lowercased(),
              ["http", "https"].contains(scheme), components.host?.isEmpty == false else {
            return usage("'\(urlText)' is not an http(s) URL")
        }
        components.scheme = scheme // `HTTP://…` is valid, but not every transport accepts it
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
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache], retrierFactory: .policy(policy))
        var request = URLRequest(url: url)
        for (name, value) in fields { request.addValue(value, forHTTPHeaderField: name) }
        let context = RequestContext(originalRequest: request)
        let status: Int32
        do {
            let response = try await pipeline.send(request, context: context)
            print("HTTP \(response.status) \(HTTPURLResponse.localizedString(forStatusCode: response.status))")
            if verbose { print(response.headers.description) }
            print("")
            if let text = String(data: response.body, encoding: .utf8) {
                print(text)
            } else {
                print("<\(response.body.count) bytes of binary data>")
            }
            print("\n— \(describe(response.source)), \(context.attempts) attempt\(context.attempts == 1 ? "" : "s"), \(response.body.count) bytes")
            if verbose { context.events.forEach { print("  \($0)") } }
            status = 0
        } catch let error as TransportError where error.kind == .timedOut {
            let limit = timeoutGiven ? "the --timeout of" : "the default per-attempt timeout of"
            printError("recall get: no response within \(limit) \(seconds(timeout)) s (\(context.attempts) attempt\(context.attempts == 1 ? "" : "s")); "
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

    static func seconds(_ duration: Duration) -> String {
        let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return value == value.rounded() ? String(Int(value)) : String(format: "%g", value)
    }

    static func describe(_ source: Response.Source) -> String {
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
