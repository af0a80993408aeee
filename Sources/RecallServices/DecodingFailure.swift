import Recall
/// Says what a `DecodingError` means in one line a person can act on: which key or value,
/// where in the document, and what was expected.
enum DecodingFailure {
    /// `"no value for key 'user_name' at items[0]"`, `"expected Int at items[0].id, found a string"`…
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        switch error {
        case .keyNotFound(let key, let context):
            return "no value for key '\(key.stringValue)'" + place(context.codingPath)
        case .valueNotFound(let type, let context):
            return "expected \(type) but found null" + place(context.codingPath)
        case .typeMismatch(let type, let context):
            return "expected \(type)" + place(context.codingPath) + ": \(context.debugDescription)"
        case .dataCorrupted(let context):
            return "the data is not valid" + place(context.codingPath) + ": \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }

    /// `" at items[0].id"`, or `" at the top level"`.
    private static func place(_ path: [any CodingKey]) -> String {
        guard !path.isEmpty else { return " at the top level" }
        var text = ""
        for key in path {
            if let index = key.intValue { text += "[\(index)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
        }
        return " at " + text
    }
}
