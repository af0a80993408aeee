import Foundation

extension Data {
    /// A copy whose storage holds exactly its bytes. A body a transport appended chunk by
    /// chunk may keep up to twice its size in spare capacity; a stored body lives long, so the
    /// cache copies it once, on the miss path, and its byte accounting stays true.
    var exactlySized: Data {
        count <= 14 ? self : withUnsafeBytes { Data(bytes: $0.baseAddress!, count: $0.count) }
    }
}
