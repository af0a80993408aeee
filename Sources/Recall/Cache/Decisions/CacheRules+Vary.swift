import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The rules of `Vary` (RFC 9111 §4.1): the fields a stored response varies on, their
/// normalized values in a request, whether they match, and the language a request prefers.
extension CacheRules {
    /// The lowercased field names in the `Vary` fields of `headers`.
    package func varyNames(of headers: HeaderFields) -> [String] {
        CacheEntry.Facts.varyNames(headers)
    }

    /// The normalized values of `request`'s fields named in `names` (absent fields omitted).
    package func varyValues(for names: [String], in request: URLRequest) -> [HeaderFields.Field] {
        Array(Set(names)).sorted().compactMap { name in
            // URLRequest joins repeated fields with ","; fold the spacing so both spellings match.
            guard let value = request.value(forHTTPHeaderField: name) else { return nil }
            if name == "accept-language" { return HeaderFields.Field(name: name, value: Self.normalizedLanguages(value)) }
            let parts = value.split(separator: ",").map { CacheKeyPolicy.normalizeFieldValue(String($0)) }
            return HeaderFields.Field(name: name, value: parts.joined(separator: ", "))
        }
    }

    /// An `Accept-Language` value in one spelling per meaning: tags lowercased, quality values
    /// as numbers (`q=1` dropped, `q=0.50` → `q=0.5`), ordered by quality and then by tag — so
    /// `en-US, fr;q=0.5` and `fr;q=0.50,en-us` select the same variant.
    static func normalizedLanguages(_ value: String) -> String {
        languageRanges(value).sorted { $0.quality != $1.quality ? $0.quality > $1.quality : $0.tag < $1.tag }
            .map { $0.quality == 1 ? $0.tag : "\($0.tag);q=\(String(format: "%g", $0.quality))" }
            .joined(separator: ", ")
    }

    /// The language ranges of an `Accept-Language` value, lowercased, in order, each with its
    /// quality (RFC 9110 §12.4.2: 1 when absent, clamped to 0…1).
    static func languageRanges(_ value: String) -> [(tag: String, quality: Double)] {
        var ranges: [(tag: String, quality: Double)] = []
        for item in value.split(separator: ",") {
            let parameters = item.split(separator: ";").map { $0.trimmingOWS.lowercased() }
            guard let tag = parameters.first, !tag.isEmpty else { continue }
            var quality = 1.0
            for parameter in parameters.dropFirst() where parameter.hasPrefix("q=") {
                quality = Double(parameter.dropFirst(2)).map { min(max($0, 0), 1) } ?? 1
            }
            ranges.append((tag, quality))
        }
        return ranges
    }

    /// Whether the request's `Accept-Language` value `accepted` prefers the language of `entry`
    /// (its `Content-Language`) as much as any (RFC 9110 §12.5.4): one of the entry's language
    /// tags is matched by a range of the request's highest quality (`en` matches `en` and
    /// `en-US`; `*` matches nothing here, the origin decides what it means) and by no range of
    /// quality 0. A stored variant in a language the request ranks lower is never chosen: the
    /// origin may hold one it prefers.
    func prefersLanguage(of entry: CacheEntry, accepted: String) -> Bool {
        guard let content = entry.headers["Content-Language"] else { return false }
        let ranges = Self.languageRanges(accepted)
        guard let top = ranges.map(\.quality).max(), top > 0 else { return false }
        func matches(_ range: String, _ tag: String) -> Bool {
            range != "*" && (tag == range || tag.hasPrefix(range + "-"))
        }
        return content.split(separator: ",").map { $0.trimmingOWS.lowercased() }.contains { tag in
            !tag.isEmpty && ranges.contains { $0.quality == top && matches($0.tag, tag) }
                && !ranges.contains { $0.quality == 0 && matches($0.tag, tag) }
        }
    }

    /// Whether `entry` was stored for a request matching `request` on its `Vary` fields, compared
    /// as they are (an ``HTTPCache`` stores credential fields' values as keyed hashes and compares
    /// with ``varyMatches(_:values:)``).
    package func varyMatches(_ entry: CacheEntry, _ request: URLRequest) -> Bool {
        varyMatches(entry) { varyValues(for: $0, in: request) }
    }

    /// Whether `entry` was stored for the request whose values of the fields a `Vary` names are
    /// `values(names)`: no `Vary` matches only an entry stored without values; `Vary: *` never.
    func varyMatches(_ entry: CacheEntry, values: ([String]) -> [HeaderFields.Field]) -> Bool {
        let names = entry.facts.varyNames
        if names.isEmpty { return entry.varyValues.isEmpty }
        guard !names.contains("*") else { return false }
        return values(names) == entry.varyValues
    }
}
