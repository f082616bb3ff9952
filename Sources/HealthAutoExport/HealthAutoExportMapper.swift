import Crypto
import HealthModel
import JSON

/// How long one aggregated point of the app lasts: its "Time Grouping" (aggregation interval).
/// A cumulative point (steps in a minute) spans [date, date + interval); discrete readings
/// (heart rate, body mass) are instants at their date.
public enum HealthAutoExportInterval: String, Sendable, CaseIterable {
    case seconds, minutes, hours, days

    public var milliseconds: Int64 {
        switch self {
        case .seconds: return 1_000
        case .minutes: return 60_000
        case .hours: return 3_600_000
        case .days: return 86_400_000
        }
    }
}

/// One thing the payload yields, in document order.
public enum HealthAutoExportItem: Sendable, Hashable {
    /// A sample to save; `metric` is the app's name for what it came from (`step_count`,
    /// `workouts`), for the answer's counts.
    case sample(HealthSample, metric: String)
    /// An entry with no HealthKit counterpart in healthd (counted, never fatal).
    case unmapped(String)
    /// A well-formed entry HealthKit would refuse (a value out of the type's range, a workout
    /// over four days): counted and reported, not saved.
    case invalid(metric: String, field: String, detail: String)
}

/// A malformed entry: the field (relative to the entry) and what is wrong with it.
struct MalformedField: Error, Sendable {
    var field: String
    var detail: String
    init(_ field: String, _ detail: String) {
        self.field = field
        self.detail = detail
    }
}

/// The pure mapping from Health Auto Export's JSON entries to healthd samples. It never touches
/// I/O; the reader hands it one metric point or one workout at a time.
public struct HealthAutoExportMapper {
    public let interval: HealthAutoExportInterval
    /// The user's id: part of every content-derived uuid.
    public let user: String
    /// The saving app: part of every content-derived uuid when set, so each app's copy of a point
    /// is its own sample (source merging de-duplicates them for statistics, as in HealthKit).
    public let app: String?
    /// Where the uuid each sample had before uuids included the app is kept (when set), so a
    /// re-send of a sample stored under it is known as a duplicate.
    public var legacyUUIDs: LegacyContentUUIDs?
    /// False for a checking pass: samples get no uuid (hashing is most of a point's cost).
    public var computesUUIDs = true
    private var items: [HealthAutoExportItem] = []
    private var contentKey = ContentKey()
    /// HKTimeZone names by offset: a payload has one or two.
    private var zoneNames: [Int: String] = [:]

    public init(user: String, app: String? = nil, interval: HealthAutoExportInterval = .minutes) {
        self.user = user
        self.app = app
        self.interval = interval
    }

    /// Hands over what was produced since the last call.
    public mutating func drain() -> [HealthAutoExportItem] {
        defer { items.removeAll(keepingCapacity: true) }
        return items
    }

    // MARK: Metrics

    /// What a metric name maps to.
    enum MetricKind: Sendable, Hashable {
        case quantity(String)
        case heartRate
        case bloodPressure
        case sleep
        case mindful
    }

    /// The app's metric names (snake_case, as its JSON spells them) and their HealthKit types.
    /// The mapping table in docs/guide.md (Health Auto Export) lists the same.
    static let metrics: [String: MetricKind] = {
        var table: [String: MetricKind] = [
            "heart_rate": .heartRate, "blood_pressure": .bloodPressure, "sleep_analysis": .sleep,
            "mindful_minutes": .mindful,
        ]
        for (name, type) in quantityMetrics { table[name] = .quantity(type) }
        for (alias, name) in metricAliases {
            guard let kind = table[name] else { preconditionFailure("alias \(alias) of unknown metric \(name)") }
            table[alias] = kind
        }
        return table
    }()

    /// Names the app has used in other versions, or spells differently in its own server's
    /// reference list, for a name in `quantityMetrics`: the same type whichever version posts.
    /// Earlier versions prefixed nutrients with `dietary_` (`dietary_cholesterol`, now
    /// `cholesterol`); HealthKit's own spellings (`dietary_fat_total`) are read too.
    static let metricAliases: [(alias: String, name: String)] = [
        // Nutrition
        ("dietary_energy_consumed", "dietary_energy"),
        ("dietary_carbohydrates", "carbohydrates"),
        ("dietary_total_fat", "total_fat"), ("dietary_fat_total", "total_fat"),
        ("dietary_saturated_fat", "saturated_fat"), ("dietary_fat_saturated", "saturated_fat"),
        ("dietary_monounsaturated_fat", "monounsaturated_fat"), ("dietary_fat_monounsaturated", "monounsaturated_fat"),
        ("monosaturated_fat", "monounsaturated_fat"),
        ("dietary_polyunsaturated_fat", "polyunsaturated_fat"), ("dietary_fat_polyunsaturated", "polyunsaturated_fat"),
        ("dietary_protein", "protein"), ("dietary_fiber", "fiber"),
        ("dietary_cholesterol", "cholesterol"), ("dietary_sodium", "sodium"), ("dietary_potassium", "potassium"),
        ("dietary_calcium", "calcium"), ("dietary_iron", "iron"), ("dietary_vitamin_c", "vitamin_c"),
        ("caffeine", "dietary_caffeine"),
        // Activity, heart, hearing
        ("wheelchair_push_count", "push_count"), ("swim_stroke_count", "swimming_stroke_count"),
        ("downhill_snow_sports", "distance_downhill_snow_sports"), ("number_of_time_fallen", "number_of_times_fallen"),
        ("walking_heart_rate", "walking_heart_rate_average"), ("forced_expiratory_volume", "forced_expiratory_volume_1"),
        ("environmental_audio", "environmental_audio_exposure"), ("headphone_audio", "headphone_audio_exposure"),
    ]

