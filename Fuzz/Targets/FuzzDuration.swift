// libFuzzer target: ISO 8601 calendar-interval parsing (`PT15M`, `P1D`, ...) and statistics
// options, then bucketing a month in UTC and in a DST zone with whatever interval parsed.

import Statistics

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDuration(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let parts = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
    _ = try? StatisticsOptions.parse(parts.count > 1 ? String(parts[1]) : "", for: .cumulative)
    guard let interval = try? CalendarInterval.parse(String(parts[0])) else { return 0 }
    let start: Int64 = 1_772_323_200_000  // 2026-03-01T00:00:00Z: the month holds a DST change in New York
    for zone in [nil, "America/New_York"] as [String?] {
        guard let calendar = try? BucketCalendar(timeZoneIdentifier: zone) else { continue }
        _ = try? calendar.buckets(start: start, end: start + 31 * 86_400_000, anchor: calendar.startOfDay(containing: start),
                                  interval: interval, limit: 2_000)
    }
    return 0
}
