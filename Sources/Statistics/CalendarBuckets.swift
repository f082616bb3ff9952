import Primitives

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

/// What calendar arithmetic needs of a time zone: its UTC offset at any instant. The rules come
/// from the system's tz database, which this module does not read (it has no I/O): a shell hands
/// them in (`TimeZoneDatabase`, over Foundation's `TimeZone`), and tests may use fixed rules.
public protocol TimeZoneRules: Sendable {
    /// The IANA name (`America/New_York`).
    var identifier: String { get }
    /// The zone's offset from UTC, in seconds, at an instant (Unix milliseconds).
    func offsetSeconds(at instant: Int64) -> Int32
}

/// A zone that never changes its offset: UTC, the API's default, and fixed rules for tests.
public struct FixedOffsetTimeZone: TimeZoneRules {
    public let identifier: String
    public let seconds: Int32

    public init(identifier: String, seconds: Int32) {
        self.identifier = identifier
        self.seconds = seconds
    }

    public static let utc = FixedOffsetTimeZone(identifier: "UTC", seconds: 0)

    public func offsetSeconds(at instant: Int64) -> Int32 { seconds }
}

/// Calendar arithmetic in one IANA zone with the proleptic Gregorian calendar, on local wall-clock
/// times (milliseconds since 1970-01-01T00:00 local), as Foundation's `Calendar` does it: a day or
/// month added keeps the time of day; a month or year added to the 31st lands on the last day of a
/// shorter month; a wall time that does not exist (skipped by a DST change) moves forward by the
/// skipped length; one that exists twice is the occurrence with the anchor's offset, else the first.
/// A skipped day (Pacific/Apia, 2011-12-30) is skipped: day N+1 after the 29th is the 31st.
public struct BucketCalendar: Sendable {
    /// Instants outside years 0001...9999 are refused: calendars and ISO 8601 text stop making sense there.
    public static let earliestInstant: Int64 = -62_135_596_800_000
    public static let latestInstant: Int64 = 253_402_300_799_999
    /// The default cap on buckets per query, so a `PT1M` interval over a century cannot exhaust memory.
    public static let defaultBucketLimit = 100_000

    static let dayMilliseconds: Int64 = 86_400_000

    public let timeZone: any TimeZoneRules

    public init(timeZone: any TimeZoneRules) {
        self.timeZone = timeZone
    }

    static func checkRange(_ instant: Int64) throws(StatisticsError) {
        guard instant >= earliestInstant, instant <= latestInstant else { throw .instantOutOfRange(instant) }
    }

    /// The zone's offset from UTC at an instant, in seconds.
    public func offsetSeconds(at instant: Int64) -> Int32 {
        timeZone.offsetSeconds(at: instant)
    }

    /// The local wall-clock time of an instant.
    func wallTime(_ instant: Int64) -> Int64 {
        instant + Int64(offsetSeconds(at: instant)) * 1000
    }

    /// The instant of a local wall-clock time. The offsets a day either side of it bound the
    /// candidates (zones change offset at most once in two days). A wall time that exists twice
    /// (a repeated hour) takes `preferredOffset` when it is one of the two, else the first; one
    /// that does not exist (a skipped hour) is read with the offset before the change, so it
    /// lands that far after the change.
    func instantOf(wallTime wall: Int64, preferredOffset: Int64? = nil) -> Int64 {
        let before = Int64(offsetSeconds(at: wall - Self.dayMilliseconds)) * 1000
        let after = Int64(offsetSeconds(at: wall + Self.dayMilliseconds)) * 1000
        if before == after { return wall - before }
        let beforeFits = Int64(offsetSeconds(at: wall - before)) * 1000 == before
        let afterFits = Int64(offsetSeconds(at: wall - after)) * 1000 == after
        if beforeFits && afterFits, let preferredOffset, preferredOffset == after { return wall - after }
        if beforeFits || !afterFits { return wall - before }
        return wall - after
    }

    /// The start of the local day holding `instant`: the default anchor of a collection query.
    public func startOfDay(containing instant: Int64) throws(StatisticsError) -> Int64 {
        try Self.checkRange(instant)
        let wall = wallTime(instant)
        let midnight = wall - Self.floorModulo(wall, Self.dayMilliseconds)
        return instantOf(wallTime: midnight)
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
        try Self.checkRange(anchor)
        if index == 0 { return anchor }
        var multiplier = interval.count
        if interval.unit == .week { multiplier *= 7 }
        let (steps, overflow) = index.multipliedReportingOverflow(by: multiplier)
        // Far past years 1...9999 either way: refused below without overflowing on the way.
        guard !overflow, steps.magnitude <= 10_000 * 366 else { throw .instantOutOfRange(anchor) }
        let anchorOffset = Int64(offsetSeconds(at: anchor)) * 1000
        let wall = anchor + anchorOffset
        let timeOfDay = Self.floorModulo(wall, Self.dayMilliseconds)
        let day = (wall - timeOfDay) / Self.dayMilliseconds
        let targetDay: Int64
        switch interval.unit {
        case .day, .week:
            targetDay = day + Int64(steps)
        case .month, .year:
            let date = CivilDate.of(daysSinceEpoch: day)
            let months = interval.unit == .year ? steps * 12 : steps
            let monthIndex = date.year * 12 + (date.month - 1) + months
            let year = Self.floorDivide(monthIndex, 12)
            let month = monthIndex - year * 12 + 1
            targetDay = CivilDate.daysSinceEpoch(year: year, month: month,
                                                 day: min(date.day, Self.daysIn(month: month, year: year)))
        case .minute, .hour:
            throw .instantOutOfRange(anchor)  // fixed lengths, handled above
        }
        let instant = instantOf(wallTime: targetDay * Self.dayMilliseconds + timeOfDay, preferredOffset: anchorOffset)
        try Self.checkRange(instant)
        return instant
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    static func floorModulo(_ value: Int64, _ divisor: Int64) -> Int64 {
        let remainder = value % divisor
        return remainder < 0 ? remainder + divisor : remainder
    }

    static func floorDivide(_ value: Int, _ divisor: Int) -> Int {
        value >= 0 ? value / divisor : -((-value + divisor - 1) / divisor)
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
