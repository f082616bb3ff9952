import HealthModel
import HealthStore
import PostgreSQL

extension PostgresHealthStore {
    // MARK: Import

    /// Runs `body` in one transaction: every batch it saves through the session commits together,
    /// or none does (a fault part way stores nothing). `body` runs again if the transaction is
    /// retried, so it starts over each time. Every sample is decided as the SQLite store decides it
    /// (`ImportDecisions`).
    public func importSamples(userRowID: Int64, _ body: (any ImportSession) throws -> Void) throws {
        let created = StoreClock.nowMilliseconds()
        let change = try pool.transaction { connection -> CommittedChange in
            let session = PostgresImportSession(store: self, connection: connection, userRowID: userRowID, created: created)
            try body(session)
            let change = CommittedChange(userRowID: userRowID, typeIDs: session.touched, lastSeq: session.lastSeq)
            try notifyCommit(change, connection)
            return change
        }
        if !change.typeIDs.isEmpty { publish(change) }
    }

    /// Which of `uuids` the user's `app` has stored (inside an import's transaction).
    fileprivate func storedUUIDs(_ uuids: [HealthUUID], userRowID: Int64, app: String, _ connection: PostgresConnection) throws
        -> Set<HealthUUID> {
        guard !uuids.isEmpty, let source = try connection.scalarInt64("SELECT id FROM sources WHERE user_id = $1 AND app = $2",
                                                                      [.int64(userRowID), .text(app)]) else { return [] }
        var stored: Set<HealthUUID> = []
        var start = 0
        while start < uuids.count {
            let chunk = uuids[start..<min(uuids.count, start + 1_000)]
            for row in try connection.map("""
                SELECT \(SampleRow.selectList) FROM samples WHERE user_id = $1 AND uuid = ANY($2::uuid[]) AND source_id = $3
                """, [.int64(userRowID), Self.uuidArray(chunk), .int64(source)], SampleRow.init) {
                stored.insert(row.uuid)
            }
            start += 1_000
        }
        return stored
    }

    /// One batch inside an import's transaction: its outcomes, the types it touched, and the last
    /// change sequence it wrote.
    fileprivate func importBatch(_ batch: [SourcedSample], userRowID: Int64, created: Int64, _ connection: PostgresConnection)
        throws -> (outcomes: [ImportOutcome], touched: Set<String>, lastSeq: Int64) {
        var decisions = ImportDecisions(stored: try storedRows(for: batch, userRowID: userRowID, connection),
                                        batchCount: batch.count)
        var materializer = Materializer(store: self, connection: connection, userRowID: userRowID, userExternalID: "")
        let outcomes = try decisions.decideAll(batch, sourceRowID: { try Self.sourceRowID(connection, userRowID: userRowID, app: $0) },
                                               isKnown: { typeCode(for: $0) != nil }) { row in
            (row.sourceRowID, try materializer.sample(row).sample)
        }
        var inserts: [(sample: HealthSample, sourceRowID: Int64)] = []
        var adoptions: [(correlation: HealthUUID, objects: [HealthUUID])] = []
        for group in decisions.insertRuns() {
            for index in group.indices {
                inserts.append((batch[index].sample, group.sourceRowID))
                if let adopted = decisions.adoptions[index] { adoptions.append((batch[index].sample.uuid, adopted)) }
            }
        }
        var prepared = try PostgresSampleBatch(inserts.map(\.sample), sourceRowID: { inserts[$0].sourceRowID }, typeCodes: typeCodes,
                                               rollupStyles: rollupStyles, userRowID: userRowID, created: created)
        let (effects, last) = try write(&prepared, userRowID: userRowID, userExternalID: "", connection)
        for adoption in adoptions {
            // Objects stored before (on their own) become the objects of the correlation stored now.
            try connection.execute("""
                UPDATE samples SET parent_seq = p.seq FROM samples p
                WHERE p.user_id = $1 AND p.uuid = $2 AND samples.user_id = $1 AND samples.uuid = ANY($3::uuid[])
                AND samples.parent_seq IS NULL AND samples.seq <> p.seq
                """, [.int64(userRowID), adoption.correlation.parameter, Self.uuidArray(adoption.objects)])
        }
        try rollupsChanged(effects.rollups, userRowID: userRowID, connection)
        return (outcomes, effects.touchedTypes, last)
    }

