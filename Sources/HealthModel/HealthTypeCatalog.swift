// The catalog of types healthd knows, with HealthKit's identifiers and units.
//
// Maximum durations: every cumulative quantity type has HealthKit's 345,600 s
// (4 days), which HealthKit enforces for stepCount and the other cumulative
// activity types; applying it to all cumulative types keeps pro-rating in
// statistics bounded. Workouts have it too (HKWorkoutType is duration-restricted).
// Discrete quantities, categories (a sleep or mindful session may be long) and
// correlations are unrestricted (nil).
//
// Ranges are in the canonical unit and deliberately generous: they reject unit
// mistakes (97 `%` for oxygenSaturation, where HealthKit expects 0.97; a height
// of 180 m) and impossible physiology, never a plausible extreme. Cumulative
// bounds cover a 4-day sample.

public enum HealthTypeCatalog {
    /// Every type, in a stable order (quantity, category, correlation, workout, series, characteristic).
    public static let all: [HealthType] = quantityTypes + categoryTypes + correlationTypes + [workoutType, workoutRouteType]
        + characteristicTypes

    private static let typesByID: [String: HealthType] = {
        var table: [String: HealthType] = [:]
        for type in all { table[type.id] = type }
        return table
    }()

    /// Lowercased long identifiers, so `HKQuantityTypeIdentifierVO2Max` matches whatever its capitals.
    private static let typesByLowercasedLongIdentifier: [String: HealthType] = {
        var table: [String: HealthType] = [:]
        for type in all { table[type.longIdentifier.lowercased()] = type }
        return table
    }()

    /// Looks a type up by its short id (`stepCount`, exact) or HealthKit's long
    /// identifier (`HKQuantityTypeIdentifierStepCount`, any letter case).
    public static func type(_ identifier: String) -> HealthType? {
        if let type = typesByID[identifier] { return type }
        guard identifier.hasPrefix("HK") || identifier.hasPrefix("hk") else { return nil }
        return typesByLowercasedLongIdentifier[identifier.lowercased()]
    }

    public static func type<S: StringProtocol>(_ identifier: S) -> HealthType? {
        type(String(identifier))
    }

    // MARK: - Building blocks

    /// HealthKit's 4-day limit on cumulative samples.
    public static let cumulativeMaximumDuration: Int64 = 345_600

    private static func unit(_ string: String) -> HealthUnit {
        // Every canonical unit string here is in the parser's precomputed table;
        // the tests check that each one parses.
        HealthUnit.named(string) ?? HealthUnit(unitString: string, dimension: .dimensionless, scale: 1)
    }

    private static let countUnits = ["count"]
    private static let lengthUnits = ["m", "km", "cm", "mm", "mi", "yd", "ft", "in"]
    private static let energyUnits = ["kcal", "Cal", "kJ", "J", "cal"]
    private static let timeUnits = ["min", "s", "ms", "hr", "d"]
    private static let massUnits = ["kg", "g", "lb", "oz", "st"]
    private static let nutrientGramUnits = ["g", "mg", "mcg", "kg", "oz", "lb"]
    private static let nutrientMilligramUnits = ["mg", "g", "mcg"]
    private static let volumeUnits = ["mL", "L", "dL", "fl_oz_us", "fl_oz_imp", "cup_us", "cup_imp", "pt_us", "pt_imp"]
    private static let rateUnits = ["count/min", "count/s", "Hz"]
    private static let temperatureUnits = ["degC", "degF", "K"]
    private static let pressureUnits = ["mmHg", "cmAq", "kPa", "Pa", "atm"]
    private static let speedUnits = ["m/s", "km/hr", "mi/hr"]
    private static let percentUnits = ["%"]

    private static func cumulative(_ id: String, _ units: [String], _ maximum: Double) -> HealthType {
        HealthType(id: id, kind: .quantity, aggregation: .cumulative, canonicalUnit: unit(units[0]), units: units,
                   maximumDuration: cumulativeMaximumDuration, range: HealthValueRange(0, maximum))
    }

    private static func discrete(
        _ id: String, _ units: [String], _ minimum: Double, _ maximum: Double,
        style: HealthQuantityAggregationStyle = .discreteArithmetic, longIdentifier: String? = nil
    ) -> HealthType {
        HealthType(id: id, kind: .quantity, aggregation: style, canonicalUnit: unit(units[0]), units: units,
                   range: HealthValueRange(minimum, maximum), longIdentifier: longIdentifier)
    }

