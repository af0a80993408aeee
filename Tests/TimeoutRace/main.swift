// A child process for Recall's liveness test: sends WORKERS × REQUESTS GETs through a pipeline
// over URLSessionTransport with a 20 ms attempt timeout, to a loopback origin that answers
// after a random 0–40 ms, so that cancellations race completions hundreds of times. Prints
// "finished N" and exits 0. The parent test kills it when it has not finished in time: a hang
// (the corelibs cancellation deadlock) then fails the test instead of freezing the test run.
//
//   recall-timeout-race URL [WORKERS] [REQUESTS]
import Foundation
import Recall
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let arguments = CommandLine.arguments
guard arguments.count >= 2, let base = URL(string: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: recall-timeout-race URL [WORKERS] [REQUESTS]\n".utf8))
    exit(2)
}
let workers = arguments.count > 2 ? Int(arguments[2]) ?? 4 : 4
let requests = arguments.count > 3 ? Int(arguments[3]) ?? 150 : 150

var policy = RetryPolicy(maxAttempts: 1)
policy.attemptTimeout = .milliseconds(20)
let pipeline = Pipeline(transport: URLSessionTransport(), retrierFactory: .policy(policy))
let finished = Locked(0)
await withTaskGroup(of: Void.self) { group in
    for worker in 0..<workers {
        group.addTask {
            var random = SeededRandomSource(seed: UInt64(worker + 1))
            for _ in 0..<requests {
                var components = URLComponents(url: base, resolvingAgainstBaseURL: false)!
                components.queryItems = [URLQueryItem(name: "delay_ms", value: "\(Int.random(in: 0...40, using: &random))")]
                _ = try? await pipeline.send(URLRequest(url: components.url!))
                finished.withLock { $0 += 1 }
            }
        }
    }
}
print("finished \(finished.withLock { $0 })")
