import Foundation
import Recall
import Testing

extension RecallResponse {
    /// The bytes of a whole body; records an issue (and gives no bytes) for a streamed one,
    /// which a test must collect first.
    var data: Data {
        guard let bytes = body.bytes else {
            Issue.record("the body is streamed: collect it first")
            return Data()
        }
        return bytes
    }
}
