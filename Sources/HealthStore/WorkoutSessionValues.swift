import HealthModel
import JSON
import SQLSupport
import Statistics

/// One workout session as stored (HKWorkoutSession), owned by one app acting for one user.
public struct WorkoutSession: Sendable, Equatable {
    /// The id clients use (a lowercase uuid).
    public var id: String
    public var userRowID: Int64
    public var sourceRowID: Int64
    public var activityType: String
    /// Nil: a session without a target zone (no zone events).
    public var zone: HeartRateZoneBounds?
    public var state: WorkoutSessionState
    public var timeline: WorkoutSessionTimeline
    /// The `workout` sample saved by `end`.
    public var workoutUUID: HealthUUID?

    public init(id: String, userRowID: Int64, sourceRowID: Int64, activityType: String, zone: HeartRateZoneBounds?,
                state: WorkoutSessionState, timeline: WorkoutSessionTimeline, workoutUUID: HealthUUID?) {
        self.id = id
        self.userRowID = userRowID
        self.sourceRowID = sourceRowID
        self.activityType = activityType
        self.zone = zone
        self.state = state
        self.timeline = timeline
        self.workoutUUID = workoutUUID
    }
}

extension WorkoutSession {
    /// The merged sum (as statistics merge sources, pro-rated by overlap) of one cumulative type's
    /// samples over a session's running stretches, cut at `end`; nil without samples.
    public static func runningTotal(of samples: [StatisticsSample], intervals: [Range<Int64>], end: Int64,
                                    priority: SourcePriority) throws -> Double? {
        guard !samples.isEmpty else { return nil }
        let buckets = intervals.map { CalendarBucket(start: $0.lowerBound, end: min($0.upperBound, end), startOffsetSeconds: 0, endOffsetSeconds: 0) }
        let answers = try statisticsCollection(of: samples, buckets: buckets, style: .cumulative, options: .cumulativeSum,
                                               priority: priority)
        let sums = answers.compactMap(\.figures.sum)
        return sums.isEmpty ? nil : sums.reduce(0, +)
    }

    /// The pause and resume events as stored: JSON [[type, ms], ...].
    public static func encodeEvents(_ events: [WorkoutEvent]) -> String {
        var writer = JSONWriter(capacity: 32 + events.count * 24)
        writer.beginArray()
        for event in events {
            writer.beginArray()
            writer.string(event.type.rawValue)
            writer.integer(event.date)
            writer.endArray()
        }
        writer.endArray()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Stored events back. Written only by `encodeEvents`: a list that is not a JSON array is a
    /// damaged row (an unknown event in it is skipped, as a newer writer's would be).
    public static func decodeEvents(_ text: String) throws(RowDecodingError) -> [WorkoutEvent] {
        guard let list = (try? JSONParser.parse(text))?.arrayValue else {
            throw RowDecodingError(table: "workout_sessions", column: "events", problem: "is not a JSON array")
        }
        return list.compactMap { item in
            guard let pair = item.arrayValue, pair.count == 2, let name = pair[0].stringValue,
                  let type = WorkoutEventType(rawValue: name), let date = pair[1].numberValue else { return nil }
            return WorkoutEvent(type: type, date: Int64(date))
        }
    }
}

/// A change of zone state to publish: the reading that caused it and the state it is in.
public struct WorkoutZoneChange: Sendable, Equatable {
    public var session: String
    public var heartRate: Double
    public var state: HeartRateZoneState
    /// The reading's start.
    public var date: Int64
    /// The session's zone the reading was judged against.
    public var zone: HeartRateZoneBounds

    public init(session: String, heartRate: Double, state: HeartRateZoneState, date: Int64, zone: HeartRateZoneBounds) {
        self.session = session
        self.heartRate = heartRate
        self.state = state
        self.date = date
        self.zone = zone
    }
}

