import Foundation

/// One bucket of a collection query: [start, end) in UTC milliseconds, with the zone's UTC offset at
/// each boundary so the API can write the instants in local time (`2024-03-10T00:00:00-05:00`).
public struct CalendarBucket: Sendable, Hashable {
    public let start: Int64
    public let end: Int64
    public let startOffsetSeconds: Int32
    public let endOffsetSeconds: Int32

    public init(start: Int64, end: Int64, startOffsetSeconds: Int32, endOffsetSeconds: Int32) {
        self.start = start
        self.end = end
        self.startOffsetSeconds = startOffsetSeconds
        self.endOffsetSeconds = endOffsetSeconds
    }
}

/// Calendar arithmetic in one IANA zone with the Gregorian calendar.
public struct BucketCalendar: Sendable {
    /// Instants outside years 0001...9999 are refused: calendars and ISO 8601 text stop making sense there.
    public static let earliestInstant: Int64 = -62_135_596_800_000
    public static let latestInstant: Int64 = 253_402_300_799_999
    /// The default cap on buckets per query, so a `PT1M` interval over a century cannot exhaust memory.
    public static let defaultBucketLimit = 100_000

    public let timeZone: TimeZone
    private let calendar: Calendar

    public init(timeZone: TimeZone) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        self.timeZone = timeZone
        self.calendar = calendar
    }

    /// The zone named by an IANA identifier; `nil` means UTC, the API's default.
    public init(timeZoneIdentifier: String?) throws(StatisticsError) {
        guard let identifier = timeZoneIdentifier else {
            self.init(timeZone: TimeZone(secondsFromGMT: 0) ?? TimeZone.current)
            return
        }
        guard let zone = TimeZone(identifier: identifier) else { throw .unknownTimeZone(identifier) }
        self.init(timeZone: zone)
    }

    static func checkRange(_ instant: Int64) throws(StatisticsError) {
        guard instant >= earliestInstant, instant <= latestInstant else { throw .instantOutOfRange(instant) }
    }

    static func date(_ instant: Int64) -> Date {
        Date(timeIntervalSince1970: Double(instant) / 1000)
    }

    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// The zone's offset from UTC at an instant, in seconds.
    public func offsetSeconds(at instant: Int64) -> Int32 {
        Int32(clamping: timeZone.secondsFromGMT(for: Self.date(instant)))
    }

    /// The start of the local day holding `instant`: the default anchor of a collection query.
    public func startOfDay(containing instant: Int64) throws(StatisticsError) -> Int64 {
        try Self.checkRange(instant)
        return Self.milliseconds(calendar.startOfDay(for: Self.date(instant)))
    }

    /// The start of bucket `index`: `anchor + index × interval` computed from the anchor in one step,
    /// so monthly buckets anchored on Jan 31 land on Feb 29, Mar 31, Apr 30 rather than drifting.
    public func bucketStart(index: Int, anchor: Int64, interval: CalendarInterval) throws(StatisticsError) -> Int64 {
        if let length = interval.fixedMilliseconds {
            let (offset, overflow) = Int64(index).multipliedReportingOverflow(by: length)
            let (instant, overflowSum) = anchor.addingReportingOverflow(offset)
            guard !overflow, !overflowSum else { throw .instantOutOfRange(anchor) }
            try Self.checkRange(instant)
            return instant
        }
        let component: Calendar.Component
        var multiplier = interval.count
        switch interval.unit {
        case .day: component = .day
        case .week: component = .day; multiplier *= 7
        case .month: component = .month
        case .year: component = .year
        case .minute, .hour: component = .minute  // handled above; kept for exhaustiveness
        }
        let (steps, overflow) = index.multipliedReportingOverflow(by: multiplier)
        guard !overflow, let date = calendar.date(byAdding: component, value: steps, to: Self.date(anchor)) else {
            throw .instantOutOfRange(anchor)
        }
        let instant = Self.milliseconds(date)
        try Self.checkRange(instant)
        return instant
    }

    /// Every bucket intersecting [start, end), in order, aligned to `anchor` (which may lie after `start`).
    public func buckets(start: Int64, end: Int64, anchor: Int64, interval: CalendarInterval,
                        limit: Int = BucketCalendar.defaultBucketLimit) throws(StatisticsError) -> [CalendarBucket] {
        guard start < end else { throw .invalidRange(start: start, end: end) }
        try Self.checkRange(start)
        try Self.checkRange(end)
        try Self.checkRange(anchor)
        // Refuse hopeless requests before any calendar work: no bucket is longer than twice its nominal size,
        // so this many buckets are needed at least. The exact count is checked while generating.
        if Double(end - start) / (interval.approximateMilliseconds * 2) > Double(limit) + 2 {
            throw .tooManyBuckets(limit: limit)
        }
        // Guess the bucket holding `start`, then correct the guess exactly.
        let guess = (Double(start - anchor) / interval.approximateMilliseconds).rounded(.down)
        guard guess.magnitude < 1e12 else { throw .instantOutOfRange(start) }
        var index = Int(guess)
        var indexStart = try bucketStart(index: index, anchor: anchor, interval: interval)
        while indexStart > start {
            index -= 1
            indexStart = try bucketStart(index: index, anchor: anchor, interval: interval)
        }
        var nextStart = try bucketStart(index: index + 1, anchor: anchor, interval: interval)
        while nextStart <= start {
            index += 1
            indexStart = nextStart
            nextStart = try bucketStart(index: index + 1, anchor: anchor, interval: interval)
        }
        var result: [CalendarBucket] = []
        var startOffset = offsetSeconds(at: indexStart)
        while indexStart < end {
            let endOffset = offsetSeconds(at: nextStart)
            // A skipped local day (Pacific/Apia, 2011-12-30) gives an empty bucket: nothing can fall in it.
            if nextStart > indexStart {
                if result.count >= limit { throw .tooManyBuckets(limit: limit) }
                result.append(CalendarBucket(start: indexStart, end: nextStart,
                                             startOffsetSeconds: startOffset, endOffsetSeconds: endOffset))
            }
            index += 1
            indexStart = nextStart
            startOffset = endOffset
            if indexStart >= end { break }
            nextStart = try bucketStart(index: index + 1, anchor: anchor, interval: interval)
        }
        return result
    }
}
