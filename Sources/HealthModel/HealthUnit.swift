// HKUnit-style units: parsing of HKUnit's string syntax and exact conversion.
//
// Model: every unit is `scale * (SI base units ^ exponents) + offset`. Energy,
// pressure, volume, power and voltage are derived SI dimensions (J = kg·m²·s⁻²),
// so `J` and `kg·m^2/s^2` are the same dimension. `count` and `%` are
// dimensionless, hence `count/min` and `Hz` (s⁻¹) convert into each other
// (1 count/min = 1/60 Hz), as HKUnit allows.
//
// Percent follows HealthKit: `HKUnit.percent()` values are fractions, so
// oxygenSaturation 0.97 in `%` means 97 %. `%` therefore has scale 1 (it is not
// 0.01 of `count`): converting 0.97 `%` to `count` gives 0.97.
//
// `mol<M>` (M = molar mass in g/mol) is a mass of M g per mole, which is how
// HealthKit converts blood glucose between `mmol<180.15588>/L` and `mg/dL`.
// Plain `mol` (no molar mass) is the SI amount-of-substance dimension.
//
// `IU`, `dBASPL` and `dBHL` have their own dimensions: they convert to nothing else.

/// Exponents of the base dimensions of a unit.
public struct HealthUnitDimension: Sendable, Hashable, CustomStringConvertible {
    public var mass: Int8 = 0
    public var length: Int8 = 0
    public var time: Int8 = 0
    public var temperature: Int8 = 0
    public var electricCurrent: Int8 = 0
    public var amountOfSubstance: Int8 = 0
    public var internationalUnit: Int8 = 0
    /// Sound pressure level in dB(A) re 20 µPa: logarithmic, so never mixed with Pa.
    public var soundPressureLevel: Int8 = 0
    /// Hearing level in dB HL (audiograms): logarithmic and its own scale.
    public var hearingLevel: Int8 = 0

    public init() {}

    public static let dimensionless = HealthUnitDimension()

    public var isDimensionless: Bool { self == .dimensionless }

    /// Exponents a parsed unit may reach; far beyond any real unit, and far inside Int8, so the
    /// arithmetic below can never overflow on hostile input like `m*m*m*...`.
    static let exponentLimit = 24

    /// `lhs + rhs * factor`, or nil when an exponent would leave ±`exponentLimit`.
    static func combining(_ lhs: Self, _ rhs: Self, factor: Int) -> Self? {
        func checked(_ a: Int8, _ b: Int8) -> Int8? {
            let value = Int(a) + Int(b) * factor
            return abs(value) <= exponentLimit ? Int8(value) : nil
        }
        guard let mass = checked(lhs.mass, rhs.mass), let length = checked(lhs.length, rhs.length),
              let time = checked(lhs.time, rhs.time), let temperature = checked(lhs.temperature, rhs.temperature),
              let electricCurrent = checked(lhs.electricCurrent, rhs.electricCurrent),
              let amountOfSubstance = checked(lhs.amountOfSubstance, rhs.amountOfSubstance),
              let internationalUnit = checked(lhs.internationalUnit, rhs.internationalUnit),
              let soundPressureLevel = checked(lhs.soundPressureLevel, rhs.soundPressureLevel),
              let hearingLevel = checked(lhs.hearingLevel, rhs.hearingLevel) else { return nil }
        var result = Self()
        result.mass = mass
        result.length = length
        result.time = time
        result.temperature = temperature
        result.electricCurrent = electricCurrent
        result.amountOfSubstance = amountOfSubstance
        result.internationalUnit = internationalUnit
        result.soundPressureLevel = soundPressureLevel
        result.hearingLevel = hearingLevel
        return result
    }


