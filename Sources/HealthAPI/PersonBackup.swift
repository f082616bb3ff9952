import HealthModel
import HealthStore
import JSON

/// A person's settings as their backup carries them (docs/api.md, "People: recent access, own data,
/// erasure" and "Export"): everything besides samples that decides what their queries answer.
/// Never a token or its hash.
///
/// The backup is the sample NDJSON with one more line first, `{"healthdBackup":{...}}`. The source
/// order travels as the order the server used, set or not: without a set order the first app to
/// save a type ranks first, and an import saves in its own order, so only the order itself makes
/// merged statistics come back unchanged.
public struct PersonSettings: Sendable, Equatable {
    public static let lineKey = "healthdBackup"
    public static let formatVersion = 1

    /// The user's apps, oldest source first, with their permissions.
    public var apps: [AppPermissions]
    /// The effective source order of each quantity type that has sources.
    public var sourcePriorities: [TypeOrder]
    /// (characteristic type, value) as stored.
    public var characteristics: [Characteristic]
    public var activityGoals: ActivityGoals
    /// Stored summaries (from an Apple Health import), oldest first.
    public var activitySummaries: [ActivitySummary]

    public struct TypeOrder: Sendable, Equatable {
        public var type: String
        public var order: [String]
        public init(type: String, order: [String]) { self.type = type; self.order = order }
    }

    public struct Characteristic: Sendable, Equatable {
        public var type: String
        public var value: String
        public init(type: String, value: String) { self.type = type; self.value = value }
    }

    public init(apps: [AppPermissions] = [], sourcePriorities: [TypeOrder] = [], characteristics: [Characteristic] = [],
                activityGoals: ActivityGoals = .defaults, activitySummaries: [ActivitySummary] = []) {
        self.apps = apps
        self.sourcePriorities = sourcePriorities
        self.characteristics = characteristics
        self.activityGoals = activityGoals
        self.activitySummaries = activitySummaries
    }

    /// The quantity types whose statistics merge sources by priority.
    static var prioritizedTypes: [HealthType] {
        HealthTypeCatalog.all.filter { $0.kind == .quantity && $0.aggregation != nil }
    }

    /// Every day a stored summary can have, in both stores' date columns.
    static let summaryDays: ClosedRange<HealthDay>? = {
        guard let first = HealthDay(year: 1, month: 1, day: 1), let last = HealthDay(year: 9999, month: 12, day: 31) else { return nil }
        return first ... last
    }()

    /// Reads the user's settings from the store.
    public static func read(from store: any HealthDataStore, user: User) throws -> PersonSettings {
        try read(from: HealthData(store).person(user))
    }

    /// Reads the person's settings through the façade.
    public static func read(from person: PersonHealthData) throws -> PersonSettings {
        var settings = PersonSettings()
        settings.apps = try person.appPermissions()
        for type in prioritizedTypes {
            let order = try person.sourcePriority(type: type)
            if !order.isEmpty { settings.sourcePriorities.append(TypeOrder(type: type.id, order: order)) }
        }
        settings.characteristics = try person.characteristics().map { Characteristic(type: $0.0, value: $0.1) }
        settings.activityGoals = try person.activityGoals()
        if let days = summaryDays {
            settings.activitySummaries = try person.activitySummaries(from: days.lowerBound, through: days.upperBound)
        }
        return settings
    }

    // MARK: Restoring

    /// What a restore changed, for the import's report (empty when everything was already so).
    public struct Changes: Sendable, Equatable {
        public var apps: [String] = []
        public var sourcePriorities: [String] = []
        public var characteristics = false
        public var activityGoals = false
        public var activitySummaries = 0

        public init() {}

        public var isEmpty: Bool {
            apps.isEmpty && sourcePriorities.isEmpty && !characteristics && !activityGoals && activitySummaries == 0
        }
    }

    /// Gives each app its permissions, in the backup's source order, before any sample is saved:
    /// sources are then numbered as on the old server. An app's existing token that already allows as
    /// much is kept; otherwise an authorization is made whose token is never shown (the person or the
    /// admin issues new tokens: secrets never travel).
    public func restoreApps(into store: any HealthDataStore, user: User, changes: inout Changes) throws {
        let existing = Dictionary(try store.appPermissions(userRowID: user.rowID).map { ($0.app, $0) }, uniquingKeysWith: { a, _ in a })
        for app in apps {
            if let current = existing[app.app], app.read.isSubset(of: current.read), app.share.isSubset(of: current.share) { continue }
            _ = try store.appAuthorizationCreatingIfNeeded(user: user, app: app.app, read: app.read, share: app.share)
            changes.apps.append(app.app)
        }
    }

