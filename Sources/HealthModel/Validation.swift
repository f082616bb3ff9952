// Validation primitives the sample decoder composes. Each failure names the
// JSON field it is about, so the API can report `{"index","field","detail"}`.

public struct HealthValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: String, Sendable, Hashable {
        case unknownType, typeNotAllowed, unitIncompatible, unitMalformed, valueNotFinite, valueNegative
        case valueOutOfRange, valueNotInSet, endBeforeStart, instantOutOfRange, durationTooLong
        case malformedInstant, malformedUUID, tooManyMetadataKeys, metadataTooLarge, missingField
    }

    /// The field at fault, as the request spells it: `value`, `unit`, `start`, `objects[1].type`.
    public let field: String
    public let reason: Reason
    /// A sentence for the problem's `detail`.
    public let detail: String

    public init(field: String, reason: Reason, detail: String) {
        self.field = field
        self.reason = reason
        self.detail = detail
    }

    public var description: String { "\(field): \(detail)" }

    /// The same error about a nested field, e.g. `value` -> `objects[2].value`.
    public func nested(under parent: String) -> HealthValidationError {
        HealthValidationError(field: "\(parent).\(field)", reason: reason, detail: detail)
    }
}

public enum HealthValidation {
    /// HealthKit's cap on metadata entries per object.
    public static let maximumMetadataKeyCount = 128
    /// Serialized metadata limit; the caller measures the JSON it parsed.
    public static let maximumMetadataBytes = 16 * 1024

    /// Looks the type up (short or long identifier).
    public static func type(_ identifier: String, field: String = "type") throws(HealthValidationError) -> HealthType {
        guard let type = HealthTypeCatalog.type(identifier) else {
            throw HealthValidationError(field: field, reason: .unknownType, detail: "unknown type '\(identifier)'")
        }
        return type
    }

    /// Parses `unitString` and checks it measures what `type` measures.
    public static func unit(_ unitString: String, for type: HealthType, field: String = "unit") throws(HealthValidationError) -> HealthUnit {
        guard let canonical = type.canonicalUnit else {
            throw HealthValidationError(field: field, reason: .unitIncompatible, detail: "\(type.id) takes no unit")
        }
        let unit: HealthUnit
        do {
            unit = try HealthUnit.parse(unitString)
        } catch {
            throw HealthValidationError(field: field, reason: .unitMalformed, detail: error.description)
        }
        // HKUnit makes count and percent the same dimensionless kind, but a percentage of steps means
        // nothing: a percent type takes only percent, every other type never takes percent.
        guard unit.isCompatible(with: canonical), unit.involvesPercent == canonical.involvesPercent else {
            throw HealthValidationError(
                field: field, reason: .unitIncompatible,
                detail: "unit '\(unitString)' does not fit \(type.id) (canonical unit '\(canonical.unitString)')")
        }
        return unit
    }

    /// Checks a quantity value and returns it in the type's canonical unit:
    /// finite, not negative for a cumulative type, inside the type's range.
    public static func quantity(
        _ value: Double, unit: HealthUnit, for type: HealthType, field: String = "value", unitField: String = "unit"
    ) throws(HealthValidationError) -> Double {
        guard let canonical = type.canonicalUnit else {
            throw HealthValidationError(field: field, reason: .typeNotAllowed, detail: "\(type.id) is not a quantity type")
        }
        try checkQuantityValue(value, for: type, field: field)
        guard let conversion = HealthUnitConversion(from: unit, to: canonical) else {
            throw HealthValidationError(field: unitField, reason: .unitIncompatible,
                                        detail: HealthUnitError.incompatible(from: unit.unitString, to: canonical.unitString).description)
        }
        return try quantityInRange(conversion.apply(value), for: type, canonical: canonical, field: field)
    }

    /// The error for a quantity without a unit. A unit is never assumed: `"bodyMass", 150` meant in
    /// pounds would otherwise be stored as 150 kg (HealthKit's HKQuantity always has a unit too).
    /// The detail lists the units the type takes, canonical first.
    public static func missingUnit(for type: HealthType, field: String = "unit") -> HealthValidationError {
        HealthValidationError(field: field, reason: .missingField,
                              detail: "unit is required for a quantity sample: \(type.id) takes \(type.units.joined(separator: ", "))")
    }

