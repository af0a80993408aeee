@testable import Recall

/// Literal keys in tests (`coalescer.tryLead("k")`), hashed when written.
extension HashedKey: ExpressibleByStringLiteral {
    public init(stringLiteral text: String) { self.init(text) }
}
