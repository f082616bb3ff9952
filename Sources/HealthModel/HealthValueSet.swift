// Enumerations HealthKit stores as integers and exports as prefixed names:
// category values (HKCategoryValueSleepAnalysis), workout activity types
// (HKWorkoutActivityType) and characteristics (HKBloodType ...). The API speaks
// the Swift case names (`asleepCore`); imports bring raw values or export strings.

/// One case: HealthKit's Swift case name and raw integer value.
public struct HealthValueCase: Sendable, Hashable {
    public let name: String
    public let rawValue: Int

    public init(_ name: String, _ rawValue: Int) {
        self.name = name
        self.rawValue = rawValue
    }
}

/// A closed set of case names with their raw values and export spellings.
public struct HealthValueSet: Sendable, Hashable {
    /// HealthKit's Objective-C enumeration prefix, e.g. `HKCategoryValueSleepAnalysis`.
    public let exportPrefix: String
    /// Cases in HealthKit's raw-value order.
    public let cases: [HealthValueCase]
    private let caseByName: [String: HealthValueCase]
    private let nameByRawValue: [Int: String]
    /// Lowercased export strings and deprecated spellings -> case name.
    private let nameByLowercasedSpelling: [String: String]

    /// - Parameter legacyNames: deprecated case names (`asleep`) or full export
    ///   strings (`HKCategoryValueSleepAnalysisAsleep`) mapped to current case names.
    public init(exportPrefix: String, cases: [HealthValueCase], legacyNames: [String: String] = [:]) {
        self.exportPrefix = exportPrefix
        self.cases = cases
        var byName: [String: HealthValueCase] = [:]
        var byRaw: [Int: String] = [:]
        var bySpelling: [String: String] = [:]
        for valueCase in cases {
            byName[valueCase.name] = valueCase
            if byRaw[valueCase.rawValue] == nil { byRaw[valueCase.rawValue] = valueCase.name }
            bySpelling[Self.exportString(prefix: exportPrefix, caseName: valueCase.name).lowercased()] = valueCase.name
        }
        for (legacy, current) in legacyNames {
            bySpelling[legacy.lowercased()] = current
            bySpelling[Self.exportString(prefix: exportPrefix, caseName: legacy).lowercased()] = current
        }
        self.caseByName = byName
        self.nameByRawValue = byRaw
        self.nameByLowercasedSpelling = bySpelling
    }

    public var caseNames: [String] { cases.map(\.name) }

    public func contains(_ caseName: String) -> Bool { caseByName[caseName] != nil }

    public func rawValue(of caseName: String) -> Int? { caseByName[caseName]?.rawValue }

    public func caseName(forRawValue rawValue: Int) -> String? { nameByRawValue[rawValue] }

    /// `asleepCore` -> `HKCategoryValueSleepAnalysisAsleepCore`.
    public func exportString(of caseName: String) -> String? {
        contains(caseName) ? Self.exportString(prefix: exportPrefix, caseName: caseName) : nil
    }

    /// Resolves an exact case name, or (case-insensitively, since Apple's exports
    /// spell `HKBloodTypeABPositive`) an export string or deprecated name.
    public func caseName(for spelling: String) -> String? {
        if caseByName[spelling] != nil { return spelling }
        return nameByLowercasedSpelling[spelling.lowercased()]
    }

    static func exportString(prefix: String, caseName: String) -> String {
        guard let first = caseName.first else { return prefix }
        return prefix + first.uppercased() + caseName.dropFirst()
    }
}

/// The value sets HealthKit defines, by their HealthKit names.
public enum HealthValueSets {
    public static let sleepAnalysis = HealthValueSet(
        exportPrefix: "HKCategoryValueSleepAnalysis",
        cases: [.init("inBed", 0), .init("asleepUnspecified", 1), .init("awake", 2),
                .init("asleepCore", 3), .init("asleepDeep", 4), .init("asleepREM", 5)],
        legacyNames: ["asleep": "asleepUnspecified"])

