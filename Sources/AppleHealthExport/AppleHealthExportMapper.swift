import HealthModel

/// Something the Health app's `export.xml` yields, in document order.
public enum AppleHealthImportItem: Sendable, Hashable {
    case sample(SourcedSample)
    /// `Me`: characteristic id -> stored value (`biologicalSex` -> `male`).
    case characteristics([String: String])
    case activitySummary(ActivitySummary)
    case skipped(AppleHealthSkip)
}

/// A record that was not imported, and why.
public struct AppleHealthSkip: Sendable, Hashable {
    /// The element (`Record`, `Workout`, ...).
    public var element: String
    /// The record's type as the export spells it (`HKQuantityTypeIdentifierStepCount`), or the element name.
    public var type: String
    public var reason: String
    public init(element: String, type: String, reason: String) {
        self.element = element
        self.type = type
        self.reason = reason
    }
}

/// The elements of an export the mapper acts on; names are matched as bytes.
public enum AppleHealthElement: Sendable, Hashable {
    case healthData, record, metadataEntry, correlation, workout, workoutActivity, workoutEvent, workoutStatistics
    case activitySummary, me, other

    public init(_ name: UnsafeRawBufferPointer) {
        func `is`(_ candidate: StaticString) -> Bool { XMLTokenizer.equal(name, candidate) }
        switch name.count {
        case 2: self = `is`("Me") ? .me : .other
        case 6: self = `is`("Record") ? .record : .other
        case 7: self = `is`("Workout") ? .workout : .other
        case 10: self = `is`("HealthData") ? .healthData : .other
        case 11: self = `is`("Correlation") ? .correlation : .other
        case 12: self = `is`("WorkoutEvent") ? .workoutEvent : .other
        case 13: self = `is`("MetadataEntry") ? .metadataEntry : .other
        case 15: self = `is`("WorkoutActivity") ? .workoutActivity : (`is`("ActivitySummary") ? .activitySummary : .other)
        case 17: self = `is`("WorkoutStatistics") ? .workoutStatistics : .other
        default: self = .other
        }
    }

    public init(_ name: String) {
        var name = name
        self = name.withUTF8 { AppleHealthElement(UnsafeRawBufferPointer($0)) }
    }

    /// Elements counted as records for progress: each is one thing of the export.
    public var isRecordLike: Bool {
        switch self {
        case .record, .correlation, .workout, .activitySummary, .me: return true
        default: return false
        }
    }
}

/// One attribute value as the mapper reads it, valid only during the call that hands it over:
/// its bytes (references decoded) for parsing in place, or a `String`.
public struct AppleHealthAttributeValue {
    private let raw: UnsafeRawBufferPointer
    private let needsDecoding: Bool

    init(raw: UnsafeRawBufferPointer, needsDecoding: Bool) {
        self.raw = raw
        self.needsDecoding = needsDecoding
    }

    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        guard needsDecoding else { return body(raw) }
        return XMLTokenizer.decodeAttributeValue(raw).withUnsafeBytes(body)
    }

    public var string: String { withBytes { String(decoding: $0, as: UTF8.self) } }

    /// The bytes as written, references not decoded: a cache key as good as the decoded value,
    /// without decoding the (escaped) device strings of every record.
    var undecodedBytes: UnsafeRawBufferPointer { raw }
    var isDecodedAsWritten: Bool { !needsDecoding }
}

/// An element's attributes as the mapper reads them: a tokenizer's start tag (values decoded only
/// when asked for) or, in tests, a dictionary.
public protocol AppleHealthAttributes {
    func value(_ name: StaticString) -> String?
    /// Every attribute in document order: its name's bytes and its value.
    func forEachAttribute(_ body: (_ name: UnsafeRawBufferPointer, _ value: AppleHealthAttributeValue) -> Void)
}

