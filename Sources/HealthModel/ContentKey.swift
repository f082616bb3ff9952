/// The identifying content of a sample as bytes, for content-derived uuids (the Apple Health
/// importer, the Health Auto Export ingest): a prefix naming the producer, then fields each after
/// a 0x1F separator. Numbers are written as their text (`String(start)`, `String(bits, radix:
/// 16)`), in place, without a String per field: the bytes must stay exactly those earlier imports
/// hashed, or a re-import would store everything twice.
///
/// One key is reused for every record (`reset`), so building a key allocates nothing once warm.
/// Each caller hashes the bytes with its own hash (`uuid(start:hash:)`).
public struct ContentKey: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    /// Starts a new key with the producer's prefix.
    public mutating func reset(prefix: StaticString) {
        bytes.removeAll(keepingCapacity: true)
        bytes.append(contentsOf: UnsafeRawBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount))
    }

    /// A text field.
    public mutating func append(_ text: String) {
        bytes.append(0x1F)
        bytes.append(contentsOf: text.utf8)
    }

    /// An integer field as `String(value)` would spell it.
    public mutating func append(decimal value: Int64) {
        bytes.append(0x1F)
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // up to 20 digits, backwards
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(buffer[index]) }
        }
    }

    /// A 64-bit field (a Double's bit pattern) as `String(value, radix: 16)` would spell it.
    public mutating func append(hex value: UInt64) {
        bytes.append(0x1F)
        let digits: StaticString = "0123456789abcdef"
        var shift = max(0, (64 - value.leadingZeroBitCount + 3) / 4 * 4 - 4)
        while true {
            bytes.append(digits.utf8Start[Int((value >> UInt64(shift)) & 0xF)])
            if shift == 0 { break }
            shift -= 4
        }
    }

    /// The version-8 uuid of the key (see `HealthUUID(contentStart:hashHigh:hashLow:)`): `start`
    /// in the first 48 bits, the two 64-bit words `hash` returns for the bytes in the rest.
    public func uuid(start: Int64, hash: (UnsafeRawBufferPointer) -> (UInt64, UInt64)) -> HealthUUID {
        let (high, low) = bytes.withUnsafeBytes { hash($0) }
        return HealthUUID(contentStart: start, hashHigh: high, hashLow: low)
    }
}
