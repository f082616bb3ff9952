import Testing
@testable import JSON

/// A domain type decoded the way the HealthModel decoders are meant to read.
private struct Sample: Equatable {
    var type: String
    var value: Double
    var count: Int64?
    var note: String?
    var device: String?
    var manual: Bool

    static func decode(_ reader: inout JSONFieldReader) throws(JSONFieldError) -> Sample {
        let type = try reader.requiredString("type")
        guard ["heartRate", "stepCount"].contains(type) else {
            throw reader.error("type", "unknown sample type \"\(type)\"")
        }
        let value = try reader.requiredNumber("value")
        let count = try reader.optionalInteger("count")
        let note = try reader.optionalString("note")
        let manual = try reader.optionalBool("manual") ?? false
        var device: String?
        if var metadata = try reader.optionalObject("metadata") {
            device = try metadata.optionalString("device")
            try metadata.finish()
        }
        return Sample(type: type, value: value, count: count, note: note, device: device, manual: manual)
    }
}

private func body(_ text: String) throws(JSONFieldError) -> JSONFieldReader {
    try JSONFieldReader(parsing: Array(text.utf8))
}

@Test func readsTypedFields() throws {
    var reader = try body(#"{"type":"heartRate","value":72.5,"count":3,"note":null,"metadata":{"device":"watch"}}"#)
    let sample = try Sample.decode(&reader)
    try reader.finish()
    #expect(sample == Sample(type: "heartRate", value: 72.5, count: 3, note: nil, device: "watch", manual: false))
}

@Test func stringIsNotANumber() throws {
    var reader = try body(#"{"value":"12"}"#)
    #expect(throws: JSONFieldError(field: "value", detail: "expected a number, got a string")) {
        try reader.requiredNumber("value")
    }
}

/// A missing field names the member the client probably meant it to be, and only then.
@Test func aMissingFieldNamesTheMemberThatLooksLikeIt() throws {
    var reader = try body(#"{"startDate":"x","Type":"y","sample":[],"colour":1,"note":2}"#)
    #expect(throws: JSONFieldError(field: "start", detail: "required field is missing (found 'startDate': did you mean 'start'?)")) {
        try reader.requiredString("start")
    }
    for (key, found) in [("type", "Type"), ("samples", "sample"), ("color", "colour")] {
        #expect(throws: JSONFieldError(field: key, detail: "required field is missing (found '\(found)': did you mean '\(key)'?)")) {
            try reader.requiredValue(key)
        }
    }
    // Nothing alike, or alike but already read as a field of its own: the plain message.
    _ = try reader.optionalNumber("note")
    for key in ["value", "notes"] {
        #expect(throws: JSONFieldError(field: key, detail: "required field is missing")) { try reader.requiredValue(key) }
    }
    #expect(!JSONFieldNames.resemble("id", "uid"), "names under three letters are never guessed at")
    #expect(!JSONFieldNames.resemble(String(repeating: "a", count: 65), String(repeating: "a", count: 64) + "b"))
}

@Test func requiredFieldErrors() throws {
    var reader = try body(#"{"a":null,"b":true,"c":[],"d":{}}"#)
    #expect(throws: JSONFieldError(field: "missing", detail: "required field is missing")) {
        try reader.requiredString("missing")
    }
    #expect(throws: JSONFieldError(field: "a", detail: "expected a string, got null")) {
        try reader.requiredString("a")
    }
    #expect(throws: JSONFieldError(field: "b", detail: "expected a number, got a boolean")) {
        try reader.requiredNumber("b")
    }
    #expect(throws: JSONFieldError(field: "c", detail: "expected an object, got an array")) {
        try reader.requiredObject("c")
    }
    #expect(throws: JSONFieldError(field: "d", detail: "expected an array, got an object")) {
        try reader.requiredArray("d")
    }
    #expect(throws: JSONFieldError(field: "b", detail: "expected a string, got a boolean")) {
        try reader.optionalString("b")
    }
    #expect(try reader.optionalNumber("a") == nil)
    #expect(try reader.optionalNumber("absent") == nil)
    #expect(reader.optionalValue("a") == .null)
    #expect(reader.optionalValue("absent") == nil)
}

@Test(arguments: [
    ("3", Int64(3)), ("-3", Int64(-3)), ("3.0", Int64(3)), ("0", Int64(0)), ("-0", Int64(0)),
    ("9007199254740992", Int64(9_007_199_254_740_992)), ("-9007199254740992", Int64(-9_007_199_254_740_992)),
])
func integersWithinTwoToThe53AreAccepted(text: String, expected: Int64) throws {
    var reader = try body("{\"n\":\(text)}")
    #expect(try reader.requiredInteger("n") == expected)
}

@Test(arguments: [
    ("1.5", "expected an integer, got 1.5"),
    ("1e300", "integer 1e+300 is out of range (at most ±2^53)"),
    ("9007199254740994", "integer 9.007199254740994e+15 is out of range (at most ±2^53)"),
    ("\"7\"", "expected an integer, got a string"),
])
func integerRejections(text: String, detail: String) throws {
    var reader = try body("{\"n\":\(text)}")
    #expect(throws: JSONFieldError(field: "n", detail: detail)) {
        try reader.optionalInteger("n")
    }
}

