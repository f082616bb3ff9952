import Testing
import JSON
@testable import HealthModel
import Primitives

/// Relative closeness for conversions that pass through a few roundings.
func isClose(_ actual: Double, _ expected: Double, relative tolerance: Double = 1e-12) -> Bool {
    if actual == expected { return true }
    return abs(actual - expected) <= tolerance * max(abs(actual), abs(expected))
}

@Suite("HKUnit parsing and conversion")
struct HealthUnitTests {
    @Test("unit strings parse with the expected scale", arguments: [
        ("count", 1.0), ("%", 1.0), ("g", 1e-3), ("kg", 1.0), ("mg", 1e-6), ("µg", 1e-9), ("μg", 1e-9),
        ("ug", 1e-9), ("mcg", 1e-9), ("pg", 1e-15), ("ng", 1e-12), ("m", 1.0), ("cm", 1e-2), ("mm", 1e-3),
        ("km", 1e3), ("dam", 10.0), ("hm", 100.0), ("dm", 0.1), ("s", 1.0), ("ms", 1e-3), ("min", 60.0),
        ("hr", 3600.0), ("d", 86_400.0), ("L", 1e-3), ("mL", 1e-6), ("dL", 1e-4), ("J", 1.0), ("kJ", 1e3),
        ("cal", 4.184), ("kcal", 4184.0), ("Cal", 4184.0), ("Pa", 1.0), ("kPa", 1e3), ("mmHg", 133.322387415),
        ("cmAq", 98.0665), ("atm", 101_325.0), ("lb", 0.45359237), ("oz", 0.028349523125), ("st", 6.35029318),
        ("in", 0.0254), ("ft", 0.3048), ("yd", 0.9144), ("mi", 1609.344), ("fl_oz_us", 29.5735295625e-6),
        ("fl_oz_imp", 28.4130625e-6), ("cup_us", 236.5882365e-6), ("pt_us", 473.176473e-6), ("IU", 1.0),
        ("V", 1.0), ("mV", 1e-3), ("Hz", 1.0), ("kHz", 1e3), ("MHz", 1e6), ("GHz", 1e9), ("THz", 1e12),
        ("W", 1.0), ("K", 1.0), ("dBASPL", 1.0), ("mol", 1.0), ("mmol", 1e-3),
    ])
    func parsesBaseUnits(string: String, scale: Double) throws {
        let unit = try HealthUnit.parse(string)
        #expect(isClose(unit.scale, scale), "\(string): \(unit.scale)")
        #expect(unit.unitString == string)
    }

    @Test func compoundUnits() throws {
        let heartRate = try HealthUnit.parse("count/min")
        #expect(heartRate.dimension == (try HealthUnit.parse("Hz")).dimension)
        #expect(isClose(heartRate.scale, 1.0 / 60))

        let vo2 = try HealthUnit.parse("mL/(kg·min)")
        #expect(try vo2.isEquivalent(to: HealthUnit.parse("mL/kg·min")))
        #expect(try vo2.isEquivalent(to: HealthUnit.parse("mL/kg*min")))
        #expect(try vo2.isEquivalent(to: HealthUnit.parse("mL·kg^-1·min^-1")))
        #expect(try vo2.isEquivalent(to: HealthUnit.parse("mL/kg/min")))
        #expect(isClose(vo2.scale, 1e-6 / 60))

        let acceleration = try HealthUnit.parse("m/s^2")
        #expect(acceleration.dimension.length == 1 && acceleration.dimension.time == -2)
        #expect(try HealthUnit.parse("kg·m^2/s^2").isEquivalent(to: HealthUnit.parse("J")))
        #expect(try HealthUnit.parse("J/s").isEquivalent(to: HealthUnit.parse("W")))
        #expect(try HealthUnit.parse("1/s").isEquivalent(to: HealthUnit.parse("Hz")))
        #expect(try HealthUnit.parse("(m)").isEquivalent(to: HealthUnit.parse("m")))
        #expect(try HealthUnit.parse("m^3").isEquivalent(to: HealthUnit.parse("kL")))
        #expect(try HealthUnit.parse("cm^3").isEquivalent(to: HealthUnit.parse("mL")))
        #expect(isClose(try HealthUnit.parse("km/hr").scale, 1.0 / 3.6))
        #expect(try HealthUnit.parse("mg/dL").dimension == HealthUnitParser.dimension(mass: 1, length: -3))
    }

