import Foundation
import Statistics

/// A zone of the system's tz database (`/usr/share/zoneinfo`, read by Foundation's `TimeZone`) as
/// the rules the statistics engine's calendar arithmetic takes: the one place that reads them, so
/// `Statistics` stays free of I/O.
public struct SystemTimeZone: TimeZoneRules {
    private let zone: TimeZone

    /// Nil when the database has no zone of that name.
    public init?(identifier: String) {
        guard let zone = TimeZone(identifier: identifier) else { return nil }
        self.zone = zone
    }

    public var identifier: String { zone.identifier }

    public func offsetSeconds(at instant: Int64) -> Int32 {
        Int32(clamping: zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant) / 1000)))
    }
}

extension BucketCalendar {
    /// The zone named by an IANA identifier from the system's tz database; nil means UTC, the API's default.
    public init(timeZoneIdentifier: String?) throws(StatisticsError) {
        guard let identifier = timeZoneIdentifier else {
            self.init(timeZone: FixedOffsetTimeZone.utc)
            return
        }
        guard let zone = SystemTimeZone(identifier: identifier) else { throw .unknownTimeZone(identifier) }
        self.init(timeZone: zone)
    }
}
