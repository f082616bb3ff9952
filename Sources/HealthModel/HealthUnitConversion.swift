/// A conversion between two units that measure the same thing, checked once when it is made:
/// applying it cannot fail, so output code never has to choose between an error and a value
/// written under a unit it is not in.
public struct HealthUnitConversion: Sendable, Equatable {
    public let source: HealthUnit
    public let target: HealthUnit

    /// nil when the units measure different things (`count` and `m`).
    public init?(from source: HealthUnit, to target: HealthUnit) {
        guard source.dimension == target.dimension else { return nil }
        self.source = source
        self.target = target
    }

    /// Leaves values as they are, in `unit`.
    public static func identity(_ unit: HealthUnit) -> HealthUnitConversion {
        HealthUnitConversion(checkedSource: unit, target: unit)
    }

    private init(checkedSource: HealthUnit, target: HealthUnit) {
        source = checkedSource
        self.target = target
    }

    public func apply(_ value: Double) -> Double {
        if source.scale == target.scale && source.offset == target.offset { return value }
        if source.offset == 0 && target.offset == 0 {
            // One rounding step where the ratio is exact (e.g. mi -> m).
            return value * (source.scale / target.scale)
        }
        return (value * source.scale + source.offset - target.offset) / target.scale
    }
}
