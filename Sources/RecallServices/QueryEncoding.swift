import Foundation
import Recall

/// Encodes query and form parameters the way servers expect: names and values percent-encoded
/// with only unreserved characters left raw, so `+`, `&`, `=` and spaces survive the trip.
package enum QueryEncoding {
    private static let unreserved: CharacterSet = {
        var set = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        set.insert(charactersIn: "-._~")
        return set
    }()

    /// `value` percent-encoded for a query or form component (`+` becomes `%2B`, space `%20`).
    package static func escape(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
    }

    /// `name=value&…` for `items`, in order; items without a value are written as `name`.
    package static func encode(_ items: [URLQueryItem]) -> String {
        items.map { item in
            item.value.map { "\(escape(item.name))=\(escape($0))" } ?? escape(item.name)
        }.joined(separator: "&")
    }

    /// The query items of an `Encodable` value: encoded to JSON, then flattened — arrays as
    /// repeated names, nested objects as `outer[inner]`, `nil` skipped, Booleans as `true`/`false`.
    package static func items<Value: Encodable>(from value: Value, encoder: JSONEncoder) throws -> [URLQueryItem] {
        let data: Data
        do { data = try encoder.encode(value) } catch { throw ServiceError.coding("\(error)") }
        guard let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) as? [String: Any] else {
            throw ServiceError.coding("query and form inputs must encode to an object with named fields")
        }
        var items: [URLQueryItem] = []
        for key in object.keys.sorted() { flatten(object[key]!, name: key, into: &items) }
        return items
    }

    static func flatten(_ value: Any, name: String, into items: inout [URLQueryItem]) {
        switch value {
        case is NSNull:
            return
        case let array as [Any]:
            for element in array { flatten(element, name: name, into: &items) }
        case let object as [String: Any]:
            for key in object.keys.sorted() { flatten(object[key]!, name: "\(name)[\(key)]", into: &items) }
        case let number as NSNumber:
            items.append(URLQueryItem(name: name, value: isBoolean(number) ? (number.boolValue ? "true" : "false") : number.stringValue))
        default:
            items.append(URLQueryItem(name: name, value: "\(value)"))
        }
    }

    private static func isBoolean(_ number: NSNumber) -> Bool {
        #if canImport(Darwin)
            return CFGetTypeID(number) == CFBooleanGetTypeID()
        #else
            return String(cString: number.objCType) == "c"
        #endif
    }
}