    private static func category(_ id: String, _ values: HealthValueSet) -> HealthType {
        HealthType(id: id, kind: .category, values: values)
    }

    // MARK: - Quantity types

    public static let quantityTypes: [HealthType] = activityTypes + vitalTypes + bodyTypes + nutritionTypes
        + mobilityTypes + otherQuantityTypes

    private static let activityTypes: [HealthType] = [
        cumulative("stepCount", countUnits, 1_000_000),
        cumulative("distanceWalkingRunning", lengthUnits, 1_000_000),
        cumulative("distanceCycling", lengthUnits, 5_000_000),
        cumulative("distanceSwimming", lengthUnits, 200_000),
        cumulative("distanceWheelchair", lengthUnits, 1_000_000),
        cumulative("distanceDownhillSnowSports", lengthUnits, 1_000_000),
        cumulative("activeEnergyBurned", energyUnits, 100_000),
        cumulative("basalEnergyBurned", energyUnits, 100_000),
        // Time types: at most the 4 days (5,760 min) a sample may span.
        cumulative("appleExerciseTime", timeUnits, 5_760),
        cumulative("appleStandTime", timeUnits, 5_760),
        cumulative("appleMoveTime", timeUnits, 5_760),
        cumulative("timeInDaylight", timeUnits, 5_760),
        cumulative("flightsClimbed", countUnits, 100_000),
        cumulative("pushCount", countUnits, 1_000_000),
        cumulative("swimmingStrokeCount", countUnits, 1_000_000),
        cumulative("numberOfTimesFallen", countUnits, 1_000),
    ]

    private static let vitalTypes: [HealthType] = [
        discrete("heartRate", rateUnits, 1, 300, style: .discreteTemporallyWeighted),
        discrete("restingHeartRate", rateUnits, 1, 250),
        discrete("walkingHeartRateAverage", rateUnits, 1, 300),
        discrete("heartRateRecoveryOneMinute", rateUnits, 0, 300),
        discrete("heartRateVariabilitySDNN", ["ms", "s"], 0, 2_000,
                 longIdentifier: "HKQuantityTypeIdentifierHeartRateVariabilitySDNN"),
        // HealthKit's percent is a fraction: 0.97 means 97 %.
        discrete("oxygenSaturation", percentUnits, 0, 1),
        discrete("respiratoryRate", rateUnits, 0, 200),
        // 10-50 °C spans survived hypothermia to lethal fever with margin.
        discrete("bodyTemperature", temperatureUnits, 10, 50),
        discrete("basalBodyTemperature", temperatureUnits, 10, 50),
        discrete("appleSleepingWristTemperature", temperatureUnits, 10, 50),
        discrete("bloodPressureSystolic", pressureUnits, 10, 350),
        discrete("bloodPressureDiastolic", pressureUnits, 5, 300),
        discrete("vo2Max", ["mL/(kg·min)", "mL/kg·min"], 0, 150, longIdentifier: "HKQuantityTypeIdentifierVO2Max"),
        discrete("peripheralPerfusionIndex", percentUnits, 0, 1),
        discrete("forcedVitalCapacity", ["L", "mL"], 0, 15),
        discrete("forcedExpiratoryVolume1", ["L", "mL"], 0, 15),
        discrete("peakExpiratoryFlowRate", ["L/min", "L/s", "mL/min"], 0, 1_500),
        discrete("electrodermalActivity", ["µS", "mS", "S"], 0, 100),
    ]

    private static let bodyTypes: [HealthType] = [
        discrete("bodyMass", massUnits, 0, 1_000),
        discrete("height", lengthUnits, 0, 3),
        discrete("bodyMassIndex", countUnits, 0, 300),
        discrete("bodyFatPercentage", percentUnits, 0, 1),
        discrete("leanBodyMass", massUnits, 0, 1_000),
        discrete("waistCircumference", lengthUnits, 0, 5),
    ]