extension XMLStartTag: AppleHealthAttributes {
    public func forEachAttribute(_ body: (_ name: UnsafeRawBufferPointer, _ value: AppleHealthAttributeValue) -> Void) {
        for index in 0..<attributeCount {
            body(attributeName(at: index), AppleHealthAttributeValue(raw: rawValue(at: index), needsDecoding: valueNeedsDecoding(at: index)))
        }
    }
}

extension Dictionary: AppleHealthAttributes where Key == String, Value == String {
    public func value(_ name: StaticString) -> String? { self[name.description] }

    public func forEachAttribute(_ body: (_ name: UnsafeRawBufferPointer, _ value: AppleHealthAttributeValue) -> Void) {
        for (name, value) in self {
            var name = name
            var value = value
            name.withUTF8 { nameBytes in
                value.withUTF8 { valueBytes in
                    body(UnsafeRawBufferPointer(nameBytes), AppleHealthAttributeValue(raw: UnsafeRawBufferPointer(valueBytes), needsDecoding: false))
                }
            }
        }
    }
}

/// The attributes of `Record` and `Correlation` that mapping reads, taken in one pass over the tag:
/// names and units as cached strings, dates parsed in place, the device parsed once per distinct string.
struct RecordAttributes {
    var type: String?
    var value: String?
    var unit: String?
    var sourceName: String?
    /// Nil when missing or not an export date.
    var start: HealthInstant?
    var end: HealthInstant?
    var device: SampleDevice?
}

/// What the mapper remembers across records, keyed by attribute bytes.
struct AttributeCaches {
    var strings = ByteKeyedCache<String>()
    var devices = ByteKeyedCache<SampleDevice?>(slotCountPowerOfTwo: 8)

    mutating func string(_ value: AppleHealthAttributeValue) -> String {
        // Short values are stored inline in a String: nothing to save by caching them.
        if value.isDecodedAsWritten, value.undecodedBytes.count <= 15 { return String(decoding: value.undecodedBytes, as: UTF8.self) }
        return strings.value(for: value.undecodedBytes) { _ in value.string }
    }

    mutating func record(_ attributes: some AppleHealthAttributes) -> RecordAttributes {
        var record = RecordAttributes()
        attributes.forEachAttribute { name, value in
            func `is`(_ candidate: StaticString) -> Bool { XMLTokenizer.equal(name, candidate) }
            switch name.count {
            case 4:
                if `is`("type") { record.type = string(value) } else if `is`("unit") { record.unit = string(value) }
            case 5: if `is`("value") { record.value = string(value) }
            case 6:
                if `is`("device") {
                    record.device = devices.value(for: value.undecodedBytes) { _ in AppleHealthExportMapper.parseDevice(value.string) }
                }
            case 7: if `is`("endDate") { record.end = value.withBytes(Self.date) }
            case 9: if `is`("startDate") { record.start = value.withBytes(Self.date) }
            case 10: if `is`("sourceName") { record.sourceName = string(value) }
            default: break
            }
        }
        return record
    }

    private static func date(_ bytes: UnsafeRawBufferPointer) -> HealthInstant? {
        HealthDate.parseAppleExportDate(utf8: bytes.assumingMemoryBound(to: UInt8.self))
    }
}

/// The pure core of `healthd import`: turns XML element events of an Apple Health export into
/// samples, characteristics and activity summaries. It never fails: a record it cannot map is
/// skipped with a reason. Feed `start`/`end` in document order and drain `items`.
public struct AppleHealthExportMapper {
    public private(set) var items: [AppleHealthImportItem] = []

    private struct OpenRecord {
        var attributes: RecordAttributes
        var metadata: [MetadataEntry] = []
    }

    private struct OpenWorkout {
        var activityType: String
        var sourceName: String?
        var startDate: String?
        var endDate: String?
        var device: String?
        /// Totals from the attributes: (value, unit) text.
        var energy: (String, String)?
        var distance: (String, String)?
        var metadata: [MetadataEntry] = []
        var events: [WorkoutEvent] = []
        /// WorkoutStatistics sums by quantity type, in canonical units (kcal, m).
        var energyFromStatistics: Double?
        var distanceFromStatistics: Double?
    }

