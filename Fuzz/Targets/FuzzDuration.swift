// libFuzzer target: ISO 8601 calendar-interval parsing (`PT15M`, `P1D`, ...) and statistics
// options, then bucketing a month in UTC and in a DST zone with whatever interval parsed. A third
// line `start end anchor` (milliseconds, any Int64) buckets that range instead, as a statistics
// query's start, end and anchor may lie anywhere in years 0000-9999 (or outside, refused).

import Statistics

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDuration(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let parts = text.split(separator: "\n", maxSplits: 2, omittingEmptySubsequences: false)
    _ = try? StatisticsOptions.parse(parts.count > 1 ? String(parts[1]) : "", for: .cumulative)
    guard let interval = try? CalendarInterval.parse(String(parts[0])) else { return 0 }
    let month: Int64 = 1_772_323_200_000  // 2026-03-01T00:00:00Z: the month holds a DST change in New York
    let instants = parts.count > 2 ? parts[2].split(separator: " ").compactMap { Int64($0) } : []
    for zone in [nil, "America/New_York"] as [String?] {
        guard let calendar = try? BucketCalendar(timeZoneIdentifier: zone) else { continue }
        if instants.count == 3 {
            _ = try? calendar.buckets(start: instants[0], end: instants[1], anchor: instants[2], interval: interval, limit: 2_000)
            _ = try? calendar.startOfDay(containing: instants[0])
        } else {
            _ = try? calendar.buckets(start: month, end: month + 31 * 86_400_000, anchor: calendar.startOfDay(containing: month),
                                      interval: interval, limit: 2_000)
        }
    }
    return 0
}
