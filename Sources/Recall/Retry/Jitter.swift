/// How a backoff delay is randomized so that many clients do not retry in lockstep.
///
/// See "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015) for the trade-offs:
/// full jitter spreads load best; decorrelated jitter grows from the previous delay.
public enum Jitter: String, Sendable, Hashable, CaseIterable {
    /// The delay as computed.
    case none
    /// Uniform in `0...delay`.
    case full
    /// Uniform in `delay/2...delay`.
    case equal
    /// Uniform in `base...previous × 3`, at most the cap.
    case decorrelated

    /// Applies the jitter to `delay`; `previous` is the last delay used (the base at first).
    public func apply(to delay: Duration, previous: Duration, backoff: Backoff, random: any RandomSource) -> Duration {
        switch self {
        case .none:
            return delay
        case .full:
            return random.duration(between: .zero, and: delay)
        case .equal:
            return random.duration(between: delay / 2, and: delay)
        case .decorrelated:
            let cap = max(.zero, backoff.cap), base = min(max(.zero, backoff.base), cap)
            let upper = Duration.clampedSeconds(max(base, previous).seconds * 3, to: cap)
            return min(cap, random.duration(between: base, and: upper))
        }
    }
}
