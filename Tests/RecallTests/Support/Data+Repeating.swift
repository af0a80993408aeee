import Foundation

extension Data {
    /// `count` bytes made of `period` over and over (the last copy cut short): a large test
    /// body built in a few appends. A debug build that makes each byte through a generic `map`
    /// spends seconds per MiB when the cores are busy, on a thread of the test pool that other
    /// tests then wait for.
    static func repeating(_ period: Data, count: Int) -> Data {
        precondition(!period.isEmpty || count == 0)
        var data = Data(capacity: count)
        while data.count + period.count <= count { data.append(period) }
        data.append(period.prefix(count - data.count))
        return data
    }
}
