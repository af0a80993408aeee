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

    /// Creates a backoff; a negative base or cap counts as zero.
    public init(base: Duration, shape: Shape, cap: Duration) {
        self.base = max(.zero, base)
        self.shape = shape
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
    public static func exponential(base: Duration = .milliseconds(100), multiplier: Double = 2,
                                   cap: Duration = .seconds(10)) -> Backoff {
        Backoff(base: base, shape: .exponential(multiplier: max(1, multiplier.isFinite ? multiplier : 1)), cap: cap)
    }

    /// The delay before retry number `retry` (1 for the first retry), capped, without jitter.
    public func delay(forRetry retry: Int) -> Duration {
        let n = max(1, retry)
        let raw: Duration
        switch shape {
        case .constant:
            raw = base
        case .linear(let increment):
            raw = base + increment * (n - 1)
        case .exponential(let multiplier):
            let capSeconds = cap.seconds
            let seconds = base.seconds * pow(multiplier, Double(min(n - 1, 1000)))
            raw = seconds.isFinite && seconds < capSeconds ? .seconds(seconds) : cap
        }
        return min(max(.zero, raw), cap)
    }
}