    static let quantityMetrics: [(String, String)] = [
        // Activity
        ("step_count", "stepCount"), ("walking_running_distance", "distanceWalkingRunning"),
        ("cycling_distance", "distanceCycling"), ("swimming_distance", "distanceSwimming"),
        ("wheelchair_distance", "distanceWheelchair"), ("distance_downhill_snow_sports", "distanceDownhillSnowSports"),
        ("active_energy", "activeEnergyBurned"), ("basal_energy_burned", "basalEnergyBurned"),
        ("resting_energy", "basalEnergyBurned"),
        ("apple_exercise_time", "appleExerciseTime"), ("apple_stand_time", "appleStandTime"),
        ("apple_move_time", "appleMoveTime"), ("time_in_daylight", "timeInDaylight"),
        ("flights_climbed", "flightsClimbed"), ("push_count", "pushCount"),
        ("swimming_stroke_count", "swimmingStrokeCount"), ("number_of_times_fallen", "numberOfTimesFallen"),
        // Heart and lungs
        ("resting_heart_rate", "restingHeartRate"), ("walking_heart_rate_average", "walkingHeartRateAverage"),
        ("heart_rate_variability", "heartRateVariabilitySDNN"), ("cardio_recovery", "heartRateRecoveryOneMinute"),
        ("blood_oxygen_saturation", "oxygenSaturation"), ("respiratory_rate", "respiratoryRate"),
        ("vo2_max", "vo2Max"), ("peripheral_perfusion_index", "peripheralPerfusionIndex"),
        ("forced_vital_capacity", "forcedVitalCapacity"), ("forced_expiratory_volume_1", "forcedExpiratoryVolume1"),
        ("peak_expiratory_flow_rate", "peakExpiratoryFlowRate"), ("inhaler_usage", "inhalerUsage"),
        ("electrodermal_activity", "electrodermalActivity"),
        // Temperature
        ("body_temperature", "bodyTemperature"), ("basal_body_temperature", "basalBodyTemperature"),
        ("apple_sleeping_wrist_temperature", "appleSleepingWristTemperature"),
        // Body
        ("weight_body_mass", "bodyMass"), ("body_mass", "bodyMass"), ("height", "height"),
        ("body_mass_index", "bodyMassIndex"), ("body_fat_percentage", "bodyFatPercentage"),
        ("lean_body_mass", "leanBodyMass"), ("waist_circumference", "waistCircumference"),
        // Lab and medication
        ("blood_glucose", "bloodGlucose"), ("blood_alcohol_content", "bloodAlcoholContent"),
        ("number_of_alcoholic_beverages", "numberOfAlcoholicBeverages"), ("insulin_delivery", "insulinDelivery"),
        // Mobility
        ("walking_speed", "walkingSpeed"), ("walking_step_length", "walkingStepLength"),
        ("walking_asymmetry_percentage", "walkingAsymmetryPercentage"),
        ("walking_double_support_percentage", "walkingDoubleSupportPercentage"),
        ("apple_walking_steadiness", "appleWalkingSteadiness"),
        ("six_minute_walking_test_distance", "sixMinuteWalkTestDistance"),
        ("stair_speed_up", "stairAscentSpeed"), ("stair_speed_down", "stairDescentSpeed"),
        ("running_speed", "runningSpeed"), ("running_power", "runningPower"),
        ("running_stride_length", "runningStrideLength"), ("running_vertical_oscillation", "runningVerticalOscillation"),
        ("running_ground_contact_time", "runningGroundContactTime"),
        ("cycling_speed", "cyclingSpeed"), ("cycling_power", "cyclingPower"), ("cycling_cadence", "cyclingCadence"),
        // Hearing and environment
        ("environmental_audio_exposure", "environmentalAudioExposure"),
        ("headphone_audio_exposure", "headphoneAudioExposure"), ("uv_exposure", "uvExposure"),
        // Nutrition
        ("dietary_energy", "dietaryEnergyConsumed"), ("carbohydrates", "dietaryCarbohydrates"),
        ("total_fat", "dietaryFatTotal"), ("saturated_fat", "dietaryFatSaturated"),
        ("monounsaturated_fat", "dietaryFatMonounsaturated"), ("polyunsaturated_fat", "dietaryFatPolyunsaturated"),
        ("protein", "dietaryProtein"), ("dietary_sugar", "dietarySugar"), ("fiber", "dietaryFiber"),
        ("cholesterol", "dietaryCholesterol"), ("sodium", "dietarySodium"), ("potassium", "dietaryPotassium"),
        ("calcium", "dietaryCalcium"), ("iron", "dietaryIron"), ("vitamin_c", "dietaryVitaminC"),
        ("dietary_caffeine", "dietaryCaffeine"), ("dietary_water", "dietaryWater"),
    ]

    /// The HealthKit type ids a metric name is saved as (for share checks before saving).
    public static func typeIDs(forMetric name: String) -> [String]? {
        switch metrics[name] {
        case .quantity(let type)?: return [type]
        case .heartRate?: return ["heartRate"]
        case .bloodPressure?: return ["bloodPressure", "bloodPressureSystolic", "bloodPressureDiastolic"]
        case .sleep?: return ["sleepAnalysis"]
        case .mindful?: return ["mindfulSession"]
        case nil: return nil
        }
    }

    /// Whether healthd maps a metric name.
    public static func isMapped(metric name: String) -> Bool { metrics[name] != nil }

    /// One point of a metric's `data` array. A malformed point (a date that does not parse, a
    /// value that is not a number) throws, naming the field; a well-formed one that HealthKit
    /// would refuse becomes `.invalid`.
    mutating func point(metric name: String, units: String?, _ point: JSONObject) throws(MalformedField) {
        guard let kind = Self.metrics[name] else {
            items.append(.unmapped(name))
            return
        }
        switch kind {
        case .quantity(let typeID):
            try quantityPoint(metric: name, typeID: typeID, units: units, point)
        case .heartRate:
            try heartRatePoint(metric: name, units: units, point)
        case .bloodPressure:
            try bloodPressurePoint(metric: name, units: units, point)
        case .sleep:
            try sleepPoint(metric: name, units: units, point)
        case .mindful:
            try mindfulPoint(metric: name, units: units, point)
        }
    }

    private mutating func quantityPoint(metric: String, typeID: String, units: String?, _ point: JSONObject) throws(MalformedField) {
        guard let type = HealthTypeCatalog.type(typeID) else { return items.append(.unmapped(metric)) }
        let date = try Self.requiredDate(point, "date")
        let quantity = try Self.requiredNumber(point, "qty")
        let start = date.instant
        let end = type.isCumulative ? start + interval.milliseconds : start
        var metadata = commonMetadata(date, source: try Self.optionalString(point, "source"))
        if typeID == "bloodGlucose", let meal = try Self.optionalString(point, "mealTime") {
            // HKBloodGlucoseMealTime: 1 preprandial, 2 postprandial.
            switch meal.lowercased() {
            case "before meal": metadata.append(MetadataEntry(key: "HKBloodGlucoseMealTime", value: .number(1)))
            case "after meal": metadata.append(MetadataEntry(key: "HKBloodGlucoseMealTime", value: .number(2)))
            default: break
            }
        }
        if typeID == "insulinDelivery", let reason = try Self.optionalString(point, "reason") {
            // HKInsulinDeliveryReason: 1 basal, 2 bolus.
            switch reason.lowercased() {
            case "basal": metadata.append(MetadataEntry(key: "HKInsulinDeliveryReason", value: .number(1)))
            case "bolus": metadata.append(MetadataEntry(key: "HKInsulinDeliveryReason", value: .number(2)))
            default: break
            }
        }
        do {
            let value = try Self.canonical(quantity, units: units, for: type)
            try HealthValidation.interval(start: start, end: end, for: type, startField: "date", endField: "date")
            emit(type: type.id, start: start, end: end, content: .quantity(value), source: metadata, metric: metric)
        } catch {
            items.append(.invalid(metric: metric, field: error.field == "value" ? "qty" : error.field, detail: error.detail))
        }
    }

