#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The processor core the calling thread runs on, where the C library can tell
/// (`sched_getcpu`, looked up at run time: glibc and musl have it; Darwin does not).
///
/// A thread may move to another core at any moment, so the answer is a hint: code that keeps
/// state per core still locks it, and uses the core only to make it likely that no other core
/// touches the same memory.
enum CurrentCore {
    /// `sched_getcpu`'s type.
    typealias Function = @convention(c) () -> Int32

    /// `sched_getcpu`, or nil where the C library lacks it.
    static let function: Function? = {
        #if canImport(Glibc) || canImport(Musl)
            // Not in the Glibc module's headers (it needs _GNU_SOURCE); nil is RTLD_DEFAULT.
            guard let symbol = dlsym(nil, "sched_getcpu") else { return nil }
            return unsafeBitCast(symbol, to: Function.self)
        #else
            return nil
        #endif
    }()

    /// The number of cores the system is configured with (at least 1).
    static var configured: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_CONF)))) }
}
