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
    ///
    /// Batched: one query per few hundred uuids finds which of the batch are stored already; every
    /// sample is then decided in order against those and the samples of the batch decided before it
    /// (so the outcome is the one a sample-by-sample save would give), and what is new is inserted
    /// with one prepared batch per run of one app, reusing the prepared INSERT.
    public func importSamples(_ batch: [SourcedSample], userRowID: Int64) throws -> [ImportOutcome] {
        guard !batch.isEmpty else { return [] }
        let created = Self.nowMilliseconds()
        let (outcomes, change) = try pool.write { db -> ([ImportOutcome], CommittedChange) in
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
            let lastSeq = try ChangeSequence.current(db)
            return (outcomes, CommittedChange(userRowID: userRowID, typeIDs: touched, lastSeq: lastSeq))
        }
        if !change.typeIDs.isEmpty { publish(change) }
        return outcomes
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

/// Decides each sample of an import batch, in order, as a save one by one would: against what is
/// stored and what the batch inserts before it. `StoredRow` is a store's row type, read into a
/// sample only when first compared.
package struct ImportDecisions<StoredRow> {
    /// What a uuid is taken by: a stored row (read in full only when first compared), or a sample of
    /// this batch, by position (a correlation's object by its position in the correlation too), so
    /// no sample is copied.
    private enum Taken {
        case stored(StoredRow)
        case materialized(sourceRowID: Int64, sample: HealthSample)
        case batch(sourceRowID: Int64, index: Int, object: Int?)
    }

    private var taken: [HealthUUID: Taken] = [:]
    /// Indices of the samples to insert, with their source.
    private var inserts: [(index: Int, sourceRowID: Int64)] = []
    /// Correlation index -> objects stored before, to adopt once it is inserted.
    package private(set) var adoptions: [Int: [HealthUUID]] = [:]

    package init(stored: [HealthUUID: StoredRow], batchCount: Int) {
        taken.reserveCapacity(stored.count + batchCount * 2)
        for (uuid, row) in stored { taken[uuid] = .stored(row) }
    }

    /// The uuids an import batch may find stored: its samples' and their correlation objects'.
    package static func uuids(of batch: [SourcedSample]) -> [HealthUUID] {
        var uuids: [HealthUUID] = []
        uuids.reserveCapacity(batch.count)
        for item in batch {
            uuids.append(item.sample.uuid)
            if case .correlation(let objects) = item.sample.content { uuids.append(contentsOf: objects.map(\.uuid)) }
        }
        return uuids
    }

    /// Decides every sample of the batch in order. `sourceRowID` gives an app's source row (asked
    /// once per app); `isKnown` and `read` as for `decide`.
    package mutating func decideAll(_ batch: [SourcedSample], sourceRowID: (String) throws -> Int64, isKnown: (String) -> Bool,
                                    read: (StoredRow) throws -> (sourceRowID: Int64, sample: HealthSample)) throws -> [ImportOutcome] {
        var sourceRows: [String: Int64] = [:]
        var outcomes: [ImportOutcome] = []
        outcomes.reserveCapacity(batch.count)
        for (index, item) in batch.enumerated() {
            let source: Int64
            if let known = sourceRows[item.app] {
                source = known
            } else {
                source = try sourceRowID(item.app)
                sourceRows[item.app] = source
            }
            outcomes.append(try decide(index, of: batch, sourceRowID: source, isKnown: isKnown, read: read))
        }
        return outcomes
    }

    /// `isKnown`: whether the store has a code for a type; `read`: a stored row's source and sample.
    package mutating func decide(_ index: Int, of batch: [SourcedSample], sourceRowID: Int64, isKnown: (String) -> Bool,
                                 read: (StoredRow) throws -> (sourceRowID: Int64, sample: HealthSample)) throws -> ImportOutcome {
        let sample = batch[index].sample
        guard isKnown(sample.type) else { return .conflict("unknown type \(sample.type)") }
        if taken[sample.uuid] != nil {
            return try isSame(sample, sourceRowID: sourceRowID, batch: batch, read: read)
                ? .alreadyStored : .conflict("uuid \(sample.uuid.lowercasedString) exists with different content")
        }
        var adopted: [HealthUUID] = []
        if case .correlation(let objects) = sample.content {
            // Check the objects first, so a conflict leaves nothing half-saved.
            for object in objects {
                guard isKnown(object.type) else { return .conflict("unknown type \(object.type)") }
                guard taken[object.uuid] != nil else { continue }
                guard try isSame(object, sourceRowID: sourceRowID, batch: batch, read: read) else {
                    return .conflict("object \(object.uuid.lowercasedString) exists with different content")
                }
                adopted.append(object.uuid)
            }
            for (position, object) in objects.enumerated() where taken[object.uuid] == nil {
                taken[object.uuid] = .batch(sourceRowID: sourceRowID, index: index, object: position)
            }
        }
        taken[sample.uuid] = .batch(sourceRowID: sourceRowID, index: index, object: nil)
        inserts.append((index, sourceRowID))
        if !adopted.isEmpty { adoptions[index] = adopted }
        return .inserted
    }

    /// Whether `sample`'s uuid is taken by the same sample from the same source (a harmless repeat).
    private mutating func isSame(_ sample: HealthSample, sourceRowID: Int64, batch: [SourcedSample],
                                 read: (StoredRow) throws -> (sourceRowID: Int64, sample: HealthSample)) throws -> Bool {
        switch taken[sample.uuid] {
        case .batch(let takenSource, let index, let object)?:
            guard takenSource == sourceRowID else { return false }
            guard let object else { return batch[index].sample == sample }
            guard case .correlation(let objects) = batch[index].sample.content else { return false }
            return objects[object] == sample
        case .materialized(let takenSource, let earlier)?:
            return takenSource == sourceRowID && earlier == sample
        case .stored(let row)?:
            let existing = try read(row)
            // Read once: later repeats of the uuid compare with the materialized sample.
            taken[sample.uuid] = .materialized(sourceRowID: existing.sourceRowID, sample: existing.sample)
            return existing.sourceRowID == sourceRowID && existing.sample == sample
        case nil:
            return false
        }
    }

    /// The samples to insert as runs of one source each, in batch order. Inserting run by run keeps
    /// the batch's order in the change sequence: samples with the same start list in the order they
    /// had on the server a backup came from, and the first app to save a type (the default source
    /// order, and HKSourceQuery's) stays first. Grouping all of an app's samples instead put the app
    /// first seen in a batch ahead of the other for the whole batch.
    package func insertRuns() -> [(sourceRowID: Int64, indices: [Int])] {
        var runs: [(sourceRowID: Int64, indices: [Int])] = []
        for insert in inserts {
            if let last = runs.indices.last, runs[last].sourceRowID == insert.sourceRowID {
                runs[last].indices.append(insert.index)
            } else {
                runs.append((insert.sourceRowID, [insert.index]))
            }
        }
        return runs
    }
}

extension HealthStore {
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
