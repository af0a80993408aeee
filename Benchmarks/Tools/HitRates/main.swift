import Foundation
import RecallReplay

// Hit ratios of Recall's eviction policies next to Belady (see RecallReplay):
//
//   swift run -c release HitRates [--requests N] [--objects N] [--out DIR]
//       the synthetic study: a markdown table, and one SVG chart per trace in DIR (default ../docs)
//   swift run -c release HitRates --har FILE | --log FILE [--sizes LIST] [--chart FILE.svg]
//       a user's own traffic, the same report as `recall replay FILE`

var requestCount = 1_000_000
var objectCount = 100_000
var outDirectory = "../docs"
var traffic: (path: String, format: TrafficReplay.Format)?
var sizes: (fractions: [Double], bytes: [Int]) = (TrafficReplay.defaultFractions, [])
var chart: String?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(
        Data(
            "HitRates: \(message)\nusage: HitRates [--requests N] [--objects N] [--out DIR]\n"
                .appending("       HitRates --har FILE | --log FILE [--sizes 1%,10%,64MB] [--chart FILE.svg]\n").utf8))
    exit(2)
}
@MainActor func next(_ message: String) -> String {
    guard let value = arguments.next() else { fail(message) }
    return value
}
@MainActor func positive(_ message: String) -> Int {
    guard let value = Int(next(message)), value > 0 else { fail(message) }
    return value
}
while let argument = arguments.next() {
    switch argument {
    case "--requests": requestCount = positive("--requests takes a positive number")
    case "--objects": objectCount = positive("--objects takes a positive number")
    case "--out": outDirectory = next("--out takes a directory")
    case "--har": traffic = (next("--har takes a file"), .har)
    case "--log": traffic = (next("--log takes a file"), .log)
    case "--sizes":
        guard let parsed = TrafficReplay.parseSizes(next("--sizes takes a list")) else { fail("--sizes takes shares (1%,10%) or sizes (64MB)") }
        sizes = parsed
    case "--chart": chart = next("--chart takes a file")
    default: fail("unexpected argument '\(argument)'")
    }
}
do {
    if let traffic {
        print(
            try await TrafficReplay.report(
                path: traffic.path, format: traffic.format, fractions: sizes.fractions,
                bytes: sizes.bytes, chartPath: chart))
    } else {
        print(try HitRateStudy(requests: requestCount, objects: objectCount).report(chartsIn: outDirectory))
    }
} catch let error as ReplayOutputError {
    // The replay was done: print its report before saying what could not be written.
    if let report = error.report { print(report) }
    FileHandle.standardError.write(Data("HitRates: --chart \(error)\n".utf8))
    exit(1)
} catch {
    FileHandle.standardError.write(Data("HitRates: \(error)\n".utf8))
    exit(1)
}
