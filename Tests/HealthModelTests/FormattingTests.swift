import Testing
@testable import HealthModel

/// The allocation-free formatting helpers behind GET /v1/samples.
@Suite struct FormattingTests {
    @Test(arguments: [(0, 2, "00"), (7, 2, "07"), (42, 2, "42"), (999, 3, "999"), (5, 3, "005"), (12345, 4, "12345"),
                      (2026, 4, "2026"), (Int.max, 1, String(Int.max)), (1_000_000, 0, "1000000")])
    func digits(value: Int, width: Int, expected: String) {
        var bytes: [UInt8] = [UInt8(ascii: "x")]
        RFC3339.appendDigits(&bytes, value, width: width)
        #expect(String(decoding: bytes, as: UTF8.self) == "x" + expected)
    }

    @Test func uuidTextAndBytesRoundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let uuid = HealthUUID.random(using: &generator)
            #expect(HealthUUID(uuid.lowercasedString) == uuid)
            #expect(HealthUUID(uuid.uuidString) == uuid)
            #expect(uuid.lowercasedString == uuid.uuidString.lowercased())
            #expect(HealthUUID(bytes: uuid.bytes) == uuid)
            #expect(HealthUUID(bytes: uuid.bytes[...]) == uuid, "slices take the contiguous path too")
            #expect(HealthUUID(bytes: AnyCollection(uuid.bytes)) == uuid, "any collection still works")
        }
        let fixed = HealthUUID(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210)
        #expect(fixed.lowercasedString == "01234567-89ab-cdef-fedc-ba9876543210")
        #expect(fixed.uuidString == "01234567-89AB-CDEF-FEDC-BA9876543210")
        #expect(HealthUUID(bytes: [UInt8](repeating: 0, count: 15)) == nil)
    }

    @Test func timeOrderedUUIDsCarryTheirMillisecondAndSortByIt() {
        var generator = SystemRandomNumberGenerator()
        let instant: Int64 = 1_763_800_000_123 // 2025-11-22T08:26:40.123Z
        let uuid = HealthUUID.timeOrdered(unixMilliseconds: instant, using: &generator)
        #expect(uuid.version == 7)
        #expect(uuid.low >> 62 == 0b10, "RFC 4122 variant")
        #expect(Int64(uuid.high >> 16) == instant)
        #expect(uuid.lowercasedString.hasPrefix("019aaaac-267b-7"))
        // Later milliseconds sort after earlier ones whatever the random bits.
        var previous = HealthUUID.timeOrdered(unixMilliseconds: 0, using: &generator)
        for step in 1...500 {
            let next = HealthUUID.timeOrdered(unixMilliseconds: Int64(step) * 7, using: &generator)
            #expect(previous < next)
            previous = next
        }
        #expect(HealthUUID.random(using: &generator).version == 4)
    }

    @Test func instantsOutsideFourDigitYearsUseTheExpandedForm() {
        #expect(RFC3339.format(253_402_300_800_000) == "+10000-01-01T00:00:00.000Z")
        #expect(RFC3339.format(253_402_300_799_999) == "9999-12-31T23:59:59.999Z")
        #expect(RFC3339.format(-62_167_219_200_001) == "-00001-12-31T23:59:59.999Z")
        #expect(RFC3339.format(0, offsetSeconds: 3_600) == "1970-01-01T01:00:00.000+01:00")
        let far = RFC3339.format(Int64(9_000_000_000_000_000))
        #expect(far.hasPrefix("+") && far.hasSuffix("Z"))
    }
}