    private mutating func heartRatePoint(metric: String, units: String?, _ point: JSONObject) throws(MalformedField) {
        guard let type = HealthTypeCatalog.type("heartRate") else { return }
        let date = try Self.requiredDate(point, "date")
        // Aggregated points carry Min/Avg/Max; unaggregated ones a plain qty.
        let average: Double
        if let avg = try Self.optionalNumber(point, "Avg") {
            average = avg
        } else if let qty = try Self.optionalNumber(point, "qty") {
            average = qty
        } else {
            throw MalformedField("Avg", "is required (a number), or qty")
        }
        let minimum = try Self.optionalNumber(point, "Min")
        let maximum = try Self.optionalNumber(point, "Max")
        var metadata = commonMetadata(date, source: try Self.optionalString(point, "source"))
        let unitText = try Self.optionalString(point, "units") ?? units
        do {
            let value = try Self.canonical(average, units: unitText, for: type, field: "Avg")
            // The range inside the point, when it is one: HealthKit has no such field, so it is metadata.
            if let minimum, minimum != average {
                metadata.append(MetadataEntry(key: "HealthAutoExportMinimum", value: .number(try Self.canonical(minimum, units: unitText, for: type, field: "Min"))))
            }
            if let maximum, maximum != average {
                metadata.append(MetadataEntry(key: "HealthAutoExportMaximum", value: .number(try Self.canonical(maximum, units: unitText, for: type, field: "Max"))))
            }
            emit(type: type.id, start: date.instant, end: date.instant, content: .quantity(value), source: metadata, metric: metric)
        } catch {
            items.append(.invalid(metric: metric, field: error.field, detail: error.detail))
        }
    }

    private mutating func bloodPressurePoint(metric: String, units: String?, _ point: JSONObject) throws(MalformedField) {
        guard let systolicType = HealthTypeCatalog.type("bloodPressureSystolic"),
              let diastolicType = HealthTypeCatalog.type("bloodPressureDiastolic") else { return }
        let date = try Self.requiredDate(point, "date")
        let systolic = try Self.requiredNumber(point, "systolic")
        let diastolic = try Self.requiredNumber(point, "diastolic")
        let metadata = commonMetadata(date, source: try Self.optionalString(point, "source"))
        let source = Self.sourceName(metadata)
        do {
            let systolicValue = try Self.canonical(systolic, units: units ?? "mmHg", for: systolicType, field: "systolic")
            let diastolicValue = try Self.canonical(diastolic, units: units ?? "mmHg", for: diastolicType, field: "diastolic")
            let instant = date.instant
            let objects = [
                HealthSample(uuid: uuid("bloodPressureSystolic", instant, instant, source, .number(systolicValue)),
                             type: "bloodPressureSystolic", start: instant, end: instant, content: .quantity(systolicValue), metadata: metadata),
                HealthSample(uuid: uuid("bloodPressureDiastolic", instant, instant, source, .number(diastolicValue)),
                             type: "bloodPressureDiastolic", start: instant, end: instant, content: .quantity(diastolicValue), metadata: metadata),
            ]
            let pair = ContentValue.text("\(systolicValue.bitPattern)/\(diastolicValue.bitPattern)")
            let correlation = HealthSample(
                uuid: uuid("bloodPressure", instant, instant, source, pair),
                type: "bloodPressure", start: instant, end: instant, content: .correlation(objects), metadata: metadata)
            recordLegacyUUID(of: correlation.uuid, "bloodPressure", instant, instant, source, pair)
            items.append(.sample(correlation, metric: metric))
        } catch {
            items.append(.invalid(metric: metric, field: error.field, detail: error.detail))
        }
    }

    private mutating func mindfulPoint(metric: String, units: String?, _ point: JSONObject) throws(MalformedField) {
        guard let type = HealthTypeCatalog.type("mindfulSession"), let minutes = HealthUnit.named("min") else { return }
        let date = try Self.requiredDate(point, "date")
        let quantity = try Self.requiredNumber(point, "qty")
        let metadata = commonMetadata(date, source: try Self.optionalString(point, "source"))
        do {
            let unit = try HealthUnit.parse(Self.healthKitUnit(units ?? "min"))
            let duration = try unit.convert(quantity, to: minutes)
            guard duration.isFinite, duration >= 0 else { throw MalformedField("qty", "must be a duration of zero or more") }
            // Bounded before it becomes milliseconds; the type's own limit is checked just below.
            guard duration <= Self.longestNightHours * 60 else {
                throw MalformedField("qty", "must be at most \(Int(Self.longestNightHours) * 60) minutes")
            }
            let end = date.instant + Int64((duration * 60_000).rounded())
            try HealthValidation.interval(start: date.instant, end: end, for: type, startField: "date", endField: "qty")
            emit(type: type.id, start: date.instant, end: end, content: .category("notApplicable"), source: metadata, metric: metric)
        } catch let error as HealthValidationError {
            items.append(.invalid(metric: metric, field: error.field, detail: error.detail))
        } catch let error as MalformedField {
            items.append(.invalid(metric: metric, field: error.field, detail: error.detail))
        } catch {
            items.append(.invalid(metric: metric, field: "units", detail: "'\(units ?? "")' is not a time unit"))
        }
    }

    // MARK: Sleep

    /// Stage names of unaggregated sleep points, lowercased without spaces.
    static let sleepStages: [String: String] = [
        "inbed": "inBed", "asleep": "asleepUnspecified", "unspecified": "asleepUnspecified",
        "asleepunspecified": "asleepUnspecified", "core": "asleepCore", "asleepcore": "asleepCore",
        "deep": "asleepDeep", "asleepdeep": "asleepDeep", "rem": "asleepREM", "asleeprem": "asleepREM", "awake": "awake",
    ]

    private mutating func sleepPoint(metric: String, units: String?, _ point: JSONObject) throws(MalformedField) {
        if point["startDate"] != nil {
            try unaggregatedSleepPoint(metric: metric, point)
        } else {
            try aggregatedSleepPoint(metric: metric, units: units, point)
        }
    }

    /// One stage: `{"startDate","endDate","value":"Core"|...,"source"}` (`stage` is read too).
    private mutating func unaggregatedSleepPoint(metric: String, _ point: JSONObject) throws(MalformedField) {
        let start = try Self.requiredDate(point, "startDate")
        let end = try Self.requiredDate(point, "endDate")
        let valueField = point["value"] != nil ? "value" : "stage"
        guard let stageText = try Self.optionalString(point, valueField) else { throw MalformedField("value", "is required (the sleep stage)") }
        let key = String(stageText.lowercased().filter { $0 != " " && $0 != "_" })
        guard let stage = Self.sleepStages[key] else {
            items.append(.invalid(metric: metric, field: valueField, detail: "'\(stageText)' is not a sleep stage (In Bed, Asleep, Core, Deep, REM, Awake)"))
            return
        }
        let metadata = commonMetadata(start, source: try Self.optionalString(point, "source"))
        category(metric: metric, stage: stage, start.instant, end.instant, metadata)
    }

    /// The longest a night's total or stage may be, in hours (a mindful session too).
    static let longestNightHours = 168.0

