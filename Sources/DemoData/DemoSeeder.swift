import Foundation
import HealthModel
import HealthStore

/// Saves demo data through the store as the apps `phone` and `watch` (the shell around
/// `DemoDataGenerator`), for `healthd seed` and `healthd serve --demo`.
public enum DemoSeeder {
    /// Per type: samples generated (by app) and how many of them were new to the store.
    public struct TypeSummary: Sendable, Equatable {
        public var type: String
        public var phone: Int
        public var watch: Int
        public var added: Int
    }

    public struct Report: Sendable {
        public var user: User
        /// The zone the days are calendar days of.
        public var timeZone: TimeZone
        public var firstDay: HealthDay
        public var lastDay: HealthDay
        public var types: [TypeSummary]
        public var generated: Int { types.reduce(0) { $0 + $1.phone + $1.watch } }
        public var added: Int { types.reduce(0) { $0 + $1.added } }

        /// One line per type, e.g. `stepCount  6012 samples (phone 2810, watch 3202), 6012 new`.
        public var lines: [String] {
            let width = types.map(\.type.count).max() ?? 0
            return types.map { summary in
                let padding = String(repeating: " ", count: width - summary.type.count)
                return "\(summary.type)\(padding)  \(summary.phone + summary.watch) samples "
                    + "(phone \(summary.phone), watch \(summary.watch)), \(summary.added) new"
            }
        }
    }

    /// The app name of the dashboard's read-only authorization (`serve --demo`).
    public static let dashboardApp = "dashboard"
    /// Everything the dashboard shows, and the date of birth for heart-rate zones.
    public static let dashboardReadTypes: Set<String> = DemoSource.phoneTypes.union(DemoSource.watchTypes)
        .union(["dateOfBirth"])

    /// The user already holds demo samples made in another time zone: the same uuids with other
    /// times. Seeding again would either fail half-way or double every figure, so it stops first.
    public struct OtherTimeZone: Error, CustomStringConvertible, Sendable {
        public var user: String
        public var timeZone: String
        public var description: String {
            "user '\(user)' already holds demo data that differs from what this run makes in \(timeZone) "
                + "(made in another time zone, or by another healthd version); seed another user or use a fresh data directory"
        }
    }

