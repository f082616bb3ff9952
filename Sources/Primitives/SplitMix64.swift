/// SplitMix64 (Steele, Lea and Flood, 2014): a tiny seedable generator whose output is fixed by
/// its definition (unlike the standard library's `random(in:using:)`, whose algorithm may change
/// between Swift versions), so demo data, benchmark traffic and property tests replay exactly from
/// a seed. Not for secrets: tokens and the signing key come from the system's random source.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return Self.mix(state)
    }

    /// The output function alone: a 64-bit finalizer that spreads every input bit over the result,
    /// for hashing bits to bits.
    public static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