@Test func unknownFieldsAreRejectedWithTheirPath() throws {
    var reader = try body(#"{"type":"stepCount","value":1,"colour":"red"}"#)
    _ = try reader.requiredString("type")
    _ = try reader.requiredNumber("value")
    #expect(reader.unreadKeys == ["colour"])
    #expect(throws: JSONFieldError(field: "colour", detail: "unknown field")) {
        try reader.finish()
    }

    var nested = try body(#"{"samples":[{"metadata":{"device":"x","extra":1}}]}"#)
    var element = try nested.requiredArray("samples").object(at: 0)
    var metadata = try element.requiredObject("metadata")
    _ = try metadata.requiredString("device")
    #expect(throws: JSONFieldError(field: "samples[0].metadata.extra", detail: "unknown field")) {
        try metadata.finish()
    }
}

@Test func readingTracksMoreThanSixtyFourMembers() throws {
    let members = (0..<100).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
    var reader = try body("{\(members)}")
    for index in 0..<100 where index != 80 {
        #expect(try reader.requiredInteger("k\(index)") == Int64(index))
    }
    #expect(reader.unreadKeys == ["k80"])
    _ = reader.optionalValue("k80")
    try reader.finish()
}

@Test func batchDecodingCollectsOneErrorPerBadElement() throws {
    var reader = try body("""
        {"samples":[
          {"type":"heartRate","value":60},
          {"type":"heartRate","value":"61"},
          {"type":"stepCount","value":10,"metadata":{"device":"phone","battery":3}},
          {"type":"sleep","value":1},
          7,
          {"type":"stepCount","value":12,"count":2,"typo":true},
          {"type":"stepCount","value":5,"manual":true}
        ]}
        """)
    let samples = try reader.requiredArray("samples")
    try reader.finish()

    let results = samples.decodeEach { sample in try Sample.decode(&sample) }
    let errors = results.compactMap { result -> JSONFieldError? in
        if case .failure(let error) = result { return error }
        return nil
    }
    #expect(errors == [
        JSONFieldError(field: "samples[1].value", detail: "expected a number, got a string"),
        JSONFieldError(field: "samples[2].metadata.battery", detail: "unknown field"),
        JSONFieldError(field: "samples[3].type", detail: "unknown sample type \"sleep\""),
        JSONFieldError(field: "samples[4]", detail: "expected an object, got a number"),
        JSONFieldError(field: "samples[5].typo", detail: "unknown field"),
    ])
    #expect(results.count == 7)
    #expect((try? results[6].get())?.manual == true)

    do {
        _ = try samples.decodeAll(maxErrors: 2) { try Sample.decode(&$0) }
        Issue.record("decodeAll accepted a bad batch")
    } catch {
        #expect(error.errors.count == 2)
        #expect(error.truncated)
        #expect(error.description.hasPrefix("samples[1].value: expected a number, got a string; samples[2]"))
    }
}

@Test func batchOfGoodElementsDecodes() throws {
    let samples = try JSONArrayReader(
        JSONParser.parse(#"[{"type":"heartRate","value":1},{"type":"stepCount","value":2}]"#), path: "samples")
    let decoded = try samples.decodeAll(Sample.decode)
    #expect(decoded.map(\.value) == [1, 2])
}

@Test func foreignErrorsAreReportedAtTheElementPath() throws {
    struct OutOfRange: Error, CustomStringConvertible {
        var description: String { "value out of range" }
    }
    let samples = try JSONArrayReader(JSONParser.parse(#"[{"v":1},{"v":-1}]"#), path: "samples")
    let results = samples.decodeEach { reader in
        let value = try reader.requiredNumber("v")
        if value < 0 { throw OutOfRange() }
        return value
    }
    #expect((try? results[0].get()) == 1)
    #expect(throws: JSONFieldError(field: "samples[1]", detail: "value out of range")) { try results[1].get() }
}

@Test func arrayElementAccessors() throws {
    let array = try JSONArrayReader(JSONParser.parse(#"["a", 2, true, [1], 2.5]"#), path: "list")
    #expect(try array.string(at: 0) == "a")
    #expect(try array.integer(at: 1) == 2)
    #expect(try array.bool(at: 2) == true)
    #expect(try array.array(at: 3).numbers() == [1])
    #expect(try array.array(at: 3).path == "list[3]")
    #expect(throws: JSONFieldError(field: "list[4]", detail: "expected an integer, got 2.5")) {
        try array.integer(at: 4)
    }
    #expect(throws: JSONFieldError(field: "list[1]", detail: "expected a string, got a number")) {
        try array.strings()
    }
}

@Test func malformedBodyBecomesAFieldError() {
    #expect(throws: JSONFieldError(field: "", detail: "invalid JSON: unexpected end of input at byte 1")) {
        try body("{")
    }
    #expect(throws: JSONFieldError(field: "", detail: "expected an object, got an array")) {
        try body("[]")
    }
    #expect(JSONFieldError(field: "samples[2].value", detail: "must be positive").description
        == "samples[2].value: must be positive")
}