    /// `quantity(_:unit:for:)` with the unit's conversion to the type's canonical unit worked out
    /// beforehand (once per batch and unit, by the batch decoder): the same checks, the same value.
    public static func quantity(
        _ value: Double, conversion: HealthUnitConversion, for type: HealthType, field: String = "value"
    ) throws(HealthValidationError) -> Double {
        try checkQuantityValue(value, for: type, field: field)
        return try quantityInRange(conversion.apply(value), for: type, canonical: conversion.target, field: field)
    }

    /// Finite, and not negative for a cumulative type.
    private static func checkQuantityValue(_ value: Double, for type: HealthType, field: String) throws(HealthValidationError) {
        guard value.isFinite else {
            throw HealthValidationError(field: field, reason: .valueNotFinite, detail: "value must be a finite number")
        }
        if type.isCumulative && value < 0 {
            throw HealthValidationError(field: field, reason: .valueNegative,
                                        detail: "\(type.id) is cumulative: value must not be negative")
        }
    }

    private static func quantityInRange(_ canonicalValue: Double, for type: HealthType, canonical: HealthUnit,
                                        field: String) throws(HealthValidationError) -> Double {
        if let range = type.range, !range.contains(canonicalValue) {
            throw HealthValidationError(
                field: field, reason: .valueOutOfRange,
                detail: "\(type.id) must be within \(plain(range.minimum))...\(plain(range.maximum)) \(canonical.unitString)")
        }
        return canonicalValue
    }

    /// `quantity(_:unit:for:)` for a unit given as its string: checks the unit, then the value.
    public static func quantity(
        _ value: Double, unitString: String, for type: HealthType, field: String = "value", unitField: String = "unit"
    ) throws(HealthValidationError) -> Double {
        let unit = try unit(unitString, for: type, field: unitField)
        return try quantity(value, unit: unit, for: type, field: field, unitField: unitField)
    }

    /// `300` rather than `300.0` in messages.
    static func plain(_ number: Double) -> String {
        if abs(number) < 1e15, Double(Int64(number)) == number { return String(Int64(number)) }
        return String(number)
    }

    /// Parses an RFC 3339 instant inside the 1900-2200 sample window.
    public static func instant<S: StringProtocol>(_ string: S, field: String) throws(HealthValidationError) -> HealthInstant {
        let instant: HealthInstant
        do {
            instant = try RFC3339.parseOrThrow(string)
        } catch {
            throw HealthValidationError(field: field, reason: .malformedInstant, detail: error.description)
        }
        try instantInSampleRange(instant, field: field)
        return instant
    }

    public static func instantInSampleRange(_ instant: HealthInstant, field: String) throws(HealthValidationError) {
        guard HealthInstantLimits.sampleRange.contains(instant) else {
            throw HealthValidationError(field: field, reason: .instantOutOfRange,
                                        detail: "instants must lie between 1900-01-01 and 2200-01-01")
        }
    }

    /// `end >= start`, both within 1900-2200, duration within the type's maximum.
    public static func interval(
        start: HealthInstant, end: HealthInstant, for type: HealthType,
        startField: String = "start", endField: String = "end"
    ) throws(HealthValidationError) {
        try instantInSampleRange(start, field: startField)
        try instantInSampleRange(end, field: endField)
        guard end >= start else {
            throw HealthValidationError(field: endField, reason: .endBeforeStart, detail: "end is before start")
        }
        if let maximum = type.maximumDuration, end - start > maximum * 1000 {
            throw HealthValidationError(
                field: endField, reason: .durationTooLong,
                detail: "\(type.id) samples may span at most \(maximum) s")
        }
    }

    /// Resolves a category value (case name, export string or raw integer as text)
    /// to its case name.
    public static func categoryValue(_ value: String, for type: HealthType, field: String = "value") throws(HealthValidationError) -> String {
        guard type.kind == .category || type.kind == .characteristic, let values = type.values else {
            throw HealthValidationError(field: field, reason: .typeNotAllowed, detail: "\(type.id) has no value set")
        }
        if let name = values.caseName(for: value) { return name }
        throw HealthValidationError(
            field: field, reason: .valueNotInSet,
            detail: "'\(value)' is not one of \(values.caseNames.joined(separator: ", "))")
    }

