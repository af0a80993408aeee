import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Adds an `Idempotency-Key` to POST and PATCH requests that have none, so that the retrier
/// may repeat them and the server can recognise the repeats. The key is added once, before
/// the retrier, so every attempt carries the same key.
public struct IdempotencyKeyHook: ServiceHook {
    /// The header field name.
    public let field: String
    /// The methods that get a key.
    public let methods: Set<String>
    private let makeKey: @Sendable () -> String

    /// Creates the hook; `makeKey` makes a new key (a UUID by default).
    public init(
        field: String = "Idempotency-Key", methods: Set<String> = ["POST", "PATCH"],
        makeKey: @escaping @Sendable () -> String = { UUID().uuidString }
    ) {
        self.field = field
        self.methods = Set(methods.map { $0.uppercased() })
        self.makeKey = makeKey
    }

    /// Adds the key when the method needs one and the request has none.
    public func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
        guard methods.contains(RequestMethod(request).rawValue),
            request.value(forHTTPHeaderField: field) == nil
        else { return .proceed(request) }
        var request = request
        request.setValue(makeKey(), forHTTPHeaderField: field)
        return .proceed(request)
    }
}
