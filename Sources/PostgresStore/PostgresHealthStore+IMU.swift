import HealthModel
import HealthStore

// IMU sessions on PostgreSQL: the exactly-once protocol of `PostgresIMUSessions`, with the batch's
// samples saved (and the rollups kept, and other nodes notified) in the batch's transaction.

extension PostgresHealthStore {
    public func imuSession(owner: AppSource, session: String, seq: Int?) throws -> IMUSessionLookup {
        try pool.read { connection in
            try PostgresIMUSessions.lookup(userRowID: owner.userRowID, sourceRowID: owner.sourceRowID, session: session, seq: seq,
                                           on: connection)
        }
    }

    /// Commits on the writers' queue once the write backlog has room, like a sample save;
    /// `completion` gets the answer once the batch is durable, or `sessionChanged` when another
    /// request (on any node) moved the session since `basis` was read.
    public func commitIMU(granted: WriteGrant, session: String, seq: Int?, device: SampleDevice?, basis: IMUSessionState,
                          result: IMUBatchResult, completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        let app = granted.app
        let weight = max(1, result.samples.count)
        writeBacklog.acquire(weight) { [self] in
            writers.async { [self] in
                let outcome = Result { () throws -> [UInt8] in
                    let created = StoreClock.nowMilliseconds()
                    var batch = try PostgresSampleBatch(result.samples, sourceRowID: { _ in app.sourceRowID }, typeCodes: typeCodes,
                                                        rollupStyles: rollupStyles, userRowID: app.userRowID, created: created)
                    let change = try pool.transaction { connection -> CommittedChange in
                        try PostgresIMUSessions.commit(userRowID: app.userRowID, sourceRowID: app.sourceRowID, session: session,
                                                       seq: seq, device: device, basis: basis, result: result, on: connection) {
                            let (effects, last) = try write(&batch, userRowID: app.userRowID, userExternalID: app.userID, connection)
                            try rollupsChanged(effects.rollups, userRowID: app.userRowID, connection)
                            let change = CommittedChange(userRowID: app.userRowID, typeIDs: effects.touchedTypes, lastSeq: last)
                            try notifyCommit(change, connection)
                            return change
                        }
                    }
                    if !change.typeIDs.isEmpty { publish(change) }
                    return result.response
                }
                writeBacklog.release(weight)
                completion(outcome)
            }
        }
    }

    public func pedometerTotals(owner: AppSource, start: Int64, end: Int64) throws -> PedometerTotals {
        try pool.read { connection in
            try PostgresIMUSessions.totals(userRowID: owner.userRowID, sourceRowID: owner.sourceRowID, start: start, end: end,
                                           on: connection)
        }
    }
}
