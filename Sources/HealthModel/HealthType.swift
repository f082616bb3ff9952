// Sample and characteristic types, as HKObjectType subclasses describe them.

/// HKObjectType's families.
public enum HealthTypeKind: String, Sendable, Hashable, CaseIterable {
    case quantity, category, correlation, workout, characteristic
    /// HKSeriesType: a sample holding a series (a workout's route).
    case series

    /// HealthKit's identifier prefix for this kind (`HKQuantityTypeIdentifier`).
    public var identifierPrefix: String {
        switch self {
        case .quantity: return "HKQuantityTypeIdentifier"
        case .category: return "HKCategoryTypeIdentifier"
        case .correlation: return "HKCorrelationTypeIdentifier"
        case .workout: return "HKWorkoutTypeIdentifier"
        case .characteristic: return "HKCharacteristicTypeIdentifier"
        case .series: return "HKSeriesTypeIdentifier"
        }
    }
}

/// HKQuantityAggregationStyle. The API reports only `cumulative` or `discrete`
/// (`apiName`); the discrete variants tell statistics how HealthKit averages.
public enum HealthQuantityAggregationStyle: String, Sendable, Hashable, CaseIterable {
    case cumulative
    /// Plain mean of sample values.
    case discreteArithmetic
    /// Mean weighted by sample duration (heartRate).
    case discreteTemporallyWeighted
    /// Energy mean of decibel levels (audio exposure): 10·log10(mean(10^(L/10))).
    case discreteEquivalentContinuousLevel

    public var isCumulative: Bool { self == .cumulative }

    /// `cumulative` or `discrete`, as `GET /v1/types` reports it.
    public var apiName: String { isCumulative ? "cumulative" : "discrete" }
}

/// Inclusive bounds of a quantity value in the type's canonical unit.
public struct HealthValueRange: Sendable, Hashable {
    public let minimum: Double
    public let maximum: Double

    public init(_ minimum: Double, _ maximum: Double) {
        self.minimum = minimum
        self.maximum = maximum
    }

    public func contains(_ value: Double) -> Bool { value >= minimum && value <= maximum }
}

/// One entry of the type catalog.
public struct HealthType: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// HealthKit's identifier without its prefix: `stepCount`, `sleepAnalysis`, `workout`.
    public let id: String
    public let kind: HealthTypeKind
    /// Quantity types only.
    public let aggregation: HealthQuantityAggregationStyle?
    /// The unit values are stored in; quantity types only.
    public let canonicalUnit: HealthUnit?
    /// Common unit strings for this type, canonical first. Any unit of the same
    /// dimension converts, listed or not.
    public let units: [String]
    /// Longest allowed `end - start`, in seconds; nil when unrestricted.
    public let maximumDuration: Int64?
    /// Allowed values in `canonicalUnit`; quantity types only.
    public let range: HealthValueRange?
    /// Case names for category values, workout activity types and enumerated characteristics.
    public let values: HealthValueSet?
    /// For correlations, the type ids their `objects` may have.
    public let objectTypeIDs: [String]?
    /// HealthKit's full identifier: `HKQuantityTypeIdentifierStepCount`.
    public let longIdentifier: String

    public init(
        id: String, kind: HealthTypeKind, aggregation: HealthQuantityAggregationStyle? = nil,
        canonicalUnit: HealthUnit? = nil, units: [String] = [], maximumDuration: Int64? = nil,
        range: HealthValueRange? = nil, values: HealthValueSet? = nil, objectTypeIDs: [String]? = nil,
        longIdentifier: String? = nil
    ) {
        self.id = id
        self.kind = kind
        self.aggregation = aggregation
        self.canonicalUnit = canonicalUnit
        self.units = units
        self.maximumDuration = maximumDuration
        self.range = range
        self.values = values
        self.objectTypeIDs = objectTypeIDs
        self.longIdentifier = longIdentifier ?? Self.defaultLongIdentifier(id: id, kind: kind)
    }

    public var description: String { id }

    public var isCumulative: Bool { aggregation?.isCumulative ?? false }

    /// At most this many samples of the type per page of a query or an export: a series sample
    /// (a route) can hold 100,000 locations, so a page of 1,000 could be gigabytes.
    public var maximumPageSize: Int { kind == .series ? 16 : .max }

    /// Sample types can be saved as samples; characteristics cannot.
    public var isSampleType: Bool { kind != .characteristic }

    /// Whether a correlation of this type may contain a sample of `objectTypeID`.
    public func allowsObject(ofType objectTypeID: String) -> Bool {
        objectTypeIDs?.contains(objectTypeID) ?? false
    }

    static func defaultLongIdentifier(id: String, kind: HealthTypeKind) -> String {
        if kind == .workout { return kind.identifierPrefix }
        guard let first = id.first else { return kind.identifierPrefix }
        return kind.identifierPrefix + first.uppercased() + id.dropFirst()
    }
}