    private var record: OpenRecord?
    private var correlation: OpenRecord?
    private var correlationObjects: [HealthSample] = []
    private var correlationSkips = 0
    private var workout: OpenWorkout?
    /// Depth inside `WorkoutActivity` (iOS 16+): its events and statistics count for the workout,
    /// its metadata describes the activity and is not the workout's.
    private var workoutActivityDepth = 0
    private var caches = AttributeCaches()
    /// Catalog types by export name: the catalog lowercases unknown spellings on each lookup.
    private var types: [String: HealthType?] = [:]
    /// The identifying content of a record, hashed into its uuid; kept to reuse its storage.
    private var contentKey = ContentKey()

    public init() {}

    /// Hands over the items produced so far.
    public mutating func drain() -> [AppleHealthImportItem] {
        defer { items.removeAll(keepingCapacity: true) }
        return items
    }

    public mutating func start(_ element: String, _ attributes: [String: String]) {
        start(AppleHealthElement(element), attributes)
    }

    public mutating func end(_ element: String) {
        end(AppleHealthElement(element))
    }

    public mutating func start(_ element: AppleHealthElement, _ attributes: some AppleHealthAttributes) {
        switch element {
        case .record:
            record = OpenRecord(attributes: caches.record(attributes))
        case .metadataEntry:
            guard record != nil || workout != nil || correlation != nil,
                  let key = attributes.value("key"), let value = attributes.value("value") else { return }
            let entry = MetadataEntry(key: key, value: .string(value))
            if record != nil {
                record?.metadata.append(entry)
            } else if workoutActivityDepth > 0 {
                return
            } else if workout != nil {
                workout?.metadata.append(entry)
            } else if correlation != nil {
                correlation?.metadata.append(entry)
            }
        case .correlation:
            correlation = OpenRecord(attributes: caches.record(attributes))
            correlationObjects = []
            correlationSkips = 0
        case .workout:
            func pair(_ value: StaticString, _ unit: StaticString) -> (String, String)? {
                guard let text = attributes.value(value), let unitText = attributes.value(unit) else { return nil }
                return (text, unitText)
            }
            workout = OpenWorkout(activityType: attributes.value("workoutActivityType") ?? "", sourceName: attributes.value("sourceName"),
                                  startDate: attributes.value("startDate"), endDate: attributes.value("endDate"),
                                  device: attributes.value("device"), energy: pair("totalEnergyBurned", "totalEnergyBurnedUnit"),
                                  distance: pair("totalDistance", "totalDistanceUnit"))
            workoutActivityDepth = 0
        case .workoutActivity:
            if workout != nil { workoutActivityDepth += 1 }
        case .workoutEvent:
            guard workout != nil else { return }
            addWorkoutEvent(attributes)
        case .workoutStatistics:
            guard workout != nil else { return }
            addWorkoutStatistics(attributes)
        case .activitySummary:
            mapActivitySummary(attributes)
        case .me:
            mapCharacteristics(attributes)
        case .healthData, .other:
            break
        }
    }

    public mutating func end(_ element: AppleHealthElement) {
        switch element {
        case .record:
            guard let open = record else { return }
            record = nil
            let inCorrelation = correlation != nil
            switch mapRecord(open) {
            case .success(let sample):
                if inCorrelation { correlationObjects.append(sample) } else { emit(sample, open.attributes.sourceName) }
            case .failure(let skip):
                if inCorrelation { correlationSkips += 1 }
                items.append(.skipped(skip))
            }
        case .correlation:
            guard let open = correlation else { return }
            correlation = nil
            mapCorrelation(open)
        case .workoutActivity:
            if workoutActivityDepth > 0 { workoutActivityDepth -= 1 }
        case .workout:
            guard let open = workout else { return }
            workout = nil
            workoutActivityDepth = 0
            mapWorkout(open)
        default:
            break
        }
    }

