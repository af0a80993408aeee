/// Walks a command's arguments: each option, and the value that follows an option that takes one.
struct ArgumentCursor {
    private let arguments: [String]
    private var index = 0

    init(_ arguments: [String]) {
        self.arguments = arguments
    }

    /// The next argument, or nil at the end.
    mutating func next() -> String? {
        guard index < arguments.count else { return nil }
        defer { index += 1 }
        return arguments[index]
    }

    /// The value of the option just read (the argument after it), or nil when there is none.
    mutating func value() -> String? {
        next()
    }
}
