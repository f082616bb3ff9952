import HealthModel
import Testing

@Suite("Content keys")
struct ContentKeyTests {
    /// Stored samples carry uuids hashed from these bytes: they must spell numbers exactly as
    /// `String(_:)` and `String(_:radix: 16)` do, or re-imports would store everything again.
    @Test("fields are spelled as String(value) and String(bits, radix: 16)", arguments: [
        Int64(0), 1, -1, 9, 10, 1_707_231_600_000, -1_707_231_600_000, .max, .min,
    ])
    func spelling(_ value: Int64) {
        var key = ContentKey()
        key.reset(prefix: "p")
        key.append("text")
        key.append(decimal: value)
        key.append(hex: UInt64(bitPattern: value))
        key.append(hex: 72.5.bitPattern)
        let expected = "p\u{1F}text\u{1F}\(value)\u{1F}\(String(UInt64(bitPattern: value), radix: 16))\u{1F}\(String(72.5.bitPattern, radix: 16))"
        #expect(key.bytes == Array(expected.utf8))
        key.reset(prefix: "q")
        #expect(key.bytes == Array("q".utf8))
    }

    @Test("the uuid is version 8 with the start in its first 48 bits")
    func uuid() {
        var key = ContentKey()
        key.reset(prefix: "p")
        key.append("a")
        let uuid = key.uuid(start: 1_707_231_600_000) { _ in (.max, .max) }
        #expect(uuid.high >> 16 == 1_707_231_600_000)
        #expect((uuid.high >> 12) & 0xF == 8)
        #expect(uuid.low >> 62 == 2)
    }
}