    private mutating func emit(_ sample: HealthSample, _ sourceName: String?) {
        items.append(.sample(SourcedSample(app: Self.app(sourceName), sample: sample)))
    }

    private static func app(_ sourceName: String?) -> String {
        let name = sourceName ?? ""
        return name.isEmpty ? "Health" : name
    }

    // MARK: Records

    private enum Mapped {
        case success(HealthSample)
        case failure(AppleHealthSkip)
    }

    private mutating func mapRecord(_ open: OpenRecord) -> Mapped {
        let attributes = open.attributes
        let typeName = attributes.type ?? ""
        func skip(_ reason: String) -> Mapped { .failure(AppleHealthSkip(element: "Record", type: typeName, reason: reason)) }
        guard let type = catalogType(typeName), type.kind == .quantity || type.kind == .category else {
            return skip("type not supported by healthd")
        }
        let interval: (start: Int64, end: Int64)
        switch Self.interval(attributes.start, attributes.end, for: type) {
        case .success(let value): interval = value
        case .failure(let reason): return skip(reason)
        }
        guard let valueText = attributes.value else { return skip("no value") }
        let content: SampleContent
        let hashValue: ContentKeyValue
        do {
            if type.kind == .quantity {
                guard let number = Double(valueText) else { return skip("value '\(valueText)' is not a number") }
                // Apple's exports always write a unit; a record without one is skipped, not read in the canonical unit.
                guard let unitText = attributes.unit else { return skip(HealthValidation.missingUnit(for: type).detail) }
                let canonical = try HealthValidation.quantity(number, unitString: unitText, for: type)
                content = .quantity(canonical)
                hashValue = .hex(canonical.bitPattern)
            } else {
                let name: String
                if let raw = Int(valueText) {
                    name = try HealthValidation.categoryValue(rawValue: raw, for: type)
                } else {
                    name = try HealthValidation.categoryValue(valueText, for: type)
                }
                content = .category(name)
                hashValue = .text(name)
            }
            try HealthValidation.metadata(keyCount: open.metadata.count)
        } catch {
            return skip(error.detail)
        }
        let app = Self.app(attributes.sourceName)
        let uuid = contentUUID(type: type.id, app: app, interval: interval, hashValue)
        return .success(HealthSample(uuid: uuid, type: type.id, start: interval.start, end: interval.end, content: content,
                                     metadata: Self.uniqueKeys(open.metadata), device: attributes.device))
    }

    private mutating func mapCorrelation(_ open: OpenRecord) {
        let attributes = open.attributes
        let typeName = attributes.type ?? ""
        func skip(_ reason: String) {
            items.append(.skipped(AppleHealthSkip(element: "Correlation", type: typeName, reason: reason)))
        }
        guard let type = catalogType(typeName), type.kind == .correlation else {
            return skip("type not supported by healthd")
        }
        let interval: (start: Int64, end: Int64)
        switch Self.interval(attributes.start, attributes.end, for: type) {
        case .success(let value): interval = value
        case .failure(let reason): return skip(reason)
        }
        var objects: [HealthSample] = []
        for object in correlationObjects where !objects.contains(where: { $0.uuid == object.uuid }) {
            guard type.allowsObject(ofType: object.type) else {
                return skip("\(type.id) may not hold \(object.type)")
            }
            objects.append(object)
        }
        guard !objects.isEmpty else {
            return skip(correlationSkips > 0 ? "none of its records could be imported" : "no records")
        }
        let app = Self.app(attributes.sourceName)
        let uuid = contentUUID(type: type.id, app: app, interval: interval, nil, objects: objects.map(\.uuid.uuidString).sorted())
        emit(HealthSample(uuid: uuid, type: type.id, start: interval.start, end: interval.end, content: .correlation(objects),
                          metadata: Self.uniqueKeys(open.metadata), device: attributes.device), attributes.sourceName)
    }

