import Foundation
import HTTP
import HealthModel
import HealthStore
import JSON
import Statistics
import TimeZoneDatabase

/// The dashboard's period summary and HKActivitySummary (docs/api.md, Statistics), computed through the
/// same cached indexes and source merging as the statistics endpoints.
struct SummaryRoutes: Sendable {
    let data: HealthData

    /// At most this many days per activity-summaries request.
    static let maximumSummaryDays: Int64 = 1_000

    enum Period: String, CaseIterable {
        case day, week, month, year
    }

    /// The figures a summary reports, with the unit each is written in.
    static let summaryFigures: [(field: String, type: String, unit: HealthUnit)] = [
        ("steps", "stepCount", .count),
        ("distance", "distanceWalkingRunning", .meter),
        ("exerciseTime", "appleExerciseTime", .minute),
        ("activeEnergy", "activeEnergyBurned", .kilocalorie),
    ]

    static func register(into router: inout Router<Route>, data: HealthData) {
        let routes = SummaryRoutes(data: data)
        router.register(.get, "/v1/summary", Route(access: .token, handler: routes.summary))
        router.register(.get, "/v1/activity-summaries", Route(access: .token, handler: routes.listActivitySummaries))
        router.register(.put, "/v1/activity-goals", Route(access: .admin, handler: routes.setActivityGoals))
    }