    /// A night's totals: `{"date","totalSleep","asleep","core","deep","rem","awake","inBed","sleepStart",
    /// "sleepEnd","inBedStart","inBedEnd","source"}` in the metric's units (hours). The export has no
    /// stage timing, so the stages are laid end to end from `sleepStart` (core, deep, REM, unspecified,
    /// awake): each stage's and the night's durations are exact, their order is not. In-bed time
    /// spans `inBedStart`-`inBedEnd` when given.
    private mutating func aggregatedSleepPoint(metric: String, units: String?, _ point: JSONObject) throws(MalformedField) {
        let unitText = units ?? "hr"
        guard let unit = try? HealthUnit.parse(Self.healthKitUnit(unitText)), let hours = HealthUnit.named("hr"),
              (try? unit.convert(1, to: hours)) != nil else {
            throw MalformedField("units", "'\(unitText)' is not a time unit")
        }
        func duration(_ key: String) throws(MalformedField) -> Int64 {
            guard let value = try Self.optionalNumber(point, key) else { return 0 }
            guard value >= 0, let inHours = try? unit.convert(value, to: hours) else {
                throw MalformedField(key, "must be a duration of zero or more")
            }
            // A night's stage in a week: anything longer is no night (and would not fit the sums).
            guard inHours <= Self.longestNightHours else {
                throw MalformedField(key, "must be at most \(Int(Self.longestNightHours)) hours")
            }
            return Int64((inHours * 3_600_000).rounded())
        }
        let core = try duration("core")
        let deep = try duration("deep")
        let rem = try duration("rem")
        let asleep = try duration("asleep")
        let awake = try duration("awake")
        let inBed = try duration("inBed")
        // With `totalSleep`, `asleep` is sleep of no stage; in older exports `asleep` is the total.
        let unspecified = point["totalSleep"] != nil ? asleep : max(0, asleep - core - deep - rem)
        let sleepStart = try Self.optionalDate(point, "sleepStart")
        let inBedStart = try Self.optionalDate(point, "inBedStart")
        let inBedEnd = try Self.optionalDate(point, "inBedEnd")
        let pointSource = try Self.optionalString(point, "source")
        let sleepSource = try Self.optionalString(point, "sleepSource")
        let source = pointSource ?? sleepSource
        guard let anchor = sleepStart ?? inBedStart else {
            if core + deep + rem + unspecified + awake + inBed > 0 {
                items.append(.invalid(metric: metric, field: "sleepStart", detail: "a night's totals need sleepStart (or inBedStart) to be placed in time"))
            }
            return
        }
        var metadata = commonMetadata(anchor, source: source)
        metadata.append(MetadataEntry(key: "HealthAutoExportAggregatedSleep", value: .bool(true)))
        var cursor = anchor.instant
        for (stage, length) in [("asleepCore", core), ("asleepDeep", deep), ("asleepREM", rem),
                                ("asleepUnspecified", unspecified), ("awake", awake)] where length > 0 {
            category(metric: metric, stage: stage, cursor, cursor + length, metadata)
            cursor += length
        }
        if let inBedStart, let inBedEnd, inBedEnd.instant > inBedStart.instant {
            let inBedSource = try Self.optionalString(point, "inBedSource")
            var inBedMetadata = commonMetadata(inBedStart, source: inBedSource ?? source)
            inBedMetadata.append(MetadataEntry(key: "HealthAutoExportAggregatedSleep", value: .bool(true)))
            category(metric: metric, stage: "inBed", inBedStart.instant, inBedEnd.instant, inBedMetadata)
        } else if inBed > 0 {
            category(metric: metric, stage: "inBed", anchor.instant, anchor.instant + inBed, metadata)
        }
    }

    private mutating func category(metric: String, stage: String, _ start: Int64, _ end: Int64, _ metadata: [MetadataEntry]) {
        category(metric: metric, typeID: "sleepAnalysis", value: stage, start, end, metadata, fields: ("startDate", "endDate"))
    }

    /// A category sample of `typeID` with a case name of its value set, or `.invalid` when its
    /// interval is not one HealthKit would save.
    private mutating func category(metric: String, typeID: String, value: String, _ start: Int64, _ end: Int64,
                                   _ metadata: [MetadataEntry], fields: (start: String, end: String) = ("start", "end")) {
        guard let type = HealthTypeCatalog.type(typeID) else { return items.append(.unmapped(metric)) }
        do {
            try HealthValidation.interval(start: start, end: end, for: type, startField: fields.start, endField: fields.end)
            try HealthValidation.metadata(keyCount: metadata.count)
            emit(type: type.id, start: start, end: end, content: .category(value), source: metadata, metric: metric)
        } catch {
            items.append(.invalid(metric: metric, field: error.field, detail: error.detail))
        }
    }

    // MARK: Newer sections

    /// Sections of `data` besides metrics and workouts that map to HealthKit types, one sample per
    /// entry. Others (`medications`: healthd has no medication dose type; `cycleTracking`) are
    /// counted as unmapped by section name.
    public static let mappedSections: Set<String> = ["symptoms", "heartRateNotifications", "ecg", "stateOfMind"]

    /// One entry of a newer section.
    mutating func sectionEntry(_ section: String, _ entry: JSONObject) throws(MalformedField) {
        switch section {
        case "symptoms": try symptom(entry)
        case "heartRateNotifications": try heartRateNotification(entry)
        case "ecg": try electrocardiogram(entry)
        case "stateOfMind": try stateOfMind(entry)
        default: items.append(.unmapped(section))
        }
    }

    /// Words of a display name as a Swift case name: `Shortness of Breath` → `shortnessOfBreath`,
    /// `Rapid, Pounding, or Fluttering Heartbeat` → `rapidPoundingOrFlutteringHeartbeat`.
    static func caseName(_ text: String) -> String {
        let words = text.split(whereSeparator: { !$0.isLetter && !$0.isNumber })
        return words.enumerated().map { index, word in
            index == 0 ? word.lowercased() : word.prefix(1).uppercased() + word.dropFirst().lowercased()
        }.joined()
    }

    /// The symptom category type a display name stands for (HealthKit's symptom types all take
    /// HKCategoryValueSeverity); nil for a symptom healthd has no type for.
    static func symptomType(_ name: String) -> HealthType? {
        let aliases = ["cough": "coughing", "bodyAndMuscleAches": "generalizedBodyAche", "bodyAche": "generalizedBodyAche",
                       "fever": "fever", "hotFlash": "hotFlashes"]
        let key = caseName(name)
        guard let type = HealthTypeCatalog.type(aliases[key] ?? key), type.kind == .category,
              type.values == HealthValueSets.severity else { return nil }
        return type
    }

    /// `{"name","start","end","severity","userEntered","source"}`: a symptom category sample with
    /// HKCategoryValueSeverity; `userEntered` is HKWasUserEntered.
    private mutating func symptom(_ entry: JSONObject) throws(MalformedField) {
        let metric = "symptoms"
        guard let name = try Self.optionalString(entry, "name") else { throw MalformedField("name", "is required (the symptom, e.g. Headache)") }
        let start = try Self.requiredDate(entry, "start")
        let end = try Self.optionalDate(entry, "end") ?? start
        let severityText = try Self.optionalString(entry, "severity")
        var metadata = commonMetadata(start, source: try Self.optionalString(entry, "source"))
        if let userEntered = try Self.optionalBool(entry, "userEntered") {
            metadata.append(MetadataEntry(key: "HKWasUserEntered", value: .bool(userEntered)))
        }
        guard let type = Self.symptomType(name) else { return items.append(.unmapped("symptoms.\(name)")) }
        let severity: String
        switch severityText.map({ Self.caseName($0).lowercased() }) {
        case nil, "", "unspecified", "present", "notset": severity = "unspecified"
        case "notpresent": severity = "notPresent"
        case "mild": severity = "mild"
        case "moderate": severity = "moderate"
        case "severe": severity = "severe"
        case .some:
            return items.append(.invalid(metric: metric, field: "severity",
                                         detail: "'\(severityText ?? "")' is not a severity (Not Present, Mild, Moderate, Severe, Unspecified)"))
        }
        category(metric: metric, typeID: type.id, value: severity, start.instant, end.instant, metadata)
    }

