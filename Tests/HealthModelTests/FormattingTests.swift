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
}
