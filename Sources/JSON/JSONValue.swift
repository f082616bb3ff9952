/// A parsed or constructed JSON document.
///
/// Numbers are always `Double`: integers beyond ±2^53 lose precision, which is
/// acceptable for health samples and matches what JavaScript clients send.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)
}

/// A JSON object that keeps its members in document order.
///
/// Equality compares members in order: two objects with the same members in a
/// different order are not equal. Parsed objects never hold duplicate keys;
/// programmatically built ones may, and `subscript` then returns the first.
public struct JSONObject: Sendable, Equatable {
    public typealias Member = (key: String, value: JSONValue)

    public var members: [Member]

    public init(_ members: [Member] = []) {
        self.members = members
    }

    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }
    public var keys: [String] { members.map(\.key) }

    /// Linear scan: request objects are small, and a scan beats hashing for them.
    public subscript(key: String) -> JSONValue? {
        get {
            for member in members where JSONObject.sameKey(member.key, key) {
                return member.value
            }
            return nil
        }
        set {
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue {
                    members[index].value = newValue
                } else {
                    members.remove(at: index)
                }
            } else if let newValue {
                members.append((key: key, value: newValue))
            }
        }
    }

    /// Key equality with a length check first: most keys of an object differ in length, and
    /// String's `==` on two different short strings takes its slow (Unicode-aware) path.
    @inline(__always)
    static func sameKey(_ left: String, _ right: String) -> Bool {
        left.utf8.count == right.utf8.count && left == right
    }

    public mutating func append(_ key: String, _ value: JSONValue) {
        members.append((key: key, value: value))
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.members.count == rhs.members.count else { return false }
        for (left, right) in zip(lhs.members, rhs.members) {
            if left.key != right.key || left.value != right.value { return false }
        }
        return true
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements.map { (key: $0.0, value: $0.1) })
    }
}

// Convenience accessors: nil when the value has another type.
extension JSONValue {
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }
    public var numberValue: Double? {
        if case .number(let value) = self { return value }
        return nil
    }
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }
    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// Name of the JSON type, for error messages ("expected a number, got a string").
    public var typeDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements.map { (key: $0.0, value: $0.1) }))
    }
}
