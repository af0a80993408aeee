import Foundation
import Recall
import RecallServices

/// The demo's service described with Recall's typed API: the same router and cache as the
/// scripted workload, so typed calls are cached and retried like any other request.
struct DemoAPI: HttpService {
    let router: ServiceRouter
    let cache: HTTPCache

    var apiUrl: String { "\(router.host)/catalog" }
    var scheme: String { "http" }
    var transport: any Transport { router }
    var hooks: [any ServiceHook] { [cache] }
    var retrierFactory: any RetrierFactory { .exponentialBackoff(base: .milliseconds(20), maxAttempts: 3) }

    /// `GET items/<id>`, decoded into ``Item``.
    struct GetItem: OutEndpoint {
        typealias Service = DemoAPI
        typealias Output = Item
        static let method = "GET"
        let id: Int
        var path: String { "items/\(id)" }
    }

    /// An item of the demo catalog.
    struct Item: Decodable, Sendable {
        let id: String
        let name: String
    }
}