    /// Writes the `days` full local days (in `timeZone`) before `today` (the local day, as days
    /// since 1970) for the user named `userName`, creating the user and the apps' authorizations if
    /// missing. With `now` (Unix ms, within `today`), also today so far: the samples of today's
    /// generated day that have ended by then, so a dashboard's "today" and last night's sleep are
    /// not empty; a later rerun adds the rest, since each sample's uuid and content do not depend
    /// on `now`. Saves in batches of at most `batchSize`; a rerun stores nothing twice (same uuids,
    /// same content). Also sets the user's date of birth when no characteristic is set, so
    /// heart-rate zones work without `age`.
    public static func seed(store: any HealthDataStore, userName: String, days: Int, today: Int64, now: Int64? = nil,
                            timeZone: TimeZone = DemoDataGenerator.utc, batchSize: Int = 10_000) throws -> Report {
        let user = try store.userCreatingIfNeeded(name: userName)
        let phone = try store.appAuthorizationCreatingIfNeeded(user: user, app: DemoSource.phoneApp, read: [],
                                                               share: DemoSource.phoneTypes)
        let watch = try store.appAuthorizationCreatingIfNeeded(user: user, app: DemoSource.watchApp, read: [],
                                                               share: DemoSource.watchTypes)
        let generator = DemoDataGenerator(userName: userName, timeZone: timeZone)
        let allTypes = DemoSource.phoneTypes.union(DemoSource.watchTypes).sorted()
        func counts() throws -> [String: Int] {
            var result: [String: Int] = [:]
            for type in allTypes {
                result[type] = try store.sampleCount(userRowID: user.rowID, type: type, app: DemoSource.phoneApp)
                    + store.sampleCount(userRowID: user.rowID, type: type, app: DemoSource.watchApp)
            }
            return result
        }
        let before = try counts()
        var generatedPhone: [String: Int] = [:]
        var generatedWatch: [String: Int] = [:]
        var pendingPhone: [HealthSample] = []
        var pendingWatch: [HealthSample] = []
        let limit = max(1, batchSize)
        func flush(_ pending: inout [HealthSample], by app: AppAuthorization, force: Bool) throws {
            while pending.count >= limit || (force && !pending.isEmpty) {
                let batch = Array(pending.prefix(limit))
                do {
                    _ = try store.save(batch, by: app)
                } catch is SampleConflict {
                    throw OtherTimeZone(user: userName, timeZone: timeZone.identifier)
                }
                pending.removeFirst(batch.count)
            }
        }
        let firstDay = today - Int64(days)
        let todaySoFar = now.map { generator.localDay(of: $0) == today } ?? false
        for day in firstDay...today where day < today || todaySoFar {
            var demo = generator.day(day)
            if day == today, let now {
                demo.phone.removeAll { $0.end > now }
                demo.watch.removeAll { $0.end > now }
            }
            for sample in demo.phone { generatedPhone[sample.type, default: 0] += 1 }
            for sample in demo.watch { generatedWatch[sample.type, default: 0] += 1 }
            pendingPhone += demo.phone
            pendingWatch += demo.watch
            try flush(&pendingPhone, by: phone, force: false)
            try flush(&pendingWatch, by: watch, force: false)
        }
        try flush(&pendingPhone, by: phone, force: true)
        try flush(&pendingWatch, by: watch, force: true)
        let after = try counts()

        if try store.characteristics(userRowID: user.rowID).isEmpty {
            try store.replaceCharacteristics(userRowID: user.rowID, [("dateOfBirth", generator.dateOfBirth.description)])
        }
        let types = allTypes.map { type in
            TypeSummary(type: type, phone: generatedPhone[type] ?? 0, watch: generatedWatch[type] ?? 0,
                        added: (after[type] ?? 0) - (before[type] ?? 0))
        }
        return Report(user: user, timeZone: timeZone, firstDay: HealthDay(daysSinceEpoch: firstDay),
                      lastDay: HealthDay(daysSinceEpoch: todaySoFar ? today : today - 1), types: types)
    }

    /// A fresh read-only token (app `dashboard`) for everything the dashboard shows. It may learn its
    /// own read list (`disclosesRead`): the dashboard is the user's own viewer, and says "not shared
    /// with this app" for a type it may not read instead of showing an empty figure as zero.
    public static func dashboardToken(store: any HealthDataStore, user: User) throws -> String {
        try store.createAuthorization(user: user, app: dashboardApp, read: dashboardReadTypes, share: [], disclosesRead: true).token
    }

    /// The day a dashboard link opens on (`serve --demo` puts it in the link): today from local noon
    /// on, else yesterday. Before noon today holds a night and a morning at most (steps "–", rings
    /// at 0 at 05:00), and a visitor's first look should be a whole day; from noon on today has
    /// enough to show, and is what a visitor expects. The hour is the zone's wall clock, so it
    /// holds on the days the clocks change.
    public static func openingDay(nowMilliseconds: Int64, timeZone: TimeZone = DemoDataGenerator.utc) -> HealthDay {
        let generator = DemoDataGenerator(userName: "", timeZone: timeZone)
        let today = generator.localDay(of: nowMilliseconds)
        let wall = nowMilliseconds + generator.offset(at: nowMilliseconds)
        let sinceMidnight = wall - today * GregorianCalendarMath.millisecondsPerDay
        return HealthDay(daysSinceEpoch: sinceMidnight >= 12 * 3_600_000 ? today : today - 1)
    }

    /// Today in `timeZone`, as days since 1970.
    public static func today(nowMilliseconds: Int64, timeZone: TimeZone = DemoDataGenerator.utc) -> Int64 {
        DemoDataGenerator(userName: "", timeZone: timeZone).localDay(of: nowMilliseconds)
    }
}
