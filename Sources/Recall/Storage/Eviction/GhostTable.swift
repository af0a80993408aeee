/// S3-FIFO's ghost: the hashes of the last `limit` keys evicted early, in a table where a hash
/// ages out by itself.
///
/// Each hash is stamped with the count of hashes remembered so far; it is remembered while fewer
/// than `limit` were remembered after it. So nothing is dequeued when one is added: adding is
/// one write, and a lookup one read, both into one group of eight slots (128 bytes) chosen by
/// the hash. A group full of remembered hashes gives up its oldest, which only sends
/// that key, if it comes back, to the small queue instead of the main one. The table holds four
/// slots per remembered hash, so a group fills that way about once in a thousand additions
/// (a Poisson tail, see `slotsPerHash`).
///
/// The table is sized for the limit, not for what it holds (64–128 bytes per hash it may
/// remember, from the first eviction), and does not shrink: the limit follows the keys a cache
/// holds, which a storage bounds.
///
/// Before it, a dictionary of hashes and a queue of them: every eviction into the ghost added to
/// both and took the oldest out of both, four random reads where this makes one.
struct GhostTable {
    private struct Slot {
        var hash: Int
        /// When the hash was remembered (1 for the first); 0: empty.
        var stamp: UInt64
    }

    /// Slots in a group: the eight a lookup reads.
    private static let groupSize = 8
    /// Slots per remembered hash: with four, a group holds on average two remembered hashes.
    private static let slotsPerHash = 4

    private var slots: [Slot] = []
    /// Groups − 1 (a power of two − 1), to pick a group from a hash.
    private var groupMask = 0
    /// How many hashes were remembered so far (the stamp of the latest).
    private var clock: UInt64 = 0

    /// The slots the table holds now (for tests: it stays within a small multiple of `limit`).
    var capacity: Int { slots.count }

    /// Remembers `hash`, as the latest of the last `limit` evicted.
    mutating func remember(_ hash: Int, limit: Int) {
        if slots.count < max(1, limit) * Self.slotsPerHash { grow(to: limit) }
        clock += 1
        place(hash, stamp: clock, limit: limit)
    }

    /// Writes `hash` with `stamp` into its group: over itself if there, else into an empty or
    /// aged-out slot, else over the oldest.
    private mutating func place(_ hash: Int, stamp: UInt64, limit: Int) {
        let start = group(of: hash)
        var chosen = start
        var oldest = UInt64.max
        for index in start..<start + Self.groupSize {
            let slot = slots[index]
            // The hash's own slot, remembered or aged out: never two slots for one hash.
            if slot.stamp != 0, slot.hash == hash {
                chosen = index
                break
            }
            // A free slot counts as the oldest of all (0).
            let age = isRemembered(slot, limit: limit) ? slot.stamp : 0
            if age < oldest {
                oldest = age
                chosen = index
            }
        }
        slots[chosen] = Slot(hash: hash, stamp: stamp)
    }

    /// Whether `hash` is among the last `limit` remembered; it is forgotten when it is.
    mutating func forget(_ hash: Int, limit: Int) -> Bool {
        guard !slots.isEmpty else { return false }
        let start = group(of: hash)
        for index in start..<start + Self.groupSize
        where slots[index].hash == hash && isRemembered(slots[index], limit: limit) {
            slots[index].stamp = 0
            return true
        }
        return false
    }

    private func isRemembered(_ slot: Slot, limit: Int) -> Bool {
        slot.stamp != 0 && clock - slot.stamp < UInt64(max(1, limit))
    }

    private func group(of hash: Int) -> Int {
        (hash & groupMask) &* Self.groupSize
    }

    /// Makes room for `limit` hashes, keeping the ones remembered now (the limit grows with the
    /// keys a cache holds: it doubles at most `log2(countLimit)` times).
    private mutating func grow(to limit: Int) {
        var groups = 1
        while groups * Self.groupSize < limit * Self.slotsPerHash { groups *= 2 }
        let kept = slots.filter { isRemembered($0, limit: limit) }.sorted { $0.stamp < $1.stamp }
        slots = Array(repeating: Slot(hash: 0, stamp: 0), count: groups * Self.groupSize)
        groupMask = groups - 1
        // Oldest first, with their stamps, so that the newest win a full group.
        for slot in kept { place(slot.hash, stamp: slot.stamp, limit: limit) }
    }
}