    // MARK: Workouts

    private static let eventTypes: [String: WorkoutEventType] = [
        "HKWorkoutEventTypePause": .pause, "HKWorkoutEventTypeResume": .resume, "HKWorkoutEventTypeLap": .lap,
        "HKWorkoutEventTypeMarker": .marker, "HKWorkoutEventTypeSegment": .segment,
        "HKWorkoutEventTypeMotionPaused": .pause, "HKWorkoutEventTypeMotionResumed": .resume,
    ]

    private mutating func addWorkoutEvent(_ attributes: some AppleHealthAttributes) {
        // Types healthd does not model (pause-or-resume requests) are left out of the workout, not fatal.
        guard let type = attributes.value("type").flatMap({ Self.eventTypes[$0] }),
              let date = (attributes.value("date") ?? attributes.value("startDate")).flatMap({ HealthDate.parseAppleExportDate($0) }),
              workout?.events.contains(WorkoutEvent(type: type, date: date)) == false else { return }
        workout?.events.append(WorkoutEvent(type: type, date: date))
    }

    private mutating func addWorkoutStatistics(_ attributes: some AppleHealthAttributes) {
        guard let typeName = attributes.value("type"), let sumText = attributes.value("sum"), let sum = Double(sumText),
              let unit = attributes.value("unit") else { return }
        if typeName == "HKQuantityTypeIdentifierActiveEnergyBurned" {
            let canonical = try? HealthValidation.workoutTotal(sum, unit: unit, canonicalUnit: HealthTypeCatalog.workoutTotalEnergyBurnedUnit,
                                                               field: "totalEnergyBurned")
            if let canonical, var open = workout { open.energyFromStatistics = (open.energyFromStatistics ?? 0) + canonical; workout = open }
        } else if typeName.hasPrefix("HKQuantityTypeIdentifierDistance") {
            let canonical = try? HealthValidation.workoutTotal(sum, unit: unit, canonicalUnit: HealthTypeCatalog.workoutTotalDistanceUnit,
                                                               field: "totalDistance")
            if let canonical, var open = workout { open.distanceFromStatistics = (open.distanceFromStatistics ?? 0) + canonical; workout = open }
        }
    }

    private mutating func mapWorkout(_ open: OpenWorkout) {
        let activityText = open.activityType
        func skip(_ reason: String) {
            items.append(.skipped(AppleHealthSkip(element: "Workout", type: activityText.isEmpty ? "Workout" : activityText,
                                                  reason: reason)))
        }
        let type = HealthTypeCatalog.workoutType
        let interval: (start: Int64, end: Int64)
        switch Self.interval(open.startDate.flatMap { HealthDate.parseAppleExportDate($0) },
                             open.endDate.flatMap { HealthDate.parseAppleExportDate($0) }, for: type) {
        case .success(let value): interval = value
        case .failure(let reason): return skip(reason)
        }
        let details: WorkoutDetails
        do {
            let activity = try HealthValidation.workoutActivityType(activityText, field: "workoutActivityType")
            let energy = try Self.total(open.energy, "totalEnergyBurned", HealthTypeCatalog.workoutTotalEnergyBurnedUnit)
                ?? open.energyFromStatistics
            let distance = try Self.total(open.distance, "totalDistance", HealthTypeCatalog.workoutTotalDistanceUnit)
                ?? open.distanceFromStatistics
            try HealthValidation.metadata(keyCount: open.metadata.count)
            details = WorkoutDetails(activityType: activity, totalEnergyBurned: energy, totalDistance: distance,
                                     events: open.events.sorted { ($0.date, $0.type.rawValue) < ($1.date, $1.type.rawValue) })
        } catch {
            return skip(error.detail)
        }
        let app = Self.app(open.sourceName)
        let uuid = contentUUID(type: type.id, app: app, interval: interval, .text(details.activityType))
        emit(HealthSample(uuid: uuid, type: type.id, start: interval.start, end: interval.end, content: .workout(details),
                          metadata: Self.uniqueKeys(open.metadata), device: device(open.device)), open.sourceName)
    }