    /// `kg·m^2·s^-2`-style rendering of the SI base units, for error messages.
    public var description: String {
        let parts: [(String, Int8)] = [
            ("kg", mass), ("m", length), ("s", time), ("K", temperature), ("A", electricCurrent),
            ("mol", amountOfSubstance), ("IU", internationalUnit), ("dBASPL", soundPressureLevel),
            ("dBHL", hearingLevel),
        ]
        let rendered = parts.filter { $0.1 != 0 }.map { $0.1 == 1 ? $0.0 : "\($0.0)^\($0.1)" }
        return rendered.isEmpty ? "dimensionless" : rendered.joined(separator: "·")
    }
}

public enum HealthUnitError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The string is not HKUnit syntax; `position` is a character offset.
    case malformed(unit: String, position: Int, reason: String)
    case unknownUnit(String)
    case incompatible(from: String, to: String)
    case nonFiniteValue

    public var description: String {
        switch self {
        case .malformed(let unit, let position, let reason):
            return "unit '\(unit)' is malformed at character \(position): \(reason)"
        case .unknownUnit(let name): return "unknown unit '\(name)'"
        case .incompatible(let from, let to): return "unit '\(from)' cannot be converted to '\(to)'"
        case .nonFiniteValue: return "value is not a finite number"
        }
    }
}

/// A parsed HKUnit: `valueInSI = value * scale + offset`.
///
/// `==` compares the unit string too, so `count` and `%` differ although they
/// convert 1:1; `isEquivalent(to:)` compares what the units measure.
public struct HealthUnit: Sendable, Hashable, CustomStringConvertible {
    /// The string it was parsed from (HKUnit's `unitString`).
    public let unitString: String
    public let dimension: HealthUnitDimension
    /// Factor to the coherent SI unit of `dimension` (kg, m, s, K, m³ for volume, Pa ...).
    public let scale: Double
    /// Added after scaling; non-zero only for `degC` and `degF` on their own.
    public let offset: Double

    public var description: String { unitString }

    public init(unitString: String, dimension: HealthUnitDimension, scale: Double, offset: Double = 0) {
        self.unitString = unitString
        self.dimension = dimension
        self.scale = scale
        self.offset = offset
    }

    /// Parses HKUnit's string syntax. Grammar (`/` binds looser than `·`, as in
    /// HealthKit's own `mL/kg·min` meaning mL/(kg·min)):
    ///
    ///     unit    := product ('/' product)*        // a/b/c = (a/b)/c
    ///     product := power (('·' | '*') power)*
    ///     power   := primary ('^' '-'? digits)?
    ///     primary := '(' unit ')' | '1' | name ('<' number '>')?
    ///     name    := [SI prefix] base unit        // prefixes p n µ/μ/u m c d da h k M G T
    ///
    /// Spaces are not allowed. Common units come from a precomputed table.
    public static func parse(_ string: String) throws(HealthUnitError) -> HealthUnit {
        if let known = HealthUnitParser.commonUnits[string] { return known }
        return try HealthUnitParser.parseUncached(string)
    }

    /// Nil instead of an error.
    public static func named(_ string: String) -> HealthUnit? { try? parse(string) }

    public func isCompatible(with other: HealthUnit) -> Bool { dimension == other.dimension }

    /// Same dimension, and scale and offset equal within floating-point rounding.
    public func isEquivalent(to other: HealthUnit) -> Bool {
        guard dimension == other.dimension else { return false }
        let tolerance = 1e-12
        let scaleClose = abs(scale - other.scale) <= tolerance * max(abs(scale), abs(other.scale))
        let offsetClose = abs(offset - other.offset) <= tolerance * max(1, abs(offset), abs(other.offset))
        return scaleClose && offsetClose
    }

    /// Converts `value` from this unit into `target`.
    public func convert(_ value: Double, to target: HealthUnit) throws(HealthUnitError) -> Double {
        guard let conversion = HealthUnitConversion(from: self, to: target) else {
            throw .incompatible(from: unitString, to: target.unitString)
        }
        guard value.isFinite else { throw .nonFiniteValue }
        return conversion.apply(value)
    }

    public static func convert(_ value: Double, from source: HealthUnit, to target: HealthUnit) throws(HealthUnitError) -> Double {
        try source.convert(value, to: target)
    }

