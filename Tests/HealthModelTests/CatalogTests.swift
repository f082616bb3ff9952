import Testing
@testable import HealthModel

@Suite("Type catalog")
struct CatalogTests {
    static let requiredIDs = [
        "stepCount", "distanceWalkingRunning", "distanceCycling", "activeEnergyBurned", "basalEnergyBurned",
        "appleExerciseTime", "appleStandTime", "flightsClimbed", "heartRate", "restingHeartRate",
        "walkingHeartRateAverage", "heartRateVariabilitySDNN", "oxygenSaturation", "respiratoryRate",
        "bodyTemperature", "bloodPressureSystolic", "bloodPressureDiastolic", "vo2Max", "bodyMass", "height",
        "bodyMassIndex", "bodyFatPercentage", "leanBodyMass", "dietaryEnergyConsumed", "dietaryCarbohydrates",
        "dietaryFatTotal", "dietaryProtein", "dietaryWater", "dietarySugar", "bloodGlucose", "basalBodyTemperature",
        "menstrualFlow", "ovulationTestResult", "cervicalMucusQuality", "sexualActivity", "sleepAnalysis",
        "mindfulSession", "appleStandHour", "bloodPressure", "food", "workout", "dateOfBirth", "biologicalSex",
        "bloodType", "fitzpatrickSkinType", "walkingSpeed", "environmentalAudioExposure", "headphoneAudioExposure",
        "walkingStepLength", "sixMinuteWalkTestDistance", "numberOfTimesFallen", "swimmingStrokeCount",
        "distanceSwimming", "pushCount",
    ]

    @Test func containsEveryRequiredType() {
        for id in Self.requiredIDs {
            #expect(HealthTypeCatalog.type(id)?.id == id, "\(id)")
        }
    }

    @Test func idsAndLongIdentifiersAreUnique() {
        #expect(Set(HealthTypeCatalog.all.map(\.id)).count == HealthTypeCatalog.all.count)
        #expect(Set(HealthTypeCatalog.all.map { $0.longIdentifier.lowercased() }).count == HealthTypeCatalog.all.count)
    }

    @Test("long identifiers resolve", arguments: [
        ("HKQuantityTypeIdentifierStepCount", "stepCount"),
        ("HKCategoryTypeIdentifierSleepAnalysis", "sleepAnalysis"),
        ("HKCorrelationTypeIdentifierBloodPressure", "bloodPressure"),
        ("HKCorrelationTypeIdentifierFood", "food"),
        ("HKWorkoutTypeIdentifier", "workout"),
        ("HKCharacteristicTypeIdentifierDateOfBirth", "dateOfBirth"),
        ("HKCharacteristicTypeIdentifierFitzpatrickSkinType", "fitzpatrickSkinType"),
        ("HKQuantityTypeIdentifierVO2Max", "vo2Max"),
        ("HKQuantityTypeIdentifierHeartRateVariabilitySDNN", "heartRateVariabilitySDNN"),
        ("HKQuantityTypeIdentifierUVExposure", "uvExposure"),
        ("HKCategoryTypeIdentifierAppleStandHour", "appleStandHour"),
        ("HKQuantityTypeIdentifierDietaryEnergyConsumed", "dietaryEnergyConsumed"),
    ])
    func longIdentifiersResolve(long: String, short: String) {
        #expect(HealthTypeCatalog.type(long)?.id == short)
    }

    @Test func everyLongIdentifierResolvesToItsType() {
        for type in HealthTypeCatalog.all {
            #expect(HealthTypeCatalog.type(type.longIdentifier) == type)
            // HealthKit names these outside their kind's prefix (HKDataTypeIdentifier..., HKWorkoutRouteTypeIdentifier).
            let namedApart = ["electrocardiogram", "stateOfMind", "workoutRoute"]
            #expect(type.longIdentifier.hasPrefix(type.kind.identifierPrefix) || namedApart.contains(type.id), "\(type.id)")
        }
        #expect(HealthTypeCatalog.type("StepCount") == nil)
        #expect(HealthTypeCatalog.type("steps") == nil)
        #expect(HealthTypeCatalog.type("") == nil)
        #expect(HealthTypeCatalog.type("HKQuantityTypeIdentifier") == nil)
    }

