import Recall
/// The ``HttpService/ErrorResponse`` of a service that declares none: error answers are not
/// decoded, and ``ServiceError`` carries their status and raw body.
public struct NoErrorResponse: Decodable, Sendable, Hashable {
    /// Never decodes: there is nothing to decode into.
    public init(from decoder: any Decoder) throws {
        throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "NoErrorResponse is never decoded"))
    }
}
