import Dispatch
@testable import Recall
import Testing

@Suite("Locked: a mutex that spins before it sleeps, still one holder at a time", .timeLimit(.minutes(1)))
struct LockedTests {
    @Test("threads contending for the lock never hold it together, and every change lands")
    func excludesContendingThreads() {
        // Two fields changed one after the other: a holder that finds them apart ran beside
        // another holder. Real threads (not tasks), more of them than cores, so that they contend
        // and some spin or sleep on the lock.
        let locked = Locked((first: 0, second: 0, torn: 0))
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            for _ in 0..<20_000 {
                locked.withLock { state in
                    if state.first != state.second { state.torn += 1 }
                    state.first += 1
                    state.second += 1
                }
            }
        }
        let state = locked.withLock { $0 }
        #expect(state.torn == 0)
        #expect(state.first == 120_000 && state.second == 120_000)
    }

    @Test("withLockIfAvailable answers nil while the lock is held, not recursively entering it")
    func tryingAHeldLockAnswersNil() {
        let locked = Locked(0)
        let inside: Int? = locked.withLock { _ in locked.withLockIfAvailable { $0 + 1 } }
        #expect(inside == nil)
        let free: Int? = locked.withLockIfAvailable { $0 + 1 }
        #expect(free == 1)
    }
}
