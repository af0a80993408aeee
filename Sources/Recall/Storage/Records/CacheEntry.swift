import Foundation

/// One stored response: what the origin sent, when, and for which request header values
/// (the fields named by its `Vary`).
///
/// An entry is a value with copy-on-write storage: its fields live in one object, so copying an
/// entry (every cache hit does) retains one object (and its body) instead of each of its arrays
/// and strings, and concurrent hits on one entry share one reference count instead of several.
/// The body is kept beside that object, not in it: a record read again from a file held open
/// gets new bodies without copying the rest (see `DiskStorage`).
public struct CacheEntry: Sendable, Hashable, CustomReflectable {
    /// The fields of an entry. Changed only through a uniquely referenced copy (`unique()`), so
    /// sharing one between threads is safe.
    private final class Storage: @unchecked Sendable {
        var status: Int
        var headers: HeaderFields
        var facts: Facts
        var url: URL?
        var requestTime: Date
        var responseTime: Date
        var varyValues: [HeaderFields.Field]
        var partition: String
        var assignedLifetime: Double?
        /// The body, when it stays in its store (``body`` is then empty).
        var storedBody: StoredBodyFile?

        init(
            status: Int, headers: HeaderFields, facts: Facts, url: URL?, requestTime: Date, responseTime: Date,
            varyValues: [HeaderFields.Field], partition: String, assignedLifetime: Double?
        ) {
            self.status = status
            self.headers = headers
            self.facts = facts
            self.url = url
            self.requestTime = requestTime
            self.responseTime = responseTime
            self.varyValues = varyValues
            self.partition = partition
            self.assignedLifetime = assignedLifetime
        }

        func copy() -> Storage {
            let copy = Storage(
                status: status, headers: headers, facts: facts, url: url, requestTime: requestTime,
                responseTime: responseTime, varyValues: varyValues, partition: partition, assignedLifetime: assignedLifetime)
            copy.storedBody = storedBody
            return copy
        }
    }

    private var storage: Storage

    /// The stored body (empty when it stays in its store, read from there when served).
    public var body: Data

    /// The body when it stays in its store instead of memory (a large one, written in pieces).
    var storedBody: StoredBodyFile? {
        get { storage.storedBody }
        set { unique().storedBody = newValue }
    }

    /// Whether the body is what the head declares: as many bytes as its `Content-Length` says,
    /// when that is a length to check against (``ResponseBody/declaredLength(status:headers:requestMethod:)``;
    /// the pieces of a `206` entry are checked against their `Content-Range` fields instead). A
    /// body kept in its store was checked against it as it arrived.
    var bodyMatchesDeclaredLength: Bool {
        // (One pass over the fields when they agree, as nearly all do; the rules of
        // `declaredLength` only for a body of another length.)
        guard status != 206, storage.storedBody == nil, case .length(let declared) = facts.contentLength, declared != body.count else {
            return true
        }
        return ResponseBody.declaredLength(status: status, headers: headers, requestMethod: nil) == nil
    }

    /// The body served for this entry: its bytes, or the body kept in its store.
    var responseBody: ResponseBody {
        storage.storedBody.map { ResponseBody(stored: $0) } ?? ResponseBody(body)
    }

