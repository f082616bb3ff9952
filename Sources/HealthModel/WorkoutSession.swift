// A workout session (HKWorkoutSession) as pure values: its state machine, its timeline of
// pause/resume events, and the heart-rate zone judgement made while it runs. No I/O here.

/// HKWorkoutSessionState reduced to what a server sees.
public enum WorkoutSessionState: String, Sendable, CaseIterable {
    case running, paused, ended
}

/// What a client asks of a session.
public enum WorkoutSessionAction: String, Sendable, CaseIterable {
    case pause, resume, end
}

/// An action the current state does not allow (a 409 naming `current`).
public struct WorkoutSessionTransitionError: Error, Sendable, Equatable, CustomStringConvertible {
    public var current: WorkoutSessionState
    public var action: WorkoutSessionAction

    public init(current: WorkoutSessionState, action: WorkoutSessionAction) {
        self.current = current
        self.action = action
    }

    public var description: String {
        switch current {
        case .ended: return "the session has ended; \(action.rawValue) is not possible"
        case .running, .paused: return "the session is \(current.rawValue); it cannot \(action.rawValue)"
        }
    }
}

extension WorkoutSessionState {
    /// running -> paused (pause), paused -> running (resume), running or paused -> ended (end).
    /// Everything else, and anything after the end, is refused.
    public func applying(_ action: WorkoutSessionAction) throws(WorkoutSessionTransitionError) -> WorkoutSessionState {
        switch (self, action) {
        case (.running, .pause): return .paused
        case (.paused, .resume): return .running
        case (.running, .end), (.paused, .end): return .ended
        default: throw WorkoutSessionTransitionError(current: self, action: action)
        }
    }
}

/// When a session ran: from its start, minus the stretches between each pause and the next resume,
/// up to its end (open while it is not ended).
public struct WorkoutSessionTimeline: Sendable, Equatable {
    public var start: Int64
    /// Pause and resume events in time order, alternating, beginning with a pause.
    public var events: [WorkoutEvent]
    public var end: Int64?

    public init(start: Int64, events: [WorkoutEvent] = [], end: Int64? = nil) {
        self.start = start
        self.events = events
        self.end = end
    }

    /// The time of a new event: never before the last one, so a wall clock stepping back cannot
    /// put events out of order.
    public func eventDate(now: Int64) -> Int64 {
        max(now, events.last?.date ?? start, start)
    }

    /// The running stretches [start, end) in order; the last is open (`Int64.max`) while the
    /// session runs. Empty stretches (a pause in the same millisecond as the resume) are dropped.
    public var runningIntervals: [Range<Int64>] {
        var intervals: [Range<Int64>] = []
        var runningSince: Int64? = start
        for event in events {
            switch event.type {
            case .pause:
                if let since = runningSince, event.date > since { intervals.append(since..<event.date) }
                runningSince = nil
            case .resume:
                if runningSince == nil { runningSince = event.date }
            case .lap, .marker, .segment:
                break
            }
        }
        if let since = runningSince {
            let limit = end ?? Int64.max
            if limit > since { intervals.append(since..<limit) }
        }
        return intervals
    }

    /// Whether `instant` lies in a running stretch.
    public func isRunning(at instant: Int64) -> Bool {
        runningIntervals.contains { $0.contains(instant) }
    }
}

/// Where a heart rate lies relative to a target zone.
public enum HeartRateZoneState: String, Sendable, CaseIterable {
    case below
    case inZone = "in"
    case above
}

/// A target zone in beats per minute, both bounds inside it.
public struct HeartRateZoneBounds: Sendable, Equatable {
    /// Bounds outside this are not a heart-rate training zone (and a typo, not a goal).
    public static let allowed: ClosedRange<Double> = 30...250

    public var low: Double
    public var high: Double

    public init(low: Double, high: Double) {
        self.low = low
        self.high = high
    }

    /// Nil unless both are finite, within `allowed`, and low < high.
    public static func validated(low: Double, high: Double) -> HeartRateZoneBounds? {
        guard low.isFinite, high.isFinite, allowed.contains(low), allowed.contains(high), low < high else { return nil }
        return HeartRateZoneBounds(low: low, high: high)
    }

    public func state(of heartRate: Double) -> HeartRateZoneState {
        if heartRate < low { return .below }
        if heartRate > high { return .above }
        return .inZone
    }
}

/// Judges heart-rate readings in time order and says when the zone state changes: the first
/// reading always reports, later ones only when the state differs. A reading older than the latest
/// one judged is stale (a late sync) and changes nothing.
public struct HeartRateZoneTracker: Sendable, Equatable {
    public var bounds: HeartRateZoneBounds
    /// The last state reported; nil before the first reading (and after `reset`).
    public private(set) var current: HeartRateZoneState?
    /// The start of the latest reading judged.
    public private(set) var latestReading: Int64?

    public init(bounds: HeartRateZoneBounds, current: HeartRateZoneState? = nil, latestReading: Int64? = nil) {
        self.bounds = bounds
        self.current = current
        self.latestReading = latestReading
    }

    /// The new state when this reading changes it, nil otherwise.
    public mutating func judge(heartRate: Double, at instant: Int64) -> HeartRateZoneState? {
        if let latestReading, instant < latestReading { return nil }
        latestReading = instant
        let state = bounds.state(of: heartRate)
        guard state != current else { return nil }
        current = state
        return state
    }

    /// Forgets the reported state (after a resume), so the next reading reports again.
    public mutating func reset() { current = nil }
}
