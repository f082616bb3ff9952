import Foundation
import HTTP
import HealthModel
import HealthStore
import JSON

/// Training heart-rate zones (pure). Maximum heart rate by Tanaka, Monahan & Seals (2001):
/// 208 - 0.7 x age. Bands are a share of the maximum, or with a resting rate, of the heart-rate
/// reserve (Karvonen 1957): rest + share x (max - rest). Arithmetic is in tenths of a beat so the
/// results never depend on binary rounding; every figure is rounded to a whole beat per minute,
/// halves up, from the unrounded maximum.
public enum HeartRateZones {
    public enum Goal: String, Sendable, CaseIterable {
        case fatBurn, cardio, peak

        /// Lower and upper bound in percent.
        public var percentRange: (low: Int, high: Int) {
            switch self {
            case .fatBurn: return (50, 70)
            case .cardio: return (70, 85)
            case .peak: return (85, 100)
            }
        }
    }

    public enum Method: String, Sendable {
        case karvonen, percentOfMaximum
    }

    public struct Zone: Sendable, Equatable {
        public var maxHeartRate: Int
        public var low: Int
        public var high: Int
        public var method: Method
    }

    /// Ages the formula is used for.
    public static let ages: ClosedRange<Int> = 1...120

    /// Tanaka's maximum in tenths of a beat per minute: 2080 - 7 x age.
    public static func maximumTenths(age: Int) -> Int { 2080 - 7 * age }

    /// The zone for `goal`; `restingHeartRate` (bpm) switches to Karvonen. Nil when the resting
    /// rate is not below the maximum (no reserve to take a share of).
    public static func zone(age: Int, goal: Goal, restingHeartRate: Double?) -> Zone? {
        let maximum = maximumTenths(age: age)
        let (lowPercent, highPercent) = goal.percentRange
        guard let restingHeartRate else {
            return Zone(maxHeartRate: wholeBeats(thousandths: maximum * 100), low: wholeBeats(thousandths: maximum * lowPercent),
                        high: wholeBeats(thousandths: maximum * highPercent), method: .percentOfMaximum)
        }
        guard restingHeartRate.isFinite else { return nil }
        let rest = Int((restingHeartRate * 10).rounded())
        let reserve = maximum - rest
        guard reserve > 0 else { return nil }
        return Zone(maxHeartRate: wholeBeats(thousandths: maximum * 100),
                    low: wholeBeats(thousandths: rest * 100 + reserve * lowPercent),
                    high: wholeBeats(thousandths: rest * 100 + reserve * highPercent), method: .karvonen)
    }

    /// Thousandths of a beat (tenths x percent) to whole beats, halves up.
    static func wholeBeats(thousandths: Int) -> Int { (thousandths + 500).quotientRoundingDown(by: 1000) }

    /// Completed years between a birth date and a day (a birthday counts on the day itself;
    /// 29 February birthdays count on 1 March in other years).
    public static func age(born: HealthDay, on day: HealthDay) -> Int {
        var years = day.year - born.year
        if (day.month, day.day) < (born.month, born.day) { years -= 1 }
        return years
    }
}

extension Int {
    fileprivate func quotientRoundingDown(by divisor: Int) -> Int {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}

/// `GET /v1/heart-rate/zones` (docs/api.md, Heart-rate zones and workout sessions).
struct HeartRateZoneRoutes: Sendable {
    let data: HealthData
    let now: @Sendable () -> Int64

    static let restingHeartRates: ClosedRange<Double> = 20...250

    static func register(into router: inout Router<Route>, data: HealthData,
                         now: @escaping @Sendable () -> Int64 = StoreClock.nowMilliseconds) {
        let routes = HeartRateZoneRoutes(data: data, now: now)
        router.register(.get, "/v1/heart-rate/zones", Route(access: .token, handler: routes.heartRateZone))
    }

