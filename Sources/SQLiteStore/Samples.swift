import HealthStore
import Foundation
import HealthModel
import SQLite
import Synchronization

extension SQLiteHealthStore {
    // MARK: Saving

    /// Saves a batch atomically: all samples or none. A uuid saved before with identical content is
    /// accepted again without a second copy; with different content the whole batch is a conflict.
    /// Returns the uuids in request order.
    public func save(_ samples: [HealthSample], granted: WriteGrant) throws -> [HealthUUID] {
        let app = granted.app
        let created = Self.nowMilliseconds()
        let batch = PreparedBatch(samples, store: self)
        let change = try pool.groupedWrite { db in try insert(batch, by: app, created: created, db) }
        if !change.typeIDs.isEmpty { publish(change) }
        return samples.map(\.uuid)
    }

    /// `save` without waiting: the batch is prepared on the calling thread, written in the
    /// writer's next group commit, and `completion` gets the uuids in request order once it is
    /// durable (or the error: `SampleConflict`, `StoreError`, `SQLiteError`), on a global queue.
    public func save(_ samples: [HealthSample], granted: WriteGrant,
                     completion: @escaping @Sendable (Result<[HealthUUID], any Error>) -> Void) {
        let app = granted.app
        let created = Self.nowMilliseconds()
        let batch = PreparedBatch(samples, store: self)
        let uuids = samples.map(\.uuid)
        let count = samples.count
        writeBacklog.acquire(count) { [self] in
            pool.groupedWrite({ [self] db in try insert(batch, by: app, created: created, db) }, completion: { [self] result in
                writeBacklog.release(count)
                switch result {
                case .success(let change):
                    if !change.typeIDs.isEmpty { publish(change) }
                    completion(.success(uuids))
                case .failure(let error):
                    completion(.failure(error))
                }
            })
        }
    }

    /// One prepared batch inside the writer's transaction (a savepoint of a group commit).
    private func insert(_ batch: PreparedBatch, by app: AppAuthorization, created: Int64, _ db: Database) throws -> CommittedChange {
        var writer = try SampleWriter(db: db, store: self, userRowID: app.userRowID, sourceRowID: app.sourceRowID, created: created)
        try writer.insert(batch)
        try writer.finish()
        return CommittedChange(userRowID: app.userRowID, typeIDs: writer.touchedTypes, lastSeq: writer.lastSeq)
    }

    // MARK: Reading

    /// Samples of one type that `visibility` sees: every source's, or one source's only.
    public func samples(_ query: SampleQuery, visibility: ReadVisibility) throws -> SamplePage {
        let sources = visibility.sources(of: query.type)
        return try pool.read { db in
            guard let typeCode = typeCode(for: query.type) else { return SamplePage(samples: [], next: nil) }
            let shape = Self.samplePageShape(query, narrowed: sources != .everySource)
            // The SQL text is fixed by the shape: built only the first time this connection sees it.
            let clause = try samplePageClause(db, query: query, typeCode: typeCode, userRowID: visibility.userRowID, sources: sources,
                                              buildsText: !db.hasCachedStatement(Self.samplePageStatements, shape: shape))
            let statement = try db.cachedStatement(Self.samplePageStatements, shape: shape) {
                Self.samplePageSQL(clause, descending: query.descending)
            }
            var values = clause.values
            values.append(.integer(Int64(query.limit + 1)))
            try statement.bind(values)
            var rows: [SampleRow] = []
            rows.reserveCapacity(min(query.limit + 1, 1_024))
            try statement.forEachRow { rows.append(try SampleRow($0)) }
            var next: SampleCursor?
            if rows.count > query.limit {
                rows.removeLast()
                if let last = rows.last { next = SampleCursor(start: last.start, seq: last.seq) }
            }
            var lookups = RowLookups()
            let samples = try rows.map { try materialize($0, db: db, userExternalID: visibility.userExternalID, lookups: &lookups) }
            return SamplePage(samples: samples, next: next)
        }
    }

    /// The page queries of `samples(_:visibility:)`, one statement per shape.
    static let samplePageStatements = StatementFamily()

