@testable import Recall
import Testing

@Suite("StripedTable: keys in stripes, each behind its own lock")
struct StripedTableTests {
    /// Keys until every stripe holds at least two (a stripe is picked by the key's hash, which
    /// Swift seeds per process: the keys are found, not fixed). Gives up after 100,000 tries (a
    /// stripe no key reaches would otherwise keep it looking forever): callers check the count.
    static func keysCoveringEveryStripe() -> [HashedKey] {
        let table = StripedTable<Int>()
        var keys: [HashedKey] = []
        var perStripe = [Int](repeating: 0, count: StripedTable<Int>.stripeCount)
        var number = 0
        while perStripe.contains(where: { $0 < 2 }), number < 100_000 {
            let key = HashedKey("https://example.com/items/\(number)")
            number += 1
            let stripe = table.stripe(of: key)
            guard perStripe[stripe] < 2 else { continue }
            perStripe[stripe] += 1
            keys.append(key)
        }
        return keys
    }

    @Test("a key is always found in its own stripe, and every stripe is visited once")
    func stripes() throws {
        let table = StripedTable<Int>()
        let keys = Self.keysCoveringEveryStripe()
        try #require(keys.count == 2 * StripedTable<Int>.stripeCount, "keys for every stripe")
        for (index, key) in keys.enumerated() { table.withLock(key) { $0[key] = index } }
        for (index, key) in keys.enumerated() { #expect(table.withLock(key) { $0[key] } == index) }
        var visited: [Int] = []
        var stripes = 0
        table.forEachStripe { stripe in
            stripes += 1
            #expect(stripe.count == 2)
            visited += stripe.values
        }
        #expect(stripes == StripedTable<Int>.stripeCount)
        #expect(visited.sorted() == Array(keys.indices))
    }
}
