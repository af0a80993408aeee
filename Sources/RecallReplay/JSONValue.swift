/// A JSON value as the streaming reader keeps it. Strings longer than the reader's limit are
/// not kept: only their length is (a HAR's base64 bodies are never needed for a replay).
enum JSONValue: Sendable, Equatable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    /// A string longer than the reader's limit, with its length in bytes.
    case omittedString(Int)
    case number(Double)
    case bool(Bool)
    case null

    subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    var number: Double? {
        if case .number(let value) = self { return value }
        return nil
    }

    var array: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }
}