    /// Every choice that changes the page query's SQL text, as bits (a flag that does not change
    /// the text for some queries, e.g. strictStartDate without a start, only adds a shape).
    static func samplePageShape(_ query: SampleQuery, narrowed: Bool) -> Int {
        func bit(_ set: Bool, _ position: Int) -> Int { set ? 1 << position : 0 }
        return bit(narrowed, 0) | bit(query.sourceApp != nil, 1) | bit(query.end != nil, 2) | bit(query.strictEndDate, 3)
            | bit(query.start != nil, 4) | bit(query.strictStartDate, 5) | bit(query.after != nil, 6) | bit(query.descending, 7)
    }

    /// The page query's predicate: its values always, its text when `buildsText`. The limit is
    /// the parameter after the clause's values.
    func samplePageClause(_ db: Database, query: SampleQuery, typeCode: Int64, userRowID: Int64, sources: SourceVisibility,
                          buildsText: Bool) throws -> WhereClause {
        var clause = WhereClause(buildsText: buildsText)
        let user = clause.bind(.integer(userRowID))
        clause.require("user_id = ?\(user)")
        let type = clause.bind(.integer(typeCode))
        clause.require("type_id = ?\(type)")
        clause.narrow(to: sources)
        if let sourceApp = query.sourceApp {
            let app = clause.bind(.text(sourceApp))
            clause.require("source_id = (SELECT id FROM sources WHERE user_id = ?\(user) AND app = ?\(app))")
        }
        try appendDatePredicate(db, query: query, typeCode: typeCode, userRowID: userRowID, into: &clause)
        if let cursor = query.after {
            let s = clause.bind(.integer(cursor.start))
            let q = clause.bind(.integer(cursor.seq))
            clause.require(query.descending
                ? "(start_ms < ?\(s) OR (start_ms = ?\(s) AND seq < ?\(q)))"
                : "(start_ms > ?\(s) OR (start_ms = ?\(s) AND seq > ?\(q)))")
        }
        return clause
    }

    static func samplePageSQL(_ clause: WhereClause, descending: Bool) -> String {
        let direction = descending ? "DESC" : "ASC"
        return """
            SELECT \(Self.sampleColumns) FROM samples
            WHERE \(clause.text)
            ORDER BY start_ms \(direction), seq \(direction) LIMIT ?\(clause.values.count + 1)
            """
    }

    /// One sample by uuid, if the user has it and `visibility` sees it.
    public func sample(_ uuid: HealthUUID, visibility: ReadVisibility) throws -> StoredSample? {
        try pool.read { db in
            guard let row = try sampleKeys.find(uuid, userRowID: visibility.userRowID, db: db) else { return nil }
            guard visibility.sees(self.typeName(for: row.typeCode) ?? "", from: row.sourceRowID) else { return nil }
            return try materialize(row, db: db, userExternalID: visibility.userExternalID)
        }
    }

    /// The overlap (or strict) predicate of docs/api.md (Samples, `GET /v1/samples`), bounded below by the longest sample of the type
    /// so the index on (user, type, start) is used from both ends.
    private func appendDatePredicate(_ db: Database, query: SampleQuery, typeCode: Int64, userRowID: Int64,
                                     into clause: inout WhereClause) throws {
        if let end = query.end {
            let e = clause.bind(.integer(end))
            // The strict flag adds its requirement to the overlap rule (start < end) rather than replacing it.
            clause.require("start_ms < ?\(e)")
            if query.strictEndDate { clause.require("end_ms <= ?\(e)") }
        }
        if let start = query.start {
            let s = clause.bind(.integer(start))
            if query.strictStartDate {
                clause.require("start_ms >= ?\(s)")
            } else {
                clause.require("(end_ms > ?\(s) OR (end_ms = start_ms AND start_ms >= ?\(s)))")
                let longest = try db.firstInt64("SELECT max_duration_ms FROM type_extents WHERE user_id = ? AND type_id = ?",
                                                [.integer(userRowID), .integer(typeCode)]) ?? 0
                let lower = clause.bind(.integer(start - longest))
                clause.require("start_ms >= ?\(lower)")
            }
        }
    }