    public static func convert(_ value: Double, from source: String, to target: String) throws(HealthUnitError) -> Double {
        try parse(source).convert(value, to: parse(target))
    }

    // Units the catalog and callers name often, in HKUnit's vocabulary.
    public static let count = HealthUnit(unitString: "count", dimension: .dimensionless, scale: 1)
    public static let percent = HealthUnit(unitString: "%", dimension: .dimensionless, scale: 1)
    public static let meter = HealthUnit(unitString: "m", dimension: HealthUnitParser.lengthDimension, scale: 1)
    public static let gram = HealthUnit(unitString: "g", dimension: HealthUnitParser.massDimension, scale: 1e-3)
    public static let kilogram = HealthUnit(unitString: "kg", dimension: HealthUnitParser.massDimension, scale: 1)
    public static let second = HealthUnit(unitString: "s", dimension: HealthUnitParser.timeDimension, scale: 1)
    public static let minute = HealthUnit(unitString: "min", dimension: HealthUnitParser.timeDimension, scale: 60)
    public static let kilocalorie = HealthUnit(unitString: "kcal", dimension: HealthUnitParser.energyDimension, scale: 4184)
    public static let degreeCelsius = HealthUnit(
        unitString: "degC", dimension: HealthUnitParser.dimension(temperature: 1), scale: 1, offset: 273.15)
    public static let millimeterOfMercury = HealthUnit(
        unitString: "mmHg", dimension: HealthUnitParser.pressureDimension, scale: 133.322387415)
    public static let countPerMinute = HealthUnit(
        unitString: "count/min", dimension: HealthUnitParser.dimension(time: -1), scale: 1.0 / 60.0)
    public static let liter = HealthUnit(unitString: "L", dimension: HealthUnitParser.volumeDimension, scale: 1e-3)
}

/// A base unit of the HKUnit vocabulary.
struct HealthBaseUnit: Sendable {
    let dimension: HealthUnitDimension
    let scale: Double
    let offset: Double
    let acceptsPrefix: Bool
}

enum HealthUnitParser {
    static func dimension(
        mass: Int8 = 0, length: Int8 = 0, time: Int8 = 0, temperature: Int8 = 0, current: Int8 = 0,
        amount: Int8 = 0, internationalUnit: Int8 = 0, soundPressureLevel: Int8 = 0, hearingLevel: Int8 = 0
    ) -> HealthUnitDimension {
        var result = HealthUnitDimension()
        result.mass = mass
        result.length = length
        result.time = time
        result.temperature = temperature
        result.electricCurrent = current
        result.amountOfSubstance = amount
        result.internationalUnit = internationalUnit
        result.soundPressureLevel = soundPressureLevel
        result.hearingLevel = hearingLevel
        return result
    }

    static let massDimension = dimension(mass: 1)
    static let lengthDimension = dimension(length: 1)
    static let timeDimension = dimension(time: 1)
    static let volumeDimension = dimension(length: 3)
    static let energyDimension = dimension(mass: 1, length: 2, time: -2)
    static let pressureDimension = dimension(mass: 1, length: -1, time: -2)

    // Exact definitions: international pound and yard (1959), US customary fluid
    // ounce (1/128 US gallon of 231 in³), imperial fluid ounce (1/160 of 4.54609 L),
    // thermochemical calorie (4.184 J, as HealthKit), conventional mmHg and cmH2O.
    static let pound = 0.45359237
    static let inch = 0.0254
    static let usFluidOunce = 29.5735295625e-6
    static let imperialFluidOunce = 28.4130625e-6
    static let calorie = 4.184

