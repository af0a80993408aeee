import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An ordered list of HTTP header fields whose names compare case-insensitively.
///
/// Order and repeated fields are kept exactly as added, which matters for fields such as
/// `Set-Cookie`, `Vary` or `Cache-Control` that may appear more than once. Reading a name
/// through the subscript joins its values with `", "`, as RFC 9110 §5.3 allows for list fields.
public struct HeaderFields: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// One header field: a name and a value, both as received.
    public struct Field: Sendable, Hashable {
        /// The field name with its original spelling.
        public var name: String
        /// The field value, trimmed of surrounding whitespace.
        public var value: String

        /// Creates a field; surrounding whitespace of the value is trimmed.
        public init(name: String, value: String) {
            self.name = name
            self.value = value.trimmingOWS
        }

        /// A field whose value is known to have no surrounding whitespace (a number the cache
        /// made, or a value read back from a stored record, trimmed when its field was made):
        /// nothing to trim.
        init(name: String, trimmedValue: String) {
            self.name = name
            self.value = trimmedValue
        }
    }

    /// The fields, all but ``last`` when there is one.
    private var leading: [Field]
    /// A field after ``leading``, kept apart so that a copy with one more field (the `Age` of
    /// every cache hit) shares the fields it copies instead of copying each (two string
    /// retains per field, and an allocation). Every change folds it into ``leading`` first.
    private var last: Field?

    /// The fields in the order they were added.
    public var fields: [Field] {
        guard let last else { return leading }
        var all = [Field]()
        all.reserveCapacity(leading.count + 1)
        all.append(contentsOf: leading)
        all.append(last)
        return all
    }

    /// Creates an empty list or one holding `fields` in order.
    public init(_ fields: [Field] = []) {
        self.leading = fields
    }

    /// Creates a list from name-value pairs, keeping their order.
    public init(_ pairs: [(String, String)]) {
        self.leading = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    /// Creates a list from a dictionary literal, keeping the literal's order.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// Creates a list from a Foundation header dictionary (such as `allHTTPHeaderFields`),
    /// sorted by name so that the result does not depend on dictionary order.
    public init(_ dictionary: [String: String]) {
        self.init(dictionary.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }

    /// The number of fields, counting repeated names separately.
    public var count: Int { leading.count + (last == nil ? 0 : 1) }

    /// Whether there are no fields.
    public var isEmpty: Bool { leading.isEmpty && last == nil }

    /// Iterates over the fields in order.
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// All values of fields named `name`, in order.
    public func values(for name: String) -> [String] {
        var values = leading.compactMap { Self.namesEqual($0.name, name) ? $0.value : nil }
        if let last, Self.namesEqual(last.name, name) { values.append(last.value) }
        return values
    }

    /// Whether a field named `name` is present.
    public func contains(_ name: String) -> Bool {
        leading.contains { Self.namesEqual($0.name, name) } || last.map { Self.namesEqual($0.name, name) } == true
    }

    /// The values of `name` joined by `", "`, or `nil` when absent. Setting replaces every
    /// field of that name (at the position of the first one); setting `nil` removes them.
    public subscript(name: String) -> String? {
        get {
            let values = values(for: name)
            return values.isEmpty ? nil : values.joined(separator: ", ")
        }
        set {
            if let newValue { replace(name, with: newValue) } else { remove(name) }
        }
    }

    /// Appends a field, keeping any existing fields of the same name.
    public mutating func add(_ name: String, _ value: String) {
        foldLast()
        leading.append(Field(name: name, value: value))
    }

    /// Removes every field named `name`.
    public mutating func remove(_ name: String) {
        foldLast()
        leading.removeAll { Self.namesEqual($0.name, name) }
    }

    /// Replaces every field named `name` with a single field holding `value`.
    public mutating func replace(_ name: String, with value: String) {
        foldLast()
        if let first = leading.firstIndex(where: { Self.namesEqual($0.name, name) }) {
            leading[first] = Field(name: leading[first].name, value: value)
            var index = leading.index(after: first)
            while index < leading.endIndex {
                if Self.namesEqual(leading[index].name, name) { leading.remove(at: index) } else { index += 1 }
            }
        } else {
            add(name, value)
        }
    }

    /// Moves ``last`` into ``leading``, before a change.
    private mutating func foldLast() {
        guard let field = last else { return }
        leading.append(field)
        last = nil
    }

    /// A copy as ``replace(_:with:)`` leaves it, made in one allocation (copying, then
    /// appending, makes two; every cache hit sets `Age` this way). `value` has no surrounding
    /// whitespace.
    func replacing(_ name: String, with value: String) -> HeaderFields {
        var copy = [Field]()
        copy.reserveCapacity(count + 1)
        var replaced = false
        for field in fields {
            guard Self.namesEqual(field.name, name) else {
                copy.append(field)
                continue
            }
            if !replaced { copy.append(Field(name: field.name, trimmedValue: value)) }
            replaced = true
        }
        if !replaced { copy.append(Field(name: name, trimmedValue: value)) }
        return HeaderFields(copy)
    }

    /// A copy with one more field at the end, sharing the fields it copies (see ``last``).
    /// `value` has no surrounding whitespace.
    func appending(_ name: String, _ value: String) -> HeaderFields {
        var copy = self
        copy.foldLast()
        copy.last = Field(name: name, trimmedValue: value)
        return copy
    }

    /// Equal when their fields are, in order (however they are kept).
    public static func == (lhs: HeaderFields, rhs: HeaderFields) -> Bool {
        lhs.count == rhs.count && lhs.fields == rhs.fields
    }

    /// Hashes the fields in order, as ``==(_:_:)`` compares them.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(fields)
    }

    /// The fields as a Foundation dictionary; repeated names are joined with `", "`.
    public var dictionary: [String: String] {
        var result: [String: String] = [:]
        var spelling: [String: String] = [:]
        for field in fields {
            let lower = field.name.lowercased()
            if let existing = spelling[lower] {
                result[existing] = result[existing].map { $0 + ", " + field.value } ?? field.value
            } else {
                spelling[lower] = field.name
                result[field.name] = field.value
            }
        }
        return result
    }

    /// One `Name: value` line per field.
    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }

    /// ASCII case-insensitive comparison of two field names, without allocating.
    @inlinable
    public static func namesEqual(_ lhs: String, _ rhs: String) -> Bool {
        guard lhs.utf8.count == rhs.utf8.count else { return false }
        var left = lhs.utf8.makeIterator()
        var right = rhs.utf8.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return true
            case let (l?, r?):
                if l != r && lowercase(l) != lowercase(r) { return false }
            default: return false
            }
        }
    }

    @inlinable
    static func lowercase(_ byte: UInt8) -> UInt8 {
        (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
    }
}

extension URLRequest {
    /// The request's header fields as ``HeaderFields`` (sorted by name: Foundation keeps no order).
    public var headers: HeaderFields {
        HeaderFields(allHTTPHeaderFields ?? [:])
    }
}