    /// A threshold at or above this (count/min) is a high heart-rate notification's: the Watch
    /// offers 100-150 for high and 40-50 for low, and the entry does not say which it is.
    static let highHeartRateThresholdFloor = 80.0

    /// `{"start","end","threshold","heartRate":[...],"heartRateVariation":[...]}`: with a threshold,
    /// `highHeartRateEvent` (threshold 80 or more) or `lowHeartRateEvent`, the threshold as
    /// HKHeartRateEventThreshold; without one, `irregularHeartRhythmEvent`. The readings inside are
    /// not stored (the `heart_rate` and `heart_rate_variability` metrics carry them): they are
    /// counted as unmapped `heartRateNotifications.heartRate` and `.heartRateVariation`.
    private mutating func heartRateNotification(_ entry: JSONObject) throws(MalformedField) {
        let metric = "heartRateNotifications"
        let start = try Self.requiredDate(entry, "start")
        let end = try Self.optionalDate(entry, "end") ?? start
        let threshold = try Self.optionalNumber(entry, "threshold")
        var metadata = commonMetadata(start, source: try Self.optionalString(entry, "source"))
        let typeID: String
        if let threshold {
            guard threshold.isFinite, threshold > 0, threshold <= 300 else {
                return items.append(.invalid(metric: metric, field: "threshold", detail: "must be a heart rate (count/min), not \(threshold)"))
            }
            typeID = threshold >= Self.highHeartRateThresholdFloor ? "highHeartRateEvent" : "lowHeartRateEvent"
            metadata.append(MetadataEntry(key: "HKHeartRateEventThreshold", value: .number(threshold)))
        } else {
            typeID = "irregularHeartRhythmEvent"
        }
        category(metric: metric, typeID: typeID, value: "notApplicable", start.instant, end.instant, metadata)
        for key in ["heartRate", "heartRateVariation"] {
            switch entry[key] {
            case nil, .null?: break
            case .array(let readings)?:
                for _ in readings { items.append(.unmapped("\(metric).\(key)")) }
            case let other?: throw MalformedField(key, "must be an array, not \(other.typeDescription)")
            }
        }
    }

    /// The app's ECG classifications, lowercased without spaces, as HKElectrocardiogram.Classification.
    static let electrocardiogramClassifications: [String: String] = [
        "sinusrhythm": "sinusRhythm", "atrialfibrillation": "atrialFibrillation",
        "highheartrate": "inconclusiveHighHeartRate", "inconclusivehighheartrate": "inconclusiveHighHeartRate",
        "lowheartrate": "inconclusiveLowHeartRate", "inconclusivelowheartrate": "inconclusiveLowHeartRate",
        "poorrecording": "inconclusivePoorReading", "poorreading": "inconclusivePoorReading",
        "inconclusivepoorreading": "inconclusivePoorReading", "inconclusive": "inconclusiveOther",
        "inconclusiveother": "inconclusiveOther", "unrecognized": "unrecognized", "notset": "notSet", "": "notSet",
    ]

    /// `{"start","end","classification","averageHeartRate","numberOfVoltageMeasurements",
    /// "samplingFrequency","voltageMeasurements","source"}`: an `electrocardiogram` sample whose value
    /// is the classification; the numbers are metadata `averageHeartRate` (count/min),
    /// `samplingFrequency` (Hz) and `numberOfVoltageMeasurements`. The voltages themselves are not
    /// stored: an ECG that carries them counts one unmapped `ecg.voltageMeasurements`.
    private mutating func electrocardiogram(_ entry: JSONObject) throws(MalformedField) {
        let metric = "ecg"
        let start = try Self.requiredDate(entry, "start")
        let end = try Self.optionalDate(entry, "end") ?? start
        let classificationText = try Self.optionalString(entry, "classification") ?? ""
        let averageHeartRate = try Self.optionalNumber(entry, "averageHeartRate")
        let samplingFrequency = try Self.optionalNumber(entry, "samplingFrequency")
        let count = try Self.optionalNumber(entry, "numberOfVoltageMeasurements")
        var metadata = commonMetadata(start, source: try Self.optionalString(entry, "source"))
        guard let classification = Self.electrocardiogramClassifications[Self.caseName(classificationText).lowercased()] else {
            return items.append(.invalid(metric: metric, field: "classification", detail: "'\(classificationText)' is not an ECG classification"))
        }
        let numbers: [(String, Double?, ClosedRange<Double>)] = [
            ("averageHeartRate", averageHeartRate, 0...300), ("samplingFrequency", samplingFrequency, 0...100_000),
            ("numberOfVoltageMeasurements", count, 0...10_000_000),
        ]
        for (key, value, range) in numbers {
            guard let value else { continue }
            guard value.isFinite, range.contains(value) else {
                return items.append(.invalid(metric: metric, field: key, detail: "\(value) is out of range"))
            }
            metadata.append(MetadataEntry(key: key, value: .number(value)))
        }
        category(metric: metric, typeID: "electrocardiogram", value: classification, start.instant, end.instant, metadata)
        switch entry["voltageMeasurements"] {
        case nil, .null?: break
        case .array(let voltages)?: if !voltages.isEmpty { items.append(.unmapped("ecg.voltageMeasurements")) }
        case let other?: throw MalformedField("voltageMeasurements", "must be an array, not \(other.typeDescription)")
        }
    }

    /// HKStateOfMind.ValenceClassification of a valence in [-1, 1]: seven equal bands, from
    /// veryUnpleasant (below -5/7) to veryPleasant (5/7 and above).
    static func valenceClassification(_ valence: Double) -> String {
        let band = min(6, max(0, Int(((valence + 1) / 2 * 7).rounded(.down))))
        return HealthValueSets.stateOfMindValenceClassification.caseName(forRawValue: band + 1) ?? "neutral"
    }

