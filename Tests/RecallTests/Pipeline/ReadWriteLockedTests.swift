import Foundation
@testable import Recall
import Synchronization
import Testing

@Suite("ReadWriteLocked: one lock per core, writers take them all", .timeLimit(.minutes(1)))
struct ReadWriteLockedTests {
    /// How many writers have finished.
    private final class Finished: Sendable { let count = Atomic<Int>(0) }

    @Test("readers on every core never see a write half done, and every write lands")
    func writersExcludeReadersOnEveryStripe() async {
        // 256 values a writer sets one by one: a reader that sees two differ ran beside a writer.
        let locked = ReadWriteLocked([Int](repeating: 0, count: 256))
        let writers = Finished()
        let (torn, reads) = await withTaskGroup(of: (Int, Int).self) { group in
            for _ in 0..<2 {
                group.addTask {
                    for _ in 0..<1_000 {
                        locked.write { values in
                            let next = values[0] + 1
                            for index in values.indices { values[index] = next }
                        }
                        await Task.yield()  // let readers in between writes, on both cores
                    }
                    writers.count.add(1, ordering: .releasing)
                    return (0, 0)
                }
            }
            for _ in 0..<4 {
                group.addTask {
                    var torn = 0, reads = 0
                    // Read for as long as the writers write (at least a little), on whatever core.
                    while writers.count.load(ordering: .acquiring) < 2 || reads < 1_000 {
                        if locked.read({ $0[0] != $0[255] || $0[0] != $0[128] }) { torn += 1 }
                        reads += 1
                        if reads % 64 == 0 { await Task.yield() }
                    }
                    return (torn, reads)
                }
            }
            return await group.reduce((0, 0)) { ($0.0 + $1.0, $0.1 + $1.1) }
        }
        #expect(torn == 0, "\(torn) of \(reads) reads saw a write half done")
        #expect(locked.read { $0.allSatisfy { $0 == 2_000 } })
    }

    @Test("a reader's lock is its core's: readers on one stripe each, writers on all, whatever the core says")
    func stripesFollowTheCore() {
        // Whatever stripe a reader picks (sched_getcpu may even fail), it reads and unlocks the
        // same one: reads interleaved with writes never deadlock or see stale state.
        let locked = ReadWriteLocked([Int]())
        for value in 0..<1_000 {
            locked.write { $0.append(value) }
            #expect(locked.read { $0.last } == value)
        }
        #expect(locked.read { $0.count } == 1_000)
    }
}