    private static let nutritionTypes: [HealthType] = [
        cumulative("dietaryEnergyConsumed", energyUnits, 100_000),
        cumulative("dietaryCarbohydrates", nutrientGramUnits, 10_000),
        cumulative("dietaryFatTotal", nutrientGramUnits, 10_000),
        cumulative("dietaryFatSaturated", nutrientGramUnits, 10_000),
        cumulative("dietaryFatMonounsaturated", nutrientGramUnits, 10_000),
        cumulative("dietaryFatPolyunsaturated", nutrientGramUnits, 10_000),
        cumulative("dietaryProtein", nutrientGramUnits, 10_000),
        cumulative("dietarySugar", nutrientGramUnits, 10_000),
        cumulative("dietaryFiber", nutrientGramUnits, 10_000),
        cumulative("dietaryCholesterol", nutrientMilligramUnits, 1_000_000),
        cumulative("dietarySodium", nutrientMilligramUnits, 1_000_000),
        cumulative("dietaryPotassium", nutrientMilligramUnits, 1_000_000),
        cumulative("dietaryCalcium", nutrientMilligramUnits, 1_000_000),
        cumulative("dietaryIron", nutrientMilligramUnits, 1_000_000),
        cumulative("dietaryVitaminC", nutrientMilligramUnits, 1_000_000),
        cumulative("dietaryCaffeine", nutrientMilligramUnits, 1_000_000),
        cumulative("dietaryWater", volumeUnits, 100_000),
        discrete("bloodGlucose", ["mg/dL", "mmol<180.15588000005408>/L"], 0, 5_000),
        discrete("bloodAlcoholContent", percentUnits, 0, 1),
        cumulative("numberOfAlcoholicBeverages", countUnits, 1_000),
        cumulative("insulinDelivery", ["IU"], 10_000),
    ]

    private static let mobilityTypes: [HealthType] = [
        discrete("walkingSpeed", speedUnits, 0, 10),
        discrete("walkingStepLength", lengthUnits, 0, 3),
        discrete("walkingAsymmetryPercentage", percentUnits, 0, 1),
        discrete("walkingDoubleSupportPercentage", percentUnits, 0, 1),
        discrete("appleWalkingSteadiness", percentUnits, 0, 1),
        discrete("sixMinuteWalkTestDistance", lengthUnits, 0, 2_000),
        discrete("stairAscentSpeed", speedUnits, 0, 10),
        discrete("stairDescentSpeed", speedUnits, 0, 10),
        discrete("runningSpeed", speedUnits, 0, 15),
        discrete("runningPower", ["W", "kW"], 0, 3_000),
        discrete("runningStrideLength", lengthUnits, 0, 4),
        discrete("runningVerticalOscillation", ["cm", "m", "mm", "in"], 0, 100),
        discrete("runningGroundContactTime", ["ms", "s"], 0, 5_000),
        discrete("cyclingSpeed", speedUnits, 0, 50),
        discrete("cyclingPower", ["W", "kW"], 0, 3_000),
        discrete("cyclingCadence", rateUnits, 0, 300),
    ]

    private static let otherQuantityTypes: [HealthType] = [
        discrete("environmentalAudioExposure", ["dBASPL"], 0, 200, style: .discreteEquivalentContinuousLevel),
        discrete("headphoneAudioExposure", ["dBASPL"], 0, 200, style: .discreteEquivalentContinuousLevel),
        discrete("uvExposure", countUnits, 0, 20, longIdentifier: "HKQuantityTypeIdentifierUVExposure"),
        cumulative("inhalerUsage", countUnits, 1_000),
    ]

    // MARK: - Category types

