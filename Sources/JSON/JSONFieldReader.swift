/// A request body field that is missing, has the wrong type, or is not allowed.
public struct JSONFieldError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Full path of the offending field, like `samples[3].metadata.source`; empty for the document itself.
    public let field: String
    public let detail: String

    public init(field: String, detail: String) {
        self.field = field
        self.detail = detail
    }

    public var description: String { field.isEmpty ? detail : "\(field): \(detail)" }
}

/// Several field errors at once, from validating a batch.
public struct JSONFieldErrors: Error, Sendable, Equatable, CustomStringConvertible {
    public let errors: [JSONFieldError]
    /// True when more elements failed than `errors` lists.
    public let truncated: Bool

    public init(errors: [JSONFieldError], truncated: Bool = false) {
        self.errors = errors
        self.truncated = truncated
    }

    public var description: String {
        errors.map(\.description).joined(separator: "; ") + (truncated ? "; ..." : "")
    }
}

/// Typed, path-aware access to the members of one JSON object.
///
/// Every accessor marks its key as read; `finish()` then rejects any member
/// nobody read, so clients learn about misspelled or unsupported fields instead
/// of having them silently ignored. Optional accessors treat an explicit `null`
/// like an absent member.
///
///     var sample = try samples.object(at: 3)
///     let type = try sample.requiredString("type")
///     let value = try sample.requiredNumber("value")
///     let metadata = try sample.optionalObject("metadata")
///     try sample.finish()
public struct JSONFieldReader: Sendable {
    public let object: JSONObject
    /// Path of this object, like `samples[3]`; empty for the document root. Built when asked for
    /// (only errors ask), so reading ten thousand samples allocates no path strings.
    public var path: String { location.rendered }
    private let location: JSONPathChain
    /// Read flags for the first 64 members, plus overflow flags for larger objects:
    /// no allocation for typical request objects.
    private var readMask: UInt64 = 0
    private var readOverflow: [Bool]

    public init(_ object: JSONObject, path: String = "") {
        self.init(object, location: .root(path))
    }

    fileprivate init(_ object: JSONObject, location: JSONPathChain) {
        self.object = object
        self.location = location
        readOverflow = object.count > 64 ? Array(repeating: false, count: object.count - 64) : []
    }

    /// Fails unless `value` is an object.
    public init(_ value: JSONValue, path: String = "") throws(JSONFieldError) {
        try self.init(value, location: .root(path))
    }

    fileprivate init(_ value: JSONValue, location: JSONPathChain) throws(JSONFieldError) {
        guard case .object(let object) = value else {
            throw JSONFieldError(field: location.rendered, detail: "expected an object, got \(value.typeDescription)")
        }
        self.init(object, location: location)
    }

