import HealthModel
import HealthStore
import PostgreSQL

extension PostgresHealthStore {
    // MARK: Saving

    /// One transaction per batch: all samples or none. The rows are encoded before the
    /// transaction opens, so the user's change-number lock is held only while the database works.
    /// The batch is first copied as new samples; only when one of its uuids is stored already
    /// (a re-sent batch) does it run again, comparing each such sample with the stored one (`write`).
    public func save(_ samples: [HealthSample], granted: WriteGrant) throws -> [HealthUUID] {
        let app = granted.app
        let created = StoreClock.nowMilliseconds()
        var batch = try PostgresSampleBatch(samples, sourceRowID: { _ in app.sourceRowID }, typeCodes: typeCodes,
                                            rollupStyles: rollupStyles, userRowID: app.userRowID, created: created)
        func commit(_ storedUUIDs: StoredUUIDs) throws -> CommittedChange {
            try pool.transaction { connection -> CommittedChange in
                let (effects, last) = try write(&batch, userRowID: app.userRowID, userExternalID: app.userID, storedUUIDs: storedUUIDs,
                                                connection)
                try rollupsChanged(effects.rollups, userRowID: app.userRowID, connection)
                let change = CommittedChange(userRowID: app.userRowID, typeIDs: effects.touchedTypes, lastSeq: last)
                try notifyCommit(change, connection)
                return change
            }
        }
        let change: CommittedChange
        do {
            change = try commit(.abortTransaction)
        } catch let error as PostgresError where error.isUniqueViolation {
            change = try commit(.compare)
        }
        if !change.typeIDs.isEmpty { publish(change) }
        return samples.map(\.uuid)
    }

    /// `save` on the writers' queue: batches past the write backlog (in samples) or the writer
    /// slots (in connections) wait as queued work, so a flood of saves holds no request threads and
    /// never takes every connection from the reads.
    public func save(_ samples: [HealthSample], granted: WriteGrant,
                     completion: @escaping @Sendable (Result<[HealthUUID], any Error>) -> Void) {
        let count = max(1, samples.count)
        writeBacklog.acquire(count) { [self] in
            writerSlots.acquire(1) { [self] in
                writers.async { [self] in
                    let result = Result { try save(samples, granted: granted) }
                    writerSlots.release(1)
                    writeBacklog.release(count)
                    completion(result)
                }
            }
        }
    }

    // MARK: Reading

    public func samples(_ query: SampleQuery, visibility: ReadVisibility) throws -> SamplePage {
        guard let typeCode = typeCode(for: query.type) else { return SamplePage(samples: [], next: nil) }
        return try pool.read { connection in
            var conditions = ["user_id = $1", "type_id = $2"]
            var values: [PostgresValue] = [.int64(visibility.userRowID), .int64(typeCode)]
            if let own = visibility.sources(of: query.type).onlySource {
                values.append(.int64(own))
                conditions.append("source_id = $\(values.count)")
            }
            if let sourceApp = query.sourceApp {
                values.append(.text(sourceApp))
                conditions.append("source_id = (SELECT id FROM sources WHERE user_id = $1 AND app = $\(values.count))")
            }
            try appendDatePredicate(connection, start: query.start, end: query.end, strictStart: query.strictStartDate,
                                    strictEnd: query.strictEndDate, typeCode: typeCode, userRowID: visibility.userRowID,
                                    conditions: &conditions, values: &values)
            if let cursor = query.after {
                values.append(.int64(cursor.start))
                let s = values.count
                values.append(.int64(cursor.seq))
                let q = values.count
                conditions.append(query.descending ? "(start_ms, seq) < ($\(s), $\(q))" : "(start_ms, seq) > ($\(s), $\(q))")
            }
            let direction = query.descending ? "DESC" : "ASC"
            values.append(.int64(Int64(query.limit + 1)))
            var rows = try connection.map("""
                SELECT \(SampleRow.selectList) FROM samples WHERE \(conditions.joined(separator: " AND "))
                ORDER BY start_ms \(direction), seq \(direction) LIMIT $\(values.count)
                """, values, SampleRow.init)
            var next: SampleCursor?
            if rows.count > query.limit {
                rows.removeLast()
                if let last = rows.last { next = SampleCursor(start: last.start, seq: last.seq) }
            }
            var materializer = Materializer(store: self, connection: connection, userRowID: visibility.userRowID,
                                            userExternalID: visibility.userExternalID)
            return SamplePage(samples: try rows.map { try materializer.sample($0) }, next: next)
        }
    }

    public func sample(_ uuid: HealthUUID, visibility: ReadVisibility) throws -> StoredSample? {
        try pool.read { connection in
            guard let row = try connection.first("SELECT \(SampleRow.selectList) FROM samples WHERE user_id = $1 AND uuid = $2",
                                                 [.int64(visibility.userRowID), uuid.parameter], SampleRow.init) else { return nil }
            guard visibility.sees(typeName(for: row.typeCode) ?? "", from: row.sourceRowID) else { return nil }
            var materializer = Materializer(store: self, connection: connection, userRowID: visibility.userRowID,
                                            userExternalID: visibility.userExternalID)
            return try materializer.sample(row)
        }
    }