    /// Category value given as HealthKit's raw integer.
    public static func categoryValue(rawValue: Int, for type: HealthType, field: String = "value") throws(HealthValidationError) -> String {
        if let name = type.values?.caseName(forRawValue: rawValue) { return name }
        throw HealthValidationError(field: field, reason: .valueNotInSet,
                                    detail: "\(rawValue) is not a raw value of \(type.id)")
    }

    /// HKWorkoutActivityType case name (or `HKWorkoutActivityTypeRunning`).
    public static func workoutActivityType(_ value: String, field: String = "activityType") throws(HealthValidationError) -> String {
        if let name = HealthValueSets.workoutActivityType.caseName(for: value) { return name }
        throw HealthValidationError(field: field, reason: .valueNotInSet,
                                    detail: "'\(value)' is not an HKWorkoutActivityType case name")
    }

    /// A workout's `totalEnergyBurned` or `totalDistance`: finite, not negative, in a
    /// unit of the right dimension. Returns the value in `canonicalUnit` (kcal or m).
    public static func workoutTotal(
        _ value: Double, unit unitString: String, canonicalUnit: HealthUnit, field: String
    ) throws(HealthValidationError) -> Double {
        guard value.isFinite else {
            throw HealthValidationError(field: "\(field).value", reason: .valueNotFinite, detail: "value must be a finite number")
        }
        guard value >= 0 else {
            throw HealthValidationError(field: "\(field).value", reason: .valueNegative, detail: "value must not be negative")
        }
        let unit: HealthUnit
        do {
            unit = try HealthUnit.parse(unitString)
        } catch {
            throw HealthValidationError(field: "\(field).unit", reason: .unitMalformed, detail: error.description)
        }
        do {
            return try unit.convert(value, to: canonicalUnit)
        } catch {
            throw HealthValidationError(field: "\(field).unit", reason: .unitIncompatible, detail: error.description)
        }
    }

    /// A workout event `type`: pause, resume, lap, marker or segment.
    public static func workoutEventType(_ value: String, field: String) throws(HealthValidationError) -> String {
        if HealthValueSets.workoutEventType.contains(value) { return value }
        throw HealthValidationError(
            field: field, reason: .valueNotInSet,
            detail: "'\(value)' is not one of \(HealthValueSets.workoutEventType.caseNames.joined(separator: ", "))")
    }

    /// A correlation's object must be of one of the correlation's object types.
    public static func correlationObject(
        _ objectTypeID: String, in correlation: HealthType, field: String
    ) throws(HealthValidationError) {
        guard correlation.allowsObject(ofType: objectTypeID) else {
            throw HealthValidationError(
                field: field, reason: .typeNotAllowed,
                detail: "\(correlation.id) may hold only \((correlation.objectTypeIDs ?? []).joined(separator: ", "))")
        }
    }

    public static func uuid<S: StringProtocol>(_ string: S, field: String = "uuid") throws(HealthValidationError) -> HealthUUID {
        guard let uuid = HealthUUID(string) else {
            throw HealthValidationError(field: field, reason: .malformedUUID,
                                        detail: "uuid must be 8-4-4-4-12 hexadecimal digits")
        }
        return uuid
    }

    /// Metadata size limits: at most 128 keys; `serializedByteCount`, when the
    /// caller has it, at most 16 KiB.
    public static func metadata(keyCount: Int, serializedByteCount: Int? = nil, field: String = "metadata") throws(HealthValidationError) {
        guard keyCount <= maximumMetadataKeyCount else {
            throw HealthValidationError(field: field, reason: .tooManyMetadataKeys,
                                        detail: "metadata has \(keyCount) keys; at most \(maximumMetadataKeyCount) are allowed")
        }
        if let serializedByteCount, serializedByteCount > maximumMetadataBytes {
            throw HealthValidationError(field: field, reason: .metadataTooLarge,
                                        detail: "metadata is \(serializedByteCount) bytes; at most 16 KiB is allowed")
        }
    }
}

extension HealthUnit {
    /// True when the unit is, or contains, `%`. Scans bytes: `String.contains(Character)` walks
    /// grapheme clusters and cost a fifth of decoding a sample.
    var involvesPercent: Bool { unitString.utf8.contains(UInt8(ascii: "%")) }
}
