import Crypto
import HTTP
import HealthModel
import HealthStore
import JSON

/// What a workout's heart rate did (pure): HKWorkout's average, minimum and maximum heart rate
/// statistics, and the time spent in a target zone.
public enum WorkoutHeartRate {
    /// A reading stands for the heart rate from its instant until the next reading, but for at most
    /// this long: a watch that stops reading (taken off, out of battery) adds no time to any zone.
    public static let longestHold: Int64 = 5 * 60_000

    public struct Summary: Sendable, Equatable {
        public var average: Double
        public var minimum: Double
        public var maximum: Double
        public var readings: Int
    }

    /// The intervals a workout was active: [start, end) without its paused spells (pause to the
    /// next resume, or to the end). Events outside the workout are ignored.
    public static func activeIntervals(start: Int64, end: Int64, events: [WorkoutEvent]) -> [(start: Int64, end: Int64)] {
        var intervals: [(start: Int64, end: Int64)] = []
        var runningSince: Int64? = start
        for event in events.sorted(by: { $0.date < $1.date }) where event.date >= start && event.date <= end {
            switch event.type {
            case .pause:
                if let since = runningSince, event.date > since { intervals.append((since, event.date)) }
                runningSince = nil
            case .resume:
                if runningSince == nil { runningSince = event.date }
            default:
                continue
            }
        }
        if let since = runningSince, end > since { intervals.append((since, end)) }
        return intervals
    }

    /// Average, minimum and maximum of the readings (bpm) taken within [start, end], as
    /// HealthKit's discrete statistics over the workout; nil without readings.
    public static func summary(_ readings: [(date: Int64, bpm: Double)], start: Int64, end: Int64) -> Summary? {
        let inside = readings.filter { $0.date >= start && $0.date <= end }.map(\.bpm)
        guard let minimum = inside.min(), let maximum = inside.max() else { return nil }
        return Summary(average: inside.reduce(0, +) / Double(inside.count), minimum: minimum, maximum: maximum,
                       readings: inside.count)
    }

    /// Milliseconds of the active intervals during which the held heart rate lay in [low, high].
    public static func timeInZone(_ readings: [(date: Int64, bpm: Double)], active: [(start: Int64, end: Int64)],
                                  low: Double, high: Double) -> Int64 {
        let sorted = readings.sorted { $0.date < $1.date }
        var total: Int64 = 0
        for (index, reading) in sorted.enumerated() where reading.bpm >= low && reading.bpm <= high {
            let next = index + 1 < sorted.count ? sorted[index + 1].date : Int64.max
            let heldUntil = min(next, reading.date + longestHold)
            for interval in active {
                let from = max(reading.date, interval.start), to = min(heldUntil, interval.end)
                if to > from { total += to - from }
            }
        }
        return total
    }
}

/// `GET /v1/workouts`: the workouts in a range, newest first, each with its totals, active
/// duration, heart-rate statistics and time in the target zone (what a fitness app lists).
struct WorkoutRoutes: Sendable {
    let data: HealthData
    let now: @Sendable () -> Int64
    /// Signs the route answer's page cursors.
    let cursorKey: HMACSHA256.Key

    static let maximumWorkouts = 500
    /// Locations one page of a workout's routes holds at most (a route is never split: a page
    /// holds one route at least, and a route holds at most 100,000). Bounds what one request
    /// makes the server build: a page of 16 such routes was a 248 MiB answer.
    static let maximumLocationsPerPage = HealthValidation.maximumRouteLocations
    static let routeCursorKind: UInt8 = 3

    static func register(into router: inout Router<Route>, data: HealthData, now: @escaping @Sendable () -> Int64) {
        let routes = WorkoutRoutes(data: data, now: now, cursorKey: HMACSHA256.Key(data.secret))
        router.register(.get, "/v1/workouts", Route(access: .token, handler: routes.listWorkouts))
        router.register(.get, "/v1/workouts/{uuid}/route", Route(access: .token, handler: routes.workoutRoute))
    }

    /// `GET /v1/workouts/{uuid}/route`: the workout's routes and their locations (HKWorkoutRouteQuery),
    /// a page of at most `maximumLocationsPerPage` locations at a time, with a cursor for the rest.
    func workoutRoute(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let cursorText = try context.query.string("cursor")
        try context.query.rejectUnknown()
        let app = try context.app()
        let uuid = try QueryParsing.uuid(context.parameter("uuid"))
        guard let workout = try storeCall({ try data.app(app).sample(uuid) }),
              case .workout = workout.sample.content else {
            throw APIError.notFound("no workout \(uuid.lowercasedString)")
        }
        var parts = SignedToken.Fingerprint()
        parts.append(app.userID)
        parts.append(uuid.lowercasedString)
        let fingerprint = parts.value
        // Routes are samples of their own, linked by the workout's uuid; they lie within the
        // workout's time (a GPS fix may come a little before the start or after the end, hence
        // a margin), so only the routes around it are read.
        let margin: Int64 = 3_600_000
        var query = SampleQuery(type: HealthTypeCatalog.workoutRouteType.id)
        query.start = workout.sample.start - margin
        query.end = workout.sample.end + margin
        // One route read at a time: each may hold 100,000 locations.
        query.limit = 1
        if let cursorText {
            guard let fields = SignedToken.decode(cursorText, kind: Self.routeCursorKind, fieldCount: 3, key: cursorKey),
                  fields[2] == fingerprint else {
                throw APIError.invalidField("cursor", "is not a cursor of this workout's routes (forged, altered, or from another query)")
            }
            query.after = SampleCursor(start: fields[0], seq: fields[1])
        }
        var routes: [(StoredSample, WorkoutRoute)] = []
        var locations = 0
        var next: SampleCursor?
        reading: while true {
            let page = try storeCall { try data.app(app).samples(query) }
            for stored in page.samples {
                guard case .workoutRoute(let route) = stored.sample.content, route.workout == uuid else { continue }
                if !routes.isEmpty && locations + route.locations.count > Self.maximumLocationsPerPage {
                    // The next page starts with this route.
                    next = query.after
                    break reading
                }
                routes.append((stored, route))
                locations += route.locations.count
            }
            guard let after = page.next else { break }
            query.after = after
        }
        return JSONResponse.write(capacity: 128 * locations + 256) { writer in
            writer.beginObject()
            writer.field("workout", uuid.lowercasedString)
            writer.key("routes")
            writer.beginArray()
            for (stored, route) in routes {
                writer.beginObject()
                writer.field("uuid", stored.sample.uuid.lowercasedString)
                writer.field("start", RFC3339.format(stored.sample.start))
                writer.field("end", RFC3339.format(stored.sample.end))
                writer.field("source", stored.source.app)
                writer.key("locations"); SampleCodec.writeLocations(route.locations, into: &writer)
                writer.endObject()
            }
            writer.endArray()
            writer.key("next")
            if let next {
                writer.string(SignedToken.encode(kind: Self.routeCursorKind, fields: [next.start, next.seq, fingerprint], key: cursorKey))
            } else {
                writer.null()
            }
            writer.endObject()
        }
    }