    /// The overlap (or strict) predicate of docs/api.md (Samples, `GET /v1/samples`), bounded below by the longest sample of the type
    /// so the (user, type, start) index is used from both ends.
    func appendDatePredicate(_ connection: PostgresConnection, start: Int64?, end: Int64?, strictStart: Bool, strictEnd: Bool,
                             typeCode: Int64, userRowID: Int64, conditions: inout [String], values: inout [PostgresValue]) throws {
        if let end {
            values.append(.int64(end))
            let e = values.count
            // The strict flag adds its requirement to the overlap rule (start < end) rather than replacing it.
            conditions.append("start_ms < $\(e)")
            if strictEnd { conditions.append("end_ms <= $\(e)") }
        }
        if let start {
            values.append(.int64(start))
            let s = values.count
            if strictStart {
                conditions.append("start_ms >= $\(s)")
            } else {
                conditions.append("(end_ms > $\(s) OR (end_ms = start_ms AND start_ms >= $\(s)))")
                let longest = try connection.scalarInt64("SELECT max_duration_ms FROM type_extents WHERE user_id = $1 AND type_id = $2",
                                                         [.int64(userRowID), .int64(typeCode)]) ?? 0
                values.append(.int64(start - longest))
                conditions.append("start_ms >= $\(values.count)")
            }
        }
    }

    // MARK: Deleting

    public func deleteSample(_ uuid: HealthUUID, granted: WriteGrant,
                             allowing: (_ type: String, _ sourceRowID: Int64) throws -> Void) throws {
        let app = granted.app
        let change = try pool.transaction { connection -> CommittedChange in
            guard let row = try connection.first("""
                SELECT \(SampleRow.selectList) FROM samples WHERE user_id = $1 AND uuid = $2 FOR UPDATE
                """, [.int64(app.userRowID), uuid.parameter], SampleRow.init) else {
                throw StoreError.notFound("no sample \(uuid.lowercasedString)")
            }
            try allowing(typeName(for: row.typeCode) ?? "", row.sourceRowID)
            return try delete([row], userRowID: app.userRowID, connection)
        }
        publish(change)
    }

    public func deleteSamples(type: String, start: Int64, end: Int64, granted: WriteGrant) throws -> Int {
        let app = granted.app
        guard let typeCode = typeCode(for: type) else { return 0 }
        let (count, change) = try pool.transaction { connection -> (Int, CommittedChange?) in
            var conditions = ["user_id = $1", "type_id = $2", "source_id = $3", "parent_seq IS NULL"]
            var values: [PostgresValue] = [.int64(app.userRowID), .int64(typeCode), .int64(app.sourceRowID)]
            try appendDatePredicate(connection, start: start, end: end, strictStart: false, strictEnd: false, typeCode: typeCode,
                                    userRowID: app.userRowID, conditions: &conditions, values: &values)
            let rows = try connection.map("""
                SELECT \(SampleRow.selectList) FROM samples WHERE \(conditions.joined(separator: " AND ")) ORDER BY seq FOR UPDATE
                """, values, SampleRow.init)
            guard !rows.isEmpty else { return (0, nil) }
            return (rows.count, try delete(rows, userRowID: app.userRowID, connection))
        }
        if let change { publish(change) }
        return count
    }

