import HealthStore
import HealthModel
import SQLite

extension SQLiteHealthStore {
    /// Runs `body` in one write transaction: every batch it saves through the session commits
    /// together, or none does (a fault part way stores nothing). Memory stays one batch.
    ///
    /// Batched: one query per few hundred uuids finds which of a batch are stored already; every
    /// sample is then decided in order against those and the samples of the batch decided before it
    /// (so the outcome is the one a sample-by-sample save would give), and what is new is inserted
    /// with one prepared batch per run of one app, reusing the prepared INSERT.
    public func importSamples(userRowID: Int64, _ body: (any ImportSession) throws -> Void) throws {
        let created = Self.nowMilliseconds()
        let change = try pool.write { db -> CommittedChange in
            let session = SQLiteImportSession(store: self, db: db, userRowID: userRowID, created: created)
            try body(session)
            return CommittedChange(userRowID: userRowID, typeIDs: session.touched, lastSeq: try ChangeSequence.current(db))
        }
        if !change.typeIDs.isEmpty { publish(change) }
    }

    /// Which of `uuids` the user's `app` has stored (inside an import's transaction).
    fileprivate func storedUUIDs(_ uuids: [HealthUUID], userRowID: Int64, app: String, db: Database) throws -> Set<HealthUUID> {
        guard !uuids.isEmpty, let source = try db.firstInt64("SELECT id FROM sources WHERE user_id = ? AND app = ?",
                                                             [.integer(userRowID), .text(app)]) else { return [] }
        let keys = uuids.map { sampleKeys.key(userRowID: userRowID, uuid: $0) }
        let found = try sampleKeys.find(uuids, keys: keys, userRowID: userRowID, runs: try sampleKeys.runs(userRowID: userRowID, db: db), db: db)
        return Set(found.values.filter { $0.sourceRowID == source }.map(\.uuid))
    }

    /// One batch inside an import's transaction; the types it touched.
    fileprivate func importBatch(_ batch: [SourcedSample], userRowID: Int64, created: Int64, db: Database)
        throws -> (outcomes: [ImportOutcome], touched: Set<String>) {
        guard !batch.isEmpty else { return ([], []) }
        var decisions = ImportDecisions(stored: try storedRows(for: batch, db: db, userRowID: userRowID), batchCount: batch.count)
        var lookups = RowLookups()
        let outcomes = try decisions.decideAll(batch, sourceRowID: { try Self.sourceRowID(db, userRowID: userRowID, app: $0) },
                                               isKnown: { typeCode(for: $0) != nil }) { row in
            (row.sourceRowID, try materialize(row, db: db, userExternalID: "", lookups: &lookups).sample)
        }
        var touched: Set<String> = []
        for group in decisions.insertRuns() {
            // Each writer continues the change sequence where the last one stored it.
            var writer = try SampleWriter(db: db, store: self, userRowID: userRowID, sourceRowID: group.sourceRowID, created: created)
            // Decided: the writer neither looks the uuids up again nor inserts the adopted objects.
            let adopted = Set(group.indices.flatMap { decisions.adoptions[$0] ?? [] })
            try writer.insert(PreparedBatch(group.indices.map { batch[$0].sample }, store: self, decidedAdopting: adopted))
            try writer.finish()
            touched.formUnion(writer.touchedTypes)
            for index in group.indices {
                guard let adopted = decisions.adoptions[index] else { continue }
                try adopt(adopted, into: batch[index].sample, db: db, userRowID: userRowID)
            }
        }
        return (outcomes, touched)
    }

    /// The stored rows of the batch's uuids (samples and correlation objects): one look at the
    /// user's uuid key runs for the whole batch.
    private func storedRows(for batch: [SourcedSample], db: Database, userRowID: Int64) throws -> [HealthUUID: SampleRow] {
        let uuids = ImportDecisions<SampleRow>.uuids(of: batch)
        let keys = uuids.map { sampleKeys.key(userRowID: userRowID, uuid: $0) }
        let found = try sampleKeys.find(uuids, keys: keys, userRowID: userRowID,
                                        runs: try sampleKeys.runs(userRowID: userRowID, db: db), db: db)
        var rows: [HealthUUID: SampleRow] = [:]
        for (position, row) in found { rows[uuids[position]] = row }
        return rows
    }

    /// Makes objects stored before (on their own) the objects of the just-inserted `correlation`.
    private func adopt(_ objects: [HealthUUID], into correlation: HealthSample, db: Database, userRowID: Int64) throws {
        guard let parentSeq = try sampleKeys.find(correlation.uuid, userRowID: userRowID, db: db)?.seq else {
            throw StoreError.invalid("correlation \(correlation.uuid.lowercasedString) vanished while saving")
        }
        let update = try db.cachedStatement("UPDATE samples SET parent_seq = ? WHERE seq = ? AND parent_seq IS NULL AND seq <> ?")
        for object in objects {
            guard let stored = try sampleKeys.find(object, userRowID: userRowID, db: db) else { continue }
            update.reset()
            try update.bind([.integer(parentSeq), .integer(stored.seq), .integer(parentSeq)])
            _ = try update.step()
        }
    }
}

/// The SQLite store's import transaction, handed to `importSamples(userRowID:_:)`'s body.
private final class SQLiteImportSession: ImportSession {
    let store: SQLiteHealthStore
    let db: Database
    let userRowID: Int64
    let created: Int64
    private(set) var touched: Set<String> = []

    init(store: SQLiteHealthStore, db: Database, userRowID: Int64, created: Int64) {
        self.store = store
        self.db = db
        self.userRowID = userRowID
        self.created = created
    }

    func save(_ batch: [SourcedSample]) throws -> [ImportOutcome] {
        let (outcomes, types) = try store.importBatch(batch, userRowID: userRowID, created: created, db: db)
        touched.formUnion(types)
        return outcomes
    }

    func storedUUIDs(_ uuids: [HealthUUID], app: String) throws -> Set<HealthUUID> {
        try store.storedUUIDs(uuids, userRowID: userRowID, app: app, db: db)
    }

    func hasSource(app: String) throws -> Bool {
        try db.first("SELECT 1 FROM sources WHERE user_id = ? AND app = ?", [.integer(userRowID), .text(app)], { _ in true }) ?? false
    }
}

extension SQLiteHealthStore {
    // MARK: Export

    /// One page of a user's top-level samples of one type (a correlation carries its objects), oldest
    /// first by (start, seq), after `after`: keyset paging on the (user, type, start) index.
    /// `onlySource` limits it to one app's samples (read privacy for types the token may not read).
    public func exportPage(userRowID: Int64, userExternalID: String, type: String, onlySource: Int64?,
                           after: SampleCursor?, limit: Int) throws -> [(sample: StoredSample, cursor: SampleCursor)] {
        guard let typeCode = typeCode(for: type) else { return [] }
        let query = ExportPageQuery(.sqlite, userRowID: userRowID, typeCode: typeCode, onlySource: onlySource, after: after, limit: limit)
        return try pool.read { db in
            let statement = try db.cachedStatement(query.sql)
            try statement.bind(query.parameters.map(SQLValue.integer))
            var rows: [SampleRow] = []
            try statement.forEachRow { rows.append(try SampleRow($0)) }
            return try rows.map { row in
                (try materialize(row, db: db, userExternalID: userExternalID), SampleCursor(start: row.start, seq: row.seq))
            }
        }
    }
}
