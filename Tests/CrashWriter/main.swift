// A child process for Recall's reliability tests: writes cache entries to a DiskStorage as fast
// as it can, printing "committed <key> <version>" once each write has landed on disk, until it
// is killed. The parent kills it with SIGKILL at random moments and checks the directory.
//
//   recall-crash-writer DIR SEED [--fsize-limit BYTES]
//
// With --fsize-limit the process limits the size of any file it writes (RLIMIT_FSIZE), so large
// entries fail for real with EFBIG; it then writes two versions of 40 entries, prints its storage
// statistics as "stats <writeFailures> <count>" and exits.
import Foundation
import Recall
#if canImport(Glibc)
    import Glibc
#endif

/// The body of version `version` of entry `index`: its size and bytes follow from both, so a
/// reader can tell a complete, matching body from a torn or mixed-up one.
func body(index: Int, version: Int) -> Data {
    let size = 64 + (index * 7919 + version * 104_729) % 20_000
    return Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index &+ version) })
}

func record(index: Int, version: Int) -> CacheRecord {
    CacheRecord(
        key: "https://crash.test/entry/\(index)",
        variants: [
            CacheEntry(
                status: 200, headers: ["X-Index": String(index), "X-Version": String(version)],
                body: body(index: index, version: version), url: nil,
                requestTime: Date(timeIntervalSince1970: 0), responseTime: Date(timeIntervalSince1970: 0))
        ])
}

let arguments = CommandLine.arguments
guard arguments.count >= 3, let seed = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: recall-crash-writer DIR SEED [--fsize-limit BYTES]\n".utf8))
    exit(2)
}
let directory = URL(fileURLWithPath: arguments[1])

if arguments.count >= 5, arguments[3] == "--fsize-limit", let limit = Int(arguments[4]) {
    signal(SIGXFSZ, SIG_IGN)  // a write past the limit then fails with EFBIG instead of killing us
    var rlimit = rlimit(rlim_cur: rlim_t(limit), rlim_max: rlim_t(limit))
    setrlimit(Int32(RLIMIT_FSIZE.rawValue), &rlimit)
    let storage = try DiskStorage(directory: directory)
    // Version 1 of 40 entries, then version 2 of each: where version 2 is too large to write,
    // the older version 1 must not survive in its place.
    for version in 1...2 {
        for index in 0..<40 { await storage.store(record(index: index, version: version)) }
        await storage.flush()
    }
    FileHandle.standardOutput.write(Data("stats \(storage.statistics.writeFailures) \(storage.statistics.count)\n".utf8))
    exit(0)
}

let storage = try DiskStorage(directory: directory, byteLimit: 1 << 30, entryLimit: 1 << 20)
var version = seed * 1_000_000
var index = 0
while true {
    version += 1
    index = (index + 1) % 500
    let record = record(index: index, version: version)
    await storage.store(record)
    if version % 8 == 0 {
        await storage.flush()
        FileHandle.standardOutput.write(Data("committed \(index) \(version)\n".utf8))
    }
}