    /// Parses a request body whose top level must be an object. Syntax errors
    /// become a `JSONFieldError` with an empty field, so handlers deal with one error type.
    public init(parsing body: [UInt8], maxDepth: Int = JSONParser.defaultMaxDepth) throws(JSONFieldError) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(body, maxDepth: maxDepth)
        } catch {
            throw JSONFieldError(field: "", detail: "invalid JSON: \(error.description)")
        }
        try self.init(value, path: "")
    }

    // MARK: Paths and errors

    public func path(of key: String) -> String {
        JSONPath.join(path, .key(key))
    }

    /// An error about one member, for domain checks the reader cannot know
    /// ("must be one of ...", "end is before start").
    public func error(_ key: String, _ detail: String) -> JSONFieldError {
        JSONFieldError(field: path(of: key), detail: detail)
    }

    /// An error about this object as a whole.
    public func error(_ detail: String) -> JSONFieldError {
        JSONFieldError(field: path, detail: detail)
    }

    // MARK: Raw values

    public func contains(_ key: String) -> Bool {
        object[key] != nil
    }

    /// The member's value as is (an explicit `null` is returned as `.null`); nil when absent.
    public mutating func optionalValue(_ key: String) -> JSONValue? {
        for index in object.members.indices where JSONObject.sameKey(object.members[index].key, key) {
            markRead(index)
            return object.members[index].value
        }
        return nil
    }

    public mutating func requiredValue(_ key: String) throws(JSONFieldError) -> JSONValue {
        guard let value = optionalValue(key) else {
            throw missingField(key)
        }
        return value
    }

    /// "required field is missing", naming a member nobody read that looks like a misspelling of
    /// `key` (`startDate` for `start`, `Type` for `type`, `sample` for `samples`): otherwise a
    /// client learns which field the server wanted but not that its own was ignored.
    private func missingField(_ key: String) -> JSONFieldError {
        for index in object.members.indices where !isRead(index) {
            let candidate = object.members[index].key
            if JSONFieldNames.resemble(candidate, key) {
                return error(key, "required field is missing (found '\(candidate)': did you mean '\(key)'?)")
            }
        }
        return error(key, "required field is missing")
    }

    /// nil when absent or null.
    private mutating func presentValue(_ key: String) -> JSONValue? {
        guard let value = optionalValue(key), !value.isNull else { return nil }
        return value
    }

    private mutating func requiredPresentValue(_ key: String, expected: String) throws(JSONFieldError) -> JSONValue {
        guard let value = optionalValue(key) else {
            throw missingField(key)
        }
        if value.isNull {
            throw error(key, "expected \(expected), got null")
        }
        return value
    }

    // MARK: Strings

    public mutating func requiredString(_ key: String) throws(JSONFieldError) -> String {
        try string(key, from: requiredPresentValue(key, expected: "a string"))
    }

    public mutating func optionalString(_ key: String) throws(JSONFieldError) -> String? {
        guard let value = presentValue(key) else { return nil }
        return try string(key, from: value)
    }

    private func string(_ key: String, from value: JSONValue) throws(JSONFieldError) -> String {
        guard case .string(let text) = value else {
            throw error(key, "expected a string, got \(value.typeDescription)")
        }
        return text
    }

    // MARK: Numbers

    /// A JSON number; a string such as `"12"` is rejected, not converted.
    public mutating func requiredNumber(_ key: String) throws(JSONFieldError) -> Double {
        try number(key, from: requiredPresentValue(key, expected: "a number"))
    }

    public mutating func optionalNumber(_ key: String) throws(JSONFieldError) -> Double? {
        guard let value = presentValue(key) else { return nil }
        return try number(key, from: value)
    }

    /// A number without a fractional part within ±2^53, the range where a JSON
    /// number is exact. `3.0` is accepted: after parsing it is the same Double as `3`.
    public mutating func requiredInteger(_ key: String) throws(JSONFieldError) -> Int64 {
        try integer(key, from: requiredPresentValue(key, expected: "an integer"))
    }

    public mutating func optionalInteger(_ key: String) throws(JSONFieldError) -> Int64? {
        guard let value = presentValue(key) else { return nil }
        return try integer(key, from: value)
    }

    private func number(_ key: String, from value: JSONValue) throws(JSONFieldError) -> Double {
        guard case .number(let number) = value else {
            throw error(key, "expected a number, got \(value.typeDescription)")
        }
        return number
    }

    private func integer(_ key: String, from value: JSONValue) throws(JSONFieldError) -> Int64 {
        guard case .number(let number) = value else {
            throw error(key, "expected an integer, got \(value.typeDescription)")
        }
        guard let integer = exactInteger(number) else {
            throw error(key, integerProblem(number))
        }
        return integer
    }

    // MARK: Booleans

    public mutating func requiredBool(_ key: String) throws(JSONFieldError) -> Bool {
        try bool(key, from: requiredPresentValue(key, expected: "a boolean"))
    }

    public mutating func optionalBool(_ key: String) throws(JSONFieldError) -> Bool? {
        guard let value = presentValue(key) else { return nil }
        return try bool(key, from: value)
    }

    private func bool(_ key: String, from value: JSONValue) throws(JSONFieldError) -> Bool {
        guard case .bool(let flag) = value else {
            throw error(key, "expected a boolean, got \(value.typeDescription)")
        }
        return flag
    }

    // MARK: Nested objects and arrays

    /// A reader for a nested object; call `finish()` on it to reject its unknown members.
    public mutating func requiredObject(_ key: String) throws(JSONFieldError) -> JSONFieldReader {
        try JSONFieldReader(requiredPresentValue(key, expected: "an object"), location: .child(location, .key(key)))
    }

    public mutating func optionalObject(_ key: String) throws(JSONFieldError) -> JSONFieldReader? {
        guard let value = presentValue(key) else { return nil }
        return try JSONFieldReader(value, location: .child(location, .key(key)))
    }

    public mutating func requiredArray(_ key: String) throws(JSONFieldError) -> JSONArrayReader {
        try JSONArrayReader(requiredPresentValue(key, expected: "an array"), location: .child(location, .key(key)))
    }

    public mutating func optionalArray(_ key: String) throws(JSONFieldError) -> JSONArrayReader? {
        guard let value = presentValue(key) else { return nil }
        return try JSONArrayReader(value, location: .child(location, .key(key)))
    }

    // MARK: Unknown members

    /// Keys of members no accessor has read, in document order.
    public var unreadKeys: [String] {
        object.members.indices.filter { !isRead($0) }.map { object.members[$0].key }
    }

    /// Throws "unknown field" for the first member that was never read.
    public func finish() throws(JSONFieldError) {
        for index in object.members.indices where !isRead(index) {
            throw error(object.members[index].key, "unknown field")
        }
    }

    private mutating func markRead(_ index: Int) {
        if index < 64 {
            readMask |= 1 << UInt64(index)
        } else {
            readOverflow[index - 64] = true
        }
    }

    private func isRead(_ index: Int) -> Bool {
        index < 64 ? readMask & (1 << UInt64(index)) != 0 : readOverflow[index - 64]
    }
}