    static let baseUnits: [String: HealthBaseUnit] = {
        func unit(_ dimension: HealthUnitDimension, _ scale: Double, offset: Double = 0, prefixable: Bool = false) -> HealthBaseUnit {
            HealthBaseUnit(dimension: dimension, scale: scale, offset: offset, acceptsPrefix: prefixable)
        }
        return [
            // Dimensionless.
            "count": unit(.dimensionless, 1),
            "%": unit(.dimensionless, 1),
            // Mass.
            "g": unit(massDimension, 1e-3, prefixable: true),
            "lb": unit(massDimension, pound),
            "oz": unit(massDimension, pound / 16),
            "st": unit(massDimension, pound * 14),
            // Length.
            "m": unit(lengthDimension, 1, prefixable: true),
            "in": unit(lengthDimension, inch),
            "ft": unit(lengthDimension, inch * 12),
            "yd": unit(lengthDimension, inch * 36),
            "mi": unit(lengthDimension, 1609.344),
            // Time.
            "s": unit(timeDimension, 1, prefixable: true),
            "min": unit(timeDimension, 60),
            "hr": unit(timeDimension, 3600),
            "d": unit(timeDimension, 86_400),
            // Volume.
            "L": unit(volumeDimension, 1e-3, prefixable: true),
            "l": unit(volumeDimension, 1e-3, prefixable: true),
            "fl_oz_us": unit(volumeDimension, usFluidOunce),
            "fl_oz_imp": unit(volumeDimension, imperialFluidOunce),
            "cup_us": unit(volumeDimension, usFluidOunce * 8),
            "cup_imp": unit(volumeDimension, imperialFluidOunce * 10),
            "pt_us": unit(volumeDimension, usFluidOunce * 16),
            "pt_imp": unit(volumeDimension, imperialFluidOunce * 20),
            // Energy.
            "J": unit(energyDimension, 1, prefixable: true),
            "cal": unit(energyDimension, calorie, prefixable: true),
            "Cal": unit(energyDimension, calorie * 1000),
            // Power, voltage, frequency.
            "W": unit(dimension(mass: 1, length: 2, time: -3), 1, prefixable: true),
            "V": unit(dimension(mass: 1, length: 2, time: -3, current: -1), 1, prefixable: true),
            "Hz": unit(dimension(time: -1), 1, prefixable: true),
            // Pressure.
            "Pa": unit(pressureDimension, 1, prefixable: true),
            "mmHg": unit(pressureDimension, 133.322387415),
            "cmAq": unit(pressureDimension, 98.0665),
            "atm": unit(pressureDimension, 101_325),
            // Temperature: offsets apply only to a lone temperature unit.
            "K": unit(dimension(temperature: 1), 1, prefixable: true),
            "degC": unit(dimension(temperature: 1), 1, offset: 273.15),
            "degF": unit(dimension(temperature: 1), 5.0 / 9.0, offset: 459.67 * 5.0 / 9.0),
            // Amount of substance (molar mass form handled by the parser).
            "mol": unit(dimension(amount: 1), 1, prefixable: true),
            // Own dimensions.
            "IU": unit(dimension(internationalUnit: 1), 1),
            "dBASPL": unit(dimension(soundPressureLevel: 1), 1),
            "dBHL": unit(dimension(hearingLevel: 1), 1),
            // Siemens, for electrodermal activity.
            "S": unit(dimension(mass: -1, length: -2, time: 3, current: 2), 1, prefixable: true),
        ]
    }()