    /// Deletes rows (and a correlation's objects with it), leaving a tombstone each, numbered from
    /// the user's change counter, in the caller's transaction.
    func delete(_ rows: [SampleRow], userRowID: Int64, _ connection: PostgresConnection) throws -> CommittedChange {
        // Every correlation's objects, read at once, go just before it, as they were saved with it.
        var objects: [Int64: [SampleRow]] = [:]
        for object in try connection.map("""
            SELECT \(SampleRow.selectList) FROM samples WHERE user_id = $1 AND parent_seq = ANY($2::bigint[]) ORDER BY seq
            """, [.int64(userRowID), PostgresArray.bigints(rows.map(\.seq))], SampleRow.init) {
            if let parent = object.parentSeq { objects[parent, default: []].append(object) }
        }
        var all: [SampleRow] = []
        all.reserveCapacity(rows.count)
        for row in rows {
            all += objects[row.seq] ?? []
            all.append(row)
        }
        let last = try Self.reserveChangeNumbers(all.count, userRowID: userRowID, connection)
        var seq = last - Int64(all.count)
        let deletedAt = StoreClock.nowMilliseconds()
        var touched: Set<String> = []
        var rollups: [RollupTouch] = []
        var tombstones: [Int64] = []
        for row in all {
            seq += 1
            tombstones.append(seq)
            rollups.append(RollupTouch(typeCode: row.typeCode, seq: row.seq, sourceRowID: row.sourceRowID, start: row.start, end: row.end,
                                       value: row.value, deleted: true))
            if let name = typeName(for: row.typeCode) { touched.insert(name) }
        }
        // A tombstone each and the rows gone, in one statement however many rows (arrays in text form; a
        // value's NULL is the array's NULL).
        try connection.execute("""
            WITH gone AS (
                DELETE FROM samples s USING unnest($3::bigint[]) AS g(seq) WHERE s.user_id = $1 AND s.seq = g.seq
            )
            INSERT INTO deleted_samples (user_id, seq, uuid, type_id, source_id, deleted_ms, sample_seq, start_ms, end_ms, value)
            SELECT $1, t.seq, t.uuid, t.type_id, t.source_id, $2, t.sample_seq, t.start_ms, t.end_ms, t.value
            FROM unnest($4::bigint[], $5::uuid[], $6::bigint[], $7::bigint[], $3::bigint[], $8::bigint[], $9::bigint[], $10::float8[])
                AS t(seq, uuid, type_id, source_id, sample_seq, start_ms, end_ms, value)
            """, [.int64(userRowID), .int64(deletedAt), PostgresArray.bigints(all.map(\.seq)), PostgresArray.bigints(tombstones),
                  Self.uuidArray(all.map(\.uuid)), PostgresArray.bigints(all.map(\.typeCode)),
                  PostgresArray.bigints(all.map(\.sourceRowID)), PostgresArray.bigints(all.map(\.start)),
                  PostgresArray.bigints(all.map(\.end)), PostgresArray.doubles(all.map(\.value))])
        try rollupsChanged(rollups, userRowID: userRowID, connection)
        let change = CommittedChange(userRowID: userRowID, typeIDs: touched, lastSeq: last)
        try notifyCommit(change, connection)
        return change
    }

    // MARK: Sources and counts

    public func sources(type: String, visibility: ReadVisibility) throws -> [(app: String, devices: [SampleDevice])] {
        guard let typeCode = typeCode(for: type) else { return [] }
        return try pool.read { connection in
            var sql = """
                SELECT s.app, d.body FROM source_types st JOIN sources s ON s.user_id = st.user_id AND s.id = st.source_id
                LEFT JOIN devices d ON d.user_id = st.user_id AND d.id = st.device_id
                WHERE st.user_id = $1 AND st.type_id = $2
                """
            var values: [PostgresValue] = [.int64(visibility.userRowID), .int64(typeCode)]
            if let own = visibility.sources(of: type).onlySource {
                values.append(.int64(own))
                sql += " AND st.source_id = $3"
            }
            sql += " ORDER BY st.first_seq"
            var order: [String] = []
            var devices: [String: [SampleDevice]] = [:]
            enum Column: Int, TableColumns {
                case app, body
                static let table = "source_types"
            }
            for (name, body) in try connection.map(sql, values, { (try $0.string(Column.app), try $0.bytesIfPresent(Column.body)) }) {
                if devices[name] == nil { order.append(name); devices[name] = [] }
                if let body, case let device = try DeviceBody.decode(body), !(devices[name] ?? []).contains(device) {
                    devices[name, default: []].append(device)
                }
            }
            return order.map { (app: $0, devices: devices[$0] ?? []) }
        }
    }

    public func sampleCount(userRowID: Int64, type: String, app: String) throws -> Int {
        guard let typeCode = typeCode(for: type) else { return 0 }
        return try pool.withConnection { connection in
            Int(try connection.scalarInt64("""
                SELECT count(*) FROM samples WHERE user_id = $1 AND type_id = $2
                AND source_id = (SELECT id FROM sources WHERE user_id = $1 AND app = $3)
                """, [.int64(userRowID), .int64(typeCode), .text(app)]) ?? 0)
        }
    }

    /// The union of [start, end) covered by positive samples of `type`, as the SQLite store computes it.
    public func coveredDuration(userRowID: Int64, type: HealthType, start: Int64, end: Int64, onlySource: Int64?) throws -> Int64 {
        guard let typeCode = typeCode(for: type.id), start < end else { return 0 }
        return try pool.read { connection in
            let longest = try connection.scalarInt64("SELECT max_duration_ms FROM type_extents WHERE user_id = $1 AND type_id = $2",
                                                     [.int64(userRowID), .int64(typeCode)]) ?? 0
            var sql = """
                SELECT start_ms, end_ms FROM samples
                WHERE user_id = $1 AND type_id = $2 AND start_ms < $3 AND start_ms >= $4 AND end_ms > $5 AND value > 0
                """
            var values: [PostgresValue] = [.int64(userRowID), .int64(typeCode), .int64(end), .int64(start - longest), .int64(start)]
            if let onlySource {
                sql += " AND source_id = $6"
                values.append(.int64(onlySource))
            }
            sql += " ORDER BY start_ms"
            enum Column: Int, TableColumns {
                case start, end
                static let table = "samples"
            }
            let intervals = try connection.map(sql, values) { (try $0.int64(Column.start), try $0.int64(Column.end)) }
            return CoveredTime.union(of: intervals, within: start, end)
        }
    }
}
