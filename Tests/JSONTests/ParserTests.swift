import Testing
@testable import JSON

private func parse(_ text: String, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
    try JSONParser.parse(Array(text.utf8), maxDepth: maxDepth)
}

private func parseError(_ bytes: [UInt8], maxDepth: Int = 64) -> JSONParseError? {
    do {
        _ = try JSONParser.parse(bytes, maxDepth: maxDepth)
        return nil
    } catch {
        return error
    }
}

private func parseError(_ text: String) -> JSONParseError? {
    parseError(Array(text.utf8))
}

/// Wraps raw bytes in quotes, to put arbitrary byte sequences inside a JSON string.
private func quoted(_ bytes: [UInt8]) -> [UInt8] {
    [0x22] + bytes + [0x22]
}

struct ValidDocument: Sendable, CustomStringConvertible {
    let text: String
    let expected: JSONValue
    var description: String { text }
}

private let validDocuments: [ValidDocument] = [
    .init(text: "null", expected: .null),
    .init(text: "true", expected: true),
    .init(text: "false", expected: false),
    .init(text: "0", expected: 0),
    .init(text: "-0", expected: .number(-0.0)),
    .init(text: "42", expected: 42),
    .init(text: "-17", expected: -17),
    .init(text: "3.25", expected: 3.25),
    .init(text: "-0.5", expected: -0.5),
    .init(text: "1e3", expected: 1000),
    .init(text: "1E+3", expected: 1000),
    .init(text: "25e-2", expected: 0.25),
    .init(text: "0.1", expected: 0.1),
    .init(text: "1.7976931348623157e308", expected: .number(1.7976931348623157e308)),
    .init(text: "5e-324", expected: .number(Double.leastNonzeroMagnitude)),
    .init(text: "1e-400", expected: 0),
    .init(text: "123456789012345678901234567890", expected: .number(1.2345678901234568e29)),
    .init(text: "9007199254740993", expected: .number(9_007_199_254_740_992)),
    .init(text: "0.30000000000000004", expected: .number(0.1 + 0.2)),
    .init(text: "\"\"", expected: ""),
    .init(text: "\"hello\"", expected: "hello"),
    .init(text: "\"caf\u{E9} \u{1F600}\"", expected: "caf\u{E9} \u{1F600}"),
    .init(text: #""\"\\\/\b\f\n\r\t""#, expected: "\"\\/\u{08}\u{0C}\n\r\t"),
    .init(text: #""\u0041\u00e9\u20AC""#, expected: "A\u{E9}\u{20AC}"),
    .init(text: #""\ud83d\ude00""#, expected: "\u{1F600}"),
    .init(text: #""\u0000""#, expected: "\u{0}"),
    .init(text: #""a\nb \u00e9 ünïcode""#, expected: "a\nb \u{E9} ünïcode"),
    .init(text: "[]", expected: []),
    .init(text: "{}", expected: [:]),
    .init(text: "[1,\"two\",true,null,{}]", expected: [1, "two", true, nil, [:]]),
    .init(text: " \t\r\n[ 1 , 2 ] \n", expected: [1, 2]),
    .init(text: "{\"a\":1,\"b\":[true,false]}", expected: ["a": 1, "b": [true, false]]),
    .init(text: "{ \"z\" : 1 , \"a\" : 2 }", expected: ["z": 1, "a": 2]),
    .init(text: "[[[[[]]]]]", expected: [[[[[]]]]]),
    .init(text: "{\"a\":{\"b\":{\"c\":null}}}", expected: ["a": ["b": ["c": nil]]]),
    .init(text: "{\"\":0}", expected: ["": 0]),
    .init(text: "{\"a\":1,\"A\":2}", expected: ["a": 1, "A": 2]),
    .init(text: "[{\"a\":1},{\"a\":1}]", expected: [["a": 1], ["a": 1]]),
]

@Test(arguments: validDocuments)
func parsesValidDocument(_ document: ValidDocument) throws {
    let value = try parse(document.text)
    #expect(value == document.expected)
}

struct InvalidDocument: Sendable, CustomStringConvertible {
    let bytes: [UInt8]
    let reason: String
    let offset: Int
    var description: String { String(decoding: bytes, as: UTF8.self) }

    init(_ text: String, _ reason: String, at offset: Int) {
        bytes = Array(text.utf8)
        self.reason = reason
        self.offset = offset
    }

    init(bytes: [UInt8], _ reason: String, at offset: Int) {
        self.bytes = bytes
        self.reason = reason
        self.offset = offset
    }
}

private let invalidDocuments: [InvalidDocument] = [
    .init("", "the text is empty; expected a JSON value", at: 0),
    .init("   ", "the text is empty (only whitespace)", at: 3),
    .init("[1,]", "unexpected character ']'", at: 3),
    .init("{\"a\":1,}", "unexpected character '}' (expected a string key)", at: 7),
    .init("[1 2]", "unexpected character '2' (expected ',' or ']')", at: 3),
    .init("{\"a\" 1}", "unexpected character '1' (expected ':')", at: 5),
    .init("{a:1}", "unexpected character 'a' (expected a string key)", at: 1),
    .init("{'a':1}", "unexpected character '''", at: 1),
    .init("[1] [2]", "unexpected character '[' (expected end of input)", at: 4),
    .init("[1", "unexpected end of input", at: 2),
    .init("{\"a\":", "unexpected end of input", at: 5),
    .init("// comment\n1", "unexpected character '/'", at: 0),
    .init("[1 /* c */]", "unexpected character '/'", at: 3),
    .init("01", "leading zeros are not allowed", at: 0),
    .init("-01", "leading zeros are not allowed", at: 0),
    .init("+1", "unexpected character '+'", at: 0),
    .init(".5", "unexpected character '.'", at: 0),
    .init("1.", "unexpected end of input", at: 2),
    .init("1.e5", "unexpected character 'e' (expected a digit after '.')", at: 2),
    .init("1e", "unexpected end of input", at: 2),
    .init("1e+", "unexpected end of input", at: 3),
    .init("-", "unexpected end of input", at: 1),
    .init("-a", "unexpected character 'a' (expected a digit)", at: 1),
    .init("0x10", "unexpected character 'x' (expected end of input)", at: 1),
    .init("NaN", "unexpected character 'N'", at: 0),
    .init("Infinity", "unexpected character 'I'", at: 0),
    .init("-Infinity", "unexpected character 'I' (expected a digit)", at: 1),
    .init("1e400", "number 1e400 is out of range", at: 0),
    .init("-1e309", "number -1e309 is out of range", at: 0),
    .init("tru", "unexpected end of input", at: 3),
    .init("trux", "unexpected character 'x' (expected 'true')", at: 3),
    .init("nul", "unexpected end of input", at: 3),
    .init("True", "unexpected character 'T'", at: 0),
    .init("\"abc", "unterminated string", at: 4),
    .init("\"a\nb\"", "unescaped control character", at: 2),
    .init("\"a\tb\"", "unescaped control character", at: 2),
    .init(#""\x""#, "invalid escape sequence character 'x'", at: 2),
    .init(#""\u12""#, "invalid hex digit character '\"'", at: 5),
    .init(#""\u12G4""#, "invalid hex digit character 'G'", at: 5),
    .init(#""\ud83d""#, "unpaired high surrogate", at: 1),
    .init(#""\ud83dx""#, "unpaired high surrogate", at: 1),
    .init(#""\ud83d\u0041""#, "unpaired high surrogate", at: 1),
    .init(#""\ude00""#, "unpaired low surrogate", at: 1),
    .init(#""\ude00\ud83d""#, "unpaired low surrogate", at: 1),
    .init("{\"a\":1,\"a\":2}", "duplicate key \"a\"", at: 7),
    .init("[{\"x\":{\"k\":1,\"j\":2,\"k\":3}}]", "duplicate key \"k\"", at: 19),
    .init("\u{0C}1", "unexpected control character 0x0C", at: 0),
    .init("\u{A0}1", "unexpected non-ASCII byte 0xC2 (expected a value)", at: 0),
    .init("\u{FEFF}1", "byte-order mark (EF BB BF), which JSON does not allow", at: 0),
    .init(bytes: [0x5B, 0xC0, 0x5D], "invalid UTF-8 byte 0xC0", at: 1),
    // Invalid UTF-8 inside strings.
    .init(bytes: quoted([0xC0, 0xAF]), "invalid UTF-8 byte 0xC0", at: 1),  // overlong '/'
    .init(bytes: quoted([0xE0, 0x80, 0xAF]), "invalid UTF-8 byte 0xE0", at: 1),  // overlong 3-byte
    .init(bytes: quoted([0xF0, 0x80, 0x80, 0xAF]), "invalid UTF-8 byte 0xF0", at: 1),  // overlong 4-byte
    .init(bytes: quoted([0xED, 0xA0, 0x80]), "invalid UTF-8 byte 0xED", at: 1),  // encoded high surrogate
    .init(bytes: quoted([0xED, 0xBF, 0xBF]), "invalid UTF-8 byte 0xED", at: 1),  // encoded low surrogate
    .init(bytes: quoted([0xF4, 0x90, 0x80, 0x80]), "invalid UTF-8 byte 0xF4", at: 1),  // above U+10FFFF
    .init(bytes: quoted([0xF5, 0x80, 0x80, 0x80]), "invalid UTF-8 byte 0xF5", at: 1),
    .init(bytes: quoted([0x41, 0x80]), "invalid UTF-8 byte 0x80", at: 2),  // lone continuation
    .init(bytes: quoted([0xE2, 0x82]), "invalid UTF-8 byte 0xE2", at: 1),  // truncated before the quote
    .init(bytes: [0x22, 0xE2, 0x82], "invalid UTF-8 byte 0xE2", at: 1),  // truncated at end of input
    .init(bytes: quoted([0xFF]), "invalid UTF-8 byte 0xFF", at: 1),
    .init(bytes: Array(#""\n"#.utf8) + [0xC3, 0x28, 0x22], "invalid UTF-8 byte 0xC3", at: 3),  // slow path too
    .init(bytes: [0x7B, 0x22, 0xC3, 0x22, 0x3A, 0x31, 0x7D], "invalid UTF-8 byte 0xC3", at: 2),  // in a key
]

@Test(arguments: invalidDocuments)
func rejectsInvalidDocument(_ document: InvalidDocument) {
    guard let error = parseError(document.bytes) else {
        Issue.record("parsed an invalid document")
        return
    }
    #expect(error.reason.contains(document.reason), "\(error)")
    #expect(error.offset == document.offset, "\(error)")
}

@Test func errorDescriptionNamesCharacterAndOffset() {
    let error = parseError("{\"a\": x}")
    #expect(error?.description == "unexpected character 'x' (expected a value) at byte 6")
}

@Test func validTwoThreeAndFourByteSequencesAreAccepted() throws {
    // U+0080, U+07FF, U+0800, U+D7FF, U+E000, U+FFFF, U+10000, U+10FFFF: the edges of Table 3-7.
    let text = "\u{80}\u{7FF}\u{800}\u{D7FF}\u{E000}\u{FFFF}\u{10000}\u{10FFFF}"
    #expect(try JSONParser.parse(quoted(Array(text.utf8))) == .string(text))
    // The same characters behind an escape take the copying path.
    #expect(try JSONParser.parse(quoted(Array(("\\t" + text).utf8))) == .string("\t" + text))
}

@Test func surrogatePairEscapesDecodeToOneScalar() throws {
    let value = try parse(#"["\uD834\uDD1E", "\udbff\udfff", "x\ud800\udc00y"]"#)
    #expect(value == ["\u{1D11E}", "\u{10FFFF}", "x\u{10000}y"])
}

@Test func negativeZeroKeepsItsSign() throws {
    let value = try parse("-0.0")
    #expect(value.numberValue?.sign == .minus)
    #expect(value.numberValue == 0)
}

@Test(arguments: [
    ("1.5e2", 150.0), ("-2.5E-3", -0.0025), ("1e22", 1e22), ("1e23", 1e23), ("123456.789e3", 123_456_789.0),
    ("0.000001", 1e-6), ("9007199254740991", 9_007_199_254_740_991.0), ("2.2250738585072014e-308", 2.2250738585072014e-308),
    ("4.9406564584124654e-324", Double.leastNonzeroMagnitude), ("0e999999999999", 0), ("1e-999999999999", 0),
    ("100000000000000000000000000000e-10", 1e19), ("72.5", 72.5), ("98.6", 98.6), ("1700000000.123", 1_700_000_000.123),
])
func numbersAreCorrectlyRounded(text: String, expected: Double) throws {
    #expect(try parse(text) == .number(expected))
}

@Test func fastAndSlowNumberPathsAgreeWithStandardLibrary() throws {
    // Deterministic spread of mantissas and exponents around the fast-path limits.
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    for _ in 0..<2000 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let mantissa = state >> 20
        let exponent = Int((state >> 8) & 0x3F) - 32
        let text = "\(mantissa)e\(exponent)"
        let expected = try #require(Double(text))
        #expect(try parse(text) == .number(expected), "\(text)")
        let fraction = "0.\(mantissa % 100_000_000)"
        #expect(try parse(fraction) == .number(try #require(Double(fraction))), "\(fraction)")
    }
}

@Test func depthLimitIsEnforcedWithoutRecursion() {
    let deep = [UInt8](repeating: 0x5B, count: 100_000) + [UInt8](repeating: 0x5D, count: 100_000)
    let error = parseError(deep)
    #expect(error?.reason == "nesting deeper than 64 levels")
    #expect(error?.offset == 64)

    // A raised limit still parses iteratively. (Destroying or comparing a
    // value tree recurses, which is why the limit has to stay moderate.)
    let thousand = [UInt8](repeating: 0x5B, count: 1000) + [UInt8](repeating: 0x5D, count: 1000)
    #expect((try? JSONParser.parse(thousand, maxDepth: 1000)) != nil)

    let deepObjects = Array(String(repeating: "{\"a\":", count: 100_000).utf8)
    #expect(parseError(deepObjects)?.reason == "nesting deeper than 64 levels")
}

@Test func depthLimitCountsContainersExactly() throws {
    let sixtyFour = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
    #expect(throws: Never.self) { try parse(sixtyFour) }
    let sixtyFive = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
    #expect(throws: JSONParseError.self) { try parse(sixtyFive) }
    #expect(throws: Never.self) { try parse("[[1]]", maxDepth: 2) }
    #expect(parseError(Array("[[1]]".utf8), maxDepth: 1)?.reason == "nesting deeper than 1 levels")
    #expect(throws: Never.self) { try parse("7", maxDepth: 0) }
}

@Test func duplicateKeysInLargeObjectsAreFound() {
    var members = (0..<1000).map { "\"key\($0)\":\($0)" }
    #expect(parseError("{" + members.joined(separator: ",") + "}") == nil)
    members.append("\"key500\":1")
    let error = parseError("{" + members.joined(separator: ",") + "}")
    #expect(error?.reason == "duplicate key \"key500\"")
}

@Test func sameKeyInSiblingObjectsIsNotADuplicate() throws {
    let value = try parse(#"{"a":{"id":1},"b":{"id":2},"id":3}"#)
    #expect(value == ["a": ["id": 1], "b": ["id": 2], "id": 3])
}

@Test func objectsKeepMemberOrder() throws {
    let value = try parse(#"{"zeta":1,"alpha":2,"mid":3}"#)
    #expect(value.objectValue?.keys == ["zeta", "alpha", "mid"])
    #expect(value.objectValue?["alpha"] == 2)
    #expect(value.objectValue?["missing"] == nil)
}

@Test func sliceAndRawBufferVariantsReportRelativeOffsets() throws {
    let bytes = Array("xx[1,2]yy".utf8)
    #expect(try JSONParser.parse(bytes[2..<7]) == [1, 2])
    #expect(throws: JSONParseError(offset: 3, reason: "unexpected character ']' (expected a value)")) {
        try JSONParser.parse(Array("xx[1,]".utf8)[2...])
    }
    let value = try bytes[2..<7].withUnsafeBytes { raw throws(JSONParseError) in try JSONParser.parse(raw) }
    #expect(value == [1, 2])
    #expect(try JSONParser.parse("{\"k\": [null]}") == ["k": [nil]])
}

@Test(arguments: [15, 16, 17])
func duplicateKeyIsFoundAroundTheScanToSetSwitch(memberCount: Int) {
    let members = (0..<memberCount).map { "\"k\($0)\":0" } + ["\"k0\":1"]
    let document = "{" + members.joined(separator: ",") + "}"
    let error = parseError(document)
    #expect(error?.reason == "duplicate key \"k0\"")
    #expect(error?.offset == document.utf8.count - 7)
}

