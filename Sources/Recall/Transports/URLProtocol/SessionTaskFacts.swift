import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What ``RecallURLProtocol`` needs to know of the `URLSessionTask` it loads for, and of that
/// task's session, which `URLProtocol` does not show: the session's additional header fields
/// and time limits (a protocol that answers in place of the network must apply them as the
/// network protocol would), and whether the task runs its completion as soon as it ends.
///
/// swift-corelibs-foundation keeps these in the task's stored properties; they are read once,
/// with `Mirror`, in `startLoading` — on the session's work queue, where the task's own code
/// changes them. On Apple's platforms, where the system applies the session's settings itself,
/// nothing is read.
struct SessionTaskFacts: Sendable {
    /// The session's `httpAdditionalHeaders`, as text.
    var additionalHeaders: [String: String] = [:]
    /// The session's `timeoutIntervalForRequest` and `timeoutIntervalForResource`, in seconds
    /// (`nil`: not known).
    var requestTimeout: TimeInterval?
    var resourceTimeout: TimeInterval?
    /// Whether the task runs its completion as soon as it ends (the `async` `data(for:)` family).
    var completesInline = false
    /// Whether the client takes the body in chunks, each passed on as it comes: a task whose
    /// session's delegate hears of its data. swift-corelibs-foundation keeps only the last chunk
    /// for a task with a completion handler (or an `async` call), so there the body goes in one
    /// piece at its end; on Apple's platforms the client takes chunks for every task.
    var takesChunks = true
    /// The session's delegate queue, when it is serial and the client takes chunks: an operation
    /// added there after a chunk runs once the delegate has had that chunk, which is how the
    /// protocol paces its deliveries by the delegate (``RecallURLProtocol``). `nil` otherwise (and
    /// on Apple's platforms, where the client is called on the loading thread and paces itself).
    var delegateQueue: UncheckedQueue?

    /// The facts of `task` (none known for `nil`, or on Apple's platforms).
    init(task: URLSessionTask?) {
        #if !canImport(Darwin)
            guard let task else { return }
            var mirror: Mirror? = Mirror(reflecting: task)
            var session: URLSession?
            var inline: Bool?
            while let current = mirror, session == nil || inline == nil {
                for child in current.children {
                    switch child.label {
                    case "session": session = Self.unwrap(child.value) as? URLSession
                    case "_callCompletionHandlerInline": inline = child.value as? Bool
                    default: continue
                    }
                    if session != nil, inline != nil { break }
                }
                mirror = current.superclassMirror
            }
            completesInline = inline ?? false
            takesChunks = session.map { Self.callsDelegate(session: $0, for: task) } ?? false
            if takesChunks, let queue = session?.delegateQueue, queue.maxConcurrentOperationCount == 1 {
                delegateQueue = UncheckedQueue(queue: queue)
            }
            guard let configuration = session?.configuration else { return }
            for (name, value) in configuration.httpAdditionalHeaders ?? [:] {
                guard let name = name as? String else { continue }
                additionalHeaders[name] = (value as? String) ?? "\(value)"
            }
            requestTimeout = configuration.timeoutIntervalForRequest
            resourceTimeout = configuration.timeoutIntervalForResource
        #endif
    }

    /// Whether corelibs' session registered `task` to call its delegate (`callDelegate`, no
    /// completion handler) and that delegate hears of data; false when it cannot be told.
    private static func callsDelegate(session: URLSession, for task: URLSessionTask) -> Bool {
        guard session.delegate is any URLSessionDataDelegate,
            let registry = Mirror(reflecting: session).children.first(where: { $0.label == "taskRegistry" })?.value,
            let behaviours = Mirror(reflecting: registry).children.first(where: { $0.label == "behaviours" })?.value
        else { return false }
        for entry in Mirror(reflecting: behaviours).children {
            let pair = Array(Mirror(reflecting: entry.value).children)
            guard pair.count == 2, pair[0].value as? Int == task.taskIdentifier else { continue }
            return String(describing: pair[1].value) == "callDelegate"
        }
        return false
    }

    /// The value inside an `Optional` seen through `Any` (the task keeps its session weakly).
    private static func unwrap(_ value: Any) -> Any? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first?.value
    }

    /// `request` with the session's additional header fields it does not set itself (the
    /// request's own fields win, as with the network protocol).
    func applied(to request: URLRequest) -> URLRequest {
        guard !additionalHeaders.isEmpty else { return request }
        var request = request
        for (name, value) in additionalHeaders where request.value(forHTTPHeaderField: name) == nil {
            request.setValue(value, forHTTPHeaderField: name)
        }
        return request
    }

    /// How long the load of `request` may wait for its head: the session's request limit or its
    /// resource limit, whichever is shorter; `nil` when neither is known or positive.
    func limit(for request: URLRequest) -> Duration? {
        let limits = bodyLimits(for: request)
        return [limits.silence, limits.total].compactMap { $0 }.min()
    }

    /// The limits of the load of `request`, as its session applies them: the request limit to
    /// each silence (a wait for more data), the resource limit to the whole load; `nil` for a
    /// limit not known or not positive. A request's own `timeoutInterval`, set to anything but
    /// the default 60 s, replaces the session's request limit (as corelibs' network protocol
    /// does). Limits over a year count as none.
    func bodyLimits(for request: URLRequest) -> (silence: Duration?, total: Duration?) {
        func duration(_ seconds: TimeInterval?) -> Duration? {
            guard let seconds, seconds > 0, seconds < 366 * 86_400 else { return nil }
            return .milliseconds(Int64((seconds * 1000).rounded(.up)))
        }
        return (duration(request.timeoutInterval != 60 ? request.timeoutInterval : requestTimeout), duration(resourceTimeout))
    }
}

/// A session's delegate queue, handed to the task that delivers a load's chunks (it only adds
/// operations to it, which `OperationQueue` allows from any thread).
struct UncheckedQueue: @unchecked Sendable {
    let queue: OperationQueue
}
