import Testing
@testable import HealthModel

/// The textual uuid reader (eight digits at a time) against a plain digit-by-digit reading.
@Suite struct UUIDParsingTests {
    /// What `HealthUUID(utf8:)` must answer: 8-4-4-4-12 hex digits in either case, or nil.
    static func reference(_ text: [UInt8]) -> HealthUUID? {
        guard text.count == 36 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        var digits = 0
        for (index, byte) in text.enumerated() {
            if [8, 13, 18, 23].contains(index) {
                guard byte == UInt8(ascii: "-") else { return nil }
                continue
            }
            let value: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            if digits < 16 { high = high << 4 | UInt64(value) } else { low = low << 4 | UInt64(value) }
            digits += 1
        }
        return HealthUUID(high: high, low: low)
    }

    static func parsed(_ text: [UInt8]) -> HealthUUID? { text.withUnsafeBufferPointer { HealthUUID(utf8: $0) } }

    @Test func readsEveryDigitInEitherCase() {
        var random = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdefABCDEF".utf8)
        for _ in 0..<2_000 {
            var text: [UInt8] = []
            for index in 0..<36 {
                text.append([8, 13, 18, 23].contains(index) ? UInt8(ascii: "-") : digits[Int(random.next() % UInt64(digits.count))])
            }
            let expected = Self.reference(text)
            #expect(expected != nil)
            #expect(Self.parsed(text) == expected)
        }
        #expect(Self.parsed(Array("00000000-0000-0000-0000-000000000000".utf8)) == HealthUUID(high: 0, low: 0))
        #expect(Self.parsed(Array("FFFFFFFF-ffff-FFFF-ffff-FFFFFFFFFFFF".utf8)) == HealthUUID(high: .max, low: .max))
        #expect(Self.parsed(Array("01234567-89ab-cdef-0123-456789ABCDEF".utf8))
                == HealthUUID(high: 0x0123_4567_89AB_CDEF, low: 0x0123_4567_89AB_CDEF))
    }

    @Test func refusesAnyOtherByteAtAnyPlace() {
        let valid = Array("9f1c2d3e-4a5b-4c6d-8e7f-a0b1c2d3e4f5".utf8)
        for index in 0..<36 {
            for byte in UInt8.min...UInt8.max {
                var text = valid
                text[index] = byte
                #expect(Self.parsed(text) == Self.reference(text), "byte \(byte) at \(index)")
            }
        }
        #expect(Self.parsed(Array(valid.dropLast())) == nil)
        #expect(Self.parsed(valid + [UInt8(ascii: "0")]) == nil)
    }
}