    /// `{"id","start","end","kind","valence","labels","associations"}`: a `stateOfMind` sample whose
    /// value is the valence's classification; metadata `valence` (-1 to 1), `kind` (dailyMood or
    /// momentaryEmotion), `labels` and `associations` (comma-separated), `HKExternalUUID` = `id`.
    private mutating func stateOfMind(_ entry: JSONObject) throws(MalformedField) {
        let metric = "stateOfMind"
        let start = try Self.requiredDate(entry, "start")
        let end = try Self.optionalDate(entry, "end") ?? start
        guard let valence = try Self.optionalNumber(entry, "valence") else { throw MalformedField("valence", "is required (a number from -1 to 1)") }
        var metadata = commonMetadata(start, source: try Self.optionalString(entry, "source"))
        guard valence.isFinite, (-1...1).contains(valence) else {
            return items.append(.invalid(metric: metric, field: "valence", detail: "\(valence) is not a valence (-1 to 1)"))
        }
        metadata.append(MetadataEntry(key: "valence", value: .number(valence)))
        if let kind = try Self.optionalString(entry, "kind") {
            let key = Self.caseName(kind).lowercased()
            let name = key.contains("emotion") || key == "momentary" ? "momentaryEmotion" : "dailyMood"
            metadata.append(MetadataEntry(key: "kind", value: .string(name)))
        }
        for key in ["labels", "associations"] {
            switch entry[key] {
            case nil, .null?: break
            case .array(let values)?:
                var names: [String] = []
                for (index, value) in values.enumerated() {
                    guard let text = value.stringValue else { throw MalformedField("\(key)[\(index)]", "must be a string, not \(value.typeDescription)") }
                    names.append(Self.caseName(text))
                }
                if !names.isEmpty { metadata.append(MetadataEntry(key: key, value: .string(names.joined(separator: ",")))) }
            case let other?: throw MalformedField(key, "must be an array of strings, not \(other.typeDescription)")
            }
        }
        if let id = try Self.optionalString(entry, "id") { metadata.append(MetadataEntry(key: "HKExternalUUID", value: .string(id))) }
        category(metric: metric, typeID: "stateOfMind", value: Self.valenceClassification(valence), start.instant, end.instant, metadata)
    }

    // MARK: Workouts

    /// One workout, v1 or v2: `name`, `start`, `end`, totals as `{qty, units}` (`activeEnergyBurned`
    /// in v2, `activeEnergy` in v1; `distance`), `heartRateData` points and `route` points.
    /// Heart-rate points become `heartRate` samples (linked to the workout by time, as HealthKit's
    /// are); route points become one `workoutRoute` sample linked to the workout by its uuid.
    mutating func workout(_ workout: JSONObject) throws(MalformedField) {
        let metric = "workouts"
        guard let name = try Self.optionalString(workout, "name") else { throw MalformedField("name", "is required (a string)") }
        let start = try Self.requiredDate(workout, "start")
        let end = try Self.requiredDate(workout, "end")
        let (activityType, indoorFromName) = Self.activityType(name)
        var metadata = commonMetadata(start, source: try Self.optionalString(workout, "source"))
        metadata.append(MetadataEntry(key: "HealthAutoExportName", value: .string(name)))
        if let id = try Self.optionalString(workout, "id") { metadata.append(MetadataEntry(key: "HKExternalUUID", value: .string(id))) }
        if let indoor = try Self.optionalBool(workout, "isIndoor") ?? indoorFromName {
            metadata.append(MetadataEntry(key: "HKIndoorWorkout", value: .bool(indoor)))
        }
        // v2 names the total `activeEnergyBurned` and uses `activeEnergy` for per-minute points.
        let energyField = workout["activeEnergyBurned"]?.objectValue != nil ? "activeEnergyBurned" : "activeEnergy"
        let energy = try Self.total(workout, energyField)
        let distance = try Self.total(workout, "distance")
        let heartRates: [JSONValue]
        switch workout["heartRateData"] {
        case nil, .null?: heartRates = []
        case .array(let points)?: heartRates = points
        case let other?: throw MalformedField("heartRateData", "must be an array, not \(other.typeDescription)")
        }
        let routePoints: [JSONValue]
        switch workout["route"] {
        case nil, .null?: routePoints = []
        case .array(let points)?: routePoints = points
        case let other?: throw MalformedField("route", "must be an array, not \(other.typeDescription)")
        }
        let locations = try Self.routeLocations(routePoints)
        // Malformed heart-rate points fail the payload like any other malformed point.
        var heartRateObjects: [JSONObject] = []
        for (index, point) in heartRates.enumerated() {
            guard let object = point.objectValue else {
                throw MalformedField("heartRateData[\(index)]", "must be an object, not \(point.typeDescription)")
            }
            heartRateObjects.append(object)
        }
        do {
            let type = HealthTypeCatalog.workoutType
            try HealthValidation.interval(start: start.instant, end: end.instant, for: type, startField: "start", endField: "end")
            let energyTotal = try energy.map { (value, units) throws(HealthValidationError) in
                try HealthValidation.workoutTotal(value, unit: Self.healthKitUnit(units), canonicalUnit: HealthTypeCatalog.workoutTotalEnergyBurnedUnit,
                                                  field: energyField)
            }
            let distanceTotal = try distance.map { (value, units) throws(HealthValidationError) in
                try HealthValidation.workoutTotal(value, unit: Self.healthKitUnit(units), canonicalUnit: HealthTypeCatalog.workoutTotalDistanceUnit,
                                                  field: "distance")
            }
            try HealthValidation.metadata(keyCount: metadata.count)
            let details = WorkoutDetails(activityType: activityType, totalEnergyBurned: energyTotal, totalDistance: distanceTotal)
            let workoutUUID = emit(type: type.id, start: start.instant, end: end.instant, content: .workout(details), source: metadata,
                                   metric: metric)
            if !locations.isEmpty { route(locations, workout: workoutUUID, metadata: metadata.filter { $0.key == "HKTimeZone" || $0.key == "HealthAutoExportSource" }) }
        } catch {
            items.append(.invalid(metric: metric, field: error.field, detail: error.detail))
            // A route belongs to a saved workout: without one it is not stored either.
            if !locations.isEmpty { items.append(.invalid(metric: "workouts.route", field: "route", detail: "its workout is invalid")) }
        }
        for (index, point) in heartRateObjects.enumerated() {
            do throws(MalformedField) {
                try heartRatePoint(metric: "workouts.heartRateData", units: "count/min", point)
            } catch {
                throw MalformedField("heartRateData[\(index)].\(error.field)", error.detail)
            }
        }
    }

    /// A workout's `route` points (`{latitude, longitude, altitude, course, speed,
    /// horizontalAccuracy, verticalAccuracy, timestamp}`, CLLocation's fields) as locations in
    /// time order. CLLocation writes -1 for an unknown speed, course or accuracy: those become nil.
    static func routeLocations(_ points: [JSONValue]) throws(MalformedField) -> [WorkoutRouteLocation] {
        var locations: [WorkoutRouteLocation] = []
        locations.reserveCapacity(points.count)
        for (index, point) in points.enumerated() {
            guard let object = point.objectValue else {
                throw MalformedField("route[\(index)]", "must be an object, not \(point.typeDescription)")
            }
            do throws(MalformedField) {
                let dateKey = object["timestamp"] != nil ? "timestamp" : "date"
                let date = try requiredDate(object, dateKey)
                func known(_ key: String) throws(MalformedField) -> Double? {
                    guard let value = try optionalNumber(object, key), value >= 0 else { return nil }
                    return value
                }
                // Version 1 spells the coordinates `lat` and `lon`.
                let latitudeKey = object["latitude"] == nil && object["lat"] != nil ? "lat" : "latitude"
                let longitudeKey = object["longitude"] == nil && object["lon"] != nil ? "lon" : "longitude"
                locations.append(WorkoutRouteLocation(
                    date: date.instant, latitude: try requiredNumber(object, latitudeKey), longitude: try requiredNumber(object, longitudeKey),
                    altitude: try optionalNumber(object, "altitude"), speed: try known("speed"), course: try known("course"),
                    horizontalAccuracy: try known("horizontalAccuracy"), verticalAccuracy: try known("verticalAccuracy")))
            } catch {
                throw MalformedField("route[\(index)].\(error.field)", error.detail)
            }
        }
        // HKWorkoutRouteBuilder takes locations in any order; the route keeps them in time order.
        if zip(locations, locations.dropFirst()).contains(where: { $0.date > $1.date }) {
            locations = locations.enumerated().sorted { ($0.element.date, $0.offset) < ($1.element.date, $1.offset) }.map(\.element)
        }
        return locations
    }

