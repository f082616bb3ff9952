import HealthModel
import SQLite

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
    /// Builds the answer once the saved samples' uuids are known.
    public var response: @Sendable ([HealthUUID]) -> [UInt8]

    public init(state: [UInt8], samples: [HealthSample], start: Int64, end: Int64, steps: Int, distance: Double,
                floorsAscended: Int, floorsDescended: Int, cadence: Double?, pace: Double?, ended: Bool,
                response: @escaping @Sendable ([HealthUUID]) -> [UInt8]) {
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

/// The stored state of a session as the pedometer sees it before a batch.
public struct IMUSessionState: Sendable {
    /// Nil for a new session.
    public var detectorState: [UInt8]?
    /// The seq the next batch must carry.
    public var nextSeq: Int
}

public enum IMUIngestError: Error, Sendable, Equatable {
    /// A gap: the client must send `expected` next.
    case unexpectedSeq(expected: Int)
    case sessionEnded
    case unknownSession
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
}

extension HealthStore {
    /// Runs one IMU batch (or the session's end when `seq` is nil) exactly once: a repeated `seq`
    /// returns the first answer and changes nothing; a gap is `unexpectedSeq`. The pedometer's new
    /// state, the batch's samples and its answer commit in one transaction, so a crash never
    /// loses an acknowledged batch nor counts one twice.
    public func ingestIMU(app: AppAuthorization, session: String, seq: Int?, device: SampleDevice?,
                          process: (IMUSessionState) throws -> IMUBatchResult) throws -> [UInt8] {
        let created = Self.nowMilliseconds()
        let (answer, change) = try pool.write { db -> ([UInt8], CommittedChange?) in
            let existing = try db.first("""
                SELECT id, next_seq, state, ended FROM imu_sessions WHERE user_id = ? AND source_id = ? AND session = ?
                """, [.integer(app.userRowID), .integer(app.sourceRowID), .text(session)]) {
                (id: try $0.int64(at: 0), nextSeq: try $0.int(at: 1), state: try $0.blob(at: 2), ended: try $0.bool(at: 3))
            }
            let batchKey = seq ?? -1
            if let existing, let replay = try db.first("SELECT response FROM imu_batches WHERE session_id = ? AND seq = ?",
                                                        [.integer(existing.id), .integer(Int64(batchKey))], { try $0.blob(at: 0) }) {
                return (replay, nil)
            }
            if seq == nil && existing == nil { throw IMUIngestError.unknownSession }
            if existing?.ended == true { throw IMUIngestError.sessionEnded }
            let expected = existing?.nextSeq ?? 0
            if let seq, seq != expected { throw IMUIngestError.unexpectedSeq(expected: expected) }

            let result = try process(IMUSessionState(detectorState: existing?.state, nextSeq: expected))
            var writer = try SampleWriter(db: db, store: self, userRowID: app.userRowID, sourceRowID: app.sourceRowID,
                                          created: created)
            try writer.insert(PreparedBatch(result.samples, store: self))
            try writer.finish()
            let answer = result.response(result.samples.map(\.uuid))

            let sessionID: Int64
            if let existing {
                sessionID = existing.id
                try db.execute("UPDATE imu_sessions SET next_seq = ?, state = ?, ended = ? WHERE id = ?",
                               [.integer(Int64(seq.map { $0 + 1 } ?? expected)), .blob(result.state),
                                .integer(result.ended ? 1 : 0), .integer(existing.id)])
            } else {
                try db.execute("""
                    INSERT INTO imu_sessions (user_id, source_id, session, device, next_seq, state, ended)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """, [.integer(app.userRowID), .integer(app.sourceRowID), .text(session),
                          device.map { .blob(DeviceBody.encode($0)) } ?? .null,
                          .integer(Int64((seq ?? -1) + 1)), .blob(result.state), .integer(result.ended ? 1 : 0)])
                sessionID = db.lastInsertRowID
            }
            try db.execute("""
                INSERT INTO imu_batches (session_id, seq, start_ms, end_ms, steps, distance, floors_up, floors_down,
                                         cadence, pace, response)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, [.integer(sessionID), .integer(Int64(batchKey)), .integer(result.start), .integer(result.end),
                      .integer(Int64(result.steps)), .real(result.distance), .integer(Int64(result.floorsAscended)),
                      .integer(Int64(result.floorsDescended)), result.cadence.map { .real($0) } ?? .null,
                      result.pace.map { .real($0) } ?? .null, .blob(answer)])
            let change = writer.touchedTypes.isEmpty ? nil
                : CommittedChange(userRowID: app.userRowID, typeIDs: writer.touchedTypes, lastSeq: writer.lastSeq)
            return (answer, change)
        }
        if let change { publish(change) }
        return answer
    }

    /// CMPedometer.queryPedometerData over the calling app's own IMU batches: batch figures are
    /// pro-rated by their time overlap with [start, end); current cadence and pace are the latest
    /// batch's in the range.
    public func pedometerTotals(app: AppAuthorization, start: Int64, end: Int64) throws -> PedometerTotals {
        try pool.read { db in
            var totals = PedometerTotals()
            let statement = try db.cachedStatement("""
                SELECT b.start_ms, b.end_ms, b.steps, b.distance, b.floors_up, b.floors_down, b.cadence, b.pace
                FROM imu_batches b JOIN imu_sessions s ON s.id = b.session_id
                WHERE s.user_id = ? AND s.source_id = ? AND b.start_ms < ? AND (b.end_ms > ? OR (b.end_ms = b.start_ms AND b.start_ms >= ?))
                ORDER BY b.end_ms
                """)
            try statement.bind([.integer(app.userRowID), .integer(app.sourceRowID), .integer(end), .integer(start), .integer(start)])
            try statement.forEachRow { row in
                let batchStart = try row.int64(at: 0), batchEnd = try row.int64(at: 1)
                let overlap = max(0, min(batchEnd, end) - max(batchStart, start))
                let fraction = batchEnd > batchStart ? Double(overlap) / Double(batchEnd - batchStart) : 1
                let steps = Double(try row.int64(at: 2))
                totals.steps += steps * fraction
                totals.distance += try row.double(at: 3) * fraction
                totals.floorsAscended += Double(try row.int64(at: 4)) * fraction
                totals.floorsDescended += Double(try row.int64(at: 5)) * fraction
                if steps > 0 { totals.activeSeconds += Double(overlap) / 1000 }
                if !row.isNull(at: 6) { totals.currentCadence = try row.double(at: 6) }
                if !row.isNull(at: 7) { totals.currentPace = try row.double(at: 7) }
            }
            return totals
        }
    }
}