    @Test func quantityTypesAreConsistent() throws {
        for type in HealthTypeCatalog.all where type.kind == .quantity {
            let canonical = try #require(type.canonicalUnit, "\(type.id)")
            let parsed = try HealthUnit.parse(canonical.unitString)
            #expect(parsed == canonical, "\(type.id)")
            #expect(canonical.scale.isFinite && canonical.scale > 0)
            #expect(type.units.first == canonical.unitString, "\(type.id) lists its canonical unit first")
            for unitString in type.units {
                let unit = try HealthUnit.parse(unitString)
                #expect(unit.isCompatible(with: canonical), "\(type.id): \(unitString)")
                #expect(try unit.convert(1, to: canonical).isFinite)
            }
            let range = try #require(type.range, "\(type.id)")
            #expect(range.minimum <= range.maximum)
            #expect(type.aggregation != nil)
            #expect(type.values == nil && type.objectTypeIDs == nil)
            if type.isCumulative {
                #expect(type.maximumDuration == 345_600, "\(type.id)")
                #expect(range.minimum == 0, "\(type.id)")
            } else {
                #expect(type.maximumDuration == nil, "\(type.id)")
            }
        }
    }

    @Test func healthKitCanonicalUnits() {
        let expected: [String: String] = [
            "stepCount": "count", "distanceWalkingRunning": "m", "activeEnergyBurned": "kcal",
            "heartRate": "count/min", "bodyMass": "kg", "height": "m", "bodyTemperature": "degC",
            "bloodPressureSystolic": "mmHg", "oxygenSaturation": "%", "bodyFatPercentage": "%",
            "vo2Max": "mL/(kg·min)", "bloodGlucose": "mg/dL", "appleExerciseTime": "min", "dietaryWater": "mL",
            "heartRateVariabilitySDNN": "ms", "environmentalAudioExposure": "dBASPL", "walkingSpeed": "m/s",
        ]
        for (id, unit) in expected {
            #expect(HealthTypeCatalog.type(id)?.canonicalUnit?.unitString == unit, "\(id)")
        }
    }

    @Test func aggregationStylesFollowHealthKit() {
        #expect(HealthTypeCatalog.type("stepCount")?.aggregation == .cumulative)
        #expect(HealthTypeCatalog.type("dietaryProtein")?.aggregation == .cumulative)
        #expect(HealthTypeCatalog.type("heartRate")?.aggregation == .discreteTemporallyWeighted)
        #expect(HealthTypeCatalog.type("bodyMass")?.aggregation == .discreteArithmetic)
        #expect(HealthTypeCatalog.type("headphoneAudioExposure")?.aggregation == .discreteEquivalentContinuousLevel)
        #expect(HealthTypeCatalog.type("heartRate")?.aggregation?.apiName == "discrete")
        #expect(HealthTypeCatalog.type("stepCount")?.aggregation?.apiName == "cumulative")
    }

    @Test func nonQuantityTypesHaveNoUnits() {
        for type in HealthTypeCatalog.all where type.kind != .quantity {
            #expect(type.canonicalUnit == nil && type.units.isEmpty && type.range == nil && type.aggregation == nil)
            #expect(type.maximumDuration == (type.kind == .workout || type.kind == .series ? 345_600 : nil), "\(type.id)")
        }
        for type in HealthTypeCatalog.all where type.kind == .category {
            #expect(type.values != nil, "\(type.id)")
        }
    }

    @Test func correlationsHoldOnlyTheirObjectTypes() throws {
        let bloodPressure = try #require(HealthTypeCatalog.type("bloodPressure"))
        #expect(bloodPressure.objectTypeIDs == ["bloodPressureSystolic", "bloodPressureDiastolic"])
        #expect(!bloodPressure.allowsObject(ofType: "heartRate"))
        let food = try #require(HealthTypeCatalog.type("food"))
        #expect(food.allowsObject(ofType: "dietaryEnergyConsumed"))
        #expect(food.allowsObject(ofType: "dietaryWater"))
        #expect(!food.allowsObject(ofType: "bloodGlucose"))
        #expect(!food.allowsObject(ofType: "stepCount"))
        for id in food.objectTypeIDs ?? [] {
            #expect(HealthTypeCatalog.type(id)?.kind == .quantity, "\(id)")
        }
    }