    private static func total(_ attribute: (value: String, unit: String)?, _ name: String, _ canonical: HealthUnit)
        throws(HealthValidationError) -> Double? {
        guard let (text, unit) = attribute else { return nil }
        guard let value = Double(text) else {
            throw HealthValidationError(field: name, reason: .valueNotFinite, detail: "\(name) '\(text)' is not a number")
        }
        return try HealthValidation.workoutTotal(value, unit: unit, canonicalUnit: canonical, field: name)
    }

    // MARK: Activity summaries and characteristics

    private mutating func mapActivitySummary(_ attributes: some AppleHealthAttributes) {
        func skip(_ reason: String) {
            items.append(.skipped(AppleHealthSkip(element: "ActivitySummary", type: "ActivitySummary", reason: reason)))
        }
        guard let dayText = attributes.value("dateComponents"), let day = HealthDate.parseDay(dayText) else {
            return skip("dateComponents is missing or not YYYY-MM-DD")
        }
        func number(_ name: StaticString) -> Double? {
            guard let text = attributes.value(name), let value = Double(text), value.isFinite, value >= 0 else { return nil }
            return value
        }
        // Energy may be in any energy unit; healthd keeps kilocalories.
        var energyScale = 1.0
        if let unitText = attributes.value("activeEnergyBurnedUnit") {
            guard let unit = try? HealthUnit.parse(unitText), let scale = try? unit.convert(1, to: .kilocalorie) else {
                return skip("activeEnergyBurnedUnit '\(unitText)' is not an energy unit")
            }
            energyScale = scale
        }
        let summary = ActivitySummary(
            day: day, activeEnergyBurned: number("activeEnergyBurned").map { $0 * energyScale },
            activeEnergyBurnedGoal: number("activeEnergyBurnedGoal").map { $0 * energyScale },
            appleMoveTime: number("appleMoveTime"), appleMoveTimeGoal: number("appleMoveTimeGoal"),
            appleExerciseTime: number("appleExerciseTime"), appleExerciseTimeGoal: number("appleExerciseTimeGoal"),
            appleStandHours: number("appleStandHours"), appleStandHoursGoal: number("appleStandHoursGoal"))
        items.append(.activitySummary(summary))
    }

    private mutating func mapCharacteristics(_ attributes: some AppleHealthAttributes) {
        let prefix = HealthTypeKind.characteristic.identifierPrefix
        var values: [String: String] = [:]
        var pairs: [(name: String, text: String)] = []
        attributes.forEachAttribute { name, value in pairs.append((String(decoding: name, as: UTF8.self), value.string)) }
        for (name, text) in pairs.sorted(by: { $0.name < $1.name }) where !text.isEmpty {
            func skip(_ reason: String) {
                items.append(.skipped(AppleHealthSkip(element: "Me", type: name, reason: reason)))
            }
            guard let type = HealthTypeCatalog.type(name), type.kind == .characteristic else {
                if name.hasPrefix(prefix) { skip("characteristic not supported by healthd") }
                continue
            }
            if type.id == "dateOfBirth" {
                guard HealthDate.parseDay(text) != nil else { skip("'\(text)' is not a date YYYY-MM-DD"); continue }
                values[type.id] = text
            } else if let caseName = type.values?.caseName(for: text) {
                values[type.id] = caseName
            } else {
                skip("'\(text)' is not a value of \(type.id)")
            }
        }
        if !values.isEmpty { items.append(.characteristics(values)) }
    }

    // MARK: Shared parts

    private enum IntervalResult {
        case success((start: Int64, end: Int64))
        case failure(String)
    }

