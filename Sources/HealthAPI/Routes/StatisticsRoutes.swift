import Foundation
import HTTP
import HealthModel
import HealthStore
import JSON
import Statistics
import TimeZoneDatabase

/// HKStatisticsQuery, HKStatisticsCollectionQuery and source priority (docs/api.md, Statistics).
struct StatisticsRoutes: Sendable {
    let data: HealthData

    /// At most this many buckets per collection query: a year of hours fits, a year of minutes does not.
    static let bucketLimit = 50_000

    static func register(into router: inout Router<Route>, data: HealthData) {
        let routes = StatisticsRoutes(data: data)
        router.register(.get, "/v1/statistics", Route(access: .token, handler: routes.statistics))
        router.register(.get, "/v1/statistics/collection", Route(access: .token, handler: routes.statisticsCollection))
        router.register(.get, "/v1/sources/priority", Route(access: .token, handler: routes.readSourcePriority))
        router.register(.put, "/v1/sources/priority", Route(access: .admin, handler: routes.writeSourcePriority))
    }

    /// `GET /v1/statistics`: one statistics query over a range (HKStatisticsQuery).
    func statistics(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let app = try context.app()
        let type = try Self.quantityType(&context.query)
        let style = try Self.aggregationStyle(type)
        let options = try Self.parseOptions(&context.query, style: style)
        let range = try Self.requiredRange(&context.query)
        let unit = try QueryParsing.unit(&context.query, for: type)
        try context.query.rejectUnknown()
        let interval = CalendarBucket(start: range.start, end: range.end, startOffsetSeconds: 0, endOffsetSeconds: 0)
        guard let answer = try statisticsCall({ try data.app(app).statistics(type, buckets: [interval], options: options) })
            .first else {
            throw APIError.invalidArgument("no interval to compute")
        }
        let output = try UnitOutput(type: type, unit: unit)
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.field("type", type.id)
            writer.field("start", RFC3339.format(range.start))
            writer.field("end", RFC3339.format(range.end))
            writer.field("unit", output.unitString)
            Self.write(answer, options: options, output: output, into: &writer)
            writer.endObject()
        }
    }

    /// `GET /v1/statistics/collection`: statistics per calendar bucket over a range (HKStatisticsCollectionQuery).
    func statisticsCollection(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let app = try context.app()
        let type = try Self.quantityType(&context.query)
        let style = try Self.aggregationStyle(type)
        let options = try Self.parseOptions(&context.query, style: style)
        let range = try Self.requiredRange(&context.query)
        let anchor = try QueryParsing.instant(&context.query, "anchor")
        let intervalText = try context.query.requiredString("interval")
        let zone = try context.query.string("timeZone")
        let unit = try QueryParsing.unit(&context.query, for: type)
        try context.query.rejectUnknown()
        let interval: CalendarInterval
        do throws(StatisticsError) { interval = try CalendarInterval.parse(intervalText) } catch {
            throw APIError.invalidField("interval", error.description)
        }
        let calendar: BucketCalendar
        do throws(StatisticsError) { calendar = try BucketCalendar(timeZoneIdentifier: zone) } catch {
            throw APIError.invalidField("timeZone", "\(error.description) (an IANA name such as America/New_York)")
        }
        let buckets: [CalendarBucket]
        do throws(StatisticsError) {
            let alignment: Int64
            if let anchor { alignment = anchor } else { alignment = try calendar.startOfDay(containing: range.start) }
            buckets = try calendar.buckets(start: range.start, end: range.end, anchor: alignment, interval: interval,
                                           limit: Self.bucketLimit)
        } catch {
            throw APIError.invalidArgument(error.description)
        }
        let answers = try statisticsCall { try data.app(app).statistics(type, buckets: buckets, options: options) }
        let output = try UnitOutput(type: type, unit: unit)
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.field("type", type.id)
            writer.field("unit", output.unitString)
            writer.key("buckets")
            writer.beginArray()
            for (bucket, answer) in zip(buckets, answers) {
                writer.beginObject()
                writer.key(Self.startKey)
                SampleCodec.writeInstant(bucket.start, offsetSeconds: Int(bucket.startOffsetSeconds), into: &writer)
                writer.key(Self.endKey)
                SampleCodec.writeInstant(bucket.end, offsetSeconds: Int(bucket.endOffsetSeconds), into: &writer)
                Self.write(answer, options: options, output: output, into: &writer)
                writer.endObject()
            }
            writer.endArray()
            writer.endObject()
        }
    }

    static let startKey = JSONWriter.Key("start"), endKey = JSONWriter.Key("end")

    /// `GET /v1/sources/priority`: the order in which sources of a type count toward cumulative totals.
    func readSourcePriority(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let app = try context.app()
        let type = try Self.quantityType(&context.query)
        try context.query.rejectUnknown()
        let order = try storeCall { try data.app(app).sourcePriority(type: type) }
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.field("type", type.id)
            writer.key("order")
            AccountRoutes.writeStrings(order, into: &writer)
            writer.endObject()
        }
    }

    /// `PUT /v1/sources/priority`: sets a user's source order for a type.
    func writeSourcePriority(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        var body = try RequestBody.json(context.request)
        let (userKey, typeText, order) = try RequestBody.decode { () throws(JSONFieldError) -> (String, String, [String]) in
            let user = try body.requiredString("user")
            let type = try body.requiredString("type")
            let order = try body.requiredArray("order").strings()
            try body.finish()
            return (user, type, order)
        }
        guard let type = HealthTypeCatalog.type(typeText) else { throw APIError.invalidField("type", "unknown type '\(typeText)'") }
        guard type.kind == .quantity else {
            throw APIError.invalidField("type", "source priority applies to quantity types; \(type.id) is a \(type.kind.rawValue) type")
        }
        guard let user = try storeCall({ try data.user(idOrName: userKey) }) else {
            throw APIError.invalidField("user", "no user '\(userKey)'")
        }
        try storeCall { try data.person(user).setSourcePriority(type: type, apps: order) }
        let effective = try storeCall { try data.person(user).sourcePriority(type: type) }
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.field("user", user.id)
            writer.field("type", type.id)
            writer.key("order")
            AccountRoutes.writeStrings(effective, into: &writer)
            writer.endObject()
        }
    }

    // MARK: Parameters

    static func quantityType(_ query: inout QueryParameters) throws(APIError) -> HealthType {
        let type = try QueryParsing.type(&query)
        guard type.kind == .quantity else {
            throw APIError.invalidField("type", "statistics need a quantity type; \(type.id) is a \(type.kind.rawValue) type")
        }
        return type
    }

    static func aggregationStyle(_ type: HealthType) throws(APIError) -> AggregationStyle {
        guard let aggregation = type.aggregation else {
            throw APIError.invalidField("type", "\(type.id) has no aggregation style")
        }
        return aggregation.isCumulative ? .cumulative : .discrete
    }

    static func parseOptions(_ query: inout QueryParameters, style: AggregationStyle) throws(APIError) -> StatisticsOptions {
        let text = try query.requiredString("options")
        do {
            return try StatisticsOptions.parse(text, for: style)
        } catch {
            throw APIError.invalidField("options", error.description)
        }
    }

    /// `start` and `end` are required: HealthKit's queries always carry a range, and an unbounded
    /// collection query would have unbounded buckets.
    static func requiredRange(_ query: inout QueryParameters) throws(APIError) -> (start: Int64, end: Int64) {
        guard let start = try QueryParsing.instant(&query, "start") else { throw APIError.invalidField("start", "is required") }
        guard let end = try QueryParsing.instant(&query, "end") else { throw APIError.invalidField("end", "is required") }
        guard end > start else { throw APIError.invalidField("end", "must be after start") }
        return (start, end)
    }

    // MARK: Output

    static func write(_ answer: IntervalFigures, options: StatisticsOptions, output: UnitOutput, into writer: inout JSONWriter) {
        writeFigures(answer.figures, output: output, into: &writer)
        if options.contains(.separateBySource) {
            writer.key("sources")
            writer.beginArray()
            for source in answer.sources {
                writer.beginObject()
                writer.field("app", source.app)
                writeFigures(source.figures, output: output, into: &writer)
                writer.endObject()
            }
            writer.endArray()
        }
    }

    static func writeFigures(_ figures: StatisticsFigures, output: UnitOutput, into writer: inout JSONWriter) {
        if let sum = figures.sum { writer.field("sum", output.convert(sum)) }
        if let average = figures.average { writer.field("average", output.convert(average)) }
        if let minimum = figures.minimum { writer.field("minimum", output.convert(minimum)) }
        if let maximum = figures.maximum { writer.field("maximum", output.convert(maximum)) }
        if let recent = figures.mostRecent {
            writer.key("mostRecent")
            writer.beginObject()
            writer.field("value", output.convert(recent.value))
            writer.field("start", RFC3339.format(recent.start))
            writer.field("end", RFC3339.format(recent.end))
            writer.endObject()
        }
    }
}