    /// A uuid[] parameter in PostgreSQL's array text form (uuids need no quoting).
    static func uuidArray(_ uuids: some Sequence<HealthUUID>) -> PostgresValue {
        .text("{" + uuids.map(\.lowercasedString).joined(separator: ",") + "}")
    }

    /// The stored rows of the batch's uuids (samples and correlation objects), 1,000 per query.
    private func storedRows(for batch: [SourcedSample], userRowID: Int64, _ connection: PostgresConnection) throws
        -> [HealthUUID: SampleRow] {
        let uuids = ImportDecisions<SampleRow>.uuids(of: batch)
        var rows: [HealthUUID: SampleRow] = [:]
        var start = 0
        while start < uuids.count {
            let chunk = uuids[start..<min(uuids.count, start + 1_000)]
            for row in try connection.map("""
                SELECT \(SampleRow.selectList) FROM samples WHERE user_id = $1 AND uuid = ANY($2::uuid[])
                """, [.int64(userRowID), Self.uuidArray(chunk)], SampleRow.init) {
                rows[row.uuid] = row
            }
            start += 1_000
        }
        return rows
    }

    // MARK: Export

    /// One page of a user's top-level samples of one type, oldest first by (start, seq), after
    /// `after`: keyset paging on the (user, type, start) index.
    public func exportPage(userRowID: Int64, userExternalID: String, type: String, onlySource: Int64?,
                           after: SampleCursor?, limit: Int) throws -> [(sample: StoredSample, cursor: SampleCursor)] {
        guard let typeCode = typeCode(for: type) else { return [] }
        let query = ExportPageQuery(.postgres, userRowID: userRowID, typeCode: typeCode, onlySource: onlySource, after: after, limit: limit)
        return try pool.read { connection in
            let rows = try connection.map(query.sql, query.parameters.map(PostgresValue.int64), SampleRow.init)
            var materializer = Materializer(store: self, connection: connection, userRowID: userRowID, userExternalID: userExternalID)
            return try rows.map { row in (try materializer.sample(row), SampleCursor(start: row.start, seq: row.seq)) }
        }
    }
}

/// The PostgreSQL store's import transaction, handed to `importSamples(userRowID:_:)`'s body.
private final class PostgresImportSession: ImportSession {
    let store: PostgresHealthStore
    let connection: PostgresConnection
    let userRowID: Int64
    let created: Int64
    private(set) var touched: Set<String> = []
    private(set) var lastSeq: Int64 = 0

    init(store: PostgresHealthStore, connection: PostgresConnection, userRowID: Int64, created: Int64) {
        self.store = store
        self.connection = connection
        self.userRowID = userRowID
        self.created = created
    }

    func save(_ batch: [SourcedSample]) throws -> [ImportOutcome] {
        guard !batch.isEmpty else { return [] }
        let (outcomes, types, last) = try store.importBatch(batch, userRowID: userRowID, created: created, connection)
        touched.formUnion(types)
        lastSeq = max(lastSeq, last)
        return outcomes
    }

    func storedUUIDs(_ uuids: [HealthUUID], app: String) throws -> Set<HealthUUID> {
        try store.storedUUIDs(uuids, userRowID: userRowID, app: app, connection)
    }

    func hasSource(app: String) throws -> Bool {
        try connection.scalarInt64("SELECT id FROM sources WHERE user_id = $1 AND app = $2", [.int64(userRowID), .text(app)]) != nil
    }
}
