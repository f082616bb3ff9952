
/// The daily Move (kcal), Exercise (minutes) and Stand (hours) goals of HKActivitySummary.
public struct ActivityGoals: Sendable, Equatable {
    public var activeEnergyBurned: Double
    public var appleExerciseTime: Double
    public var appleStandHours: Double

    public init(activeEnergyBurned: Double, appleExerciseTime: Double, appleStandHours: Double) {
        self.activeEnergyBurned = activeEnergyBurned
        self.appleExerciseTime = appleExerciseTime
        self.appleStandHours = appleStandHours
    }

    /// Until the user sets their own: Apple Watch's common starting goals.
    public static let defaults = ActivityGoals(activeEnergyBurned: 500, appleExerciseTime: 30, appleStandHours: 12)

    /// What a goal may be (kcal, minutes, hours): a day holds 1,440 minutes and 24 hours.
    public static let activeEnergyBurnedRange: ClosedRange<Double> = 1...100_000
    public static let appleExerciseTimeRange: ClosedRange<Double> = 1...1_440
    public static let appleStandHoursRange: ClosedRange<Double> = 1...24
}

/// The time a set of intervals covers, shared by the stores' `coveredDuration`.
package enum CoveredTime {
    /// Milliseconds of [start, end) inside at least one of `intervals` (sorted by start).
    package static func union(of intervals: [(Int64, Int64)], within start: Int64, _ end: Int64) -> Int64 {
        var covered: Int64 = 0
        var runStart: Int64 = 0
        var runEnd: Int64 = Int64.min
        for (intervalStart, intervalEnd) in intervals {
            let sampleStart = max(intervalStart, start)
            let sampleEnd = min(intervalEnd, end)
            guard sampleEnd > sampleStart else { continue }
            if sampleStart > runEnd {
                if runEnd > runStart { covered += runEnd - runStart }
                runStart = sampleStart
                runEnd = sampleEnd
            } else if sampleEnd > runEnd {
                runEnd = sampleEnd
            }
        }
        if runEnd > runStart { covered += runEnd - runStart }
        return covered
    }
}
