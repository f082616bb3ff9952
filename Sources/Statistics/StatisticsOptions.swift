/// How a quantity type aggregates: summed over time (steps, energy) or sampled (heart rate, body mass).
public enum AggregationStyle: String, Sendable, Hashable, CaseIterable {
    case cumulative
    case discrete
}

/// The figures a statistics query asks for, as in `HKStatisticsOptions`.
public struct StatisticsOptions: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let cumulativeSum = StatisticsOptions(rawValue: 1 << 0)
    public static let discreteAverage = StatisticsOptions(rawValue: 1 << 1)
    public static let discreteMin = StatisticsOptions(rawValue: 1 << 2)
    public static let discreteMax = StatisticsOptions(rawValue: 1 << 3)
    public static let mostRecent = StatisticsOptions(rawValue: 1 << 4)
    public static let separateBySource = StatisticsOptions(rawValue: 1 << 5)

    /// Every option with its wire name, in the order they are written.
    public static let named: [(name: String, option: StatisticsOptions)] = [
        ("cumulativeSum", .cumulativeSum),
        ("discreteAverage", .discreteAverage),
        ("discreteMin", .discreteMin),
        ("discreteMax", .discreteMax),
        ("mostRecent", .mostRecent),
        ("separateBySource", .separateBySource),
    ]

    static let discreteFigures: StatisticsOptions = [.discreteAverage, .discreteMin, .discreteMax, .mostRecent]

    /// Parses a comma list such as `cumulativeSum,separateBySource`; blanks around names are ignored.
    public static func parse(_ text: String) throws(StatisticsError) -> StatisticsOptions {
        var options: StatisticsOptions = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = part.trimmingBlanks()
            if name.isEmpty { continue }
            guard let match = named.first(where: { $0.name == name }) else {
                throw .unknownOption(name)
            }
            options.insert(match.option)
        }
        if options.isEmpty { throw .emptyOptions }
        return options
    }

    /// Checks that the options suit a type that aggregates with `style`.
    public func validate(for style: AggregationStyle) throws(StatisticsError) {
        let figures = subtracting(.separateBySource)
        if figures.isEmpty { throw .emptyOptions }
        let allowed: StatisticsOptions = style == .cumulative ? .cumulativeSum : Self.discreteFigures
        for (name, option) in Self.named where option != .separateBySource && figures.contains(option) {
            if !allowed.contains(option) { throw .optionNotAllowed(option: name, style: style) }
        }
    }

    /// Parses and validates in one step, as the API does for a query string.
    public static func parse(_ text: String, for style: AggregationStyle) throws(StatisticsError) -> StatisticsOptions {
        let options = try parse(text)
        try options.validate(for: style)
        return options
    }

    public var description: String {
        Self.named.filter { contains($0.option) }.map(\.name).joined(separator: ",")
    }
}

extension Substring {
    func trimmingBlanks() -> String {
        var slice = self[...]
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}

/// Why a statistics request cannot be answered; every case reads as a 400 message.
public enum StatisticsError: Error, Sendable, Hashable, CustomStringConvertible {
    case emptyOptions
    case unknownOption(String)
    case optionNotAllowed(option: String, style: AggregationStyle)
    case invalidInterval(String)
    case unknownTimeZone(String)
    case invalidRange(start: Int64, end: Int64)
    case tooManyBuckets(limit: Int)
    case instantOutOfRange(Int64)
    case invalidSample(id: Int64, reason: String)

    public var description: String {
        switch self {
        case .emptyOptions:
            return "options must name at least one of cumulativeSum, discreteAverage, discreteMin, discreteMax, mostRecent"
        case .unknownOption(let name):
            return "unknown statistics option '\(name)'"
        case .optionNotAllowed(let option, let style):
            let allowed = style == .cumulative ? "cumulativeSum" : "discreteAverage, discreteMin, discreteMax, mostRecent"
            return "option '\(option)' does not apply to a \(style.rawValue) type (allowed: \(allowed), separateBySource)"
        case .invalidInterval(let text):
            return "interval '\(text)' is not an ISO 8601 duration of one calendar component with a positive whole count (e.g. PT15M, PT1H, P1D, P1W, P1M, P1Y)"
        case .unknownTimeZone(let name):
            return "unknown time zone '\(name)'"
        case .invalidRange(let start, let end):
            return "end (\(end)) must be after start (\(start))"
        case .tooManyBuckets(let limit):
            return "the query would produce more than \(limit) buckets; use a longer interval or a shorter range"
        case .instantOutOfRange(let instant):
            return "instant \(instant) is outside the supported calendar range"
        case .invalidSample(let id, let reason):
            return "sample \(id) cannot be indexed: \(reason)"
        }
    }
}
