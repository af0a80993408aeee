import Testing

@testable import Recall

@Suite("S3-FIFO's ghost table")
struct GhostTableTests {
    @Test("A remembered hash is found once, then forgotten")
    func rememberAndForget() {
        var ghost = GhostTable()
        #expect(ghost.isEmpty)
        let beforeRemembered = ghost.forget(42, limit: 16)
        ghost.remember(42, limit: 16)
        #expect(!ghost.isEmpty)
        let found = ghost.forget(42, limit: 16)
        let foundAgain = ghost.forget(42, limit: 16)
        let other = ghost.forget(43, limit: 16)
        #expect(!beforeRemembered && found && !foundAgain && !other, "found once, then forgotten")
    }

    @Test("Only the last `limit` remembered are remembered: older ones age out without being dequeued")
    func agesOut() {
        var ghost = GhostTable()
        for hash in 0..<40 { ghost.remember(hash * 7_919, limit: 16) }
        var remembered: [Int] = []
        for hash in 0..<40 where ghost.forget(hash * 7_919, limit: 16) { remembered.append(hash) }
        #expect(remembered == Array(24..<40))
        #expect(ghost.capacity == 64, "four slots for each of 16, in groups of eight")
    }

    @Test("Remembering a hash again renews it instead of taking a second slot")
    func renews() {
        var ghost = GhostTable()
        ghost.remember(5, limit: 16)
        for hash in 100..<114 { ghost.remember(hash, limit: 16) }
        ghost.remember(5, limit: 16)  // renewed: now the newest
        for hash in 200..<210 { ghost.remember(hash, limit: 16) }
        let found = ghost.forget(5, limit: 16)
        let foundAgain = ghost.forget(5, limit: 16)
        #expect(found && !foundAgain, "renewed, in one slot, not two")
    }

    @Test("A group full of remembered hashes gives up its oldest")
    func fullGroup() {
        var ghost = GhostTable()
        // 64 slots are 8 groups: multiples of 8 all fall into the first group of eight slots.
        for index in 0..<9 { ghost.remember(index * 8, limit: 16) }
        var remembered: [Int] = []
        for index in 0..<9 where ghost.forget(index * 8, limit: 16) { remembered.append(index) }
        #expect(remembered == Array(1..<9), "the oldest made room")
    }

    @Test("Growing with the limit keeps what is remembered")
    func grows() {
        var ghost = GhostTable()
        for hash in 0..<16 { ghost.remember(hash, limit: 16) }
        ghost.remember(1_000, limit: 1_000)
        #expect(ghost.capacity == 4_096)
        var remembered: [Int] = []
        for hash in [Int](0..<16) + [1_000] where ghost.forget(hash, limit: 1_000) { remembered.append(hash) }
        #expect(remembered == [Int](0..<16) + [1_000])
    }

    @Test("Through S3-FIFO: keys evicted early and seen again within the ghost's window go to the main queue, older ones do not")
    func throughThePolicy() {
        // A cache of 100 one-byte records: 5 % small queue, a ghost of 50 keys.
        var policy = S3FIFOPolicy()
        policy.setCapacity(byteLimit: 100, countLimit: 100)
        var held = Set<String>()
        func insert(_ key: String) {
            held.insert(key)
            policy.recordInsert(key, size: 1)
            while held.count > 100, let victim = policy.victim() {
                held.remove(victim)
                policy.recordRemoval(victim)
            }
        }
        for index in 0..<300 { insert("k\(index)") }  // one-hit wonders: k0..<k200 evicted into the ghost
        #expect(!held.contains("k199") && held.contains("k200"))
        insert("k199")  // remembered: into the main queue, safe from the next small-queue evictions
        insert("k0")  // aged out of the ghost (50 remembered since): into the small queue
        for index in 300..<420 { insert("k\(index)") }  // the small queue turned over: k0 evicted again
        #expect(held.contains("k199"))
        #expect(!held.contains("k0"))
    }
}