    @Test func molarMassForm() throws {
        let glucoseMolar = try HealthUnit.parse("mmol<180.1558800000541>/L")
        let glucoseMass = try HealthUnit.parse("mg/dL")
        #expect(glucoseMolar.isCompatible(with: glucoseMass))
        // 5.5 mmol/L glucose is about 99.09 mg/dL.
        let converted = try glucoseMolar.convert(5.5, to: glucoseMass)
        #expect(isClose(converted, 5.5 * 180.1558800000541 / 10))
        #expect(try HealthUnit.parse("mol<18>").isEquivalent(to: HealthUnit.parse("kg").scaledCopyForTest(0.018)))
        #expect(throws: HealthUnitError.self) { try HealthUnit.parse("g<18>") }
        // Found by Fuzz/ (fuzz-unit): exponents summed past Int8 trapped; now a 400-style error.
        #expect(throws: HealthUnitError.self) { try HealthUnit.parse(Array(repeating: "m", count: 200).joined(separator: "*")) }
        #expect(throws: HealthUnitError.self) { try HealthUnit.parse("g/" + Array(repeating: "d", count: 200).joined(separator: "*")) }
        #expect(throws: HealthUnitError.self) { try HealthUnit.parse("(m^9)^9") }
        #expect(throws: HealthUnitError.self) { try HealthUnit.parse(String(repeating: "(", count: 100_000) + "m" + String(repeating: ")", count: 100_000)) }
        #expect((try? HealthUnit.parse("((m))/((s))"))?.dimension == HealthUnit.named("m/s")?.dimension)
        #expect((try? HealthUnit.parse("m^9*m^9*m^6"))?.dimension.length == 24)
        #expect(throws: HealthUnitError.self) { try HealthUnit.parse("mol<abc>") }
        #expect(throws: HealthUnitError.self) { try HealthUnit.parse("mol<-1>") }
        #expect(throws: HealthUnitError.self) { try HealthUnit.parse("mol<18") }
        // Without a molar mass, moles are not grams.
        #expect(!(try HealthUnit.parse("mmol/L")).isCompatible(with: glucoseMass))
    }

    @Test("malformed or unknown units are errors", arguments: [
        "", "foo", "kmi", "kmin", "m/", "/m", "m//s", "m^", "m^x", "(m", "m)", "m s", "m^99", "k", "kCal",
        "count//min", "·m", "m·", "degC^", "2m", "mmHg)", "<18>",
    ])
    func rejectsMalformed(string: String) {
        #expect(throws: HealthUnitError.self) { try HealthUnit.parse(string) }
    }

    @Test func exactConversions() throws {
        #expect(try HealthUnit.convert(1, from: "lb", to: "kg") == 0.45359237)
        #expect(try HealthUnit.convert(1, from: "mi", to: "m") == 1609.344)
        #expect(try HealthUnit.convert(1, from: "in", to: "m") == 0.0254)
        #expect(try HealthUnit.convert(1, from: "kcal", to: "J") == 4184)
        #expect(try HealthUnit.convert(1, from: "Cal", to: "kcal") == 1)
        #expect(try HealthUnit.convert(1, from: "mmHg", to: "Pa") == 133.322387415)
        #expect(isClose(try HealthUnit.convert(1, from: "fl_oz_us", to: "mL"), 29.5735295625))
        #expect(isClose(try HealthUnit.convert(1, from: "ft", to: "in"), 12))
        #expect(isClose(try HealthUnit.convert(1, from: "st", to: "lb"), 14))
        #expect(isClose(try HealthUnit.convert(10, from: "km", to: "mi"), 6.213711922373339))
        #expect(isClose(try HealthUnit.convert(1, from: "hr", to: "min"), 60))
        #expect(isClose(try HealthUnit.convert(2500, from: "ms", to: "s"), 2.5))
        #expect(isClose(try HealthUnit.convert(120, from: "count/min", to: "Hz"), 2))
        #expect(isClose(try HealthUnit.convert(1, from: "kJ", to: "kcal"), 1 / 4.184))
    }

    @Test func temperatures() throws {
        #expect(isClose(try HealthUnit.convert(98.6, from: "degF", to: "degC"), 37))
        #expect(isClose(try HealthUnit.convert(37, from: "degC", to: "degF"), 98.6))
        #expect(isClose(try HealthUnit.convert(0, from: "degC", to: "K"), 273.15))
        #expect(isClose(try HealthUnit.convert(-40, from: "degF", to: "degC"), -40))
        #expect(isClose(try HealthUnit.convert(32, from: "degF", to: "degC") + 1, 1))
        #expect(try HealthUnit.parse("(degC)").offset == 273.15)
        #expect(try HealthUnit.parse("degC^1").offset == 273.15)
        #expect(try HealthUnit.parse("degC/min").offset == 0)
        // A temperature rate has no offset: 1 degC/min = 1 K/min.
        #expect(isClose(try HealthUnit.convert(1, from: "degC/min", to: "K/min"), 1))
    }

