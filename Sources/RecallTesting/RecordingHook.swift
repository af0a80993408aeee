import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A ``/Recall/ServiceHook`` that records the events it sees, to check the order of hooks and what
/// each saw. Several hooks may share one ``HookLog`` to record a single ordered trace.
public struct RecordingHook: ServiceHook {
    /// The name written in front of each event.
    public let name: String
    /// Where events are written.
    public let log: HookLog

    /// Creates a hook named `name` writing to `log` (a new log by default).
    public init(_ name: String, log: HookLog = HookLog()) {
        self.name = name
        self.log = log
    }

    /// Records `name.schedule` and passes the request on.
    public func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
        log.append("\(name).schedule")
        return .proceed(request)
    }

    /// Records `name.success(<status> <source>)`.
    public func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse {
        log.append("\(name).success(\(response.status) \(response.source.rawValue))")
        return response
    }

    /// Records `name.failure(<error type>)`.
    public func onFailure(_ error: any Error, for request: URLRequest, context: RecallContext) async throws -> RecallResponse? {
        log.append("\(name).failure(\(type(of: error)))")
        return nil
    }
}

/// An ordered, thread-safe list of recorded events.
public final class HookLog: Sendable {
    private let entries = Locked<[String]>([])

    /// Creates an empty log.
    public init() {}

    /// Appends an entry.
    public func append(_ entry: String) {
        entries.withLock { $0.append(entry) }
    }

    /// The entries so far, in order.
    public var events: [String] { entries.withLock { $0 } }
}
