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
        var timeout: Duration?
        var cacheDirectory: String?
        var fields: [(String, String)] = []
        var index = 0
        func value() -> String? {
            index += 1
            return index < arguments.count ? arguments[index] : nil
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "-h", "--help":
                print(Usage.get)
                return 0
            case "-v", "--verbose":
                verbose = true
            case "--retries":
                guard let text = value(), let number = Int(text), number >= 1 else { return usage("--retries needs a number ≥ 1") }
                attempts = number
            case "--timeout":
                guard let text = value(), let seconds = Double(text), seconds > 0 else { return usage("--timeout needs seconds > 0") }
                timeout = .seconds(seconds)
            case "--cache-dir":
                guard let text = value() else { return usage("--cache-dir needs a directory") }
                cacheDirectory = text
            case "-H":
                guard let text = value(), let colon = text.firstIndex(of: ":") else { return usage("-H needs 'Name: value'") }
                fields.append((String(text[..<colon]).trimmingCharacters(in: .whitespaces),
                               String(text[text.index(after: colon)...]).trimmingCharacters(in: .whitespaces)))
            default:
                guard urlText == nil, !argument.hasPrefix("-") else { return usage("unexpected argument '\(argument)'") }
                urlText = argument
            }
            index += 1
        }
        guard let urlText else { return usage("a URL is required") }
        guard let url = URL(string: urlText), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme), url.host != nil else {
            return usage("'\(urlText)' is not an http(s) URL")
        }

        let storage: any CacheStorage
        if let cacheDirectory {
            do {
                storage = TieredStorage(memory: MemoryStorage(), lower: try DiskStorage(directory: URL(fileURLWithPath: cacheDirectory)))
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
        } catch {
            printError("recall get: \(error)")
            if verbose { context.events.forEach { printError("  \($0)") } }
            status = 1
        }
        // Let the disk cache's queued writes land before the process exits.
        if let disk = (storage as? TieredStorage)?.lower as? DiskStorage { await disk.flush() }
        return status
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
