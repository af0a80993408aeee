import Foundation
import Recall
import RecallServices
import Testing

/// Errors are structs with an open set of codes: callers match on `code`, and new codes can be
/// added without breaking a `switch` (it needs a `default:`).
@Suite("Errors: open codes, stable descriptions")
struct ErrorCodeTests {
    @Test("a thrown error is matched by its code, and carries its details")
    func matchByCode() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try DiskStorage(directory: directory)
        do {
            _ = try DiskStorage(directory: directory)
            Issue.record("a second storage opened a locked directory")
        } catch let error as CacheStorageError where error.code == .locked {
            #expect(error.description.contains("give each process its own directory"))
            #expect(error.reason.contains(directory.path))
        }
        _ = first
    }

    @Test("codes of one error type differ, compare by name, and switch with a default")
    func codes() {
        let codes: [CacheStorageError.Code] = [.corrupt, .directory, .writeFailed, .locked]
        #expect(Set(codes).count == 4)
        #expect(CacheStorageError.locked("x").code == .locked && CacheStorageError.locked("x") != CacheStorageError.locked("y"))
        func kind(_ error: RetryError) -> String {
            switch error.code {
            case .deadlineExceeded: "deadline"
            case .retryAfterExceedsDeadline: "retry-after"
            default: "other"
            }
        }
        #expect(kind(.deadlineExceeded(deadline: .seconds(5), attempts: 2)) == "deadline")
        #expect(RetryError.deadlineExceeded(deadline: .seconds(5), attempts: 2).attempts == 2)
        #expect(ServiceError.badStatus(404, body: Data("gone".utf8)).statusCode == 404)
        #expect(ServiceError.coding("x").statusCode == nil)
        #expect(ServiceRouterError.wrongHost(nil, expected: "local").description.contains("http://local/"))
        #expect(CacheError.unmatchedNotModified(URL(string: "https://a.test/x")).code == .unmatchedNotModified)
        #expect(ServiceError.Code.coding.description == "coding")
    }
}
