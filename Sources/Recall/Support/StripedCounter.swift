import Synchronization
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A counter that many threads add to at once without contending: each thread adds to one of
/// several cells on cache lines of their own (chosen by the thread), and a read sums the cells.
/// For counts bumped on every cache hit, where one shared lock or atomic would make the cores
/// take turns.
package final class StripedCounter: Sendable {
    /// One cell, padded to a cache line so that neighbouring cells never share one.
    private struct Cell: ~Copyable {
        let value = Atomic<Int>(0)
        private let padding: (Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0)
    }

    private static let cellCount = 16
    /// Inline in the counter, so that an add retains nothing (a retain is a write other cores see).
    private let cells: InlineArray<16, Cell> = InlineArray { _ in Cell() }

    /// Creates a zero counter.
    package init() {}

    /// Adds `amount` in the calling thread's cell.
    package func add(_ amount: Int = 1) {
        cells[Self.cellIndex()].value.add(amount, ordering: .relaxed)
    }

    /// The sum of every cell (adds racing with the read may or may not be included).
    package var value: Int {
        var sum = 0
        for index in cells.indices { sum += cells[index].value.load(ordering: .relaxed) }
        return sum
    }

    private static func cellIndex() -> Int {
        #if canImport(Glibc)
            let thread = UInt(pthread_self())  // an integer on glibc
        #else
            let thread = UInt(bitPattern: pthread_self())  // a pointer on Darwin and musl
        #endif
        // Thread handles are far apart and aligned: mix them (Fibonacci hashing), keep the top bits.
        return Int(truncatingIfNeeded: (UInt64(thread) &* 0x9E37_79B9_7F4A_7C15) >> 60) & (cellCount - 1)
    }
}
