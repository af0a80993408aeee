/// A set of HTTP status codes, written as a list (`[200, 204]`) or as ranges
/// (`StatusSet(200...299, 304...304)`): the statuses an endpoint accepts, or a
/// ``StatusValidator`` lets through.
public struct StatusSet: Sendable, Hashable, ExpressibleByArrayLiteral, CustomStringConvertible {
    /// The ranges of the set, in the order given.
    public let ranges: [ClosedRange<Int>]

    /// The statuses in `ranges`.
    public init(_ ranges: ClosedRange<Int>...) {
        self.ranges = ranges
    }

    /// The statuses in `ranges`.
    public init(ranges: [ClosedRange<Int>]) {
        self.ranges = ranges
    }

    /// The statuses listed.
    public init(arrayLiteral statuses: Int...) {
        self.ranges = statuses.map { $0...$0 }
    }

    /// `200...299`: what Alamofire's `validate()`, Decree and Squid accept.
    public static let success = StatusSet(200...299)

    /// Whether `status` is in the set.
    public func contains(_ status: Int) -> Bool {
        ranges.contains { $0.contains(status) }
    }

    /// This set with `statuses` added: `StatusSet.success.adding(304)`.
    public func adding(_ statuses: Int...) -> StatusSet {
        StatusSet(ranges: ranges + statuses.map { $0...$0 })
    }

    /// This set with the statuses of `other` added.
    public func union(_ other: StatusSet) -> StatusSet {
        StatusSet(ranges: ranges + other.ranges)
    }

    /// `200...299`, `[200, 404]`…
    public var description: String {
        ranges.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)...\($0.upperBound)" }.joined(separator: ", ")
    }
}
