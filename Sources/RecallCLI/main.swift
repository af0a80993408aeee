import Foundation

/// Entry point of the `recall` tool: `recall demo`, `recall get URL [-v]`, `recall replay FILE`, `recall --help`.
let arguments = Array(CommandLine.arguments.dropFirst())
let exitCode: Int32
switch arguments.first {
case "demo":
    exitCode = await DemoCommand.run(Array(arguments.dropFirst()))
case "get":
    exitCode = await GetCommand.run(Array(arguments.dropFirst()))
case "replay":
    exitCode = await ReplayCommand.run(Array(arguments.dropFirst()))
case nil:
    // A mistake, not a request for help: the usage goes to standard error.
    FileHandle.standardError.write(Data("recall: a command is required\n\n\(Usage.main)\n".utf8))
    exitCode = 2
case "-h", "--help", "help":
    print(Usage.main)
    exitCode = 0
default:
    FileHandle.standardError.write(Data("recall: unknown command '\(arguments[0])'\n\n\(Usage.main)\n".utf8))
    exitCode = 2
}
exit(exitCode)