    /// Two-character prefix first so `da` wins over `d`.
    static let prefixes: [(symbol: String, factor: Double)] = [
        ("da", 1e1), ("p", 1e-12), ("n", 1e-9), ("µ", 1e-6), ("μ", 1e-6), ("u", 1e-6), ("m", 1e-3),
        ("c", 1e-2), ("d", 1e-1), ("h", 1e2), ("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12),
    ]

    /// Names HealthKit prints that are not prefix + base (`mcg` is its microgram).
    static let aliases: [String: String] = ["mcg": "µg"]

    static let commonUnits: [String: HealthUnit] = {
        let strings = [
            "count", "%", "g", "kg", "mg", "mcg", "µg", "lb", "oz", "st", "m", "cm", "mm", "km", "in", "ft", "yd", "mi",
            "s", "ms", "min", "hr", "d", "L", "mL", "dL", "fl_oz_us", "fl_oz_imp", "cup_us", "cup_imp", "pt_us", "pt_imp",
            "J", "kJ", "cal", "kcal", "Cal", "W", "V", "Hz", "Pa", "kPa", "mmHg", "cmAq", "atm", "K", "degC", "degF",
            "IU", "dBASPL", "dBHL", "count/min", "count/s", "m/s", "km/hr", "mi/hr", "mg/dL", "mmol<180.15588000005408>/L",
            "mL/(kg·min)", "mL/kg·min", "L/min", "mS", "µS", "count/min", "kcal/hr·kg",
        ]
        var table: [String: HealthUnit] = [:]
        for string in strings {
            if let unit = try? parseUncached(string) { table[string] = unit }
        }
        return table
    }()

    static func parseUncached(_ string: String) throws(HealthUnitError) -> HealthUnit {
        var cursor = UnitCursor(characters: Array(string.unicodeScalars), source: string)
        guard !cursor.characters.isEmpty else { throw .malformed(unit: string, position: 0, reason: "empty unit") }
        let term = try cursor.parseQuotient()
        guard cursor.isAtEnd else {
            throw .malformed(unit: string, position: cursor.position, reason: "unexpected '\(cursor.characters[cursor.position])'")
        }
        return HealthUnit(unitString: string, dimension: term.dimension, scale: term.scale,
                          offset: term.isLoneBaseUnit ? term.offset : 0)
    }
}

/// An intermediate product during parsing.
struct UnitTerm {
    var dimension: HealthUnitDimension
    var scale: Double
    var offset: Double
    /// True for a single base unit with exponent 1, the only case where a
    /// temperature offset is meaningful (`degC/min` is a rate, not a reading).
    var isLoneBaseUnit: Bool

    /// nil when an exponent would leave the allowed range.
    func multiplied(by other: UnitTerm) -> UnitTerm? {
        guard let product = HealthUnitDimension.combining(dimension, other.dimension, factor: 1) else { return nil }
        return UnitTerm(dimension: product, scale: scale * other.scale, offset: 0, isLoneBaseUnit: false)
    }

    func divided(by other: UnitTerm) -> UnitTerm? {
        guard let quotient = HealthUnitDimension.combining(dimension, other.dimension, factor: -1) else { return nil }
        return UnitTerm(dimension: quotient, scale: scale / other.scale, offset: 0, isLoneBaseUnit: false)
    }

    func raised(to power: Int8) -> UnitTerm? {
        guard let powered = HealthUnitDimension.combining(HealthUnitDimension(), dimension, factor: Int(power)) else { return nil }
        var result = UnitTerm(dimension: powered, scale: 1, offset: 0, isLoneBaseUnit: power == 1 && isLoneBaseUnit)
        if power == 1 { result.offset = offset }
        for _ in 0..<abs(Int(power)) { result.scale *= scale }
        if power < 0 { result.scale = 1 / result.scale }
        return result
    }
}

struct UnitCursor {
    let characters: [Unicode.Scalar]
    let source: String
    var position = 0
    /// Open parentheses around the current position; bounded so hostile nesting cannot exhaust the stack.
    var depth = 0
    static let maximumDepth = 8

    var isAtEnd: Bool { position >= characters.count }
    var current: Unicode.Scalar? { position < characters.count ? characters[position] : nil }

    func fail(_ reason: String) -> HealthUnitError {
        .malformed(unit: source, position: position, reason: reason)
    }

    mutating func parseQuotient() throws(HealthUnitError) -> UnitTerm {
        var result = try parseProduct()
        while current == "/" {
            position += 1
            guard let quotient = result.divided(by: try parseProduct()) else { throw fail("exponent out of range") }
            result = quotient
        }
        return result
    }

    mutating func parseProduct() throws(HealthUnitError) -> UnitTerm {
        var result = try parsePower()
        while let symbol = current, symbol == "·" || symbol == "*" || symbol == "\u{22C5}" {
            position += 1
            guard let product = result.multiplied(by: try parsePower()) else { throw fail("exponent out of range") }
            result = product
        }
        return result
    }

