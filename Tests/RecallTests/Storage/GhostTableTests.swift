import Testing

@testable import Recall

/// Which of `hashes` `ghost` remembers, in order (each forgotten as it is found).
private func remembered(_ hashes: [Int], in ghost: inout GhostTable, limit: Int) -> [Int] {
    hashes.filter { ghost.forget($0, limit: limit) }
}

@Suite("S3-FIFO's ghost table")
struct GhostTableTests {
    @Test("A remembered hash is found once, then forgotten")
    func rememberAndForget() {
        var ghost = GhostTable()
        #expect(ghost.capacity == 0)
        let beforeRemembered = ghost.forget(42, limit: 16)
        ghost.remember(42, limit: 16)
        #expect(ghost.capacity == 64)
        let found = ghost.forget(42, limit: 16)
        let foundAgain = ghost.forget(42, limit: 16)
        let other = ghost.forget(43, limit: 16)
        #expect(!beforeRemembered && found && !foundAgain && !other, "found once, then forgotten")
    }

    @Test("Only the last `limit` remembered are remembered: older ones age out without being dequeued")
    func agesOut() {
        var ghost = GhostTable()
        let hashes = (0..<40).map { $0 * 7_919 }
        for hash in hashes { ghost.remember(hash, limit: 16) }
        #expect(remembered(hashes, in: &ghost, limit: 16) == Array(hashes[24...]))
        #expect(ghost.capacity == 64, "four slots for each of 16, in groups of eight")
    }

    @Test("Remembering a hash again renews it instead of taking a second slot")
    func renews() {
        var ghost = GhostTable()
        ghost.remember(5, limit: 16)
        ghost.remember(5, limit: 16)
        #expect(remembered([5, 5], in: &ghost, limit: 16) == [5], "one slot, not two")
        ghost.remember(5, limit: 16)
        for hash in 100..<114 { ghost.remember(hash, limit: 16) }
        ghost.remember(5, limit: 16)  // renewed: now the newest
        for hash in 200..<210 { ghost.remember(hash, limit: 16) }  // 25 since its first time: kept only if renewed
        #expect(remembered([5], in: &ghost, limit: 16) == [5], "renewed")
    }

    @Test("A group full of remembered hashes gives up its oldest")
    func fullGroup() {
        var ghost = GhostTable()
        // 64 slots are 8 groups: multiples of 8 all fall into the first group of eight slots.
        let hashes = (0..<9).map { $0 * 8 }
        for hash in hashes { ghost.remember(hash, limit: 16) }
        #expect(remembered(hashes, in: &ghost, limit: 16) == Array(hashes[1...]), "the oldest made room")
    }

    @Test("Growing with the limit keeps what is remembered")
    func grows() {
        var ghost = GhostTable()
        for hash in 0..<16 { ghost.remember(hash, limit: 16) }
        ghost.remember(1_000, limit: 1_000)
        #expect(ghost.capacity == 4_096)
        let hashes = [Int](0..<16) + [1_000]
        #expect(remembered(hashes, in: &ghost, limit: 1_000) == hashes)
        // A smaller limit later keeps the table (no shrinking back and forth), and it never
        // holds more than eight slots per hash of the largest limit.
        for hash in 2_000..<2_100 { ghost.remember(hash, limit: 16) }
        #expect(ghost.capacity == 4_096 && ghost.capacity <= 8 * 1_000)
        #expect(remembered(Array(2_084..<2_100), in: &ghost, limit: 16) == Array(2_084..<2_100))
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
