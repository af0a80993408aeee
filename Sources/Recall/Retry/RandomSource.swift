import Foundation

/// Where retry jitter gets its randomness; inject ``SeededRandomSource`` for reproducible
/// delays in tests and simulations.
public protocol RandomSource: Sendable {
    /// A uniformly distributed number in `0..<1`.
    func nextUnit() -> Double
}

extension RandomSource {
    /// A uniformly distributed duration in `lower...upper` (just `lower` when the range is empty).
    /// A source that answers outside `0..<1` (or NaN) is held to that range.
    public func duration(between lower: Duration, and upper: Duration) -> Duration {
        guard upper > lower else { return lower }
        let unit = nextUnit()
        let fraction = unit.isNaN ? 0 : min(max(unit, 0), 1)
        // In floating point, so that no pair of durations overflows; then held to the range.
        let seconds = lower.seconds + (upper.seconds - lower.seconds) * fraction
        guard seconds.isFinite else { return lower }
        return min(max(.seconds(seconds), lower), upper)
    }
}

/// The system's random number generator.
public struct SystemRandomSource: RandomSource {
    /// Creates the source.
    public init() {}

    /// A number from `SystemRandomNumberGenerator`.
    public func nextUnit() -> Double { Double.random(in: 0..<1) }
}

/// A deterministic source (SplitMix64): the same seed gives the same sequence on every
/// platform, so golden tests can pin delay sequences. It is also a `RandomNumberGenerator`,
/// for reproducible simulations and property tests (`Int.random(in:using:)`).
public final class SeededRandomSource: RandomSource, RandomNumberGenerator {
    private let state: Locked<UInt64>

    /// Creates a source starting from `seed`.
    public init(seed: UInt64) {
        state = Locked(seed)
    }

    /// The next 64 random bits of the sequence.
    public func next() -> UInt64 {
        state.withLock { state -> UInt64 in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// The next number of the sequence, in `0..<1`.
    public func nextUnit() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }
}
