import HealthModel
import SQLite

/// What happened to one sample of an import batch.
public enum ImportOutcome: Sendable, Hashable {
    /// Stored now.
    case inserted
    /// The same uuid with the same content was stored before (an earlier import, or an earlier batch).
    case alreadyStored
    /// The uuid is taken by different content (e.g. the same record with other metadata); nothing saved.
    case conflict(String)
}

extension HealthStore {
    /// Saves an import batch for a user, each sample as its own app's source (created if needed, with
    /// no authorization: the import is the admin acting for the user). The batch commits as one
    /// transaction; a uuid that exists is not saved twice, and a uuid taken by other content is
    /// reported rather than failing the batch. A correlation adopts objects already stored on their
    /// own (Apple exports repeat them at top level), so they are kept once.
    public func importSamples(_ batch: [SourcedSample], userRowID: Int64) throws -> [ImportOutcome] {
        guard !batch.isEmpty else { return [] }
        let created = Self.nowMilliseconds()
        let (outcomes, change) = try pool.write { db -> ([ImportOutcome], CommittedChange) in
            var outcomes: [ImportOutcome] = []
            outcomes.reserveCapacity(batch.count)
            var touched: Set<String> = []
            var sourceRows: [String: Int64] = [:]
            var writer: SampleWriter?
            var writerApp = ""
            for (index, item) in batch.enumerated() {
                if writer == nil || writerApp != item.app {
                    // One writer per run of the same app; each continues the change sequence of the last.
                    if let finished = writer {
                        try finished.finish()
                        touched.formUnion(finished.touchedTypes)
                    }
                    let sourceRowID: Int64
                    if let known = sourceRows[item.app] {
                        sourceRowID = known
                    } else {
                        sourceRowID = try Self.sourceRowID(db, userRowID: userRowID, app: item.app)
                        sourceRows[item.app] = sourceRowID
                    }
                    writer = try SampleWriter(db: db, store: self, userRowID: userRowID, sourceRowID: sourceRowID, created: created)
                    writerApp = item.app
                }
                guard var current = writer else { continue }
                writer = nil  // so mutating `current` does not copy the writer's tables
                outcomes.append(try importOne(item.sample, index: index, writer: &current, db: db, userRowID: userRowID))
                writer = current
            }
            if let finished = writer {
                try finished.finish()
                touched.formUnion(finished.touchedTypes)
            }
            let lastSeq = try ChangeSequence.current(db)
            return (outcomes, CommittedChange(userRowID: userRowID, typeIDs: touched, lastSeq: lastSeq))
        }
        if !change.typeIDs.isEmpty { publish(change) }
        return outcomes
    }

    private func importOne(_ sample: HealthSample, index: Int, writer: inout SampleWriter, db: Database,
                           userRowID: Int64) throws -> ImportOutcome {
        if case .correlation(let objects) = sample.content {
            // Check the objects first, so a conflict leaves nothing half-saved.
            for object in objects {
                if let conflict = try existingConflict(object, writer: writer, db: db, userRowID: userRowID) {
                    return .conflict(conflict)
                }
            }
        }
        let before = writer.lastSeq
        do {
            // One sample per prepared batch: an import skips a conflicting record instead of failing the batch.
            try writer.insert(PreparedBatch([sample], store: self))
        } catch let conflict as SampleConflict {
            return .conflict(conflict.detail)
        }
        guard writer.lastSeq != before else { return .alreadyStored }
        if case .correlation(let objects) = sample.content, !objects.isEmpty {
            guard let parentSeq = try db.first("SELECT seq FROM samples WHERE user_id = ? AND uuid = ?",
                                               [.integer(userRowID), .blob(sample.uuid.bytes)], { $0.int64(at: 0) }) else {
                throw StoreError.invalid("correlation \(sample.uuid.lowercasedString) vanished while saving")
            }
            let adopt = try db.cachedStatement(
                "UPDATE samples SET parent_seq = ? WHERE user_id = ? AND uuid = ? AND parent_seq IS NULL AND seq <> ?")
            for object in objects {
                adopt.reset()
                try adopt.bind([.integer(parentSeq), .integer(userRowID), .blob(object.uuid.bytes), .integer(parentSeq)])
                _ = try adopt.step()
            }
        }
        return .inserted
    }

    /// Nil when `sample` is new or stored with identical content by the same source; otherwise why not.
    private func existingConflict(_ sample: HealthSample, writer: SampleWriter, db: Database, userRowID: Int64) throws -> String? {
        guard let row = try db.first("SELECT \(Self.sampleColumns) FROM samples WHERE user_id = ? AND uuid = ?",
                                     [.integer(userRowID), .blob(sample.uuid.bytes)], { SampleRow($0) }) else { return nil }
        let existing = try materialize(row, db: db, userExternalID: "")
        guard row.sourceRowID == writer.sourceRowID, existing.sample == sample else {
            return "object \(sample.uuid.lowercasedString) exists with different content"
        }
        return nil
    }

    // MARK: Export

    /// One page of a user's top-level samples of one type (a correlation carries its objects), oldest
    /// first by (start, seq), after `after`: keyset paging on the (user, type, start) index.
    /// `onlySource` limits it to one app's samples (read privacy for types the token may not read).
    public func exportPage(userRowID: Int64, userExternalID: String, type: String, onlySource: Int64?,
                           after: SampleCursor?, limit: Int) throws -> [(sample: StoredSample, cursor: SampleCursor)] {
        guard let typeCode = typeCode(for: type) else { return [] }
        return try pool.read { db in
            var conditions = ["user_id = ?1", "type_id = ?2", "parent_seq IS NULL"]
            var values: [SQLValue] = [.integer(userRowID), .integer(typeCode)]
            if let onlySource {
                values.append(.integer(onlySource))
                conditions.append("source_id = ?\(values.count)")
            }
            if let after {
                values.append(.integer(after.start))
                let s = values.count
                values.append(.integer(after.seq))
                conditions.append("(start_ms > ?\(s) OR (start_ms = ?\(s) AND seq > ?\(values.count)))")
            }
            values.append(.integer(Int64(limit)))
            let statement = try db.cachedStatement("""
                SELECT \(Self.sampleColumns) FROM samples WHERE \(conditions.joined(separator: " AND "))
                ORDER BY start_ms, seq LIMIT ?\(values.count)
                """)
            try statement.bind(values)
            var rows: [SampleRow] = []
            try statement.forEachRow { rows.append(SampleRow($0)) }
            return try rows.map { row in
                (try materialize(row, db: db, userExternalID: userExternalID), SampleCursor(start: row.start, seq: row.seq))
            }
        }
    }
}
