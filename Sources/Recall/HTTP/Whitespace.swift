/// HTTP's optional whitespace (spaces and tabs) trimmed from both ends. Foundation's
/// `trimmingCharacters(in:)` bridges through NSString on Linux and is far slower, and header
/// values are trimmed on every lookup.
package func trimOWS(_ text: Substring) -> String {
    let utf8 = text.utf8
    func isOWS(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
    guard let first = utf8.first, let last = utf8.last else { return "" }
    if !isOWS(first), !isOWS(last) { return String(text) }
    guard let start = utf8.firstIndex(where: { !isOWS($0) }), let end = utf8.lastIndex(where: { !isOWS($0) }) else { return "" }
    return String(text[start...end])
}

extension String {
    /// The string without leading and trailing spaces and tabs.
    package var trimmingOWS: String { trimOWS(self[...]) }
}

extension Substring {
    /// The substring without leading and trailing spaces and tabs.
    var trimmingOWS: String { trimOWS(self) }
}
