import Foundation

extension AsyncSequence where Self: Sendable {
    /// Reads the sequence to its end (a statement's rows, so its connection is released).
    func drain() async throws {
        for try await _ in self {}
    }

    /// Every element (a statement's rows).
    func all() async throws -> [Element] {
        var elements: [Element] = []
        for try await element in self { elements.append(element) }
        return elements
    }

    /// The first element, reading the rest (so the connection is released); nil when there is none.
    func first() async throws -> Element? {
        var first: Element?
        for try await element in self where first == nil { first = element }
        return first
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
