/// The kind of a Recall error, as an open set: compare it with `==`, or `switch` over it with a
/// `default:` case. New kinds can be added in a minor release without breaking your code, which
/// an `enum` of cases could not promise.
///
/// ```swift
/// do { _ = try DiskStorage(directory: dir) }
/// catch let error as CacheStorageError where error.code == .locked { … }
/// ```
///
/// `Owner` is the error type the code belongs to, so the codes of one error type never compare
/// equal to another's.
public struct ErrorCode<Owner>: Hashable, Sendable, CustomStringConvertible {
    /// The code's name, as written after the dot (`locked`).
    public let name: String

    /// Makes the code named `name`. An error type declares its codes as static constants of
    /// `ErrorCode<Self>` (`static let locked = Code("locked")`); integrations do the same for theirs.
    public init(_ name: String) {
        self.name = name
    }

    /// The name.
    public var description: String { name }
}