    /// Restores the rest once the samples are in (a source order names apps that saved the type).
    /// Each setting is written only where it differs, so a second import changes nothing.
    public func restoreSettings(into store: any HealthDataStore, user: User, changes: inout Changes) throws {
        for entry in sourcePriorities {
            guard let type = HealthTypeCatalog.type(entry.type), type.kind == .quantity, type.aggregation != nil else { continue }
            guard try store.sourcePriority(userRowID: user.rowID, type: type) != entry.order else { continue }
            try store.setSourcePriority(userRowID: user.rowID, type: type, apps: entry.order)
            changes.sourcePriorities.append(entry.type)
        }
        let currentCharacteristics = try store.characteristics(userRowID: user.rowID).map { Characteristic(type: $0.0, value: $0.1) }
        if currentCharacteristics != characteristics {
            try store.replaceCharacteristics(userRowID: user.rowID, characteristics.map { ($0.type, $0.value) })
            changes.characteristics = true
        }
        if try store.activityGoals(userRowID: user.rowID) != activityGoals {
            try store.setActivityGoals(userRowID: user.rowID, activityGoals)
            changes.activityGoals = true
        }
        if !activitySummaries.isEmpty, let days = Self.summaryDays {
            let stored = Set(try store.activitySummaries(userRowID: user.rowID, from: days.lowerBound, through: days.upperBound))
            let missing = activitySummaries.filter { !stored.contains($0) }
            try store.saveActivitySummaries(missing, userRowID: user.rowID)
            changes.activitySummaries = missing.count
        }
    }

    // MARK: The backup line

