import HealthModel

/// What the pedometer made of one IMU batch, to be stored atomically with the session's new state.
public struct IMUBatchResult: Sendable {
    /// The detector's state after this batch (opaque to the store).
    public var state: [UInt8]
    /// Samples to save as the calling app (steps, distance, flights).
    public var samples: [HealthSample]
    /// The span and figures of this batch, for `GET /v1/pedometer` (CMPedometer's own record).
    public var start: Int64
    public var end: Int64
    public var steps: Int
    public var distance: Double
    public var floorsAscended: Int
    public var floorsDescended: Int
    public var cadence: Double?
    public var pace: Double?
    public var ended: Bool
    /// The answer, stored with the batch and replayed for a repeated seq. The samples' uuids are
    /// chosen before the commit, so it is rendered before the writer is involved.
    public var response: [UInt8]

    public init(state: [UInt8], samples: [HealthSample], start: Int64, end: Int64, steps: Int, distance: Double,
                floorsAscended: Int, floorsDescended: Int, cadence: Double?, pace: Double?, ended: Bool,
                response: [UInt8]) {
        self.state = state
        self.samples = samples
        self.start = start
        self.end = end
        self.steps = steps
        self.distance = distance
        self.floorsAscended = floorsAscended
        self.floorsDescended = floorsDescended
        self.cadence = cadence
        self.pace = pace
        self.ended = ended
        self.response = response
    }
}

/// The stored state of a session as the pedometer sees it before a batch; also the basis that
/// `commitIMU` checks is still current.
public struct IMUSessionState: Sendable, Equatable {
    /// Nil for a new session.
    public var detectorState: [UInt8]?
    /// The seq the next batch must carry.
    public var nextSeq: Int
    /// The stored session's row, nil for a new session.
    public var sessionRowID: Int64?

    public init(detectorState: [UInt8]?, nextSeq: Int, sessionRowID: Int64?) {
        self.detectorState = detectorState
        self.nextSeq = nextSeq
        self.sessionRowID = sessionRowID
    }
}

/// What a batch (or a session's end) meets in the store.
public enum IMUSessionLookup: Sendable, Equatable {
    /// It was acknowledged before: its first answer, byte for byte.
    case replay([UInt8])
    /// Run the pedometer from this state, then `commitIMU` with it.
    case ready(IMUSessionState)
}

public enum IMUIngestError: Error, Sendable, Equatable {
    /// A gap: the client must send `expected` next.
    case unexpectedSeq(expected: Int)
    case sessionEnded
    case unknownSession
    /// Another request moved the session on between the read and the commit; read it again.
    case sessionChanged
}

/// A figure set for `GET /v1/pedometer`.
public struct PedometerTotals: Sendable, Equatable {
    public var steps: Double = 0
    public var distance: Double = 0
    public var floorsAscended: Double = 0
    public var floorsDescended: Double = 0
    /// Seconds of batches in which steps were taken.
    public var activeSeconds: Double = 0
    public var currentCadence: Double?
    public var currentPace: Double?

    public init() {}
}

/// Sums IMU batches into `PedometerTotals` as CMPedometer.queryPedometerData does: each batch's
/// figures pro-rated by its time overlap with [start, end); active seconds are the overlap of
/// batches with steps; current cadence and pace are the latest batch's. Batches go in in end order.
public struct PedometerTotalsAccumulator {
    let start: Int64
    let end: Int64
    public private(set) var totals = PedometerTotals()

    public init(start: Int64, end: Int64) {
        self.start = start
        self.end = end
    }

    public mutating func add(batchStart: Int64, batchEnd: Int64, steps: Int64, distance: Double, floorsUp: Int64,
                             floorsDown: Int64, cadence: Double?, pace: Double?) {
        let overlap = max(0, min(batchEnd, end) - max(batchStart, start))
        let fraction = batchEnd > batchStart ? Double(overlap) / Double(batchEnd - batchStart) : 1
        totals.steps += Double(steps) * fraction
        totals.distance += distance * fraction
        totals.floorsAscended += Double(floorsUp) * fraction
        totals.floorsDescended += Double(floorsDown) * fraction
        if steps > 0 { totals.activeSeconds += Double(overlap) / 1000 }
        if let cadence { totals.currentCadence = cadence }
        if let pace { totals.currentPace = pace }
    }
}