    @Test func percentIsAFractionAsInHealthKit() throws {
        // HKUnit.percent() values are fractions: 0.97 % is 97 %; it equals 0.97 count.
        #expect(try HealthUnit.convert(0.97, from: "%", to: "count") == 0.97)
        #expect(HealthUnit.percent.isCompatible(with: .count))
        #expect(HealthUnit.percent.isEquivalent(to: .count))
        #expect(HealthUnit.percent != HealthUnit.count)
    }

    @Test("incompatible units are errors", arguments: [
        ("kg", "m"), ("count", "m"), ("kcal", "kg"), ("degC", "J"), ("IU", "mg"), ("dBASPL", "Pa"),
        ("mmol/L", "mg/dL"), ("count/min", "count"), ("mL", "m^2"), ("%", "s"),
    ])
    func incompatible(from: String, to: String) {
        #expect(throws: HealthUnitError.incompatible(from: from, to: to)) {
            try HealthUnit.convert(1, from: from, to: to)
        }
    }

    @Test func nonFiniteValuesAreErrors() {
        #expect(throws: HealthUnitError.nonFiniteValue) { try HealthUnit.convert(.nan, from: "kg", to: "lb") }
        #expect(throws: HealthUnitError.nonFiniteValue) { try HealthUnit.convert(.infinity, from: "m", to: "km") }
    }

    @Test func roundTripsOverRandomValues() throws {
        let families: [[String]] = [
            ["kg", "g", "mg", "mcg", "lb", "oz", "st", "mol<180.15588000005408>"],
            ["m", "km", "cm", "mm", "mi", "yd", "ft", "in"],
            ["kcal", "Cal", "cal", "kJ", "J"],
            ["s", "ms", "min", "hr", "d"],
            ["mL", "L", "dL", "fl_oz_us", "fl_oz_imp", "cup_us", "cup_imp", "pt_us", "pt_imp", "cm^3"],
            ["degC", "degF", "K"],
            ["mmHg", "cmAq", "kPa", "Pa", "atm"],
            ["count/min", "count/s", "Hz", "1/hr"],
            ["mg/dL", "mmol<180.15588000005408>/L", "g/L"],
            ["mL/(kg·min)", "L/(kg·hr)", "mL/lb·min"],
            ["m/s", "km/hr", "mi/hr", "ft/s"],
        ]
        var generator = SplitMix64(seed: 42)
        for family in families {
            let units = try family.map { try HealthUnit.parse($0) }
            for _ in 0..<500 {
                let from = units[Int(generator.next() % UInt64(units.count))]
                let to = units[Int(generator.next() % UInt64(units.count))]
                let exponent = Double(Int(generator.next() % 13) - 6)
                let mantissa = Double(generator.next() % 1_000_000) / 1_000_000 + 0.001
                let sign: Double = generator.next() % 4 == 0 ? -1 : 1
                let value = sign * mantissa * pow10(exponent)
                let there = try from.convert(value, to: to)
                let back = try to.convert(there, to: from)
                // Offsets (degF) cancel most digits near absolute zero; use an absolute floor.
                let tolerance = 1e-9 * max(abs(value), from.offset != 0 || to.offset != 0 ? 1000 : 0)
                #expect(abs(back - value) <= tolerance, "\(value) \(from) -> \(there) \(to) -> \(back)")
            }
        }
    }

    @Test func dimensionsAreAsDocumented() throws {
        #expect(try HealthUnit.parse("J").dimension == HealthUnitParser.dimension(mass: 1, length: 2, time: -2))
        #expect(try HealthUnit.parse("mmHg").dimension == HealthUnitParser.dimension(mass: 1, length: -1, time: -2))
        #expect(try HealthUnit.parse("L").dimension == HealthUnitParser.dimension(length: 3))
        #expect(try HealthUnit.parse("count").dimension.isDimensionless)
        #expect(try HealthUnit.parse("%").dimension.isDimensionless)
        #expect(try HealthUnit.parse("degF").dimension == HealthUnitParser.dimension(temperature: 1))
        #expect(try HealthUnit.parse("IU").dimension.internationalUnit == 1)
        #expect(try HealthUnit.parse("mmol").dimension.amountOfSubstance == 1)
        #expect(try HealthUnit.parse("mmol<18>").dimension == HealthUnitParser.dimension(mass: 1))
        #expect(try HealthUnit.parse("mL/(kg·min)").dimension.description == "m^3·kg^-1·s^-1" ||
                (try HealthUnit.parse("mL/(kg·min)").dimension.description) == "kg^-1·m^3·s^-1")
    }

    @Test func namedConstantsMatchParsedUnits() throws {
        let pairs: [(HealthUnit, String)] = [
            (.count, "count"), (.percent, "%"), (.meter, "m"), (.gram, "g"), (.kilogram, "kg"), (.second, "s"),
            (.minute, "min"), (.kilocalorie, "kcal"), (.degreeCelsius, "degC"), (.millimeterOfMercury, "mmHg"),
            (.countPerMinute, "count/min"), (.liter, "L"),
        ]
        for (constant, string) in pairs {
            #expect(constant == (try HealthUnit.parse(string)), "\(string)")
            #expect(constant.unitString == string)
        }
    }

    @Test func cachedAndUncachedParsesAgree() throws {
        for (string, cached) in HealthUnitParser.commonUnits {
            #expect(cached == (try HealthUnitParser.parseUncached(string)), "\(string)")
        }
    }
}