    public static let menstrualFlow = HealthValueSet(
        exportPrefix: "HKCategoryValueMenstrualFlow",
        cases: [.init("unspecified", 1), .init("light", 2), .init("medium", 3), .init("heavy", 4), .init("none", 5)])

    public static let ovulationTestResult = HealthValueSet(
        exportPrefix: "HKCategoryValueOvulationTestResult",
        cases: [.init("negative", 1), .init("luteinizingHormoneSurge", 2), .init("indeterminate", 3),
                .init("estrogenSurge", 4)],
        legacyNames: ["positive": "luteinizingHormoneSurge"])

    public static let cervicalMucusQuality = HealthValueSet(
        exportPrefix: "HKCategoryValueCervicalMucusQuality",
        cases: [.init("dry", 1), .init("sticky", 2), .init("creamy", 3), .init("watery", 4), .init("eggWhite", 5)])

    public static let appleStandHour = HealthValueSet(
        exportPrefix: "HKCategoryValueAppleStandHour",
        cases: [.init("stood", 0), .init("idle", 1)])

    /// HKCategoryValue.notApplicable, for event-like types whose value carries no meaning.
    public static let notApplicable = HealthValueSet(
        exportPrefix: "HKCategoryValue", cases: [.init("notApplicable", 0)])

    /// HKCategoryValueSeverity, for symptom types.
    public static let severity = HealthValueSet(
        exportPrefix: "HKCategoryValueSeverity",
        cases: [.init("unspecified", 0), .init("notPresent", 1), .init("mild", 2), .init("moderate", 3),
                .init("severe", 4)])

    /// HKElectrocardiogram.Classification: an ECG's result (`electrocardiogram` samples).
    public static let electrocardiogramClassification = HealthValueSet(
        exportPrefix: "HKElectrocardiogramClassification",
        cases: [.init("notSet", 0), .init("sinusRhythm", 1), .init("atrialFibrillation", 2),
                .init("inconclusiveLowHeartRate", 3), .init("inconclusiveHighHeartRate", 4),
                .init("inconclusivePoorReading", 5), .init("inconclusiveOther", 6), .init("unrecognized", 100)])

    /// HKStateOfMind.ValenceClassification: how pleasant a logged emotion or mood was
    /// (`stateOfMind` samples).
    public static let stateOfMindValenceClassification = HealthValueSet(
        exportPrefix: "HKStateOfMindValenceClassification",
        cases: [.init("veryUnpleasant", 1), .init("unpleasant", 2), .init("slightlyUnpleasant", 3), .init("neutral", 4),
                .init("slightlyPleasant", 5), .init("pleasant", 6), .init("veryPleasant", 7)])

    public static let environmentalAudioExposureEvent = HealthValueSet(
        exportPrefix: "HKCategoryValueEnvironmentalAudioExposureEvent", cases: [.init("momentaryLimit", 1)])

    public static let headphoneAudioExposureEvent = HealthValueSet(
        exportPrefix: "HKCategoryValueHeadphoneAudioExposureEvent",
        cases: [.init("sevenDayLimit", 1)])

    public static let lowCardioFitnessEvent = HealthValueSet(
        exportPrefix: "HKCategoryValueLowCardioFitnessEvent", cases: [.init("lowFitness", 1)])

    public static let biologicalSex = HealthValueSet(
        exportPrefix: "HKBiologicalSex",
        cases: [.init("notSet", 0), .init("female", 1), .init("male", 2), .init("other", 3)])

    public static let bloodType = HealthValueSet(
        exportPrefix: "HKBloodType",
        cases: [.init("notSet", 0), .init("aPositive", 1), .init("aNegative", 2), .init("bPositive", 3),
                .init("bNegative", 4), .init("abPositive", 5), .init("abNegative", 6), .init("oPositive", 7),
                .init("oNegative", 8)])

