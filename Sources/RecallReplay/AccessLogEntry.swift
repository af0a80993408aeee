/// One line of an access log in Common or Combined Log Format, with what a replay needs.
public struct AccessLogEntry: Sendable, Hashable {
    /// The request method, such as GET; empty when the request line was not a request (`"-"`).
    public var method: String
    /// The request target (path and query), as logged.
    public var target: String
    /// The response status.
    public var status: Int
    /// The body bytes sent, or nil when logged as `-`.
    public var bytes: Int?
    /// The line of the log.
    public var line: Int

    /// Creates an entry.
    public init(method: String, target: String, status: Int, bytes: Int?, line: Int) {
        self.method = method
        self.target = target
        self.status = status
        self.bytes = bytes
        self.line = line
    }
}