    /// The workout's route: one `workoutRoute` sample from its first location to its last, linked
    /// to the workout by uuid. Invalid when a location is off the globe or out of range.
    private mutating func route(_ locations: [WorkoutRouteLocation], workout: HealthUUID, metadata: [MetadataEntry]) {
        let metric = "workouts.route"
        guard let first = locations.first?.date, let last = locations.last?.date else { return }
        do {
            try HealthValidation.interval(start: first, end: last, for: HealthTypeCatalog.workoutRouteType, startField: "route", endField: "route")
            try HealthValidation.workoutRoute(locations, start: first, end: last, field: "route")
            let route = WorkoutRoute(workout: workout, locations: locations)
            emit(type: HealthTypeCatalog.workoutRouteType.id, start: first, end: last, content: .workoutRoute(route), source: metadata,
                 metric: metric)
        } catch {
            items.append(.invalid(metric: metric, field: error.field, detail: error.detail))
        }
    }

    /// The app's workout names ("Outdoor Run", "Traditional Strength Training") as
    /// HKWorkoutActivityType case names, and whether the name says indoor or outdoor.
    static func activityType(_ name: String) -> (String, Bool?) {
        var words = name.split(whereSeparator: { $0 == " " || $0 == "_" || $0 == "-" }).map { String($0) }
        var indoor: Bool?
        if let first = words.first?.lowercased(), words.count > 1 {
            if first == "indoor" { indoor = true; words.removeFirst() } else if first == "outdoor" { indoor = false; words.removeFirst() }
        }
        let joined = words.map { $0.lowercased() }.joined(separator: " ")
        let aliases: [String: String] = [
            "run": "running", "walk": "walking", "cycle": "cycling", "bike": "cycling", "swim": "swimming",
            "pool swim": "swimming", "open water swim": "swimming", "hike": "hiking", "hiit": "highIntensityIntervalTraining",
            "rower": "rowing", "row": "rowing", "strength training": "traditionalStrengthTraining",
            "stair stepper": "stairClimbing", "wheelchair walk pace": "wheelchairWalkPace",
            "wheelchair run pace": "wheelchairRunPace", "multisport": "swimBikeRun", "dance": "dance",
        ]
        if let alias = aliases[joined] { return (alias, indoor) }
        let camel = words.enumerated().map { index, word in
            index == 0 ? word.lowercased() : word.prefix(1).uppercased() + word.dropFirst().lowercased()
        }.joined()
        if let caseName = HealthValueSets.workoutActivityType.caseName(for: camel) { return (caseName, indoor) }
        return ("other", indoor)
    }

    // MARK: Shared parts

    /// A `{qty, units}` total; nil when absent.
    private static func total(_ object: JSONObject, _ key: String) throws(MalformedField) -> (Double, String)? {
        switch object[key] {
        case nil, .null?: return nil
        case .object(let total)?:
            guard let qty = total["qty"]?.numberValue else { throw MalformedField("\(key).qty", "is required (a number)") }
            guard let units = total["units"]?.stringValue else { throw MalformedField("\(key).units", "is required (a string)") }
            return (qty, units)
        case let other?:
            throw MalformedField(key, "must be an object {qty, units}, not \(other.typeDescription)")
        }
    }

    /// The app's unit spellings in HKUnit syntax.
    static func healthKitUnit(_ units: String) -> String {
        switch units {
        case "bpm", "BPM", "count/min", "beats/min": return "count/min"
        case "mph": return "mi/hr"
        case "km/h", "kph": return "km/hr"
        case "ml": return "mL"
        case "ml/(kg·min)", "ml/(kg*min)", "ml/kg/min", "mL/kg/min", "ml/kg·min": return "mL/(kg·min)"
        case "ml/min": return "mL/min"
        case "L/min", "l/min": return "L/min"
        case "h", "hrs", "hours": return "hr"
        case "sec": return "s"
        case "dB", "dBA": return "dBASPL"
        case "kcal/hr·kg", "MET", "kcal/(kg·hr)": return units
        default: return units
        }
    }

    /// A value in the type's canonical unit. The app writes percentages as shown (97 for 97 %),
    /// HealthKit as fractions (0.97), so `%` values are divided by 100. The app always sends a
    /// metric's `units`; without them the point is invalid, not read in the canonical unit (a body
    /// mass of 150 could be pounds).
    private static func canonical(_ value: Double, units: String?, for type: HealthType, field: String = "qty")
        throws(HealthValidationError) -> Double {
        guard let units else { throw HealthValidation.missingUnit(for: type, field: "units") }
        let unitText = healthKitUnit(units)
        let scaled = unitText == "%" ? value / 100 : value
        do {
            return try HealthValidation.quantity(scaled, unitString: unitText, for: type, field: field, unitField: "units")
        } catch {
            guard error.reason == .valueOutOfRange || error.reason == .valueNegative || error.reason == .valueNotFinite else { throw error }
            throw HealthValidationError(field: field, reason: error.reason, detail: "\(value) \(units): \(error.detail)")
        }
    }

    /// Metadata every sample carries: the date's offset (HKTimeZone, so a reader can rebuild the
    /// user's local day) and the app's per-point `source`.
    private mutating func commonMetadata(_ date: HealthAutoExportDate, source: String?) -> [MetadataEntry] {
        let zone: String
        if let known = zoneNames[date.offsetSeconds] {
            zone = known
        } else {
            zone = date.timeZoneName
            zoneNames[date.offsetSeconds] = zone
        }
        var metadata = [MetadataEntry(key: "HKTimeZone", value: .string(zone))]
        if let source, !source.isEmpty { metadata.append(MetadataEntry(key: "HealthAutoExportSource", value: .string(source))) }
        return metadata
    }

    private static func sourceName(_ metadata: [MetadataEntry]) -> String {
        for entry in metadata where entry.key == "HealthAutoExportSource" {
            if case .string(let name) = entry.value { return name }
        }
        return ""
    }

