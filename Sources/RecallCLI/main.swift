import Foundation

/// Entry point of the `recall` tool: `recall demo`, `recall get URL [-v]`, `recall --help`.
let arguments = Array(CommandLine.arguments.dropFirst())
let exitCode: Int32
switch arguments.first {
case "demo":
    exitCode = await DemoCommand.run(Array(arguments.dropFirst()))
case "get":
    exitCode = await GetCommand.run(Array(arguments.dropFirst()))
case nil, "-h", "--help", "help":
    print(Usage.main)
    exitCode = arguments.isEmpty ? 1 : 0
default:
    FileHandle.standardError.write(Data("recall: unknown command '\(arguments[0])'\n\n\(Usage.main)\n".utf8))
    exitCode = 2
}
exit(exitCode)
