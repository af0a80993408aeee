import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The programs built next to the test bundle (`recall`, `recall-test-child`,
/// `recall-crash-writer`), run as child processes: for what cannot run inside the test process
/// (a hang no time limit can stop, a resident-set measurement, a SIGKILL mid-write, the CLI).
enum ChildProcess {
    /// How a run ended.
    struct Result {
        /// The exit status, or the number of the signal that ended the process.
        var status: Int32
        /// Standard output, as bytes.
        var outputData: Data
        var error: String
        /// Still running at the deadline (then killed).
        var hung: Bool
        /// The child's peak resident set in bytes, as the kernel counted it (`wait4`'s `ru_maxrss`).
        var peakResidentBytes: Int

        /// Standard output, as text.
        var output: String { String(decoding: outputData, as: UTF8.self) }
    }

    /// Runs `recall replay` with `arguments` (the real binary), killed at `deadline`.
    static func replay(_ arguments: [String], deadline: Duration = .seconds(60)) async throws -> Result {
        try await run("recall", ["replay"] + arguments, deadline: deadline)
    }

    /// The executable `name` next to the test bundle.
    static func url(_ name: String) -> URL {
        Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent(name)
    }

    /// Starts `name` with `arguments`; its standard output goes to the returned pipe.
    static func launch(_ name: String, _ arguments: [String], standardError: Any = FileHandle.nullDevice) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = url(name)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = standardError
        try process.run()
        return (process, output)
    }

    /// Runs `name` (next to the test bundle) with `arguments` to its end, or kills it at `deadline`.
    static func run(_ name: String, _ arguments: [String], input: Data? = nil, deadline: Duration = .seconds(20)) async throws -> Result {
        try await run(executable: url(name).path, arguments, input: input, deadline: deadline)
    }

    /// Runs the program at `executable` with `arguments` to its end, or kills it at `deadline`.
    /// Its standard input is `input` (or empty); its output and error are read while it runs (a
    /// child writing more than a pipe holds never blocks on the parent).
    static func run(
        executable: String, _ arguments: [String], input: Data? = nil,
        deadline: Duration = .seconds(20)
    ) async throws -> Result {
        signal(SIGPIPE, SIG_IGN)  // a child that exits before reading all its input must not kill the tests
        let (pid, stdin, stdout, stderr) = try spawning.withLock { try spawn(executable, arguments) }
        let inputBytes = input ?? Data()
        let feeding = Thread.detached {
            writeAll(inputBytes, to: stdin); close(stdin)
        }
        let outputReader = Thread.detached { readAll(stdout) }
        let errorReader = Thread.detached { readAll(stderr) }

        var status: Int32 = 0
        var usage = rusage()
        let end = ContinuousClock.now + deadline
        var hung = false
        while true {
            let reaped = wait4(pid, &status, WNOHANG, &usage)
            if reaped == pid { break }
            if reaped < 0, errno != EINTR { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECHILD) }
            if ContinuousClock.now >= end, !hung {
                hung = true
                kill(pid, SIGKILL)
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        _ = await feeding.value
        let outputData = await outputReader.value
        let errorData = await errorReader.value
        #if os(Linux)
            let peak = Int(usage.ru_maxrss) * 1024  // kilobytes on Linux
        #else
            let peak = Int(usage.ru_maxrss)  // bytes on Darwin
        #endif
        let signalled = status & 0x7F
        return Result(
            status: signalled == 0 ? (status >> 8) & 0xFF : signalled, outputData: outputData,
            error: String(decoding: errorData, as: UTF8.self), hung: hung, peakResidentBytes: peak)
    }

    /// Held while pipes are made and a child spawned: pipes are made close-on-exec, and no
    /// child of another run inherits them in between (and keeps this run's output open).
    private static let spawning = NSLock()

    /// Starts `executable`; returns its id and the parent's ends of its standard input, output and error.
    private static func spawn(_ executable: String, _ arguments: [String]) throws -> (pid_t, Int32, Int32, Int32) {
        let stdin = try makePipe(), stdout = try makePipe(), stderr = try makePipe()
        #if os(Linux)
            var actions = posix_spawn_file_actions_t()
        #else
            var actions: posix_spawn_file_actions_t?
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin.read, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout.write, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr.write, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        for descriptor in [stdin.read, stdout.write, stderr.write] { close(descriptor) }
        guard spawned == 0 else {
            for descriptor in [stdin.write, stdout.read, stderr.read] { close(descriptor) }
            throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO)
        }
        return (pid, stdin.write, stdout.read, stderr.read)
    }

    /// A pipe whose descriptors close on exec (the child gets copies at 0, 1 and 2 only, so no
    /// other test's child keeps them open).
    private static func makePipe() throws -> (read: Int32, write: Int32) {
        var descriptors: [Int32] = [0, 0]
        guard pipe(&descriptors) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
        for descriptor in descriptors { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        return (descriptors[0], descriptors[1])
    }

    private static func readAll(_ descriptor: Int32) -> Data {
        defer { close(descriptor) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                data.append(buffer, count: count)
            } else if count == 0 || errno != EINTR {
                return data
            }
        }
    }

    private static func writeAll(_ data: Data, to descriptor: Int32) {
        var offset = 0
        while offset < data.count {
            let count = data.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if count > 0 {
                offset += count
            } else if count < 0, errno != EINTR {
                return  // the child closed its input
            }
        }
    }
}

extension Thread {
    /// Runs `work` on a new thread (blocking reads and writes must not hold a cooperative
    /// thread); its result is awaited through the returned task.
    static func detached<T: Sendable>(_ work: @escaping @Sendable () -> T) -> Task<T, Never> {
        Task { await withCheckedContinuation { continuation in Thread.detachNewThread { continuation.resume(returning: work()) } } }
    }
}