    private static func interval(_ start: HealthInstant?, _ end: HealthInstant?, for type: HealthType) -> IntervalResult {
        guard let start else {
            return .failure("startDate is missing or not 'YYYY-MM-DD HH:MM:SS ±HHMM'")
        }
        guard let end else {
            return .failure("endDate is missing or not 'YYYY-MM-DD HH:MM:SS ±HHMM'")
        }
        do {
            try HealthValidation.interval(start: start, end: end, for: type, startField: "startDate", endField: "endDate")
        } catch {
            return .failure(error.detail)
        }
        return .success((start, end))
    }

    /// HealthKit refuses duplicate metadata keys; the first one wins.
    private static func uniqueKeys(_ metadata: [MetadataEntry]) -> [MetadataEntry] {
        guard metadata.count > 1 else { return metadata }
        var seen: Set<String> = []
        return metadata.filter { seen.insert($0.key).inserted }
    }

    /// The record's value as hashed into its uuid: the canonical quantity's bits in hex, or a name.
    private enum ContentKeyValue {
        case hex(UInt64)
        case text(String)
    }

    /// The content uuid of one record (see the note below): its type, app, interval,
    /// value and, for a correlation, its objects' uuids.
    private mutating func contentUUID(type: String, app: String, interval: (start: Int64, end: Int64), _ value: ContentKeyValue?,
                                      objects: [String] = []) -> HealthUUID {
        contentKey.reset(prefix: "healthd-apple-health-import")
        contentKey.append(type)
        contentKey.append(app)
        contentKey.append(decimal: interval.start)
        contentKey.append(decimal: interval.end)
        switch value {
        case .hex(let bits)?: contentKey.append(hex: bits)
        case .text(let text)?: contentKey.append(text)
        case nil: break
        }
        for object in objects { contentKey.append(object) }
        return contentKey.uuid(start: interval.start, hash: ContentHash.murmur3x64_128)
    }

    // Content uuids (RFC 9562 version 8, see `ContentKey`): like version 7, the first 48 bits are
    // the sample's start (Unix ms): exports list each type's records in time order, so inserts land
    // at the end of the PostgreSQL store's (user, uuid) key instead of at random pages (in a B-tree
    // keyed by uuid, random uuids cost a third of an import's time). The other 74 bits are 128-bit MurmurHash3 (x64) of the content: far faster
    // than SHA-256, and collisions would only matter between records of one user's own export,
    // which is not adversarial.

    /// The catalog type an export name stands for, looked up once per distinct name.
    private mutating func catalogType(_ name: String) -> HealthType? {
        if let known = types[name] { return known }
        let type = HealthTypeCatalog.type(name)
        if types.count < 4096 { types[name] = type }
        return type
    }

    /// `<<HKDevice: 0x283a>, name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch6,1, software:10.1>`.
    private mutating func device(_ text: String?) -> SampleDevice? {
        guard let text, !text.isEmpty else { return nil }
        var utf8 = text
        return utf8.withUTF8 { bytes in caches.devices.value(for: UnsafeRawBufferPointer(bytes)) { _ in Self.parseDevice(text) } }
    }

    static func parseDevice(_ text: String) -> SampleDevice? {
        guard !text.isEmpty else { return nil }
        var body = Substring(text)
        if body.hasPrefix("<<"), let close = body.firstIndex(of: ">") {
            body = body[body.index(after: close)...]
        } else if body.hasPrefix("<") {
            body = body.dropFirst()
        }
        if body.hasSuffix(">") { body = body.dropLast() }
        // Fields are `key:value` joined by ", "; a value may itself hold ", " (a model name), so a piece
        // that does not start with `key:` continues the previous value.
        var fields: [(String, String)] = []
        for piece in Self.split(body, separator: ", ") {
            if let colon = piece.firstIndex(of: ":"), piece[..<colon].allSatisfy({ $0.isLetter }), colon != piece.startIndex {
                fields.append((String(piece[..<colon]), String(piece[piece.index(after: colon)...])))
            } else if let last = fields.indices.last {
                fields[last].1 += ", " + piece
            }
        }
        var device = SampleDevice()
        for (key, rawValue) in fields {
            let value = Self.trimmingSpaces(rawValue)
            guard !value.isEmpty, value != "(null)" else { continue }
            switch key {
            case "name": device.name = value
            case "manufacturer": device.manufacturer = value
            case "model": device.model = value
            case "hardware": device.hardwareVersion = value
            case "software": device.softwareVersion = value
            case "localIdentifier": device.localIdentifier = value
            default: break
            }
        }
        return device.isEmpty ? nil : device
    }