    public static let categoryTypes: [HealthType] = [
        category("sleepAnalysis", HealthValueSets.sleepAnalysis),
        category("mindfulSession", HealthValueSets.notApplicable),
        category("appleStandHour", HealthValueSets.appleStandHour),
        category("menstrualFlow", HealthValueSets.menstrualFlow),
        category("intermenstrualBleeding", HealthValueSets.notApplicable),
        category("ovulationTestResult", HealthValueSets.ovulationTestResult),
        category("cervicalMucusQuality", HealthValueSets.cervicalMucusQuality),
        category("sexualActivity", HealthValueSets.notApplicable),
        category("highHeartRateEvent", HealthValueSets.notApplicable),
        category("lowHeartRateEvent", HealthValueSets.notApplicable),
        category("irregularHeartRhythmEvent", HealthValueSets.notApplicable),
        category("lowCardioFitnessEvent", HealthValueSets.lowCardioFitnessEvent),
        category("environmentalAudioExposureEvent", HealthValueSets.environmentalAudioExposureEvent),
        category("headphoneAudioExposureEvent", HealthValueSets.headphoneAudioExposureEvent),
        category("toothbrushingEvent", HealthValueSets.notApplicable),
        category("handwashingEvent", HealthValueSets.notApplicable),
        category("headache", HealthValueSets.severity),
        category("fatigue", HealthValueSets.severity),
        category("nausea", HealthValueSets.severity),
        category("coughing", HealthValueSets.severity),
        category("fever", HealthValueSets.severity),
        category("dizziness", HealthValueSets.severity),
        category("shortnessOfBreath", HealthValueSets.severity),
        category("soreThroat", HealthValueSets.severity),
        category("runnyNose", HealthValueSets.severity),
        category("abdominalCramps", HealthValueSets.severity),
        category("bloating", HealthValueSets.severity),
        category("lowerBackPain", HealthValueSets.severity),
        category("hotFlashes", HealthValueSets.severity),
        category("acne", HealthValueSets.severity),
        category("bladderIncontinence", HealthValueSets.severity),
        category("breastPain", HealthValueSets.severity),
        category("chestTightnessOrPain", HealthValueSets.severity),
        category("chills", HealthValueSets.severity),
        category("constipation", HealthValueSets.severity),
        category("diarrhea", HealthValueSets.severity),
        category("drySkin", HealthValueSets.severity),
        category("fainting", HealthValueSets.severity),
        category("generalizedBodyAche", HealthValueSets.severity),
        category("hairLoss", HealthValueSets.severity),
        category("heartburn", HealthValueSets.severity),
        category("lossOfSmell", HealthValueSets.severity),
        category("lossOfTaste", HealthValueSets.severity),
        category("memoryLapse", HealthValueSets.severity),
        category("nightSweats", HealthValueSets.severity),
        category("pelvicPain", HealthValueSets.severity),
        category("rapidPoundingOrFlutteringHeartbeat", HealthValueSets.severity),
        category("sinusCongestion", HealthValueSets.severity),
        category("skippedHeartbeat", HealthValueSets.severity),
        category("vaginalDryness", HealthValueSets.severity),
        category("vomiting", HealthValueSets.severity),
        category("wheezing", HealthValueSets.severity),
        // HKElectrocardiogram and HKStateOfMind are classes of their own in HealthKit; here they are
        // category samples whose value is the ECG's classification or the valence's classification,
        // with their numbers (average heart rate, sampling frequency, valence) and lists (labels,
        // associations) as metadata. Voltage series are not stored.
        HealthType(id: "electrocardiogram", kind: .category, values: HealthValueSets.electrocardiogramClassification,
                   longIdentifier: "HKDataTypeIdentifierElectrocardiogram"),
        HealthType(id: "stateOfMind", kind: .category, values: HealthValueSets.stateOfMindValenceClassification,
                   longIdentifier: "HKDataTypeIdentifierStateOfMind"),
    ]

    // MARK: - Correlations, workout, characteristics

    public static let correlationTypes: [HealthType] = [
        HealthType(id: "bloodPressure", kind: .correlation,
                   objectTypeIDs: ["bloodPressureSystolic", "bloodPressureDiastolic"]),
        HealthType(id: "food", kind: .correlation,
                   objectTypeIDs: nutritionTypes.map(\.id).filter { $0.hasPrefix("dietary") }),
    ]

    /// Workouts carry HealthKit's 4-day limit as well: HKWorkoutType reports a
    /// restricted maximum duration, and saving a longer workout fails in HealthKit.
    public static let workoutType = HealthType(
        id: "workout", kind: .workout, maximumDuration: cumulativeMaximumDuration,
        values: HealthValueSets.workoutActivityType)

    /// HKSeriesType.workoutRoute(): a workout's locations, a sample linked to its workout. As
    /// long as a workout may be.
    public static let workoutRouteType = HealthType(
        id: "workoutRoute", kind: .series, maximumDuration: cumulativeMaximumDuration,
        longIdentifier: "HKWorkoutRouteTypeIdentifier")

    /// Units workout totals are stored and returned in unless `unit` asks otherwise.
    public static let workoutTotalEnergyBurnedUnit = HealthUnit.kilocalorie
    public static let workoutTotalDistanceUnit = HealthUnit.meter

    public static let characteristicTypes: [HealthType] = [
        HealthType(id: "dateOfBirth", kind: .characteristic),
        HealthType(id: "biologicalSex", kind: .characteristic, values: HealthValueSets.biologicalSex),
        HealthType(id: "bloodType", kind: .characteristic, values: HealthValueSets.bloodType),
        HealthType(id: "fitzpatrickSkinType", kind: .characteristic, values: HealthValueSets.fitzpatrickSkinType),
        HealthType(id: "wheelchairUse", kind: .characteristic, values: HealthValueSets.wheelchairUse),
        HealthType(id: "activityMoveMode", kind: .characteristic, values: HealthValueSets.activityMoveMode),
    ]
}
