import Foundation
import ReplayKit

// Hit-ratio trace replay (see ReplayKit):
//
//   swift run -c release HitRates [--requests N] [--objects N] [--out DIR]
//
// Prints a markdown table and writes one SVG chart per trace to DIR (default ../docs).

var requestCount = 1_000_000
var objectCount = 100_000
var outDirectory = "../docs"
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--requests": requestCount = Int(arguments.next() ?? "") ?? requestCount
    case "--objects": objectCount = Int(arguments.next() ?? "") ?? objectCount
    case "--out": outDirectory = arguments.next() ?? outDirectory
    default: print("usage: HitRates [--requests N] [--objects N] [--out DIR]"); exit(2)
    }
}
print(try hitRateReport(requests: requestCount, objects: objectCount, outDirectory: outDirectory))