    private static func split(_ text: Substring, separator: String) -> [Substring] {
        var pieces: [Substring] = []
        var rest = text
        while let range = rest.firstRange(of: separator) {
            pieces.append(rest[..<range.lowerBound])
            rest = rest[range.upperBound...]
        }
        pieces.append(rest)
        return pieces
    }

    private static func trimmingSpaces(_ text: String) -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = text.firstIndex(where: { !isSpace($0) }), let last = text.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(text[first...last])
    }
}

/// MurmurHash3, x64 128-bit variant, seed 0.
enum ContentHash {
    private static let c1: UInt64 = 0x87C3_7B91_1142_53D5
    private static let c2: UInt64 = 0x4CF5_AD43_2745_937F

    @inline(__always) private static func rotl(_ value: UInt64, _ count: UInt64) -> UInt64 {
        (value << count) | (value >> (64 - count))
    }

    @inline(__always) private static func finalMix(_ value: UInt64) -> UInt64 {
        var k = value
        k ^= k >> 33
        k &*= 0xFF51_AFD7_ED55_8CCD
        k ^= k >> 33
        k &*= 0xC4CE_B9FE_1A85_EC53
        k ^= k >> 33
        return k
    }

    static func murmur3x64_128(_ data: UnsafeRawBufferPointer) -> (UInt64, UInt64) {
        var h1: UInt64 = 0
        var h2: UInt64 = 0
        let blockCount = data.count / 16
        for block in 0..<blockCount {
            var k1 = UInt64(littleEndian: data.loadUnaligned(fromByteOffset: block * 16, as: UInt64.self))
            var k2 = UInt64(littleEndian: data.loadUnaligned(fromByteOffset: block * 16 + 8, as: UInt64.self))
            k1 &*= c1; k1 = rotl(k1, 31); k1 &*= c2; h1 ^= k1
            h1 = rotl(h1, 27); h1 &+= h2; h1 = h1 &* 5 &+ 0x52DC_E729
            k2 &*= c2; k2 = rotl(k2, 33); k2 &*= c1; h2 ^= k2
            h2 = rotl(h2, 31); h2 &+= h1; h2 = h2 &* 5 &+ 0x3849_5AB5
        }
        let tail = blockCount * 16
        let remaining = data.count - tail
        var k1: UInt64 = 0
        var k2: UInt64 = 0
        if remaining > 8 {
            for index in stride(from: remaining - 1, through: 8, by: -1) { k2 ^= UInt64(data[tail + index]) << UInt64((index - 8) * 8) }
            k2 &*= c2; k2 = rotl(k2, 33); k2 &*= c1; h2 ^= k2
        }
        if remaining > 0 {
            for index in stride(from: min(remaining, 8) - 1, through: 0, by: -1) { k1 ^= UInt64(data[tail + index]) << UInt64(index * 8) }
            k1 &*= c1; k1 = rotl(k1, 31); k1 &*= c2; h1 ^= k1
        }
        h1 ^= UInt64(data.count)
        h2 ^= UInt64(data.count)
        h1 &+= h2
        h2 &+= h1
        h1 = finalMix(h1)
        h2 = finalMix(h2)
        h1 &+= h2
        h2 &+= h1
        return (h1, h2)
    }
}