/// Path-aware access to the elements of one JSON array.
public struct JSONArrayReader: Sendable {
    public let elements: [JSONValue]
    /// Path of this array, like `samples`; built when asked for, as `JSONFieldReader.path`.
    public var path: String { location.rendered }
    private let location: JSONPathChain

    public init(_ elements: [JSONValue], path: String = "") {
        self.init(elements, location: .root(path))
    }

    fileprivate init(_ elements: [JSONValue], location: JSONPathChain) {
        self.elements = elements
        self.location = location
    }

    /// Fails unless `value` is an array.
    public init(_ value: JSONValue, path: String = "") throws(JSONFieldError) {
        try self.init(value, location: .root(path))
    }

    fileprivate init(_ value: JSONValue, location: JSONPathChain) throws(JSONFieldError) {
        guard case .array(let elements) = value else {
            throw JSONFieldError(field: location.rendered, detail: "expected an array, got \(value.typeDescription)")
        }
        self.init(elements, location: location)
    }

    public var count: Int { elements.count }
    public var isEmpty: Bool { elements.isEmpty }

    public func path(at index: Int) -> String {
        JSONPath.join(path, .index(index))
    }

    public func error(at index: Int, _ detail: String) -> JSONFieldError {
        JSONFieldError(field: path(at: index), detail: detail)
    }

    /// An error about the array as a whole ("at most 10000 samples").
    public func error(_ detail: String) -> JSONFieldError {
        JSONFieldError(field: path, detail: detail)
    }

    // MARK: Elements

    public func object(at index: Int) throws(JSONFieldError) -> JSONFieldReader {
        try JSONFieldReader(elements[index], location: .child(location, .index(index)))
    }

    public func array(at index: Int) throws(JSONFieldError) -> JSONArrayReader {
        try JSONArrayReader(elements[index], location: .child(location, .index(index)))
    }

    public func string(at index: Int) throws(JSONFieldError) -> String {
        guard case .string(let text) = elements[index] else {
            throw error(at: index, "expected a string, got \(elements[index].typeDescription)")
        }
        return text
    }

    public func number(at index: Int) throws(JSONFieldError) -> Double {
        guard case .number(let number) = elements[index] else {
            throw error(at: index, "expected a number, got \(elements[index].typeDescription)")
        }
        return number
    }

    public func integer(at index: Int) throws(JSONFieldError) -> Int64 {
        guard case .number(let number) = elements[index] else {
            throw error(at: index, "expected an integer, got \(elements[index].typeDescription)")
        }
        guard let integer = exactInteger(number) else {
            throw error(at: index, integerProblem(number))
        }
        return integer
    }

    public func bool(at index: Int) throws(JSONFieldError) -> Bool {
        guard case .bool(let flag) = elements[index] else {
            throw error(at: index, "expected a boolean, got \(elements[index].typeDescription)")
        }
        return flag
    }

    /// All elements as strings (e.g. a list of sample types).
    public func strings() throws(JSONFieldError) -> [String] {
        var result: [String] = []
        result.reserveCapacity(count)
        for index in elements.indices { result.append(try string(at: index)) }
        return result
    }

    public func numbers() throws(JSONFieldError) -> [Double] {
        var result: [Double] = []
        result.reserveCapacity(count)
        for index in elements.indices { result.append(try number(at: index)) }
        return result
    }

    // MARK: Batches