    /// The storage, copied first if another entry shares it.
    private mutating func unique() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
        return storage
    }

    /// The status of the stored response.
    public var status: Int {
        get { storage.status }
        set { unique().status = newValue }
    }
    // The fields changed in place (`entry.headers["Age"] = nil`, `entry.varyValues.append(…)`)
    // have `_modify` accessors: the change is made on the entry's own unique storage, not on a
    // copy that is then set (a copy of the whole array).

    /// The stored header fields, in order.
    public var headers: HeaderFields {
        get { storage.headers }
        set {
            let storage = unique()
            storage.headers = newValue
            storage.facts = Facts(newValue)
        }
        _modify {
            let storage = unique()
            defer { storage.facts = Facts(storage.headers) }
            yield &storage.headers
        }
    }
    /// The URL of the response.
    public var url: URL? {
        get { storage.url }
        set { unique().url = newValue }
    }
    /// When the request that produced the response was sent (`request_time`, RFC 9111 §4.2.3).
    public var requestTime: Date {
        get { storage.requestTime }
        set { unique().requestTime = newValue }
    }
    /// When the response was received (`response_time`).
    public var responseTime: Date {
        get { storage.responseTime }
        set { unique().responseTime = newValue }
    }
    /// The normalized values of the request fields named by the response's `Vary`
    /// (name lowercased; an absent field has no entry). Empty when the response has no `Vary`.
    public var varyValues: [HeaderFields.Field] {
        get { storage.varyValues }
        set { unique().varyValues = newValue }
        _modify {
            let storage = unique()
            yield &storage.varyValues
        }
    }
    /// Who the response was made for: the values of the cache key's header fields and a keyed
    /// hash of the request's credentials (empty for an anonymous request without such fields).
    /// A stored response answers only requests of the same partition.
    public var partition: String {
        get { storage.partition }
        set { unique().partition = newValue }
    }
    /// The freshness lifetime in seconds Recall gave this response because it came with none
    /// (from a ``LifetimeRule`` or the request's ``HTTPCache/RequestLifetime``); nil when the
    /// origin's fields decide. `max-age`, `s-maxage` and `Expires` still win over it.
    public var assignedLifetime: Double? {
        get { storage.assignedLifetime }
        set { unique().assignedLifetime = newValue }
    }

    /// Creates an entry.
    public init(
        status: Int, headers: HeaderFields, body: Data, url: URL?, requestTime: Date, responseTime: Date,
        varyValues: [HeaderFields.Field] = [], partition: String = ""
    ) {
        self.init(
            status: status, headers: headers, facts: Facts(headers), body: body, url: url,
            requestTime: requestTime, responseTime: responseTime, varyValues: varyValues, partition: partition)
    }

    /// Creates an entry whose header facts were already parsed from `headers`.
    init(
        status: Int, headers: HeaderFields, facts: Facts, body: Data, url: URL?, requestTime: Date, responseTime: Date,
        varyValues: [HeaderFields.Field], partition: String
    ) {
        storage = Storage(
            status: status, headers: headers, facts: facts, url: url, requestTime: requestTime,
            responseTime: responseTime, varyValues: varyValues, partition: partition, assignedLifetime: nil)
        self.body = body
    }

    /// Entries are equal when every field is (the header facts follow from the fields).
    public static func == (lhs: CacheEntry, rhs: CacheEntry) -> Bool {
        guard lhs.body == rhs.body else { return false }
        if lhs.storage === rhs.storage { return true }
        guard lhs.storage.storedBody === rhs.storage.storedBody else { return false }
        let a = lhs.storage, b = rhs.storage
        return a.status == b.status && a.headers == b.headers && a.url == b.url
            && a.requestTime == b.requestTime && a.responseTime == b.responseTime && a.varyValues == b.varyValues
            && a.partition == b.partition && a.assignedLifetime == b.assignedLifetime
    }

    /// The entry's fields, as `print`, `dump` and test failures show them.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "status": status, "headers": headers, "body": body, "url": url as Any,
                "requestTime": requestTime, "responseTime": responseTime, "varyValues": varyValues,
                "partition": partition, "assignedLifetime": assignedLifetime as Any
            ],
            displayStyle: .struct)
    }

    /// Hashes the fields `==` compares.
    public func hash(into hasher: inout Hasher) {
        let storage = storage
        hasher.combine(storage.status)
        hasher.combine(storage.headers)
        hasher.combine(body)
        hasher.combine(storage.url)
        hasher.combine(storage.requestTime)
        hasher.combine(storage.responseTime)
        hasher.combine(storage.varyValues)
        hasher.combine(storage.partition)
        hasher.combine(storage.assignedLifetime)
    }

    /// What the rules read from the header fields, parsed once when the fields are set
    /// rather than on every lookup.
    struct Facts: Sendable, Hashable {
        let cacheControl: CacheDirectives
        let date: Date?
        let age: Int
        let expires: [String]
        let lastModifiedDate: Date?
        let varyNames: [String]
        let etag: String?
        let lastModified: String?
        /// Whether an `Age` field is stored (the rare case: a hit then replaces it, else appends one).
        let hasAge: Bool
        /// The `Content-Length` fields' values, joined (found in the same pass: a miss's storing
        /// rules and its store both ask, and a hit does not parse them).
        private let contentLengthValue: String?

        /// The `Content-Length` (``ContentLength/init(joined:)``).
        var contentLength: ContentLength { ContentLength(joined: contentLengthValue) }

        init(_ headers: HeaderFields) {
            // One pass over the fields (every record read from a byte store is parsed anew):
            // names are told apart by length first, then compared without regard to case.
            // Each name's values are joined as they come (RFC 9110 §5.3): a name seen once, as
            // nearly all are, makes no list and no new string. Cache-Control fields are parsed
            // each on its own (an unclosed quote in one must not swallow the next one's
            // directives), so only a second one makes a list.
            var cacheControl: String?, date: String?, age: String?, modified: String?, vary: String?, etag: String?
            var contentLength: String?
            var expires: [String] = [], moreCacheControl: [String] = []
            func join(_ value: String, to joined: inout String?) { joined = joined.map { $0 + ", " + value } ?? value }
            for field in headers.fields {
                let name = field.name
                func named(_ candidate: String) -> Bool { HeaderFields.namesEqual(name, candidate) }
                switch name.utf8.count {
                case 3 where named("Age"): if age == nil { age = field.value }  // only the first counts
                case 4 where named("Date"): join(field.value, to: &date)
                case 4 where named("Vary"): join(field.value, to: &vary)
                case 4 where named("ETag"): join(field.value, to: &etag)
                case 7 where named("Expires"): expires.append(field.value)
                case 13 where named("Cache-Control"):
                    if cacheControl == nil { cacheControl = field.value } else { moreCacheControl.append(field.value) }
                case 13 where named("Last-Modified"): join(field.value, to: &modified)
                case 14 where named("Content-Length"): join(field.value, to: &contentLength)
                default: break
                }
            }
            self.cacheControl = CacheDirectives(first: cacheControl, rest: moreCacheControl)
            self.date = date.flatMap { HTTPDate.parse($0) }
            self.age = Self.age(age)
            self.expires = expires
            lastModified = modified
            lastModifiedDate = modified.flatMap { HTTPDate.parse($0) }
            varyNames = vary.map(Self.varyNames) ?? []
            self.etag = etag
            hasAge = age != nil
            contentLengthValue = contentLength
        }

        /// The `Age` of the `Age` field values (RFC 9111 §5.1): the first member when the field is
        /// a list (on one line or several), ignored (0) when that member is not a non-negative integer.
        private static func age(_ first: String?) -> Int {
            guard let first else { return 0 }
            let member = first.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first.map { $0.trimmingOWS } ?? ""
            return CacheDirectives.deltaSeconds(String(member)) ?? 0
        }

        /// The lowercased field names listed in the `Vary` fields of `headers`.
        static func varyNames(_ headers: HeaderFields) -> [String] {
            varyNames(headers.values(for: "Vary").joined(separator: ","))
        }

        /// The lowercased field names listed in `value` (the `Vary` values joined).
        private static func varyNames(_ value: String) -> [String] {
            value.split(separator: ",").map { $0.trimmingOWS.lowercased() }.filter { !$0.isEmpty }
        }
    }

    /// A copy that shares no heap object with this entry (its strings, arrays, body and URL are
    /// copied, and its header facts parsed anew), for ``PerCoreCopies``; nil when the URL cannot
    /// be copied exactly (it is relative to a base URL).
    func unsharedCopy() -> CacheEntry? {
        guard storedBody == nil else { return nil }  // (a body in a store: nothing to copy)
        var url: URL?
        if let original = self.url {
            guard original.baseURL == nil, let copy = URL(string: original.absoluteString.unsharedCopy), copy == original else { return nil }
            url = copy
        }
        func copied(_ fields: [HeaderFields.Field]) -> [HeaderFields.Field] {
            fields.map { HeaderFields.Field(name: $0.name.unsharedCopy, trimmedValue: $0.value.unsharedCopy) }
        }
        let body = self.body.isEmpty ? Data() : self.body.withUnsafeBytes { Data($0) }
        var copy = CacheEntry(
            status: status, headers: HeaderFields(copied(headers.fields)), body: body, url: url,
            requestTime: requestTime, responseTime: responseTime, varyValues: copied(varyValues),
            partition: partition.unsharedCopy)
        copy.assignedLifetime = assignedLifetime
        return copy
    }

    /// Parsed header facts (see ``Facts``).
    var facts: Facts { storage.facts }

    /// The response's `Cache-Control`.
    public var cacheControl: CacheDirectives { facts.cacheControl }

    /// The strong or weak entity tag, if any.
    public var etag: String? { facts.etag }

    /// `Last-Modified`, as sent.
    public var lastModified: String? { facts.lastModified }

    /// Whether this is a piece of a representation (a `206`) without a strong entity tag: it says
    /// nothing of a full response stored beside it, so it never replaces one.
    var isPieceWithoutStrongValidator: Bool {
        status == 206 && !(etag.map(CacheRules.isStrong) ?? false)
    }

    /// The memory the entry takes, for byte limits: the body and the text of its fields plus
    /// the fixed costs of the structures that hold them (measured on Linux x86-64: ~560 bytes
    /// per entry, ~64 per field, ~64 per heap-allocated body; see docs/reliability.md).
    public var byteCount: Int {
        var total = 480 + Self.heapBytes(partition) + (body.count > 14 ? body.count + 64 : 0)
        for field in headers.fields { total += 64 + Self.heapBytes(field.name) + Self.heapBytes(field.value) }
        for field in varyValues { total += 64 + Self.heapBytes(field.name) + Self.heapBytes(field.value) }
        return total
    }

    /// The heap bytes of a string: none up to 15 UTF-8 bytes (stored inline), else the bytes
    /// plus a 32-byte header, rounded up to the allocator's 16-byte granule.
    static func heapBytes(_ text: String) -> Int {
        let count = text.utf8.count
        return count <= 15 ? 0 : (count + 32 + 15) & ~15
    }
}

/// Everything stored under one cache key: the full key (compared on every read, so a hash
/// collision can never serve another resource) and the variants selected by `Vary`.
public struct CacheRecord: Sendable, Hashable {
    /// The canonical cache key.
    public var key: String
    /// The stored responses for this key, most recent first.
    public var variants: [CacheEntry]

    /// Creates a record.
    public init(key: String, variants: [CacheEntry]) {
        self.key = key
        self.variants = variants
    }

    /// A copy that shares no heap object with this record (see ``CacheEntry/unsharedCopy()``);
    /// nil when a variant cannot be copied exactly.
    func unsharedCopy() -> CacheRecord? {
        var variants: [CacheEntry] = []
        variants.reserveCapacity(self.variants.count)
        for variant in self.variants {
            guard let copy = variant.unsharedCopy() else { return nil }
            variants.append(copy)
        }
        return CacheRecord(key: key.unsharedCopy, variants: variants)
    }

    /// The memory the record takes (its key, its variants and ~112 bytes of bookkeeping: the
    /// storage's table and eviction policy hold its key with its hash, `HashedKey`).
    public var byteCount: Int { 112 + CacheEntry.heapBytes(key) + variants.reduce(0) { $0 + $1.byteCount } }
}
