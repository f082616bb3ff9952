import HealthModel
import HealthStore
import JSON
import PostgreSQL

/// IMU sessions in PostgreSQL (`imu_sessions`, `imu_batches`): the SQLite store's exactly-once
/// protocol, kept when batches of one session arrive at different nodes.
///
/// A batch reads its session (`lookup`), runs the pedometer with no transaction open, then
/// commits (`commit`) only if the session is still where it was read: the UPDATE names the
/// `next_seq` it read (and `NOT ended`). Two nodes committing copies of one batch, or two batches,
/// at once: the second UPDATE waits for the first's row lock, re-checks its condition against the
/// committed row, matches nothing and fails with `sessionChanged`; its caller reads again and
/// replays the first's answer. A new session is an INSERT that does nothing when another node
/// created it meanwhile (the same outcome). So a repeated seq returns the first answer and a gap is
/// `unexpectedSeq` (409) whichever node each batch reaches.
enum PostgresIMUSessions {
    /// Where a batch (`seq`) or the session's end (`seq` nil) stands; see `HealthDataStore.imuSession`.
    static func lookup(userRowID: Int64, sourceRowID: Int64, session: String, seq: Int?,
                       on connection: PostgresConnection) throws -> IMUSessionLookup {
        let key: [PostgresValue] = [.int64(userRowID), .int64(sourceRowID), .text(session)]
        enum Column: Int, TableColumns {
            case nextSeq, state, ended
            static let table = "imu_sessions"
        }
        let existing = try connection.first("""
            SELECT next_seq, state, ended FROM imu_sessions WHERE user_id = $1 AND source_id = $2 AND session = $3
            """, key) { (nextSeq: try $0.int(Column.nextSeq), state: try $0.bytes(Column.state), ended: try $0.bool(Column.ended)) }
        guard let existing else {
            if seq == nil { throw IMUIngestError.unknownSession }
            if let seq, seq != 0 { throw IMUIngestError.unexpectedSeq(expected: 0) }
            return .ready(IMUSessionState(detectorState: nil, nextSeq: 0, sessionRowID: nil))
        }
        if let replay = try connection.firstBytes("""
            SELECT response FROM imu_batches WHERE user_id = $1 AND source_id = $2 AND session = $3 AND seq = $4
            """, key + [.int64(Int64(seq ?? -1))]) {
            return .replay(replay)
        }
        if existing.ended { throw IMUIngestError.sessionEnded }
        if let seq, seq != existing.nextSeq { throw IMUIngestError.unexpectedSeq(expected: existing.nextSeq) }
        // The detector state marks a stored session (a new one has none); PostgreSQL needs no row id.
        return .ready(IMUSessionState(detectorState: existing.state, nextSeq: existing.nextSeq, sessionRowID: nil))
    }

    /// The conditional session update and the batch row, inside the caller's write transaction;
    /// `saveSamples` saves the batch's samples there (between the two, so a refused batch saves
    /// nothing). Throws `sessionChanged` when the session is no longer at `basis`.
    static func commit<Saved>(userRowID: Int64, sourceRowID: Int64, session: String, seq: Int?, device: SampleDevice?,
                              basis: IMUSessionState, result: IMUBatchResult, on connection: PostgresConnection,
                              saveSamples: () throws -> Saved) throws -> Saved {
        let nextSeq = Int64(seq.map { $0 + 1 } ?? basis.nextSeq)
        let key: [PostgresValue] = [.int64(userRowID), .int64(sourceRowID), .text(session)]
        let changed: Int
        if basis.detectorState != nil {
            changed = try connection.execute("""
                UPDATE imu_sessions SET next_seq = $4, state = $5, ended = $6
                WHERE user_id = $1 AND source_id = $2 AND session = $3 AND next_seq = $7 AND NOT ended
                """, key + [.int64(nextSeq), .bytes(result.state), .bool(result.ended), .int64(Int64(basis.nextSeq))])
        } else {
            changed = try connection.execute("""
                INSERT INTO imu_sessions (user_id, source_id, session, device, next_seq, state, ended)
                VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (user_id, source_id, session) DO NOTHING
                """, key + [PostgresValue(device.map(deviceBody)), .int64(nextSeq), .bytes(result.state), .bool(result.ended)])
        }
        guard changed == 1 else { throw IMUIngestError.sessionChanged }
        let saved = try saveSamples()
        try connection.execute("""
            INSERT INTO imu_batches (user_id, source_id, session, seq, start_ms, end_ms, steps, distance, floors_up,
                                     floors_down, cadence, pace, response)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
            """, key + [.int64(Int64(seq ?? -1)), .int64(result.start), .int64(result.end), .int64(Int64(result.steps)),
                        .double(result.distance), .int64(Int64(result.floorsAscended)), .int64(Int64(result.floorsDescended)),
                        PostgresValue(result.cadence), PostgresValue(result.pace), .bytes(result.response)])
        return saved
    }

    /// CMPedometer.queryPedometerData over the app's own batches (see `HealthDataStore.pedometerTotals`).
    static func totals(userRowID: Int64, sourceRowID: Int64, start: Int64, end: Int64,
                       on connection: PostgresConnection) throws -> PedometerTotals {
        let result = try connection.query("""
            SELECT start_ms, end_ms, steps, distance, floors_up, floors_down, cadence, pace FROM imu_batches
            WHERE user_id = $1 AND source_id = $2 AND start_ms < $3 AND (end_ms > $4 OR (end_ms = start_ms AND start_ms >= $4))
            ORDER BY end_ms
            """, [.int64(userRowID), .int64(sourceRowID), .int64(end), .int64(start)])
        var accumulator = PedometerTotalsAccumulator(start: start, end: end)
        for index in 0..<result.rowCount { try accumulator.add(row: result[index]) }
        return accumulator.totals
    }

    /// The device as the samples' devices are kept: the sample codec's JSON.
    private static func deviceBody(_ device: SampleDevice) -> [UInt8] {
        var writer = JSONWriter(capacity: 96)
        SampleCodec.writeDevice(device, into: &writer)
        return writer.bytes
    }
}