    /// `GET /v1/workouts`: workouts in a range, newest first, each with its active duration, heart-rate summary and time in the heart-rate zone.
    func listWorkouts(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let range = try StatisticsRoutes.requiredRange(&context.query)
        let limit = try context.query.integer("limit", in: 1...Self.maximumWorkouts) ?? 50
        let givenAge = try context.query.integer("age", in: HeartRateZones.ages)
        let goalText = try context.query.string("goal") ?? HeartRateZones.Goal.fatBurn.rawValue
        guard let goal = HeartRateZones.Goal(rawValue: goalText) else {
            throw APIError.invalidField("goal", "must be fatBurn, cardio or peak, not '\(goalText)'")
        }
        try context.query.rejectUnknown()
        let app = try context.app()

        var query = SampleQuery(type: "workout")
        query.start = range.start
        query.end = range.end
        query.descending = true
        query.limit = limit
        let workouts = try storeCall { try data.app(app).samples(query) }.samples
        // The zone as GET /v1/heart-rate/zones gives it; no age known means no zone, not an error.
        let zone = try HeartRateZoneRoutes.zoneIfKnown(data: data, app: app, age: givenAge, goal: goal, now: now())

        struct Row {
            var stored: StoredSample
            var details: WorkoutDetails
            var activeMilliseconds: Int64
            var heartRate: WorkoutHeartRate.Summary?
            var inZone: Int64?
        }
        var rows: [Row] = []
        for stored in workouts {
            guard case .workout(let details) = stored.sample.content else { continue }
            let sample = stored.sample
            var readingsQuery = SampleQuery(type: "heartRate")
            readingsQuery.start = sample.start
            readingsQuery.end = sample.end
            readingsQuery.limit = 10_000
            var readings: [(date: Int64, bpm: Double)] = []
            while true {
                let page = try storeCall { try data.app(app).samples(readingsQuery) }
                for reading in page.samples {
                    if let bpm = reading.sample.quantity { readings.append((reading.sample.start, bpm)) }
                }
                guard let next = page.next else { break }
                readingsQuery.after = next
            }
            let active = WorkoutHeartRate.activeIntervals(start: sample.start, end: sample.end, events: details.events)
            rows.append(Row(stored: stored, details: details,
                            activeMilliseconds: active.reduce(0) { $0 + $1.end - $1.start },
                            heartRate: WorkoutHeartRate.summary(readings, start: sample.start, end: sample.end),
                            inZone: zone.map { WorkoutHeartRate.timeInZone(readings, active: active, low: Double($0.low),
                                                                             high: Double($0.high)) }))
        }
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.key("zone")
            if let zone {
                writer.beginObject()
                writer.field("goal", goal.rawValue)
                writer.field("low", zone.low)
                writer.field("high", zone.high)
                writer.field("method", zone.method.rawValue)
                writer.endObject()
            } else {
                writer.null()
            }
            writer.key("workouts")
            writer.beginArray()
            for row in rows {
                writer.beginObject()
                writer.field("uuid", row.stored.sample.uuid.lowercasedString)
                writer.field("activityType", row.details.activityType)
                writer.field("start", RFC3339.format(row.stored.sample.start))
                writer.field("end", RFC3339.format(row.stored.sample.end))
                writer.field("duration", FigureRounding.significant(Double(row.activeMilliseconds) / 1000))
                writer.field("totalDistance", row.details.totalDistance)
                writer.field("totalEnergyBurned", row.details.totalEnergyBurned)
                writer.key("heartRate")
                if let heart = row.heartRate {
                    writer.beginObject()
                    writer.field("average", FigureRounding.significant(heart.average))
                    writer.field("minimum", heart.minimum)
                    writer.field("maximum", heart.maximum)
                    writer.field("readings", heart.readings)
                    writer.endObject()
                } else {
                    writer.null()
                }
                writer.field("timeInZone", row.inZone.map { FigureRounding.significant(Double($0) / 1000) })
                writer.field("source", row.stored.source.app)
                writer.endObject()
            }
            writer.endArray()
            writer.endObject()
        }
    }
}
