// Sample identifiers: RFC 4122 UUIDs without Foundation, stored as two words
// so they hash, compare and pack into 16 bytes cheaply. New uuids take their random bits and time
// as parameters; the system clock and random source are the shells' (HealthStore's SystemUUIDs).

import Primitives

/// A UUID. Parsing accepts the 36-character textual form in any letter case;
/// `uuidString` is uppercase, as HealthKit's `UUID.uuidString` prints it.
/// Equality is on the bytes, so the case a client used never matters.
public struct HealthUUID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Bytes 0-7, big-endian.
    public let high: UInt64
    /// Bytes 8-15, big-endian.
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// From exactly 16 bytes in network order, as a store lends a uuid column (not generic: it
    /// runs for every row read).
    public init?(bytes: UnsafeRawBufferPointer) {
        guard bytes.count == 16 else { return nil }
        self.init(high: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                  low: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
    }

    /// From exactly 16 bytes in network order.
    public init?<C: Collection>(bytes: C) where C.Element == UInt8 {
        guard bytes.count == 16 else { return nil }
        // Stored uuids arrive as arrays: read them without generic per-element iteration.
        if let words = bytes.withContiguousStorageIfAvailable({ buffer -> (UInt64, UInt64) in
            var high: UInt64 = 0
            var low: UInt64 = 0
            for index in 0..<8 { high = high << 8 | UInt64(buffer[index]) }
            for index in 8..<16 { low = low << 8 | UInt64(buffer[index]) }
            return (high, low)
        }) {
            self.init(high: words.0, low: words.1)
            return
        }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    /// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, hexadecimal digits in either case.
    public init?<S: StringProtocol>(_ string: S) {
        let parsed = string.utf8.withContiguousStorageIfAvailable { HealthUUID(utf8: $0) }
            ?? Array(string.utf8).withUnsafeBufferPointer { HealthUUID(utf8: $0) }
        guard let parsed else { return nil }
        self = parsed
    }

    /// The textual form from UTF-8 bytes (a JSON string's content, read in place). Eight digits
    /// at a time, without a branch per digit (random digits would mispredict a third of them):
    /// every POST of samples reads one uuid per sample.
    public init?(utf8 text: UnsafeBufferPointer<UInt8>) {
        guard text.count == 36, let base = text.baseAddress else { return nil }
        let dash = UInt8(ascii: "-")
        guard base[8] == dash, base[13] == dash, base[18] == dash, base[23] == dash else { return nil }
        let raw = UnsafeRawPointer(base)
        func load(_ offset: Int) -> UInt64 { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
        func load4(_ offset: Int) -> UInt64 { UInt64(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))) }
        // 8-4-4-4-12: the groups' digits as four runs of eight.
        guard let first = Self.hexDigits(load(0)), let second = Self.hexDigits(load4(9) | load4(14) << 32),
              let third = Self.hexDigits(load4(19) | load4(24) << 32), let fourth = Self.hexDigits(load(28)) else { return nil }
        self.init(high: UInt64(first) << 32 | UInt64(second), low: UInt64(third) << 32 | UInt64(fourth))
    }

    /// The value of eight ASCII hex digits (either case), the first in the lowest byte of `chars`;
    /// nil if any byte is not one.
    @inline(__always)
    static func hexDigits(_ chars: UInt64) -> UInt32? {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        // Per byte (all below 0x80, so no sum carries into the next byte): the high bit set where
        // the byte lies in lo...hi.
        func within(_ x: UInt64, _ lo: UInt64, _ hi: UInt64) -> UInt64 {
            (x &+ (0x80 - lo) &* ones) & ~(x &+ (0x7F - hi) &* ones) & highBits
        }
        guard chars & highBits == 0 else { return nil }
        let digits = within(chars, 0x30, 0x39)
        let letters = within(chars | 0x2020_2020_2020_2020, 0x61, 0x66)
        guard digits | letters == highBits else { return nil }
        // '0'-'9' are 0x30-0x39 and 'a'-'f'/'A'-'F' end in 1-6: a letter's value is its low nibble + 9.
        let nibbles = (chars & 0x0F0F_0F0F_0F0F_0F0F) &+ (letters >> 7) &* 9
        // Pairs of digits into bytes (the first digit high), then the four bytes together, first most significant.
        let pairs = (nibbles << 4 | nibbles >> 8) & 0x00FF_00FF_00FF_00FF
        let quads = (pairs | pairs >> 8) & 0x0000_FFFF_0000_FFFF
        return UInt32(truncatingIfNeeded: quads | quads >> 16).byteSwapped
    }

    /// A random version-4 UUID; the generator is a parameter so tests are deterministic.
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> HealthUUID {
        let high = (generator.next() & ~0xF000) | 0x4000
        let low = (generator.next() & ~(UInt64(0xC0) << 56)) | (UInt64(0x80) << 56)
        return HealthUUID(high: high, low: low)
    }

    /// A version-7 UUID (RFC 9562): 48 bits of Unix time in milliseconds, then 74 random bits.
    /// The server gives these to samples saved without a uuid: uuids made in the same minute sort
    /// together, so the PostgreSQL store's (user, uuid) key grows at its end instead of dirtying a
    /// random page per row (the SQLite store's uuid key runs cost the same for any uuid). Still
    /// unique without coordination.
    public static func timeOrdered<G: RandomNumberGenerator>(unixMilliseconds: Int64,
                                                              using generator: inout G) -> HealthUUID {
        let milliseconds = UInt64(clamping: max(0, unixMilliseconds)) & 0xFFFF_FFFF_FFFF
        let high = milliseconds << 16 | 0x7000 | (generator.next() & 0x0FFF)
        let low = (generator.next() & ~(UInt64(0xC0) << 56)) | (UInt64(0x80) << 56)
        return HealthUUID(high: high, low: low)
    }

    /// The RFC 4122/9562 version nibble (4 random, 7 time-ordered, 8 the importer's content hash...).
    public var version: Int { Int(high >> 12 & 0xF) }

    /// 16 bytes in network order.
    public var bytes: [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64($0))) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64($0))) }
    }

    /// Uppercase textual form, as HealthKit prints sample UUIDs.
    public var uuidString: String { format(uppercase: true) }

    public var lowercasedString: String { format(uppercase: false) }

    public var description: String { uuidString }

    private func format(uppercase: Bool) -> String {
        String(unsafeUninitializedCapacity: 36) { write(into: $0, uppercase: uppercase) }
    }

    /// Writes the 36-character textual form into `output` (at least 36 bytes); returns 36.
    /// JSON writers put a page's uuids straight into their buffer this way.
    public func write(into output: UnsafeMutableBufferPointer<UInt8>, uppercase: Bool = false) -> Int {
        let letterBase = (uppercase ? UInt8(ascii: "A") : UInt8(ascii: "a")) &- 10
        var position = 0
        for index in 0..<16 {
            if index == 4 || index == 6 || index == 8 || index == 10 {
                output[position] = UInt8(ascii: "-")
                position += 1
            }
            let byte = UInt8(truncatingIfNeeded: (index < 8 ? high : low) >> UInt64(56 - 8 * (index & 7)))
            let upper = byte >> 4, lower = byte & 0xF
            output[position] = upper < 10 ? UInt8(ascii: "0") &+ upper : letterBase &+ upper
            output[position + 1] = lower < 10 ? UInt8(ascii: "0") &+ lower : letterBase &+ lower
            position += 2
        }
        return position
    }

    public static func < (lhs: HealthUUID, rhs: HealthUUID) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }
}

extension HealthUUID {
    /// A name-based uuid (RFC 9562 version 8) for content-derived identities (imports, the Health
    /// Auto Export ingest): like version 7, the first 48 bits are the sample's start (Unix ms), so
    /// inserts land at the end of the PostgreSQL store's (user, uuid) key; 74 bits of a hash of the
    /// content fill the rest.
    public init(contentStart start: Int64, hashHigh: UInt64, hashLow: UInt64) {
        let time = UInt64(bitPattern: start) & 0xFFFF_FFFF_FFFF
        self.init(high: time << 16 | 0x8000 | (hashHigh & 0x0FFF),
                  low: (hashLow & ~(UInt64(0xC0) << 56)) | (UInt64(0x80) << 56))
    }
}
