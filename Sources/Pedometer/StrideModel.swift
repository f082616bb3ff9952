/// Step length from body height and cadence.
///
/// step length = height × k(cadence), k = 0.20 + 0.12 × cadence (steps/s), clamped
/// to 0.30...0.75. At a typical walking cadence of 1.8 steps/s k ≈ 0.415, the classic
/// "step ≈ 0.415 × height" rule; faster cadence means longer steps, and at running
/// cadences (2.6-3.2 steps/s) k reaches 0.51-0.58. Without a height, 170 cm is assumed.
public struct StrideModel: Sendable, Codable, Equatable {
    public static let defaultHeightCm = 170.0
    public static let typicalWalkingCadence = 1.8

    public var heightCm: Double

    public init(heightCm: Double? = nil) {
        // Out-of-range heights (bad input) fall back to the default rather than produce absurd distances.
        if let heightCm, heightCm.isFinite, (50...272).contains(heightCm) {
            self.heightCm = heightCm
        } else {
            self.heightCm = Self.defaultHeightCm
        }
    }

    /// Length of one step (m) at the given cadence (steps/s).
    public func stepLengthMeters(cadence: Double?) -> Double {
        let stepsPerSecond = cadence ?? Self.typicalWalkingCadence
        let factor = min(0.75, max(0.30, 0.20 + 0.12 * stepsPerSecond))
        return heightCm / 100 * factor
    }
}