    // MARK: Deleting

    /// Deletes one sample of the grant's user once `allowing` accepts its type and source (another
    /// user's, or none, is `notFound`).
    public func deleteSample(_ uuid: HealthUUID, granted: WriteGrant,
                             allowing: (_ type: String, _ sourceRowID: Int64) throws -> Void) throws {
        let app = granted.app
        let (change, compacting) = try pool.write { db -> (CommittedChange, Bool) in
            guard let row = try sampleKeys.find(uuid, userRowID: app.userRowID, db: db) else {
                throw StoreError.notFound("no sample \(uuid.lowercasedString)")
            }
            try allowing(self.typeName(for: row.typeCode) ?? "", row.sourceRowID)
            var deleter = try SampleDeleter(db: db, userRowID: app.userRowID, store: self)
            try deleter.delete(row)
            try deleter.finish()
            return (CommittedChange(userRowID: app.userRowID, typeIDs: deleter.touchedTypes, lastSeq: deleter.lastSeq),
                    deleter.keyCompactionPending)
        }
        if compacting { keyCompactor.schedule() }
        publish(change)
    }

    /// Deletes the app's own samples of a type matching the date predicate; returns how many.
    public func deleteSamples(type: String, start: Int64, end: Int64, granted: WriteGrant) throws -> Int {
        let app = granted.app
        let (count, change, compacting) = try pool.write { db -> (Int, CommittedChange?, Bool) in
            guard let typeCode = typeCode(for: type) else { return (0, nil, false) }
            var clause = WhereClause(conditions: ["user_id = ?1", "type_id = ?2", "source_id = ?3"],
                                     values: [.integer(app.userRowID), .integer(typeCode), .integer(app.sourceRowID)])
            var query = SampleQuery(type: type)
            query.start = start
            query.end = end
            try appendDatePredicate(db, query: query, typeCode: typeCode, userRowID: app.userRowID, into: &clause)
            let statement = try db.cachedStatement(
                "SELECT \(Self.sampleColumns) FROM samples WHERE \(clause.text) AND parent_seq IS NULL")
            try statement.bind(clause.values)
            var rows: [SampleRow] = []
            try statement.forEachRow { rows.append(try SampleRow($0)) }
            guard !rows.isEmpty else { return (0, nil, false) }
            var deleter = try SampleDeleter(db: db, userRowID: app.userRowID, store: self)
            for row in rows { try deleter.delete(row) }
            try deleter.finish()
            return (rows.count, CommittedChange(userRowID: app.userRowID, typeIDs: deleter.touchedTypes, lastSeq: deleter.lastSeq),
                    deleter.keyCompactionPending)
        }
        // The compaction runs after the commit, in steps of its own: this request waits for none of it.
        if compacting { keyCompactor.schedule() }
        if let change { publish(change) }
        return count
    }

    // MARK: Sources

    /// The apps (with their devices) that saved a type, as HKSourceQuery: only the one source when
    /// `visibility` sees only one.
    public func sources(type: String, visibility: ReadVisibility) throws -> [(app: String, devices: [SampleDevice])] {
        try pool.read { db in
            guard let typeCode = typeCode(for: type) else { return [] }
            var sql = """
                SELECT s.app, d.body FROM source_types st JOIN sources s ON s.id = st.source_id
                LEFT JOIN devices d ON d.id = st.device_id
                WHERE st.user_id = ? AND st.type_id = ?
                """
            var values: [SQLValue] = [.integer(visibility.userRowID), .integer(typeCode)]
            if let own = visibility.sources(of: type).onlySource {
                sql += " AND st.source_id = ?"
                values.append(.integer(own))
            }
            sql += " ORDER BY st.first_seq"
            var order: [String] = []
            var devices: [String: [SampleDevice]] = [:]
            let statement = try db.cachedStatement(sql)
            try statement.bind(values)
            enum Column: Int, TableColumns {
                case app, body
                static let table = "source_types"
            }
            try statement.forEachRow { row in
                let name = try row.string(Column.app)
                if devices[name] == nil { order.append(name); devices[name] = [] }
                if let body = row.blobIfPresent(Column.body), case let device = try DeviceBody.decode(body),
                   !(devices[name] ?? []).contains(device) {
                    devices[name, default: []].append(device)
                }
            }
            return order.map { (app: $0, devices: devices[$0] ?? []) }
        }
    }