    /// `GET /v1/summary`: the day's (or week's, month's, year's) totals of steps, distance, exercise time and active energy in a time zone.
    func summary(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let app = try context.app()
        let day = try Self.requiredDay(&context.query, "date")
        let zone = try context.query.string("timeZone")
        let periodText = try context.query.string("period") ?? Period.day.rawValue
        try context.query.rejectUnknown()
        guard let period = Period(rawValue: periodText) else {
            throw APIError.invalidField("period", "must be day, week, month or year, not '\(periodText)'")
        }
        let calendar = try Self.bucketCalendar(zone)
        let (firstDay, dayCount) = Self.periodDays(containing: day, period: period)
        let start = try Self.localMidnight(firstDay, calendar)
        let end = try Self.localMidnight(firstDay + dayCount, calendar)
        let interval = [CalendarBucket(start: start, end: end, startOffsetSeconds: calendar.offsetSeconds(at: start),
                                       endOffsetSeconds: calendar.offsetSeconds(at: end))]
        var totals: [String: Double] = [:]
        for figure in Self.summaryFigures {
            guard let type = HealthTypeCatalog.type(figure.type) else { continue }
            let answer = try statisticsCall { try data.app(app).statistics(type, buckets: interval, options: .cumulativeSum) }
                .first
            let sum = answer?.figures.sum ?? 0
            totals[figure.field] = try Self.convert(sum, type: type, to: figure.unit)
        }
        let distance = totals["distance"] ?? 0
        var pace: Double?
        if distance > 0, let distanceType = HealthTypeCatalog.type("distanceWalkingRunning") {
            let covered = try storeCall {
                try data.app(app).coveredDuration(type: distanceType, start: start, end: end)
            }
            pace = FigureRounding.significant(Double(covered) / 1000 / distance)
        }
        // Days not yet begun do not dilute the average: today counts, tomorrow does not.
        let today = Self.localDay(of: StoreClock.nowMilliseconds(), calendar)
        let elapsedDays = max(1, min(dayCount, today - firstDay + 1))
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.field("date", day.description)
            writer.field("period", period.rawValue)
            writer.field("timeZone", zone ?? "UTC")  // as asked; Foundation on Linux names UTC "GMT"
            writer.field("start", RFC3339.format(start, offsetSeconds: Int(calendar.offsetSeconds(at: start))))
            writer.field("end", RFC3339.format(end, offsetSeconds: Int(calendar.offsetSeconds(at: end))))
            writer.field("days", elapsedDays)
            func figures(divisor: Double) {
                for figure in Self.summaryFigures { writer.field(figure.field, FigureRounding.significant((totals[figure.field] ?? 0) / divisor)) }
                writer.field("averagePace", pace)
            }
            figures(divisor: 1)
            writer.key("dailyAverage")
            writer.beginObject()
            figures(divisor: Double(elapsedDays))
            writer.endObject()
            writer.endObject()
        }
    }

    /// `GET /v1/activity-summaries`: one activity summary (rings and goals) per day from start to end (HKActivitySummary).
    func listActivitySummaries(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let app = try context.app()
        let first = try Self.requiredDay(&context.query, "start")
        let last = try Self.requiredDay(&context.query, "end")
        let zone = try context.query.string("timeZone")
        try context.query.rejectUnknown()
        guard last.daysSinceEpoch >= first.daysSinceEpoch else { throw APIError.invalidField("end", "is before start") }
        let dayCount = last.daysSinceEpoch - first.daysSinceEpoch + 1
        guard dayCount <= Self.maximumSummaryDays else {
            throw APIError.invalidField("end", "at most \(Self.maximumSummaryDays) days per request")
        }
        let calendar = try Self.bucketCalendar(zone)
        var midnights: [Int64] = []
        for offset in 0...dayCount { midnights.append(try Self.localMidnight(first.daysSinceEpoch + offset, calendar)) }
        // A day a zone skipped (Pacific/Apia, 2011-12-30) has no time: no bucket, zero figures.
        var buckets: [CalendarBucket] = []
        var bucketOfDay: [Int?] = []
        for index in 0..<Int(dayCount) {
            let start = midnights[index], end = midnights[index + 1]
            if end > start {
                bucketOfDay.append(buckets.count)
                buckets.append(CalendarBucket(start: start, end: end, startOffsetSeconds: calendar.offsetSeconds(at: start),
                                              endOffsetSeconds: calendar.offsetSeconds(at: end)))
            } else {
                bucketOfDay.append(nil)
            }
        }
        let energy = try Self.dailySums(data: data, app: app, type: "activeEnergyBurned", unit: .kilocalorie, buckets: buckets)
        let exercise = try Self.dailySums(data: data, app: app, type: "appleExerciseTime", unit: .minute, buckets: buckets)
        let stood = try Self.stoodHours(data: data, app: app, start: midnights[0], end: midnights[Int(dayCount)],
                                   firstDay: first.daysSinceEpoch, calendar: calendar)
        let goals = try storeCall { try data.app(app).activityGoals() }
        // A day imported from Apple Health keeps the goals the user had that day.
        let imported = try storeCall { try data.app(app).activitySummaries(from: first, through: last) }
        let importedByDay = Dictionary(imported.map { ($0.day.daysSinceEpoch, $0) }, uniquingKeysWith: { _, later in later })
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.key("summaries")
            writer.beginArray()
            for index in 0..<Int(dayCount) {
                let bucket = bucketOfDay[index]
                let day = first.daysSinceEpoch + Int64(index)
                let dayGoals = importedByDay[day]
                writer.beginObject()
                writer.field("date", HealthDay(daysSinceEpoch: day).description)
                writer.field("activeEnergyBurned", bucket.map { energy[$0] } ?? 0)
                writer.field("activeEnergyBurnedGoal", dayGoals?.activeEnergyBurnedGoal ?? goals.activeEnergyBurned)
                writer.field("appleExerciseTime", bucket.map { exercise[$0] } ?? 0)
                writer.field("appleExerciseTimeGoal", dayGoals?.appleExerciseTimeGoal ?? goals.appleExerciseTime)
                writer.field("appleStandHours", stood[index])
                writer.field("appleStandHoursGoal", dayGoals?.appleStandHoursGoal ?? goals.appleStandHours)
                writer.endObject()
            }
            writer.endArray()
            writer.endObject()
        }
    }

    /// `PUT /v1/activity-goals`: sets a user's activity goals.
    func setActivityGoals(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        var body = try RequestBody.json(context.request)
        let fields: [(name: String, range: ClosedRange<Double>)] = [
            ("activeEnergyBurnedGoal", ActivityGoals.activeEnergyBurnedRange), ("appleExerciseTimeGoal", ActivityGoals.appleExerciseTimeRange),
            ("appleStandHoursGoal", ActivityGoals.appleStandHoursRange),
        ]
        let (userKey, values) = try RequestBody.decode { () throws(JSONFieldError) -> (String, [Double?]) in
            let user = try body.requiredString("user")
            var values: [Double?] = []
            for field in fields {
                let value = try body.optionalNumber(field.name)
                if let value, !field.range.contains(value) {
                    throw body.error(field.name, "must be from \(field.range.lowerBound) to \(field.range.upperBound)")
                }
                values.append(value)
            }
            try body.finish()
            return (user, values)
        }
        guard values.contains(where: { $0 != nil }) else {
            throw APIError.invalidArgument("give at least one of activeEnergyBurnedGoal, appleExerciseTimeGoal, appleStandHoursGoal")
        }
        guard let user = try storeCall({ try data.user(idOrName: userKey) }) else {
            throw APIError.invalidField("user", "no user '\(userKey)'")
        }
        // Goals not given keep their current value.
        var goals = try storeCall { try data.person(user).activityGoals() }
        if let value = values[0] { goals.activeEnergyBurned = value }
        if let value = values[1] { goals.appleExerciseTime = value }
        if let value = values[2] { goals.appleStandHours = value }
        let stored = goals
        try storeCall { try data.person(user).setActivityGoals(stored) }
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.field("user", user.id)
            writer.field("activeEnergyBurnedGoal", stored.activeEnergyBurned)
            writer.field("appleExerciseTimeGoal", stored.appleExerciseTime)
            writer.field("appleStandHoursGoal", stored.appleStandHours)
            writer.endObject()
        }
    }

    // MARK: Helpers

    static func requiredDay(_ query: inout QueryParameters, _ name: String) throws(APIError) -> HealthDay {
        let text = try query.requiredString(name)
        guard let day = HealthDate.parseDay(text) else { throw APIError.invalidField(name, "must be a date YYYY-MM-DD, not '\(text)'") }
        guard (1900...2200).contains(day.year) else { throw APIError.invalidField(name, "must lie in years 1900-2200") }
        return day
    }

    static func bucketCalendar(_ zone: String?) throws(APIError) -> BucketCalendar {
        do throws(StatisticsError) { return try BucketCalendar(timeZoneIdentifier: zone) } catch {
            throw APIError.invalidField("timeZone", "\(error.description) (an IANA name such as America/New_York)")
        }
    }

    /// The first day (days since 1970-01-01) and length of the period holding `day`; weeks start on Monday.
    static func periodDays(containing day: HealthDay, period: Period) -> (first: Int64, count: Int64) {
        switch period {
        case .day:
            return (day.daysSinceEpoch, 1)
        case .week:
            // 1970-01-01 was a Thursday: three days after a Monday.
            let sinceMonday = GregorianCalendarMath.floorDivide(day.daysSinceEpoch + 3, 7) * 7 - 3
            return (sinceMonday, 7)
        case .month:
            let first = GregorianCalendarMath.daysSinceEpoch(year: day.year, month: day.month, day: 1)
            return (first, Int64(GregorianCalendarMath.daysInMonth(year: day.year, month: day.month)))
        case .year:
            let first = GregorianCalendarMath.daysSinceEpoch(year: day.year, month: 1, day: 1)
            return (first, GregorianCalendarMath.isLeapYear(day.year) ? 366 : 365)
        }
    }

    /// The instant the civil day `day` begins in the calendar's zone: local noon of that day is found
    /// first (no zone moves its clock by 12 hours), then the start of its local day.
    static func localMidnight(_ day: Int64, _ calendar: BucketCalendar) throws(APIError) -> Int64 {
        let noonUTC = day * GregorianCalendarMath.millisecondsPerDay + 43_200_000
        let localNoon = noonUTC - Int64(calendar.offsetSeconds(at: noonUTC)) * 1000
        do throws(StatisticsError) { return try calendar.startOfDay(containing: localNoon) } catch {
            throw APIError.invalidArgument(error.description)
        }
    }

    /// The civil day (days since 1970-01-01) holding `instant` in the calendar's zone.
    static func localDay(of instant: Int64, _ calendar: BucketCalendar) -> Int64 {
        GregorianCalendarMath.floorDivide(instant + Int64(calendar.offsetSeconds(at: instant)) * 1000,
                                          GregorianCalendarMath.millisecondsPerDay)
    }

    static func convert(_ value: Double, type: HealthType, to unit: HealthUnit) throws(APIError) -> Double {
        guard let canonical = type.canonicalUnit else { return value }
        do throws(HealthUnitError) { return FigureRounding.significant(try canonical.convert(value, to: unit)) } catch {
            throw APIError.internalError(describing: "\(type.id) does not convert to \(unit): \(error)")
        }
    }

    static func dailySums(data: HealthData, app: AppAuthorization, type typeID: String, unit: HealthUnit,
                          buckets: [CalendarBucket]) throws(APIError) -> [Double] {
        guard let type = HealthTypeCatalog.type(typeID), !buckets.isEmpty else { return buckets.map { _ in 0 } }
        let answers = try statisticsCall { try data.app(app).statistics(type, buckets: buckets, options: .cumulativeSum) }
        var sums: [Double] = []
        for answer in answers { sums.append(try convert(answer.figures.sum ?? 0, type: type, to: unit)) }
        return sums
    }

    /// Per day from `firstDay`: the local hours in which an `appleStandHour` sample marked `stood`
    /// starts (HealthKit records one such sample per hour stood). Read privacy as for every read.
    static func stoodHours(data: HealthData, app: AppAuthorization, start: Int64, end: Int64, firstDay: Int64,
                           calendar: BucketCalendar) throws(APIError) -> [Int] {
        let dayCount = Int(max(0, localDay(of: end - 1, calendar) - firstDay + 1))
        var hours = Array(repeating: Set<Int64>(), count: max(dayCount, 1))
        var query = SampleQuery(type: "appleStandHour")
        query.start = start
        query.end = end
        query.strictStartDate = true
        query.limit = 10_000
        while true {
            let page = try storeCall { try data.app(app).samples(query) }
            for stored in page.samples {
                guard case .category(let value) = stored.sample.content, value == "stood" else { continue }
                let local = stored.sample.start + Int64(calendar.offsetSeconds(at: stored.sample.start)) * 1000
                let day = Int(GregorianCalendarMath.floorDivide(local, GregorianCalendarMath.millisecondsPerDay) - firstDay)
                guard day >= 0, day < hours.count else { continue }
                hours[day].insert(GregorianCalendarMath.floorDivide(local, 3_600_000))
            }
            guard let next = page.next else { break }
            query.after = next
        }
        return hours.map(\.count)
    }
}
