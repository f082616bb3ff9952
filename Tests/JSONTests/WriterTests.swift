import Testing
@testable import JSON

private func text(_ build: (inout JSONWriter) -> Void) -> String {
    var writer = JSONWriter()
    build(&writer)
    return String(decoding: writer.bytes, as: UTF8.self)
}

@Test func writerPlacesCommasAndColons() {
    let output = text { writer in
        writer.beginObject()
        writer.key("type")
        writer.string("heartRate")
        writer.field("value", 72.5)
        writer.field("count", 3)
        writer.key("tags")
        writer.beginArray()
        writer.string("a")
        writer.null()
        writer.bool(false)
        writer.beginObject()
        writer.endObject()
        writer.beginArray()
        writer.endArray()
        writer.endArray()
        writer.field("ok", true)
        writer.endObject()
    }
    #expect(output == #"{"type":"heartRate","value":72.5,"count":3,"tags":["a",null,false,{},[]],"ok":true}"#)
}

@Test(arguments: [
    ("plain", #""plain""#),
    ("quote\" backslash\\ slash/", #""quote\" backslash\\ slash/""#),
    ("\n\r\t\u{08}\u{0C}", #""\n\r\t\b\f""#),
    ("\u{0}\u{1}\u{1F}\u{7F}", #""\u0000\u0001\u001f\#u{7F}""#),
    ("caf\u{E9} \u{1F600} \u{2028}", "\"caf\u{E9} \u{1F600} \u{2028}\""),
])
func stringsAreEscaped(input: String, expected: String) throws {
    #expect(JSONValue.string(input).serializedString() == expected)
    // And the escaped form reads back as the original.
    #expect(try JSONParser.parse(expected) == .string(input))
}

@Test(arguments: [
    (5.0, "5"), (-5.0, "-5"), (0.0, "0"), (-0.0, "-0"), (72.5, "72.5"), (0.1, "0.1"),
    (1e-7, "1e-07"), (9_007_199_254_740_992, "9007199254740992"), (-9_007_199_254_740_992, "-9007199254740992"),
    (1e16, "1e+16"), (1.7976931348623157e308, "1.7976931348623157e+308"), (Double.leastNonzeroMagnitude, "5e-324"),
    (1_700_000_000.0, "1700000000"), (0.1 + 0.2, "0.30000000000000004"),
    (Double.nan, "null"), (Double.infinity, "null"), (-Double.infinity, "null"),
])
func numbersUseShortestValidForm(value: Double, expected: String) throws {
    #expect(JSONValue.number(value).serializedString() == expected)
    let reparsed = try JSONParser.parse(expected)
    if value.isFinite {
        #expect(reparsed.numberValue == value)
        #expect(reparsed.numberValue?.sign == value.sign)
    } else {
        #expect(reparsed == .null)
    }
}

@Test func integersCoverTheWholeInt64Range() {
    #expect(text { $0.integer(Int64.min) } == "-9223372036854775808")
    #expect(text { $0.integer(Int64.max) } == "9223372036854775807")
    #expect(text { $0.integer(0) } == "0")
    #expect(text { $0.integer(-42) } == "-42")
}

@Test func parseWriteParseRoundTrips() throws {
    let documents = [
        #"{"samples":[{"type":"heartRate","value":72,"unit":"count/min","start":"2024-01-01T00:00:00Z","metadata":{"device":"watch","ok":true,"n":null}}]}"#,
        #"[1,-1,0.5,-0,1e+300,2.5e-300,"\u0000\t\"\\ é 😀",[],{},[[[]]],{"a":{"b":{}}}]"#,
        #""\ud83d\ude00""#,
        "123456789.123456789",
    ]
    for document in documents {
        let parsed = try JSONParser.parse(document)
        let written = parsed.serialized()
        let reparsed = try JSONParser.parse(written)
        #expect(reparsed == parsed, "\(document)")
        // Writing is deterministic: a second trip gives the same bytes.
        #expect(reparsed.serialized() == written)
    }
}

@Test func prettyPrintingIsReadableAndReparses() throws {
    let value: JSONValue = ["a": [1, 2], "b": [:], "c": [], "d": ["e": "f"]]
    let pretty = value.serializedString(prettyPrinted: true)
    #expect(pretty == """
        {
          "a": [
            1,
            2
          ],
          "b": {},
          "c": [],
          "d": {
            "e": "f"
          }
        }
        """)
    #expect(try JSONParser.parse(pretty) == value)
}

@Test func literalsBuildValues() {
    let value: JSONValue = ["n": nil, "b": true, "i": 3, "d": 2.5, "s": "x", "a": [1]]
    #expect(value.serializedString() == #"{"n":null,"b":true,"i":3,"d":2.5,"s":"x","a":[1]}"#)
}

@Test func objectSubscriptSetsAndRemoves() {
    var object: JSONObject = ["a": 1]
    object["b"] = 2
    object["a"] = 3
    #expect(JSONValue.object(object).serializedString() == #"{"a":3,"b":2}"#)
    object["a"] = nil
    #expect(object.keys == ["b"])
}

@Test func keysAreEscapedAndTopLevelScalarsNeedNoSeparators() throws {
    let output = text { writer in
        writer.beginObject()
        writer.field("a\"b\n", "v")
        writer.endObject()
    }
    #expect(output == #"{"a\"b\n":"v"}"#)
    #expect(try JSONParser.parse(output) == ["a\"b\n": "v"])
    #expect(text { $0.string("x") } == #""x""#)
}

/// The word-at-a-time escape check against a byte-by-byte one: every byte that needs escaping,
/// and its neighbours just outside the ranges, at every offset of strings long enough to cover
/// both the eight-byte words and the tail, next to multi-byte UTF-8.
@Test func escapeCheckFindsEveryByteAtEveryOffset() {
    let special: [UInt8] = Array(0 ..< 0x20) + [0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80, 0xC3, 0xA9, 0xFF]
    for length in 0 ... 19 {
        for offset in 0 ..< max(length, 1) {
            for byte in special {
                var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                if length > 0 { bytes[offset] = byte }
                if length > 2 && offset != 0 { bytes[0] = 0xE9 }  // a high byte elsewhere in the word
                let expected = bytes.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }
                let found = bytes.withUnsafeBufferPointer { JSONWriter.needsEscaping($0) }
                #expect(found == expected, "length \(length), byte \(byte) at \(offset)")
            }
        }
    }
    var writer = JSONWriter()
    writer.string("0123456789abcdef\"tail\\x\u{1}é")
    #expect(String(decoding: writer.bytes, as: UTF8.self) == #""0123456789abcdef\"tail\\x\u0001é""#)
}

/// A prepared `Key` writes exactly what `key(_: String)` writes, first or later in an object,
/// compact or pretty-printed; a pre-quoted string the same as `string(_:)`.
@Test(arguments: [false, true])
func preparedKeysAndQuotedStringsMatchTheirPlainForms(prettyPrinted: Bool) {
    func write(prepared: Bool) -> [UInt8] {
        var writer = JSONWriter(prettyPrinted: prettyPrinted)
        writer.beginObject()
        for name in ["uuid", "type", "esc\"aped"] {
            if prepared { writer.key(JSONWriter.Key(name)) } else { writer.key(name) }
            if prepared {
                let quoted = Array("\"2026-03-08T14:30:00.000Z\"".utf8)
                quoted.withUnsafeBufferPointer { writer.quotedUnescapedString($0) }
            } else {
                writer.string("2026-03-08T14:30:00.000Z")
            }
        }
        if prepared { writer.key(JSONWriter.Key("nested")) } else { writer.key("nested") }
        writer.beginObject()
        if prepared { writer.key(JSONWriter.Key("a")) } else { writer.key("a") }
        writer.integer(1)
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }
    #expect(write(prepared: true) == write(prepared: false))
    #expect(String(decoding: write(prepared: true), as: UTF8.self).hasPrefix(prettyPrinted ? "{\n  \"uuid\": " : #"{"uuid":"2026"#))
}
