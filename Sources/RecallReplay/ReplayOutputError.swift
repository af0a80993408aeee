/// Why a replay could not write what it was asked to (the SVG chart): the path and the reason,
/// and the report when it was computed before the failure, so that the work is not lost.
public struct ReplayOutputError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The path that could not be written.
    public let path: String
    /// What is wrong, in plain words.
    public let reason: String
    /// The report, when the replay was done before the write failed; nil when the path was
    /// refused before any work.
    public let report: String?

    /// Creates an error.
    public init(path: String, reason: String, report: String? = nil) {
        self.path = path
        self.reason = reason
        self.report = report
    }

    /// `path: reason`.
    public var description: String { "\(path): \(reason)" }
}