    public static let fitzpatrickSkinType = HealthValueSet(
        exportPrefix: "HKFitzpatrickSkinType",
        cases: [.init("notSet", 0), .init("I", 1), .init("II", 2), .init("III", 3), .init("IV", 4),
                .init("V", 5), .init("VI", 6)])

    public static let wheelchairUse = HealthValueSet(
        exportPrefix: "HKWheelchairUse", cases: [.init("notSet", 0), .init("no", 1), .init("yes", 2)])

    public static let activityMoveMode = HealthValueSet(
        exportPrefix: "HKActivityMoveMode", cases: [.init("activeEnergy", 1), .init("appleMoveTime", 2)])

    /// HKWorkoutActivityType, every case with its raw value (`other` is 3000).
    public static let workoutActivityType = HealthValueSet(
        exportPrefix: "HKWorkoutActivityType",
        cases: [
            .init("americanFootball", 1), .init("archery", 2), .init("australianFootball", 3),
            .init("badminton", 4), .init("baseball", 5), .init("basketball", 6), .init("bowling", 7),
            .init("boxing", 8), .init("climbing", 9), .init("cricket", 10), .init("crossTraining", 11),
            .init("curling", 12), .init("cycling", 13), .init("dance", 14), .init("danceInspiredTraining", 15),
            .init("elliptical", 16), .init("equestrianSports", 17), .init("fencing", 18), .init("fishing", 19),
            .init("functionalStrengthTraining", 20), .init("golf", 21), .init("gymnastics", 22),
            .init("handball", 23), .init("hiking", 24), .init("hockey", 25), .init("hunting", 26),
            .init("lacrosse", 27), .init("martialArts", 28), .init("mindAndBody", 29),
            .init("mixedMetabolicCardioTraining", 30), .init("paddleSports", 31), .init("play", 32),
            .init("preparationAndRecovery", 33), .init("racquetball", 34), .init("rowing", 35),
            .init("rugby", 36), .init("running", 37), .init("sailing", 38), .init("skatingSports", 39),
            .init("snowSports", 40), .init("soccer", 41), .init("softball", 42), .init("squash", 43),
            .init("stairClimbing", 44), .init("surfingSports", 45), .init("swimming", 46),
            .init("tableTennis", 47), .init("tennis", 48), .init("trackAndField", 49),
            .init("traditionalStrengthTraining", 50), .init("volleyball", 51), .init("walking", 52),
            .init("waterFitness", 53), .init("waterPolo", 54), .init("waterSports", 55), .init("wrestling", 56),
            .init("yoga", 57), .init("barre", 58), .init("coreTraining", 59), .init("crossCountrySkiing", 60),
            .init("downhillSkiing", 61), .init("flexibility", 62), .init("highIntensityIntervalTraining", 63),
            .init("jumpRope", 64), .init("kickboxing", 65), .init("pilates", 66), .init("snowboarding", 67),
            .init("stairs", 68), .init("stepTraining", 69), .init("wheelchairWalkPace", 70),
            .init("wheelchairRunPace", 71), .init("taiChi", 72), .init("mixedCardio", 73),
            .init("handCycling", 74), .init("discSports", 75), .init("fitnessGaming", 76),
            .init("cardioDance", 77), .init("socialDance", 78), .init("pickleball", 79), .init("cooldown", 80),
            .init("swimBikeRun", 82), .init("transition", 83), .init("underwaterDiving", 84),
            .init("other", 3000),
        ])

    /// The HKWorkoutEventType cases the API accepts in workout `events`, with
    /// HealthKit's raw values (motion and request events are device-internal).
    public static let workoutEventType = HealthValueSet(
        exportPrefix: "HKWorkoutEventType",
        cases: [.init("pause", 1), .init("resume", 2), .init("lap", 3), .init("marker", 4), .init("segment", 7)])
}