    /// `GET /v1/heart-rate/zones`: the heart-rate zone of a goal, from the given age or the user's characteristics.
    func heartRateZone(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let givenAge = try context.query.integer("age", in: HeartRateZones.ages)
        let goalText = try context.query.requiredString("goal")
        guard let goal = HeartRateZones.Goal(rawValue: goalText) else {
            throw APIError.invalidField("goal", "must be fatBurn, cardio or peak, not '\(goalText)'")
        }
        var givenRest: Double?
        if let text = try context.query.string("restingHeartRate") {
            guard let value = Double(text), value.isFinite, Self.restingHeartRates.contains(value) else {
                throw APIError.invalidField("restingHeartRate", "must be a number of beats per minute from 20 to 250, not '\(text)'")
            }
            givenRest = value
        }
        try context.query.rejectUnknown()
        let app = try context.app()

        let age: Int
        if let givenAge { age = givenAge } else { age = try Self.storedAge(data: data, app: app, today: Self.utcDay(of: now())) }
        let rest: Double?
        if let givenRest { rest = givenRest } else { rest = try Self.latestRestingHeartRate(data: data, app: app) }
        guard let zone = HeartRateZones.zone(age: age, goal: goal, restingHeartRate: rest) else {
            let maximum = Double(HeartRateZones.maximumTenths(age: age)) / 10
            let detail = "a resting heart rate of \(PlainNumber.text(rest ?? 0)) is not below the maximum of \(PlainNumber.text(maximum)) for age \(age)"
            throw APIError.invalidField(givenRest != nil ? "restingHeartRate" : "age", detail)
        }
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.field("maxHeartRate", zone.maxHeartRate)
            writer.field("low", zone.low)
            writer.field("high", zone.high)
            writer.field("method", zone.method.rawValue)
            writer.field("goal", goal.rawValue)
            writer.field("age", age)
            writer.field("restingHeartRate", rest)
            writer.endObject()
        }
    }

    /// The UTC calendar day (days since 1970) holding an instant: a birthday begins at UTC midnight.
    static func utcDay(of instant: Int64) -> Int64 {
        GregorianCalendarMath.floorDivide(instant, GregorianCalendarMath.millisecondsPerDay)
    }

    /// The latest resting rate this token can see: all of the user's when it may read the type,
    /// otherwise only its own samples (read privacy).
    static func latestRestingHeartRate(data: HealthData, app: AppAuthorization) throws(APIError) -> Double? {
        var query = SampleQuery(type: "restingHeartRate")
        query.descending = true
        query.limit = 1
        return try storeCall { try data.app(app).samples(query) }.samples.first?.sample.quantity
    }

    /// The zone from `age`, or else from the stored date of birth, with the stored resting rate;
    /// nil when no age is known (or the resting rate leaves no reserve). For listings that show
    /// time in zone where they can, rather than failing where they cannot.
    static func zoneIfKnown(data: HealthData, app: AppAuthorization, age givenAge: Int?, goal: HeartRateZones.Goal,
                            now: Int64) throws(APIError) -> HeartRateZones.Zone? {
        var age = givenAge
        if age == nil { age = try birthdayAge(data: data, app: app, today: utcDay(of: now)) }
        guard let age, HeartRateZones.ages.contains(age) else { return nil }
        return HeartRateZones.zone(age: age, goal: goal, restingHeartRate: try latestRestingHeartRate(data: data, app: app))
    }

    /// Completed years since the user's `dateOfBirth`, when the token may read it and it is set.
    static func birthdayAge(data: HealthData, app: AppAuthorization, today: Int64) throws(APIError) -> Int? {
        let birth = try storeCall { try data.app(app).characteristics() }
            .first { $0.0 == "dateOfBirth" }.flatMap { HealthDate.parseDay($0.1) }
        return birth.map { HeartRateZones.age(born: $0, on: HealthDay(daysSinceEpoch: today)) }
    }

    /// Age from the user's `dateOfBirth` characteristic, when the token may read it.
    static func storedAge(data: HealthData, app: AppAuthorization, today: Int64) throws(APIError) -> Int {
        guard let age = try birthdayAge(data: data, app: app, today: today) else {
            throw APIError.invalidField("age", "is required (no dateOfBirth this token may read)")
        }
        guard HeartRateZones.ages.contains(age) else {
            throw APIError.invalidField("age", "is required: the stored dateOfBirth gives an age of \(age), outside 1 to 120")
        }
        return age
    }
}

enum PlainNumber {
    /// `60` rather than `60.0` in messages.
    static func text(_ number: Double) -> String {
        if abs(number) < 1e15, Double(Int64(number)) == number { return String(Int64(number)) }
        return String(number)
    }
}
