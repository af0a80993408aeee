/// A response whose status a ``StatusValidator`` does not accept, thrown so that the hooks
/// outside the validator hear of it through `onFailure`. It carries the whole response.
public struct UnacceptableStatusError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The response that was refused.
    public let response: RecallResponse
    /// The statuses that would have been accepted.
    public let accepted: StatusSet

    /// Creates the error for `response`.
    public init(response: RecallResponse, accepted: StatusSet) {
        self.response = response
        self.accepted = accepted
    }

    /// The status of the refused response.
    public var status: Int { response.status }

    /// Names the status, the URL and a start of a text body.
    public var description: String {
        var text = "the server answered \(response.status)"
        if let url = response.url { text += " for \(url.absoluteString)" }
        text += " (accepted: \(accepted))"
        if let body = response.body.bytes, !body.isEmpty, body.count <= 500 || response.headers["Content-Type"]?.lowercased().hasPrefix("text/") == true {
            text += ": " + String(decoding: body.prefix(500), as: UTF8.self)
        }
        return text
    }
}