/// Converts figures from the type's canonical unit to the unit the client asked for.
/// The conversion is checked when the request is read (a unit that does not fit is a 400), so
/// no figure can come out unconverted under the requested unit.
struct UnitOutput {
    let conversion: HealthUnitConversion

    init(type: HealthType, unit: HealthUnit?) throws(APIError) {
        guard let canonical = type.canonicalUnit else { throw APIError.invalidField("type", "\(type.id) has no unit") }
        guard let conversion = HealthUnitConversion(from: canonical, to: unit ?? canonical) else {
            throw APIError.invalidField("unit", "'\(unit?.unitString ?? "")' does not measure \(type.id) (its unit is \(canonical.unitString))")
        }
        self.conversion = conversion
    }

    var unitString: String { conversion.target.unitString }

    func convert(_ value: Double) -> Double { FigureRounding.significant(conversion.apply(value)) }
}

/// Pro-rating multiplies by fractions of intervals, which leaves floating-point noise
/// (1000.0000000000001 steps); figures are written with 12 significant digits, far beyond any
/// sensor's precision, so whole inputs give whole answers.
enum FigureRounding {
    static let significantDigits = 12

    static func significant(_ value: Double) -> Double {
        guard value.isFinite, value != 0 else { return value }
        let magnitude = Int((abs(value)).exponentOf10)
        let scale = pow(10.0, Double(significantDigits - 1 - magnitude))
        guard scale.isFinite, scale > 0 else { return value }
        let rounded = (value * scale).rounded() / scale
        return rounded.isFinite ? rounded : value
    }
}

extension Double {
    /// ⌊log10(self)⌋ for a positive finite value.
    fileprivate var exponentOf10: Double { log10(self).rounded(.down) }
}

/// `storeCall` for statistics: engine errors (bad range, bucket limits) are the client's, a 400.
func statisticsCall<T>(_ body: () throws -> T) throws(APIError) -> T {
    try storeCall {
        do { return try body() } catch let error as StatisticsError { throw StoreError.invalid(error.description) }
    }
}