    @discardableResult
    private mutating func emit(type: String, start: Int64, end: Int64, content: SampleContent, source metadata: [MetadataEntry],
                               metric: String) -> HealthUUID {
        let value: ContentValue
        switch content {
        case .quantity(let number): value = .number(number)
        case .category(let name): value = .text(name)
        case .workout(let details):
            value = .text("\(details.activityType)/\(details.totalEnergyBurned?.bitPattern ?? 0)/\(details.totalDistance?.bitPattern ?? 0)")
        case .correlation: value = .text("")
        case .workoutRoute(let route):
            // The workout (itself content-derived) and the locations' extent identify the route.
            value = .text("\(route.workout.lowercasedString)/\(route.locations.count)")
        }
        let source = Self.sourceName(metadata)
        let sample = HealthSample(uuid: uuid(type, start, end, source, value), type: type, start: start, end: end,
                                  content: content, metadata: metadata)
        if case .workoutRoute(let route) = content, let legacyWorkout = legacyUUIDs?.legacy(of: route.workout) {
            recordLegacyUUID(of: sample.uuid, type, start, end, source, .text("\(legacyWorkout.lowercasedString)/\(route.locations.count)"))
        } else {
            recordLegacyUUID(of: sample.uuid, type, start, end, source, value)
        }
        items.append(.sample(sample, metric: metric))
        return sample.uuid
    }

    enum ContentValue {
        case number(Double)
        case text(String)
    }

    /// A name-based uuid (RFC 9562 version 8) from the sample's identity: user, the saving app,
    /// type, start, end, source and value. The app resends overlapping windows; the same point
    /// gets the same uuid, so the store keeps it once. The first 48 bits are the start (Unix ms,
    /// as in version 7) so inserts land at the end of the PostgreSQL store's (user, uuid) key; the
    /// other 74 bits come from SHA-256 of the fields. With an `app`, the app follows the user in
    /// the key (and the prefix differs), so every app derives its own uuids.
    private mutating func uuid(_ type: String, _ start: Int64, _ end: Int64, _ source: String, _ value: ContentValue,
                               includingApp: Bool = true) -> HealthUUID {
        guard computesUUIDs else { return HealthUUID(high: 0, low: 0) }
        if includingApp, let app {
            contentKey.reset(prefix: "healthd-health-auto-export-app")
            contentKey.append(user)
            contentKey.append(app)
        } else {
            contentKey.reset(prefix: "healthd-health-auto-export")
            contentKey.append(user)
        }
        contentKey.append(type)
        contentKey.append(decimal: start)
        contentKey.append(decimal: end)
        contentKey.append(source)
        switch value {
        case .number(let number): contentKey.append(hex: number.bitPattern)
        case .text(let text): contentKey.append(text)
        }
        return contentKey.uuid(start: start, hash: Self.sha256Words)
    }

    /// Notes the uuid a top-level sample had before uuids included the app.
    private mutating func recordLegacyUUID(of current: HealthUUID, _ type: String, _ start: Int64, _ end: Int64, _ source: String,
                                           _ value: ContentValue) {
        guard computesUUIDs, app != nil, let legacyUUIDs else { return }
        legacyUUIDs.record(current, legacy: uuid(type, start, end, source, value, includingApp: false))
    }

    /// The first 128 bits of SHA-256, as two big-endian words.
    private static func sha256Words(_ bytes: UnsafeRawBufferPointer) -> (UInt64, UInt64) {
        // The key's storage is an [UInt8]: bound to UInt8, so SHA-256 takes it without a copy.
        let digest = SHA256.hash(bytes.assumingMemoryBound(to: UInt8.self))
        var high: UInt64 = 0
        var low: UInt64 = 0
        for index in 0..<8 { high = high << 8 | UInt64(digest[index]) }
        for index in 8..<16 { low = low << 8 | UInt64(digest[index]) }
        return (high, low)
    }

    // MARK: Field readers

    static func requiredDate(_ object: JSONObject, _ key: String) throws(MalformedField) -> HealthAutoExportDate {
        guard let date = try optionalDate(object, key) else { throw MalformedField(key, "is required (a date 'yyyy-MM-dd HH:mm:ss Z')") }
        return date
    }

    static func optionalDate(_ object: JSONObject, _ key: String) throws(MalformedField) -> HealthAutoExportDate? {
        guard let text = try optionalString(object, key) else { return nil }
        guard let date = HealthAutoExportDate(text) else {
            throw MalformedField(key, "'\(text)' is not a date 'yyyy-MM-dd HH:mm:ss Z' (e.g. 2024-02-06 07:00:00 -0800, or 2024-02-06 7:00:00 am -0800 from a 12-hour phone)")
        }
        return date
    }

    static func requiredNumber(_ object: JSONObject, _ key: String) throws(MalformedField) -> Double {
        guard let number = try optionalNumber(object, key) else { throw MalformedField(key, "is required (a number)") }
        return number
    }

    static func optionalNumber(_ object: JSONObject, _ key: String) throws(MalformedField) -> Double? {
        switch object[key] {
        case nil, .null?: return nil
        case .number(let number)?: return number
        case let other?: throw MalformedField(key, "must be a number, not \(other.typeDescription)")
        }
    }

    static func optionalString(_ object: JSONObject, _ key: String) throws(MalformedField) -> String? {
        switch object[key] {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case let other?: throw MalformedField(key, "must be a string, not \(other.typeDescription)")
        }
    }

    static func optionalBool(_ object: JSONObject, _ key: String) throws(MalformedField) -> Bool? {
        switch object[key] {
        case nil, .null?: return nil
        case .bool(let flag)?: return flag
        case let other?: throw MalformedField(key, "must be true or false, not \(other.typeDescription)")
        }
    }
}

/// The uuids samples had before content uuids included the saving app, by their uuid now: samples
/// stored then keep their uuids, and a re-send by the same app must find them. The ingest takes
/// each entry as it saves the sample, so the table holds about one batch.
public final class LegacyContentUUIDs {
    private var legacyByCurrent: [HealthUUID: HealthUUID] = [:]

    public init() {}

    func record(_ current: HealthUUID, legacy: HealthUUID) { legacyByCurrent[current] = legacy }

    func legacy(of current: HealthUUID) -> HealthUUID? { legacyByCurrent[current] }

    /// The legacy uuid of a sample, removed from the table.
    public func take(_ current: HealthUUID) -> HealthUUID? { legacyByCurrent.removeValue(forKey: current) }

    public var count: Int { legacyByCurrent.count }
}

/// A date as the app writes it, `2024-02-06 07:00:00 -0800` or, from a 12-hour phone,
/// `2024-02-06 7:00:00 am -0800` (`HealthDate.parseHealthAutoExportDate`): the instant and its
/// UTC offset.
public struct HealthAutoExportDate: Sendable, Hashable {
    public let instant: HealthInstant
    public let offsetSeconds: Int

    public init?(_ text: String) {
        guard let parsed = HealthDate.parseHealthAutoExportDate(text) else { return nil }
        instant = parsed.instant
        offsetSeconds = parsed.offsetSeconds
    }

    /// `GMT-0800`: the name NSTimeZone gives a fixed offset, which HKTimeZone metadata accepts.
    public var timeZoneName: String {
        let magnitude = abs(offsetSeconds) / 60
        let hours = magnitude / 60
        let minutes = magnitude % 60
        return "GMT" + (offsetSeconds < 0 ? "-" : "+") + (hours < 10 ? "0" : "") + String(hours) + (minutes < 10 ? "0" : "") + String(minutes)
    }
}