    mutating func parsePower() throws(HealthUnitError) -> UnitTerm {
        let base = try parsePrimary()
        guard current == "^" else { return base }
        position += 1
        var negative = false
        if current == "-" {
            negative = true
            position += 1
        }
        var exponent = 0
        var digitCount = 0
        while let symbol = current, ("0"..."9").contains(symbol) {
            exponent = exponent * 10 + Int(symbol.value - 48)
            digitCount += 1
            position += 1
            guard exponent <= 9 else { throw fail("exponent is too large") }
        }
        guard digitCount > 0 else { throw fail("'^' must be followed by an integer") }
        guard let powered = base.raised(to: Int8(negative ? -exponent : exponent)) else { throw fail("exponent out of range") }
        return powered
    }

    mutating func parsePrimary() throws(HealthUnitError) -> UnitTerm {
        guard let symbol = current else { throw fail("expected a unit") }
        if symbol == "(" {
            guard depth < Self.maximumDepth else { throw fail("parentheses nested too deeply") }
            position += 1
            depth += 1
            let inner = try parseQuotient()
            depth -= 1
            guard current == ")" else { throw fail("expected ')'") }
            position += 1
            return inner
        }
        if symbol == "1" {
            // `1/s`: the unit one.
            position += 1
            return UnitTerm(dimension: .dimensionless, scale: 1, offset: 0, isLoneBaseUnit: false)
        }
        let nameStart = position
        while let next = current, Self.isNameCharacter(next) { position += 1 }
        guard position > nameStart else { throw fail("expected a unit name") }
        let name = String(String.UnicodeScalarView(characters[nameStart..<position]))
        var molarMass: Double?
        if current == "<" {
            position += 1
            let numberStart = position
            while let next = current, next != ">" { position += 1 }
            guard current == ">" else { throw fail("expected '>' after the molar mass") }
            let text = String(String.UnicodeScalarView(characters[numberStart..<position]))
            guard let mass = Double(text), mass.isFinite, mass > 0 else { throw fail("molar mass must be a positive number") }
            position += 1
            molarMass = mass
        }
        guard let resolved = Self.resolve(name) else { throw HealthUnitError.unknownUnit(name) }
        if let molarMass {
            // mol<M> is a mass: M grams per mole, times the prefix on `mol`.
            guard resolved.base.dimension == HealthUnitParser.baseUnits["mol"]?.dimension else {
                throw fail("only mol takes a molar mass")
            }
            return UnitTerm(dimension: HealthUnitParser.massDimension, scale: resolved.prefixFactor * (molarMass / 1000),
                            offset: 0, isLoneBaseUnit: false)
        }
        return UnitTerm(dimension: resolved.base.dimension, scale: resolved.prefixFactor * resolved.base.scale,
                        offset: resolved.base.offset, isLoneBaseUnit: true)
    }

    static func isNameCharacter(_ symbol: Unicode.Scalar) -> Bool {
        switch symbol {
        case "/", "*", "·", "\u{22C5}", "^", "(", ")", "<", ">": return false
        default: return !symbol.properties.isWhitespace && !("0"..."9").contains(symbol)
        }
    }

    /// Exact base unit first (so `min` is a minute, not milli-inch), then prefix + base.
    static func resolve(_ rawName: String) -> (base: HealthBaseUnit, prefixFactor: Double)? {
        let name = HealthUnitParser.aliases[rawName] ?? rawName
        if let base = HealthUnitParser.baseUnits[name] { return (base, 1) }
        for prefix in HealthUnitParser.prefixes where name.hasPrefix(prefix.symbol) {
            let rest = String(name.dropFirst(prefix.symbol.count))
            if let base = HealthUnitParser.baseUnits[rest], base.acceptsPrefix { return (base, prefix.factor) }
        }
        return nil
    }
}