    // MARK: Row mapping

    /// The SELECT list that `SampleRow` reads.
    static let sampleColumns = SampleColumn.selectList

    func materialize(_ row: SampleRow, db: Database, userExternalID: String) throws -> StoredSample {
        var lookups = RowLookups()
        return try materialize(row, db: db, userExternalID: userExternalID, lookups: &lookups)
    }

    /// Devices and app names already read while materializing one result: a page of 1,000 rows
    /// names only a few of each, so each is read (and its body parsed) once per page, not per row.
    /// Consecutive rows mostly repeat the previous row's type, device and source, so each is
    /// compared with the last one first and hashed only when it differs.
    struct RowLookups {
        var devices: [Int64: SampleDevice?] = [:]
        var appNames: [Int64: String] = [:]
        var bodies = SampleBodyCache()
        var lastType: (code: Int64, name: String)?
        var lastDevice: (id: Int64, device: SampleDevice?)?
        var lastApp: (id: Int64, name: String)?

        mutating func body(_ bytes: [UInt8]) throws(RowDecodingError) -> SampleRowBody.Decoded { try bodies.decoded(bytes) }
    }

    func materialize(_ row: SampleRow, db: Database, userExternalID: String, lookups: inout RowLookups) throws -> StoredSample {
        let typeName: String
        if let last = lookups.lastType, last.code == row.typeCode {
            typeName = last.name
        } else {
            typeName = self.typeName(for: row.typeCode) ?? "unknown"
            lookups.lastType = (row.typeCode, typeName)
        }
        let body = try row.body.map { bytes throws(RowDecodingError) in try lookups.body(bytes) } ?? SampleRowBody.Decoded()
        let content: SampleContent
        if let bodyContent = body.content {
            content = bodyContent
        } else if correlationTypeCodes.contains(row.typeCode) {
            let statement = try db.cachedStatement("SELECT \(Self.sampleColumns) FROM samples WHERE parent_seq = ? ORDER BY seq")
            try statement.bind([.integer(row.seq)])
            var children: [SampleRow] = []
            try statement.forEachRow { children.append(try SampleRow($0)) }
            content = .correlation(try children.map {
                try materialize($0, db: db, userExternalID: userExternalID, lookups: &lookups).sample
            })
        } else {
            guard let value = row.value else {
                // A quantity without its value is a damaged row: say so instead of reporting 0.
                throw RowDecodingError(table: SampleColumn.table, column: SampleColumn.value.name,
                                       problem: "is NULL for \(typeName) sample seq \(row.seq)")
            }
            content = .quantity(value)
        }
        var device: SampleDevice?
        if let id = row.deviceRowID {
            if let last = lookups.lastDevice, last.id == id {
                device = last.device
            } else {
                if let known = lookups.devices[id] {
                    device = known
                } else {
                    device = try self.device(rowID: id, db: db)
                    lookups.devices[id] = device
                }
                lookups.lastDevice = (id, device)
            }
        }
        let appName: String
        if let last = lookups.lastApp, last.id == row.sourceRowID {
            appName = last.name
        } else {
            if let known = lookups.appNames[row.sourceRowID] {
                appName = known
            } else {
                appName = try self.appName(for: row.sourceRowID, db: db)
                lookups.appNames[row.sourceRowID] = appName
            }
            lookups.lastApp = (row.sourceRowID, appName)
        }
        let sample = HealthSample(uuid: row.uuid, type: typeName,
                                  start: row.start, end: row.end, content: content, metadata: body.metadata, device: device)
        return StoredSample(sample: sample, source: SampleSource(app: appName, user: userExternalID),
                            created: row.created)
    }
}

