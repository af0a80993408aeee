/// Why a capture or log could not be read: what is wrong and where, so the file can be fixed
/// or the right format chosen.
public struct ReplayInputError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The 1-based line where the problem was found (0 when it is not about one line).
    public let line: Int
    /// What is wrong, and what to do about it where that is not obvious.
    public let reason: String

    /// Creates an error.
    public init(line: Int, _ reason: String) {
        self.line = line
        self.reason = reason
    }

    /// `line N: reason`, or the reason alone.
    public var description: String { line > 0 ? "line \(line): \(reason)" : reason }
}
