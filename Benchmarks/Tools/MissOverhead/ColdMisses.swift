import Foundation
import MissPathParts
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Times `count` misses through each of `sides`, in one process, the sides taking turns request
/// by request, each round in another of their orders, stepping through the list of all orders
/// 7,919 at a time (a prime): every order in turn for two or five sides; for eight, 3,200 rounds
/// take 3,200 of the 40,320 orders, and every side still runs at every place and after every
/// other side about as often. (A side that runs the same code as the one before it finds some of
/// that code still cached: none may always follow the same side, nor always run first.) Before each request,
/// `thrashMB` megabytes are written over, so that the core's caches hold something else, as they
/// do after a network wait; every request asks for a URL its side has not seen. `flush(side)`
/// runs after each request, off the clock: a store lands before the next request, as it does
/// between network waits. The first 200 rounds warm up and are not kept. Answers each side's
/// times, in µs, in the order of `sides`.
///
/// (Off the main actor: a call from the loop to a nonisolated function would hop executors.)
@concurrent func coldMisses(
    through sides: [any Transport], count: Int, thrashMB: Int, flush: @Sendable (Int) async -> Void
) async throws -> [[Double]] {
    var thrash = [UInt64](repeating: 1, count: thrashMB << 17)
    var times = Array(repeating: [Double](), count: sides.count)
    let clock = ContinuousClock()
    let orders = permutations(Array(sides.indices))
    for number in 0..<(200 + count) {
        for side in orders[(number &* 7919) % orders.count] {
            thrash.withUnsafeMutableBufferPointer { words in
                for index in stride(from: 0, to: words.count, by: 8) { words[index] &+= UInt64(number) }
            }
            let request = URLRequest(url: URL(string: "http://127.0.0.1:43210/cached?n=\(number)&cc=max-age%3D600&size=1024")!)
            let start = clock.now
            _ = try await sides[side].send(request)
            let elapsed = start.duration(to: clock.now)
            if number >= 200 { times[side].append(Double(elapsed.components.attoseconds) * 1e-12) }
            await flush(side)
        }
    }
    return times
}

/// The median of `values` (not empty).
func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