    @Test func categoryValueSets() throws {
        let sleep = HealthValueSets.sleepAnalysis
        #expect(sleep.caseNames == ["inBed", "asleepUnspecified", "awake", "asleepCore", "asleepDeep", "asleepREM"])
        #expect(sleep.caseName(forRawValue: 3) == "asleepCore")
        #expect(sleep.rawValue(of: "asleepREM") == 5)
        #expect(sleep.caseName(for: "HKCategoryValueSleepAnalysisAsleepCore") == "asleepCore")
        #expect(sleep.caseName(for: "HKCategoryValueSleepAnalysisAsleep") == "asleepUnspecified")
        #expect(sleep.caseName(for: "HKCategoryValueSleepAnalysisInBed") == "inBed")
        #expect(sleep.caseName(for: "asleep") == "asleepUnspecified")
        #expect(sleep.caseName(for: "deep") == nil)
        #expect(sleep.exportString(of: "asleepREM") == "HKCategoryValueSleepAnalysisAsleepREM")

        #expect(HealthValueSets.menstrualFlow.caseNames == ["unspecified", "light", "medium", "heavy", "none"])
        #expect(HealthValueSets.menstrualFlow.caseName(forRawValue: 5) == "none")
        #expect(HealthValueSets.ovulationTestResult.caseName(for: "HKCategoryValueOvulationTestResultPositive")
                    == "luteinizingHormoneSurge")
        #expect(HealthValueSets.cervicalMucusQuality.caseName(for: "HKCategoryValueCervicalMucusQualityEggWhite")
                    == "eggWhite")
        #expect(HealthValueSets.appleStandHour.caseName(for: "HKCategoryValueAppleStandHourIdle") == "idle")
        #expect(HealthValueSets.appleStandHour.caseName(forRawValue: 0) == "stood")
        #expect(HealthValueSets.notApplicable.caseName(for: "HKCategoryValueNotApplicable") == "notApplicable")
        #expect(HealthTypeCatalog.type("mindfulSession")?.values?.caseNames == ["notApplicable"])
        #expect(HealthTypeCatalog.type("sexualActivity")?.values?.caseNames == ["notApplicable"])
        #expect(HealthValueSets.severity.caseName(for: "HKCategoryValueSeverityModerate") == "moderate")
    }

    @Test func workoutActivityTypes() {
        let activities = HealthValueSets.workoutActivityType
        for name in ["walking", "running", "cycling", "swimming", "hiking", "yoga", "functionalStrengthTraining",
                     "traditionalStrengthTraining", "highIntensityIntervalTraining", "elliptical", "rowing", "dance",
                     "other", "pickleball", "cooldown"] {
            #expect(activities.contains(name), "\(name)")
        }
        #expect(activities.caseName(for: "HKWorkoutActivityTypeRunning") == "running")
        #expect(activities.caseName(for: "HKWorkoutActivityTypeHighIntensityIntervalTraining")
                    == "highIntensityIntervalTraining")
        #expect(activities.caseName(forRawValue: 37) == "running")
        #expect(activities.caseName(forRawValue: 52) == "walking")
        #expect(activities.caseName(forRawValue: 3000) == "other")
        #expect(activities.rawValue(of: "cycling") == 13)
        #expect(Set(activities.cases.map(\.rawValue)).count == activities.cases.count)
        #expect(HealthTypeCatalog.type("workout")?.values == activities)
    }

    @Test func characteristics() {
        #expect(HealthValueSets.biologicalSex.caseName(for: "HKBiologicalSexFemale") == "female")
        #expect(HealthValueSets.bloodType.caseName(for: "HKBloodTypeABPositive") == "abPositive")
        #expect(HealthValueSets.bloodType.caseName(for: "HKBloodTypeONegative") == "oNegative")
        #expect(HealthValueSets.bloodType.caseName(forRawValue: 1) == "aPositive")
        #expect(HealthValueSets.fitzpatrickSkinType.caseName(for: "HKFitzpatrickSkinTypeIV") == "IV")
        #expect(HealthValueSets.fitzpatrickSkinType.caseNames.suffix(6) == ["I", "II", "III", "IV", "V", "VI"])
        for id in ["dateOfBirth", "biologicalSex", "bloodType", "fitzpatrickSkinType"] {
            #expect(HealthTypeCatalog.type(id)?.kind == .characteristic)
            #expect(HealthTypeCatalog.type(id)?.isSampleType == false)
        }
    }
}