    /// Decodes every element as an object, one result per element, in order.
    /// After `decode` returns, the element's `finish()` runs, so unread members
    /// fail that element. One bad element does not stop the others.
    ///
    /// `decode` may throw any error (closures cannot infer typed throws); an
    /// error other than `JSONFieldError` is reported against the element's path.
    public func decodeEach<Decoded>(
        _ decode: (inout JSONFieldReader) throws -> Decoded
    ) -> [Result<Decoded, JSONFieldError>] {
        var results: [Result<Decoded, JSONFieldError>] = []
        results.reserveCapacity(count)
        for index in elements.indices {
            do {
                var reader = try object(at: index)
                let decoded = try decode(&reader)
                try reader.finish()
                results.append(.success(decoded))
            } catch let error as JSONFieldError {
                results.append(.failure(error))
            } catch {
                results.append(.failure(self.error(at: index, String(describing: error))))
            }
        }
        return results
    }

    /// Decodes every element as `decodeEach` does; returns the values when all
    /// succeed, otherwise throws the errors of up to `maxErrors` failing elements.
    public func decodeAll<Decoded>(
        maxErrors: Int = 100,
        _ decode: (inout JSONFieldReader) throws -> Decoded
    ) throws(JSONFieldErrors) -> [Decoded] {
        var values: [Decoded] = []
        values.reserveCapacity(count)
        var errors: [JSONFieldError] = []
        var failureCount = 0
        for result in decodeEach(decode) {
            switch result {
            case .success(let value):
                values.append(value)
            case .failure(let error):
                failureCount += 1
                if errors.count < maxErrors { errors.append(error) }
            }
        }
        guard failureCount == 0 else {
            throw JSONFieldErrors(errors: errors, truncated: failureCount > errors.count)
        }
        return values
    }
}

/// 2^53: beyond it not every integer is representable, so a JSON integer may already have been rounded.
private let maxExactInteger: Double = 9_007_199_254_740_992

private func exactInteger(_ number: Double) -> Int64? {
    // The magnitude check makes the conversion safe; comparing back detects a fraction.
    guard number.magnitude <= maxExactInteger, Double(Int64(number)) == number else { return nil }
    return Int64(number)
}

private func integerProblem(_ number: Double) -> String {
    let text = JSONValue.number(number).serializedString()
    // Every Double beyond 2^53 is integral, so the problem there is the range, below it a fraction.
    if number.magnitude > maxExactInteger {
        return "integer \(text) is out of range (at most ±2^53)"
    }
    return "expected an integer, got \(text)"
}

/// Where a reader is (`samples[3].device`), kept as a chain of steps and spelled out only when an
/// error needs it: a nested reader costs one small box instead of a string.
indirect enum JSONPathChain: Sendable {
    case root(String)
    case child(JSONPathChain, JSONPath.Component)

    var rendered: String {
        switch self {
        case .root(let path): return path
        case .child(let parent, let component): return JSONPath.join(parent.rendered, component)
        }
    }
}

/// Field paths (`samples[3].device.name`): a parent path plus one step.

enum JSONPath {
    enum Component: Sendable {
        case key(String)
        case index(Int)
    }

    static func join(_ parent: String, _ last: Component) -> String {
        switch last {
        case .key(let key): return parent.isEmpty ? key : "\(parent).\(key)"
        case .index(let index): return "\(parent)[\(index)]"
        }
    }
}

/// Whether one member name is a likely slip for another, for error messages only.
enum JSONFieldNames {
    /// Names longer than this are never compared (the distance is quadratic in the length).
    static let longestCompared = 64

    /// Same letters in another case, one a prefix of the other (`startDate`, `start`; `sample`,
    /// `samples`), or one or two typing slips apart (two only for names of six letters or more).
    static func resemble(_ candidate: String, _ key: String) -> Bool {
        let a = Array(candidate.lowercased().unicodeScalars), b = Array(key.lowercased().unicodeScalars)
        guard a.count <= longestCompared, b.count <= longestCompared, min(a.count, b.count) >= 3 else { return false }
        if a.starts(with: b) || b.starts(with: a) { return true }
        return editDistance(a, b, atMost: b.count >= 6 ? 2 : 1)
    }

    /// Levenshtein distance of `a` and `b` is at most `limit` (one row at a time).
    private static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar], atMost limit: Int) -> Bool {
        guard abs(a.count - b.count) <= limit else { return false }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count] <= limit
    }
}
