import HealthStore
import HealthModel
import SQLite

extension SQLiteHealthStore {
    // Exactly once, without running the pedometer in the writer: `imuSession` reads the session on
    // a reader; the caller runs the pedometer with no transaction open; `commitIMU` writes the new
    // state, the samples and the answer in the writer's group commit only if the session is still
    // where it was read (`next_seq` and `ended` unchanged), and otherwise fails with `sessionChanged`,
    // after which the caller reads again: a concurrent copy of the same seq then finds the first
    // answer to replay, and a later seq finds the new state. A crash before the commit leaves the
    // session as it was; after it, the batch is replayed, never counted twice.

    /// Where a batch (`seq`) or the session's end (`seq` nil) stands: its first answer when it was
    /// acknowledged before; `unexpectedSeq` for a gap, `sessionEnded` after the end,
    /// `unknownSession` for the end of a session never started; otherwise the state to run from.
    public func imuSession(owner: AppSource, session: String, seq: Int?) throws -> IMUSessionLookup {
        enum Column: Int, TableColumns {
            case id, nextSeq, state, ended
            static let table = "imu_sessions"
        }
        return try pool.read { db in
            let existing = try db.first("""
                SELECT id, next_seq, state, ended FROM imu_sessions WHERE user_id = ? AND source_id = ? AND session = ?
                """, [.integer(owner.userRowID), .integer(owner.sourceRowID), .text(session)]) {
                (id: try $0.int64(Column.id), nextSeq: try $0.int(Column.nextSeq), state: try $0.blob(Column.state),
                 ended: try $0.bool(Column.ended))
            }
            guard let existing else {
                if seq == nil { throw IMUIngestError.unknownSession }
                if let seq, seq != 0 { throw IMUIngestError.unexpectedSeq(expected: 0) }
                return .ready(IMUSessionState(detectorState: nil, nextSeq: 0, sessionRowID: nil))
            }
            if let replay = try db.firstBlob("SELECT response FROM imu_batches WHERE session_id = ? AND seq = ?",
                                             [.integer(existing.id), .integer(Int64(seq ?? -1))]) {
                return .replay(replay)
            }
            if existing.ended { throw IMUIngestError.sessionEnded }
            if let seq, seq != existing.nextSeq { throw IMUIngestError.unexpectedSeq(expected: existing.nextSeq) }
            return .ready(IMUSessionState(detectorState: existing.state, nextSeq: existing.nextSeq, sessionRowID: existing.id))
        }
    }

    /// Commits what the pedometer made of a batch (`seq`, or the end when nil) run from `basis`, in
    /// the writer's next group commit, and calls `completion` with the answer once it is durable;
    /// `sessionChanged` when the session is no longer at `basis`. Samples count against the
    /// write backlog like any save.
    public func commitIMU(granted: WriteGrant, session: String, seq: Int?, device: SampleDevice?,
                          basis: IMUSessionState, result: IMUBatchResult,
                          completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        let app = granted.app
        let created = Self.nowMilliseconds()
        let batch = PreparedBatch(result.samples, store: self)
        let weight = max(1, result.samples.count)
        writeBacklog.acquire(weight) { [self] in
            pool.groupedWrite({ [self] db in
                try writeIMU(db, app: app, session: session, seq: seq, device: device, basis: basis, result: result,
                             batch: batch, created: created)
            }, completion: { [self] outcome in
                writeBacklog.release(weight)
                switch outcome {
                case .success(let change):
                    if let change { publish(change) }
                    completion(.success(result.response))
                case .failure(let error):
                    completion(.failure(error))
                }
            })
        }
    }

    /// The writer's part: the conditional state update, the samples, the batch row. Nothing here
    /// decodes, runs or renders anything.
    private func writeIMU(_ db: Database, app: AppAuthorization, session: String, seq: Int?, device: SampleDevice?,
                          basis: IMUSessionState, result: IMUBatchResult, batch: PreparedBatch,
                          created: Int64) throws -> CommittedChange? {
        let nextSeq = Int64(seq.map { $0 + 1 } ?? basis.nextSeq)
        let sessionID: Int64
        if let existing = basis.sessionRowID {
            try db.execute("UPDATE imu_sessions SET next_seq = ?, state = ?, ended = ? WHERE id = ? AND next_seq = ? AND ended = 0",
                           [.integer(nextSeq), .blob(result.state), .integer(result.ended ? 1 : 0),
                            .integer(existing), .integer(Int64(basis.nextSeq))])
            guard db.changes == 1 else { throw IMUIngestError.sessionChanged }
            sessionID = existing
        } else {
            try db.execute("""
                INSERT INTO imu_sessions (user_id, source_id, session, device, next_seq, state, ended)
                VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, source_id, session) DO NOTHING
                """, [.integer(app.userRowID), .integer(app.sourceRowID), .text(session),
                      device.map { .blob(DeviceBody.encode($0)) } ?? .null,
                      .integer(nextSeq), .blob(result.state), .integer(result.ended ? 1 : 0)])
            guard db.changes == 1 else { throw IMUIngestError.sessionChanged }
            sessionID = db.lastInsertRowID
        }
        var writer = try SampleWriter(db: db, store: self, userRowID: app.userRowID, sourceRowID: app.sourceRowID,
                                      created: created)
        try writer.insert(batch)
        try writer.finish()
        try db.execute("""
            INSERT INTO imu_batches (session_id, seq, start_ms, end_ms, steps, distance, floors_up, floors_down,
                                     cadence, pace, response)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.integer(sessionID), .integer(Int64(seq ?? -1)), .integer(result.start), .integer(result.end),
                  .integer(Int64(result.steps)), .real(result.distance), .integer(Int64(result.floorsAscended)),
                  .integer(Int64(result.floorsDescended)), result.cadence.map { .real($0) } ?? .null,
                  result.pace.map { .real($0) } ?? .null, .blob(result.response)])
        return writer.touchedTypes.isEmpty ? nil
            : CommittedChange(userRowID: app.userRowID, typeIDs: writer.touchedTypes, lastSeq: writer.lastSeq)
    }

    /// CMPedometer.queryPedometerData over the calling app's own IMU batches: batch figures are
    /// pro-rated by their time overlap with [start, end); current cadence and pace are the latest
    /// batch's in the range.
    public func pedometerTotals(owner: AppSource, start: Int64, end: Int64) throws -> PedometerTotals {
        try pool.read { db in
            var accumulator = PedometerTotalsAccumulator(start: start, end: end)
            let statement = try db.cachedStatement("""
                SELECT b.start_ms, b.end_ms, b.steps, b.distance, b.floors_up, b.floors_down, b.cadence, b.pace
                FROM imu_batches b JOIN imu_sessions s ON s.id = b.session_id
                WHERE s.user_id = ? AND s.source_id = ? AND b.start_ms < ? AND (b.end_ms > ? OR (b.end_ms = b.start_ms AND b.start_ms >= ?))
                ORDER BY b.end_ms
                """)
            try statement.bind([.integer(owner.userRowID), .integer(owner.sourceRowID), .integer(end), .integer(start), .integer(start)])
            try statement.forEachRow { row in try accumulator.add(row: row) }
            return accumulator.totals
        }
    }
}

