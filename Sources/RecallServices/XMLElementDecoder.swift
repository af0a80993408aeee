import Foundation
import Recall
#if canImport(FoundationXML)
    import FoundationXML
#endif

/// Decodes XML into `Decodable` types with Foundation's `XMLParser` (no packages).
///
/// The root element is the value; child elements and attributes are its keys; element text
/// is a single value (numbers and Booleans parsed as the type asks). An array property reads
/// either repeated elements (`<tag>…</tag><tag>…</tag>`) or one wrapper element whose children
/// are the items (`<tags><tag>…</tag></tags>`).
public struct XMLElementDecoder: Sendable {
    /// Creates a decoder.
    public init() {}

    /// Decodes `type` from `data`.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        let builder = TreeBuilder()
        let parser = XMLParser(data: data)
        parser.delegate = builder
        // corelibs' parser accepts a document cut short, so also require every element closed.
        guard parser.parse(), builder.isComplete, let root = builder.root else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: [],
                    debugDescription:
                        "invalid XML: \(parser.parserError?.localizedDescription ?? "no root element")"))
        }
        return try T(from: NodeDecoder(node: root, codingPath: []))
    }
}

/// One element of a parsed document.
final class XMLNode {
    let name: String
    let attributes: [String: String]
    var children: [XMLNode] = []
    var text = ""

    init(name: String, attributes: [String: String]) {
        self.name = name
        self.attributes = attributes
    }

    func children(named name: String) -> [XMLNode] { children.filter { $0.name == name } }

    var trimmedText: String { text.trimmingCharacters(in: .whitespacesAndNewlines) }
}

private final class TreeBuilder: NSObject, XMLParserDelegate {
    var root: XMLNode?
    private var stack: [XMLNode] = []

    /// Whether a root element was read and every element was closed.
    var isComplete: Bool { root != nil && stack.isEmpty }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
        qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
    ) {
        let node = XMLNode(name: elementName, attributes: attributeDict)
        if let parent = stack.last { parent.children.append(node) } else { root = node }
        stack.append(node)
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
        _ = stack.popLast()
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        stack.last?.text += string
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        stack.last?.text += String(decoding: CDATABlock, as: UTF8.self)
    }
}

/// Marks array types, so a keyed container knows to collect repeated elements.
private protocol XMLArray {}
extension Array: XMLArray {}

private struct NodeDecoder: Decoder {
    /// The element decoded, or nil for an attribute or a list of repeated elements.
    let node: XMLNode?
    var items: [XMLNode]?
    var text: String?
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(node: XMLNode?, items: [XMLNode]? = nil, text: String? = nil, codingPath: [any CodingKey]) {
        self.node = node
        self.items = items
        self.text = text
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard let node else { throw mismatch("an element with children") }
        return KeyedDecodingContainer(Keyed<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        if let items { return Unkeyed(items: items, codingPath: codingPath) }
        guard let node else { throw mismatch("a list of elements") }
        return Unkeyed(items: node.children, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        Single(
            text: text ?? node?.trimmedText ?? "", isEmpty: text == nil && (node.map { $0.trimmedText.isEmpty && $0.children.isEmpty } ?? true),
            decoder: self, codingPath: codingPath)
    }

    func mismatch(_ expected: String) -> DecodingError {
        .typeMismatch(Any.self, .init(codingPath: codingPath, debugDescription: "expected \(expected)"))
    }
}

private struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let node: XMLNode
    let codingPath: [any CodingKey]

    var allKeys: [Key] {
        (node.children.map(\.name) + node.attributes.keys).compactMap { Key(stringValue: $0) }
    }

    func contains(_ key: Key) -> Bool {
        node.attributes[key.stringValue] != nil || !node.children(named: key.stringValue).isEmpty
    }

    func decodeNil(forKey key: Key) throws -> Bool { !contains(key) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let path = codingPath + [key]
        let matches = node.children(named: key.stringValue)
        if T.self is any XMLArray.Type {
            // Repeated elements, or one wrapper element whose children are the items.
            if matches.count == 1, let wrapper = matches.first, !wrapper.children.isEmpty,
                Set(wrapper.children.map(\.name)).count == 1, wrapper.trimmedText.isEmpty
            {
                return try T(from: NodeDecoder(node: nil, items: wrapper.children, codingPath: path))
            }
            return try T(from: NodeDecoder(node: nil, items: matches, codingPath: path))
        }
        if let element = matches.first { return try T(from: NodeDecoder(node: element, codingPath: path)) }
        if let attribute = node.attributes[key.stringValue] { return try T(from: NodeDecoder(node: nil, text: attribute, codingPath: path)) }
        throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no element or attribute '\(key.stringValue)'"))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try NodeDecoder(node: node.children(named: key.stringValue).first, codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        Unkeyed(items: node.children(named: key.stringValue), codingPath: codingPath + [key])
    }

    func superDecoder() throws -> any Decoder { NodeDecoder(node: node, codingPath: codingPath) }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        NodeDecoder(node: node.children(named: key.stringValue).first, codingPath: codingPath + [key])
    }
}

private struct IndexKey: CodingKey {
    var stringValue: String { "Index \(intValue ?? 0)" }
    var intValue: Int?
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

private struct Unkeyed: UnkeyedDecodingContainer {
    let items: [XMLNode]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(items: [XMLNode], codingPath: [any CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    mutating func next() throws -> NodeDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "no more elements"))
        }
        defer { currentIndex += 1 }
        return NodeDecoder(node: items[currentIndex], codingPath: codingPath + [IndexKey(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { return true }
        let node = items[currentIndex]
        if node.trimmedText.isEmpty && node.children.isEmpty && node.attributes.isEmpty {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: try next()) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }

    mutating func superDecoder() throws -> any Decoder { try next() }
}

private struct Single: SingleValueDecodingContainer {
    let text: String
    let isEmpty: Bool
    let decoder: NodeDecoder
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { isEmpty }

    func parse<T>(_ type: T.Type, _ convert: (String) -> T?) throws -> T {
        guard let value = convert(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "'\(text)' is not a valid \(T.self)"))
        }
        return value
    }

    func decode(_ type: Bool.Type) throws -> Bool {
        try parse(Bool.self) { ["true": true, "1": true, "false": false, "0": false][$0.lowercased()] }
    }
    func decode(_ type: String.Type) throws -> String { text }
    func decode(_ type: Double.Type) throws -> Double { try parse(Double.self) { Double($0) } }
    func decode(_ type: Float.Type) throws -> Float { try parse(Float.self) { Float($0) } }
    func decode(_ type: Int.Type) throws -> Int { try parse(Int.self) { Int($0) } }
    func decode(_ type: Int8.Type) throws -> Int8 { try parse(Int8.self) { Int8($0) } }
    func decode(_ type: Int16.Type) throws -> Int16 { try parse(Int16.self) { Int16($0) } }
    func decode(_ type: Int32.Type) throws -> Int32 { try parse(Int32.self) { Int32($0) } }
    func decode(_ type: Int64.Type) throws -> Int64 { try parse(Int64.self) { Int64($0) } }
    func decode(_ type: UInt.Type) throws -> UInt { try parse(UInt.self) { UInt($0) } }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try parse(UInt8.self) { UInt8($0) } }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try parse(UInt16.self) { UInt16($0) } }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try parse(UInt32.self) { UInt32($0) } }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try parse(UInt64.self) { UInt64($0) } }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: decoder) }
}
