import Foundation

/// How the wait before each retry grows, before jitter.
///
/// The cap applies before jitter, so with full jitter every delay lies in `0...cap`.
public struct Backoff: Sendable, Hashable {
    /// The shape of the growth.
    public enum Shape: Sendable, Hashable {
        /// The same delay every time.
        case constant
        /// `base + increment × (n − 1)` for the n-th retry.
        case linear(increment: Duration)
        /// `base × multiplier^(n − 1)` for the n-th retry.
        case exponential(multiplier: Double)
    }

    /// The delay before the first retry.
    public var base: Duration
    /// How the delay grows.
    public var shape: Shape
    /// The largest delay, applied before jitter.
    public var cap: Duration

    /// Creates a backoff. No value traps, at any retry number: a negative base, cap or
    /// increment counts as zero; an exponential multiplier below 1 (negative, zero) counts as 1
    /// and a non-finite one as 2; delays are computed in floating point and capped before they
    /// become a `Duration`, so they never overflow.
    public init(base: Duration, shape: Shape, cap: Duration) {
        self.base = max(.zero, base)
        self.shape = shape.sanitized
        self.cap = max(.zero, cap)
    }

    /// The same `delay` before every retry.
    public static func constant(_ delay: Duration) -> Backoff {
        Backoff(base: delay, shape: .constant, cap: delay)
    }

    /// `base`, `base + increment`, `base + 2 × increment`…, at most `cap`.
    public static func linear(base: Duration, increment: Duration, cap: Duration = .seconds(30)) -> Backoff {
        Backoff(base: base, shape: .linear(increment: increment), cap: cap)
    }

    /// `base`, `base × multiplier`, `base × multiplier²`…, at most `cap`.
    public static func exponential(
        base: Duration = .milliseconds(100), multiplier: Double = 2,
        cap: Duration = .seconds(10)
    ) -> Backoff {
        Backoff(base: base, shape: .exponential(multiplier: multiplier), cap: cap)
    }

    /// The delay before retry number `retry` (1 for the first retry; any `Int`, `Int.max`
    /// included), capped, without jitter. Safe for any stored values, also ones set on the
    /// properties after creation.
    public func delay(forRetry retry: Int) -> Duration {
        let steps = Double(max(1, retry) - 1)  // exact enough: beyond 2^53 retries every delay is the cap
        let base = max(.zero, self.base), cap = max(.zero, self.cap)
        let seconds: Double
        switch shape.sanitized {
        case .constant:
            seconds = base.seconds
        case .linear(let increment):
            seconds = base.seconds + increment.seconds * steps
        case .exponential(let multiplier):
            seconds = base.seconds * pow(multiplier, min(steps, 10_000))
        }
        return Duration.clampedSeconds(seconds, to: cap)
    }
}

extension Backoff.Shape {
    /// The shape with values that cannot misbehave: increments of at least zero, multipliers of
    /// at least 1 (2 when not finite).
    var sanitized: Backoff.Shape {
        switch self {
        case .constant:
            return .constant
        case .linear(let increment):
            return .linear(increment: max(.zero, increment))
        case .exponential(let multiplier):
            return .exponential(multiplier: multiplier.isFinite ? max(1, multiplier) : 2)
        }
    }
}

extension Duration {
    /// `seconds` as a duration within `0...limit`: NaN and negative values are zero, values past
    /// the limit (infinity included) are the limit — so no arithmetic on hostile values overflows.
    static func clampedSeconds(_ seconds: Double, to limit: Duration) -> Duration {
        guard seconds > 0 else { return .zero }  // NaN too
        guard seconds < limit.seconds else { return limit }
        return min(.seconds(seconds), limit)
    }
}
