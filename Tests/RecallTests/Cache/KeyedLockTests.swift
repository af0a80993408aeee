@testable import Recall
import Testing

@Suite("KeyedLock: one holder per key, waiters served in order", .timeLimit(.minutes(1)))
struct KeyedLockTests {
    @Test("a held key declines tryLock without disturbing its waiters; unlock hands it to them in order, then frees it")
    func handsOnInOrder() async {
        let lock = KeyedLock()
        #expect(lock.tryLock("k"))
        let order = Locked<[Int]>([])
        var tasks: [Task<Void, Never>] = []
        for index in 0..<3 {
            tasks.append(
                Task {
                    await lock.lock("k")
                    order.withLock { $0.append(index) }
                    lock.unlock("k")
                })
            while lock.waiters(for: "k") < index + 1 { await Task.yield() }  // queued in this order
        }
        #expect(!lock.tryLock("k"), "held: declined")
        #expect(lock.waiters(for: "k") == 3, "its waiters kept")
        lock.unlock("k")
        for task in tasks { await task.value }
        #expect(order.withLock { $0 } == [0, 1, 2])
        #expect(!lock.isHeld("k"))
        #expect(lock.tryLock("k"), "free again")
        #expect(!lock.isHeld("other"))
    }
}
