import Foundation
import Synchronization
#if canImport(Glibc)
    import Glibc
#endif

/// How long one cache line takes to go from one core to another and back: two threads, each
/// pinned to one of the first two cores the process may use, hand a counter back and forth.
///
/// Why: on a VM the host decides which physical cores the virtual ones run on, and moves them.
/// On this project's machine the round trip is about 90 ns most of the time and about 400 ns
/// for stretches of seconds (the two cores placed far apart). Hits that share records between
/// cores (many keys, each hit by both) slow down with it; work that shares nothing does not,
/// so the tool's own ceiling cannot tell. Printed with each run, it says which placement the
/// run had.
enum CrossCoreProbe {
    /// What the two threads share: the line they hand back and forth (its turn), and how many
    /// of them are pinned (negative once either failed to pin: then neither measures).
    private final class Line: Sendable {
        let turn = Atomic<Int>(0)
        let pinned = Atomic<Int>(0)

        /// Counts the calling thread pinned and waits for the other; false if it failed to pin.
        func arrive() -> Bool {
            pinned.add(1, ordering: .acquiringAndReleasing)
            while true {
                let count = pinned.load(ordering: .acquiring)
                if count < 0 { return false }
                if count >= 2 { return true }
            }
        }

        /// Tells the other thread that this one could not be pinned.
        func fail() {
            pinned.store(-1_000, ordering: .releasing)
        }
    }

    /// A round trip in nanoseconds: the mean of the fastest of `batches` batches of
    /// `tripsPerBatch` round trips (a batch during which either thread was descheduled is slow,
    /// and would read as a far placement on a busy machine); nil where threads cannot be pinned
    /// to two distinct cores (not Linux, one core allowed, or a pin refused), since two threads
    /// spinning on one core would measure the scheduler.
    static func roundTrip(batches: Int = 50, tripsPerBatch: Int = 1_000) async -> Double? {
        #if canImport(Glibc)
            guard let cores = firstTwoAllowedCores() else { return nil }
            return await measure(batches: batches, tripsPerBatch: tripsPerBatch, cores: cores)
        #else
            return nil
        #endif
    }

    #if canImport(Glibc)
        /// The C library's calls for cores (GNU extensions, which the `Glibc` module leaves out),
        /// looked up at run time; nil where it lacks them.
        private struct Calls {
            typealias Affinity = @convention(c) (Int32, Int, UnsafeMutableRawPointer) -> Int32
            let getAffinity: Affinity, setAffinity: Affinity
            let currentCore: @convention(c) () -> Int32

            static let shared: Calls? = {
                guard let get = dlsym(nil, "sched_getaffinity"), let set = dlsym(nil, "sched_setaffinity"),
                    let current = dlsym(nil, "sched_getcpu")
                else { return nil }
                return Calls(
                    getAffinity: unsafeBitCast(get, to: Affinity.self), setAffinity: unsafeBitCast(set, to: Affinity.self),
                    currentCore: unsafeBitCast(current, to: (@convention(c) () -> Int32).self))
            }()
        }

        /// The set of cores a thread may run on (`cpu_set_t`: 1,024 bits).
        private typealias CoreSet = (
            UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
            UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64
        )

        /// The first two cores the process may run on.
        private static func firstTwoAllowedCores() -> (Int, Int)? {
            guard let calls = Calls.shared else { return nil }
            var set: CoreSet = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            let allowed = withUnsafeMutableBytes(of: &set) { bytes -> [Int] in
                guard calls.getAffinity(0, bytes.count, bytes.baseAddress!) == 0 else { return [] }
                let words = bytes.bindMemory(to: UInt64.self)  // the C library's words, in the machine's byte order
                return Array((0..<(words.count * 64)).filter { words[$0 / 64] & (1 << ($0 % 64)) != 0 }.prefix(2))
            }
            return allowed.count == 2 ? (allowed[0], allowed[1]) : nil
        }

        /// Pins the calling thread to `core`; whether it now runs there.
        private static func pin(to core: Int) -> Bool {
            guard let calls = Calls.shared, core < MemoryLayout<CoreSet>.size * 8 else { return false }
            var set: CoreSet = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            let pinned = withUnsafeMutableBytes(of: &set) { bytes in
                bytes.bindMemory(to: UInt64.self)[core / 64] |= 1 << (core % 64)
                return calls.setAffinity(0, bytes.count, bytes.baseAddress!) == 0
            }
            return pinned && calls.currentCore() == core
        }

        /// The fastest batch's mean round trip between a thread on each of `cores`, or nil if
        /// either thread could not be pinned (then neither hands anything back and forth).
        private static func measure(batches: Int, tripsPerBatch: Int, cores: (Int, Int)) async -> Double? {
            let trips = batches * tripsPerBatch
            let line = Line()
            return await withCheckedContinuation { (done: CheckedContinuation<Double?, Never>) in
                let answer = Thread {
                    guard pin(to: cores.1) else { return line.fail() }
                    guard line.arrive() else { return }
                    for trip in 0..<trips {
                        while line.turn.load(ordering: .acquiring) != 2 * trip + 1 {}
                        line.turn.store(2 * trip + 2, ordering: .releasing)
                    }
                }
                let ask = Thread {
                    guard pin(to: cores.0) else {
                        line.fail()
                        return done.resume(returning: nil)
                    }
                    guard line.arrive() else { return done.resume(returning: nil) }
                    let clock = ContinuousClock()
                    var fastest = Duration.seconds(1_000)
                    for batch in 0..<batches {
                        let start = clock.now
                        for trip in (batch * tripsPerBatch)..<((batch + 1) * tripsPerBatch) {
                            line.turn.store(2 * trip + 1, ordering: .releasing)
                            while line.turn.load(ordering: .acquiring) != 2 * trip + 2 {}
                        }
                        fastest = min(fastest, start.duration(to: clock.now))
                    }
                    let nanoseconds = Double(fastest.components.seconds) * 1e9 + Double(fastest.components.attoseconds) * 1e-9
                    done.resume(returning: nanoseconds / Double(tripsPerBatch))
                }
                answer.start()
                ask.start()
            }
        }
    #endif
}