private func pow10(_ exponent: Double) -> Double {
    var result = 1.0
    let steps = Int(abs(exponent))
    for _ in 0..<steps { result *= 10 }
    return exponent < 0 ? 1 / result : result
}

extension HealthUnit {
    func scaledCopyForTest(_ factor: Double) -> HealthUnit {
        HealthUnit(unitString: unitString, dimension: dimension, scale: scale * factor, offset: offset)
    }
}

/// Output never writes a value under a unit it is not in: a conversion is checked when made,
/// and a unit that does not fit falls back to the canonical unit, named as such.
@Suite struct UnitConversionOutputTests {
    @Test func aConversionIsCheckedWhenMadeAndAgreesWithConvert() throws {
        let mile = try HealthUnit.parse("mi"), meter = HealthUnit.meter
        let fahrenheit = try HealthUnit.parse("degF"), celsius = try HealthUnit.parse("degC")
        #expect(HealthUnitConversion(from: .count, to: meter) == nil)
        let miles = try #require(HealthUnitConversion(from: meter, to: mile))
        #expect(miles.apply(1609.344) == (try meter.convert(1609.344, to: mile)))
        let degrees = try #require(HealthUnitConversion(from: celsius, to: fahrenheit))
        #expect(abs(degrees.apply(37) - 98.6) < 1e-9)
        #expect(HealthUnitConversion.identity(.count).apply(12.5) == 12.5)
    }

    private func written(_ content: SampleContent, type: String, unit: HealthUnit?) throws -> JSONObject {
        let sample = HealthSample(uuid: HealthUUID(high: 0x7000, low: 0x8000_0000_0000_0000), type: type, start: 0, end: 60_000, content: content)
        var writer = JSONWriter()
        SampleCodec.write(StoredSample(sample: sample, source: SampleSource(app: "a", user: "u"), created: 0), unit: unit, into: &writer)
        return try #require(try JSONParser.parse(writer.bytes).objectValue)
    }

    @Test func aUnitThatDoesNotFitIsNotWrittenOverAnUnconvertedValue() throws {
        let shown = try written(.quantity(1609.344), type: "distanceWalkingRunning", unit: try HealthUnit.parse("mi"))
        #expect(shown["unit"] == .string("mi"))
        #expect(abs((shown["value"]?.numberValue ?? 0) - 1) < 1e-12)
        // Before this guard, 1609.344 went out labelled "count/min".
        let misfit = try written(.quantity(1609.344), type: "distanceWalkingRunning", unit: try HealthUnit.parse("count/min"))
        #expect(misfit["unit"] == .string("m") && misfit["value"]?.numberValue == 1609.344)
        let workout = try written(.workout(WorkoutDetails(activityType: "running", totalEnergyBurned: 300, totalDistance: 5000)),
                                  type: "workout", unit: .kilocalorie)
        #expect(workout["totalDistance"]?.objectValue?["unit"] == .string("m"))
        #expect(workout["totalEnergyBurned"]?.objectValue?["unit"] == .string("kcal"))
    }
}