    /// `{"healthdBackup":{...}}` and a newline.
    public func line(userName: String) -> [UInt8] {
        var writer = JSONWriter(capacity: 4096)
        writer.beginObject()
        writer.key(Self.lineKey)
        writer.beginObject()
        writer.field("version", Self.formatVersion)
        writer.field("user", userName)
        writer.key("apps")
        writer.beginArray()
        for app in apps {
            writer.beginObject()
            writer.field("app", app.app)
            writer.key("read")
            Self.writeStrings(app.read.sorted(), into: &writer)
            writer.key("share")
            Self.writeStrings(app.share.sorted(), into: &writer)
            writer.endObject()
        }
        writer.endArray()
        writer.key("sourcePriorities")
        writer.beginObject()
        for entry in sourcePriorities {
            writer.key(entry.type)
            Self.writeStrings(entry.order, into: &writer)
        }
        writer.endObject()
        writer.key("characteristics")
        writer.beginObject()
        for characteristic in characteristics { writer.field(characteristic.type, characteristic.value) }
        writer.endObject()
        writer.key("activityGoals")
        writer.beginObject()
        writer.field("activeEnergyBurned", activityGoals.activeEnergyBurned)
        writer.field("appleExerciseTime", activityGoals.appleExerciseTime)
        writer.field("appleStandHours", activityGoals.appleStandHours)
        writer.endObject()
        writer.key("activitySummaries")
        writer.beginArray()
        for summary in activitySummaries {
            writer.beginObject()
            writer.field("date", summary.day.description)
            for (name, value) in Self.summaryFields(summary) {
                if let value { writer.field(name, value) }
            }
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        writer.endObject()
        return writer.bytes + [0x0A]
    }

    private static func writeStrings(_ values: [String], into writer: inout JSONWriter) {
        writer.beginArray()
        for value in values { writer.string(value) }
        writer.endArray()
    }

    static let summaryFieldNames = ["activeEnergyBurned", "activeEnergyBurnedGoal", "appleMoveTime", "appleMoveTimeGoal",
                                    "appleExerciseTime", "appleExerciseTimeGoal", "appleStandHours", "appleStandHoursGoal"]

    static func summaryFields(_ summary: ActivitySummary) -> [(String, Double?)] {
        Array(zip(summaryFieldNames, [summary.activeEnergyBurned, summary.activeEnergyBurnedGoal, summary.appleMoveTime,
                                      summary.appleMoveTimeGoal, summary.appleExerciseTime, summary.appleExerciseTimeGoal,
                                      summary.appleStandHours, summary.appleStandHoursGoal]))
    }

    /// The settings of a backup line's `healthdBackup` object. Unknown types and apps are refused by
    /// name rather than dropped: a restore that silently lost a setting would answer differently.
    public static func decode(_ object: JSONObject) throws(JSONFieldError) -> PersonSettings {
        let prefix = lineKey + "."
        func fail(_ field: String, _ detail: String) -> JSONFieldError { JSONFieldError(field: prefix + field, detail: detail) }
        func strings(_ value: JSONValue?, _ field: String) throws(JSONFieldError) -> [String] {
            guard let items = value?.arrayValue else { throw fail(field, "must be an array of strings") }
            var result: [String] = []
            for item in items {
                guard let text = item.stringValue else { throw fail(field, "must be an array of strings") }
                result.append(text)
            }
            return result
        }
        guard let version = object["version"]?.numberValue, version == Double(formatVersion) else {
            throw fail("version", "must be \(formatVersion) (this healthd reads backups of version \(formatVersion))")
        }
        var settings = PersonSettings()
        for (index, item) in (object["apps"]?.arrayValue ?? []).enumerated() {
            guard let app = item.objectValue, let name = app["app"]?.stringValue, !name.isEmpty else {
                throw fail("apps[\(index)].app", "must be a non-empty string")
            }
            let read = try strings(app["read"], "apps[\(index)].read")
            let share = try strings(app["share"], "apps[\(index)].share")
            for type in read + share where HealthTypeCatalog.type(type) == nil {
                throw fail("apps[\(index)]", "unknown type '\(type)'")
            }
            settings.apps.append(AppPermissions(app: name, read: Set(read), share: Set(share)))
        }
        for member in object["sourcePriorities"]?.objectValue?.members ?? [] {
            guard let type = HealthTypeCatalog.type(member.key), type.kind == .quantity, type.aggregation != nil else {
                throw fail("sourcePriorities.\(member.key)", "not a quantity type with statistics")
            }
            settings.sourcePriorities.append(TypeOrder(type: type.id, order: try strings(member.value, "sourcePriorities.\(member.key)")))
        }
        for member in object["characteristics"]?.objectValue?.members ?? [] {
            guard HealthTypeCatalog.characteristicTypes.contains(where: { $0.id == member.key }), let value = member.value.stringValue else {
                throw fail("characteristics.\(member.key)", "not a characteristic with a string value")
            }
            settings.characteristics.append(Characteristic(type: member.key, value: value))
        }
        if let goals = object["activityGoals"]?.objectValue {
            guard let energy = goals["activeEnergyBurned"]?.numberValue, let exercise = goals["appleExerciseTime"]?.numberValue,
                  let stand = goals["appleStandHours"]?.numberValue else {
                throw fail("activityGoals", "must hold activeEnergyBurned, appleExerciseTime and appleStandHours")
            }
            // The same goals PUT /v1/activity-goals takes: a backup is no way around its limits.
            for (name, value, range) in [("activeEnergyBurned", energy, ActivityGoals.activeEnergyBurnedRange),
                                         ("appleExerciseTime", exercise, ActivityGoals.appleExerciseTimeRange),
                                         ("appleStandHours", stand, ActivityGoals.appleStandHoursRange)] where !range.contains(value) {
                throw fail("activityGoals.\(name)", "must be from \(range.lowerBound) to \(range.upperBound)")
            }
            settings.activityGoals = ActivityGoals(activeEnergyBurned: energy, appleExerciseTime: exercise, appleStandHours: stand)
        }
        for (index, item) in (object["activitySummaries"]?.arrayValue ?? []).enumerated() {
            guard let fields = item.objectValue, let text = fields["date"]?.stringValue, let day = HealthDate.parseDay(text) else {
                throw fail("activitySummaries[\(index)].date", "must be a date YYYY-MM-DD")
            }
            var values: [Double?] = []
            for name in summaryFieldNames {
                switch fields[name] {
                case nil, .null?: values.append(nil)
                case .number(let value)?: values.append(value)
                default: throw fail("activitySummaries[\(index)].\(name)", "must be a number")
                }
            }
            settings.activitySummaries.append(ActivitySummary(
                day: day, activeEnergyBurned: values[0], activeEnergyBurnedGoal: values[1], appleMoveTime: values[2],
                appleMoveTimeGoal: values[3], appleExerciseTime: values[4], appleExerciseTimeGoal: values[5],
                appleStandHours: values[6], appleStandHoursGoal: values[7]))
        }
        return settings
    }
}

/// A person's backup as a stream of NDJSON pages: the settings line, then every sample oldest first
/// (`ExportScope` over the whole user). `healthd export --user` writes it; `GET /v1/me/export` can
/// stream the same bytes for the signed-in person.
public struct PersonBackup: Sendable {
    public let user: User
    public init(user: User) { self.user = user }

    public func forEachPage(from store: any HealthDataStore, _ write: ([UInt8]) throws -> Bool) throws {
        try forEachPage(from: HealthData(store), write)
    }

    /// The same pages through the façade (`GET /v1/me/export`, the admin's `GET /v1/users/{id}/export`).
    public func forEachPage(from data: HealthData, _ write: ([UInt8]) throws -> Bool) throws {
        let settings = try PersonSettings.read(from: data.person(user))
        guard try write(settings.line(userName: user.name)) else { return }
        try ExportScope(.wholeUser(user)).forEachPage(from: data, write)
    }
}
