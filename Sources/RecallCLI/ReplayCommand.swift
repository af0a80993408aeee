import Foundation
import Recall
import RecallReplay

/// `recall replay FILE`: what Recall would have done with a user's real traffic, from a HAR
/// capture or an access log.
enum ReplayCommand {
    static func run(_ arguments: [String]) async -> Int32 {
        var path: String?
        var format: TrafficReplay.Format?
        var fractions = TrafficReplay.defaultFractions
        var absoluteSizes: [Int] = []
        var chartPath: String?
        var cursor = ArgumentCursor(arguments)
        func value() -> String? { cursor.value() }
        while let argument = cursor.next() {
            switch argument {
            case "-h", "--help":
                print(Usage.replay)
                return 0
            case "--format":
                guard let text = value(), let chosen = TrafficReplay.Format(rawValue: text.lowercased()) else {
                    return usage("--format takes 'har' or 'log'")
                }
                format = chosen
            case "--sizes":
                guard let text = value(), let parsed = TrafficReplay.parseSizes(text) else {
                    return usage("--sizes takes a comma-separated list of shares of the working set (1%,10%) or sizes (64KB,16MB)")
                }
                (fractions, absoluteSizes) = parsed
            case "--chart":
                guard let text = value(), !text.isEmpty else { return usage("--chart needs a file path for the SVG chart") }
                chartPath = text
            default:
                guard path == nil, argument == "-" || !argument.hasPrefix("-") else { return usage("unexpected argument '\(argument)'") }
                path = argument
            }
        }
        guard let path else { return usage("a HAR capture or an access log is required (- reads standard input)") }
        do {
            print(
                try await TrafficReplay.report(
                    path: path, format: format, fractions: fractions, bytes: absoluteSizes,
                    chartPath: chartPath))
            return 0
        } catch let error as ReplayInputError {
            // A file-level error (no such file, a directory) names the file itself: name it once.
            let subject = path == "-" ? "standard input" : path
            let text = error.description
            printError("recall replay: " + (text.hasPrefix(subject + ":") ? text : "\(subject): \(text)"))
            return 1
        } catch let error as ReplayOutputError {
            // The work is done: print the report before saying what could not be written.
            if let report = error.report { print(report) }
            printError("recall replay: --chart \(error)")
            return 1
        } catch {
            printError("recall replay: \(error.localizedDescription)")
            return 1
        }
    }

    private static func usage(_ message: String) -> Int32 {
        printError("recall replay: \(message)\n\n\(Usage.replay)")
        return 2
    }
}
