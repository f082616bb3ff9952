/// HKActivitySummary: one day's Activity rings. Energy in kilocalories, move and exercise time in
/// minutes, stand in hours; nil where the source had no value.
public struct ActivitySummary: Sendable, Hashable {
    public var day: HealthDay
    public var activeEnergyBurned: Double?
    public var activeEnergyBurnedGoal: Double?
    public var appleMoveTime: Double?
    public var appleMoveTimeGoal: Double?
    public var appleExerciseTime: Double?
    public var appleExerciseTimeGoal: Double?
    public var appleStandHours: Double?
    public var appleStandHoursGoal: Double?

    public init(day: HealthDay, activeEnergyBurned: Double? = nil, activeEnergyBurnedGoal: Double? = nil,
                appleMoveTime: Double? = nil, appleMoveTimeGoal: Double? = nil, appleExerciseTime: Double? = nil,
                appleExerciseTimeGoal: Double? = nil, appleStandHours: Double? = nil, appleStandHoursGoal: Double? = nil) {
        self.day = day
        self.activeEnergyBurned = activeEnergyBurned
        self.activeEnergyBurnedGoal = activeEnergyBurnedGoal
        self.appleMoveTime = appleMoveTime
        self.appleMoveTimeGoal = appleMoveTimeGoal
        self.appleExerciseTime = appleExerciseTime
        self.appleExerciseTimeGoal = appleExerciseTimeGoal
        self.appleStandHours = appleStandHours
        self.appleStandHoursGoal = appleStandHoursGoal
    }
}
