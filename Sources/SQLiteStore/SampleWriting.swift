import HealthStore
import HealthModel
import SQLite
import Statistics

/// The change sequence shared by inserts and tombstones: every committed change gets the next
/// number, so the change feed reads in commit order. Only the single writer connection touches it.
enum ChangeSequence {
    static func current(_ db: Database) throws -> Int64 {
        try db.firstInt64("SELECT value FROM meta WHERE key = 'seq'") ?? 0
    }

    static func store(_ value: Int64, _ db: Database) throws {
        try db.execute("INSERT INTO meta (key, value) VALUES ('seq', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                       [.integer(value)])
    }
}

/// A batch turned into row values before the writer lock is taken, so the serialized part of a
/// save only binds and steps: type codes, row bodies, device slots and in-batch duplicates are
/// all worked out here, in parallel with other requests.
struct PreparedBatch: Sendable {
    /// How one sample of the request is handled once the writer has it.
    enum Disposition: Sendable {
        case insert
        /// Same uuid and content as an earlier sample of the batch: stored once.
        case repeatOfEarlier
        /// Same uuid as an earlier sample of the batch, different content: the batch is rejected
        /// when the writer reaches it (so an earlier conflict with stored data is reported first).
        case conflictsWithEarlier
    }

    struct Row: Sendable {
        var index: Int
        var sample: HealthSample
        var disposition: Disposition
        /// Nil for a type the store has no code for (reported as a conflict at this index).
        var typeCode: Int64?
        /// Index into `groups`: the (type, device) pair, for `type_extents` and `source_types`.
        var group: Int
        var body: [UInt8]?
        /// A correlation's objects, inserted right after it with its seq as parent.
        var children: [Row]
    }

    struct Group: Equatable, Sendable {
        var typeCode: Int64
        /// Index into `devices` plus one; 0 for samples without a device.
        var deviceSlot: Int
    }

    private(set) var rows: [Row] = []
    private(set) var groups: [Group] = []
    /// The distinct devices of the batch, in first-seen order.
    private(set) var devices: [SampleDevice] = []
    private var deviceSlots: [SampleDevice: Int] = [:]
    /// The last type's code: a batch runs through a few types, each looked up once per run.
    private var lastType: (name: String, code: Int64?)?
    private var bodies = SampleRowBody.BatchMemo()
    /// Non-nil for a batch the importer has decided (`ImportDecisions`): every sample is new, so
    /// the writer looks no uuid up, and the correlation objects named here are stored already (the
    /// correlation adopts them once inserted), so the writer skips them.
    private(set) var adoptedObjects: Set<HealthUUID>?

    /// `decidedAdopting`: the importer has decided every sample against what is stored and the
    /// samples before it (repeats collapsed, so the duplicate check is skipped too); the objects it
    /// adopts are not inserted.
    init(_ samples: [HealthSample], store: SQLiteHealthStore, decidedAdopting adoptedObjects: Set<HealthUUID>? = nil) {
        self.adoptedObjects = adoptedObjects
        let distinctUUIDs = adoptedObjects != nil
        rows.reserveCapacity(samples.count)
        var seen: [HealthUUID: Int] = [:]
        if !distinctUUIDs { seen.reserveCapacity(samples.count) }
        for (index, sample) in samples.enumerated() {
            var disposition = Disposition.insert
            if distinctUUIDs {
                rows.append(row(sample, index: index, store: store))
                continue
            }
            if let earlier = seen[sample.uuid] {
                disposition = samples[earlier] == sample ? .repeatOfEarlier : .conflictsWithEarlier
            } else {
                seen[sample.uuid] = index
            }
            rows.append(disposition == .insert ? row(sample, index: index, store: store)
                        : Row(index: index, sample: sample, disposition: disposition, typeCode: nil, group: 0, body: nil, children: []))
        }
    }

    private mutating func row(_ sample: HealthSample, index: Int, store: SQLiteHealthStore) -> Row {
        let typeCode: Int64?
        if let lastType, lastType.name == sample.type {
            typeCode = lastType.code
        } else {
            typeCode = store.typeCode(for: sample.type)
            lastType = (sample.type, typeCode)
        }
        let group = self.group(typeCode: typeCode ?? 0, deviceSlot: sample.device.map { slot(for: $0) } ?? 0)
        var children: [Row] = []
        if case .correlation(let objects) = sample.content {
            children = objects.map { row($0, index: index, store: store) }
        }
        return Row(index: index, sample: sample, disposition: .insert, typeCode: typeCode, group: group,
                   body: bodies.body(for: sample), children: children)
    }

    /// Batches hold few distinct devices, and consecutive samples usually share one: a short
    /// linear scan of small strings beats hashing every device.
    private mutating func slot(for device: SampleDevice) -> Int {
        if devices.count <= 8 {
            if let found = devices.firstIndex(of: device) { return found + 1 }
        } else if let found = deviceSlots[device] {
            return found
        }
        devices.append(device)
        deviceSlots[device] = devices.count
        return devices.count
    }

    private mutating func group(typeCode: Int64, deviceSlot: Int) -> Int {
        let wanted = Group(typeCode: typeCode, deviceSlot: deviceSlot)
        if let found = groups.firstIndex(of: wanted) { return found }
        groups.append(wanted)
        return groups.count - 1
    }
}

/// Inserts one prepared batch inside the writer's transaction.
struct SampleWriter {
    let db: Database
    let store: SQLiteHealthStore
    let userRowID: Int64
    let sourceRowID: Int64
    let created: Int64
    private(set) var lastSeq: Int64
    private(set) var touchedTypes: Set<String> = []
    /// Per device slot (see `PreparedBatch.Group`): the `devices` row id; slot 0 is "no device".
    private var deviceRowIDs: [Int64] = [0]
    /// Per group: the longest inserted duration, and the first inserted seq (0 = none yet).
    private var groups: [PreparedBatch.Group] = []
    private var longest: [Int64] = []
    private var firstSeq: [Int64] = []
    /// The inserted samples, folded into the statistics rollup rows of the days they shape by `finish()`.
    private var rollups = RollupChanges()
    private let insert: Statement
    /// The user's uuid key runs before this writer's batch, and the (key, seq) of every row it
    /// inserted: written as one new run by `finish()`.
    private var keyRuns: [SampleKeyIndex.RunInfo] = []
    private var keyEntries: [(key: UInt32, seq: Int64)] = []
    /// The batch's uuids already stored (from the key runs), and, for a batch with correlations,
    /// the rows this writer inserted (an object may repeat another sample's uuid).
    private var storedRows: [HealthUUID: SampleRow] = [:]
    private var insertedSeqs: [HealthUUID: Int64]?
    /// A decided batch's objects stored already (`PreparedBatch.adoptedObjects`).
    private var adoptedObjects: Set<HealthUUID> = []

    init(db: Database, store: SQLiteHealthStore, userRowID: Int64, sourceRowID: Int64, created: Int64) throws {
        self.db = db
        self.store = store
        self.userRowID = userRowID
        self.sourceRowID = sourceRowID
        self.created = created
        lastSeq = try ChangeSequence.current(db)
        // A write of an erased user (its token was in flight) stores nothing rather than orphan rows.
        guard try db.firstInt64("SELECT 1 FROM sources WHERE id = ? AND user_id = ?", [.integer(sourceRowID), .integer(userRowID)]) != nil
        else { throw AccountErased() }
        insert = try db.cachedStatement("""
            INSERT INTO samples (seq, user_id, uuid, type_id, source_id, device_id, start_ms, end_ms, value, parent_seq, created_ms, body)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
    }

    /// Inserts every row of `batch` in request order.
    mutating func insert(_ batch: borrowing PreparedBatch) throws {
        try findStored(batch)
        for device in batch.devices { deviceRowIDs.append(try deviceRowID(device)) }
        groups = batch.groups
        longest = Array(repeating: 0, count: groups.count)
        firstSeq = Array(repeating: 0, count: groups.count)
        var groupTouched = Array(repeating: false, count: groups.count)
        // By index, not `for row in`: the iterator would copy (retain and release) every row's
        // sample, strings and body inside the writer lock.
        for position in batch.rows.indices {
            switch batch.rows[position].disposition {
            case .insert: try insert(batch.rows[position], parentSeq: nil, touched: &groupTouched)
            case .repeatOfEarlier: continue
            case .conflictsWithEarlier:
                let row = batch.rows[position]
                throw SampleConflict(index: row.index, uuid: row.sample.uuid,
                                     detail: "uuid \(row.sample.uuid.lowercasedString) appears twice in the batch with different content")
            }
        }
        for (group, touched) in groupTouched.enumerated() where touched {
            if let name = store.typeName(for: groups[group].typeCode) { touchedTypes.insert(name) }
        }
    }

    /// Which of the batch's uuids (correlation objects included) the user has stored: one look at
    /// the uuid key runs for the whole batch, before any row is inserted; none for a batch the
    /// importer decided, which looked them up already.
    private mutating func findStored(_ batch: borrowing PreparedBatch) throws {
        var uuids: [HealthUUID] = []
        uuids.reserveCapacity(batch.rows.count)
        var hasObjects = false
        for position in batch.rows.indices where batch.rows[position].disposition == .insert {
            uuids.append(batch.rows[position].sample.uuid)
            for child in batch.rows[position].children.indices {
                uuids.append(batch.rows[position].children[child].sample.uuid)
                hasObjects = true
            }
        }
        let keys = store.sampleKeys
        keyRuns = try keys.runs(userRowID: userRowID, db: db)
        keyEntries.reserveCapacity(uuids.count)
        if hasObjects { insertedSeqs = [:] }
        if let adopted = batch.adoptedObjects {
            adoptedObjects = adopted
            return
        }
        let found = try keys.find(uuids, keys: uuids.map { keys.key(userRowID: userRowID, uuid: $0) }, userRowID: userRowID,
                                  runs: keyRuns, db: db)
        for (position, row) in found { storedRows[uuids[position]] = row }
    }

    private mutating func insert(_ row: borrowing PreparedBatch.Row, parentSeq: Int64?, touched: inout [Bool]) throws {
        guard let typeCode = row.typeCode else {
            throw SampleConflict(index: row.index, uuid: row.sample.uuid, detail: "unknown type \(row.sample.type)")
        }
        if !storedRows.isEmpty, let stored = storedRows[row.sample.uuid] {
            try checkIdempotent(row.sample, stored: stored, index: row.index)
            return
        }
        // An object the importer found stored (on its own, or earlier in the import): adopted, not inserted.
        if parentSeq != nil, !adoptedObjects.isEmpty, adoptedObjects.contains(row.sample.uuid) { return }
        if let seq = insertedSeqs?[row.sample.uuid] {
            // An object repeating a uuid inserted earlier in this batch.
            guard let earlier = try db.first("SELECT \(SQLiteHealthStore.sampleColumns) FROM samples WHERE seq = ?", [.integer(seq)],
                                             { try SampleRow($0) }) else {
                throw SampleConflict(index: row.index, uuid: row.sample.uuid,
                                     detail: "uuid \(row.sample.uuid.lowercasedString) could not be saved")
            }
            try checkIdempotent(row.sample, stored: earlier, index: row.index)
            return
        }
        let seq = lastSeq + 1
        let deviceID = deviceRowIDs[groups[row.group].deviceSlot]
        insert.reset()
        try insert.bind(seq, at: 1)
        try insert.bind(userRowID, at: 2)
        try insert.bind(row.sample.uuid, at: 3)
        try insert.bind(typeCode, at: 4)
        try insert.bind(sourceRowID, at: 5)
        try insert.bindIfPresent(deviceID != 0 ? deviceID : nil, at: 6)
        try insert.bind(row.sample.start, at: 7)
        try insert.bind(row.sample.end, at: 8)
        try insert.bindIfPresent(row.sample.quantity, at: 9)
        try insert.bindIfPresent(parentSeq, at: 10)
        try insert.bind(created, at: 11)
        try insert.bindIfPresent(row.body, at: 12)
        _ = try insert.step()
        lastSeq = seq
        keyEntries.append((store.sampleKeys.key(userRowID: userRowID, uuid: row.sample.uuid), seq))
        insertedSeqs?[row.sample.uuid] = seq
        touched[row.group] = true
        rollups.noteSaved(typeCode: typeCode, style: store.rollupStyles[typeCode], seq: seq, source: sourceRowID,
                          start: row.sample.start, end: row.sample.end, value: row.sample.quantity)
        longest[row.group] = max(longest[row.group], row.sample.end - row.sample.start)
        if firstSeq[row.group] == 0 { firstSeq[row.group] = seq }
        for child in row.children.indices { try insert(row.children[child], parentSeq: seq, touched: &touched) }
    }

    /// The uuid exists: identical content (same app, same sample) is a harmless retry; anything
    /// else is a conflict that rejects the whole batch.
    private func checkIdempotent(_ sample: HealthSample, stored row: SampleRow, index: Int) throws {
        let existing = try store.materialize(row, db: db, userExternalID: "")
        guard row.sourceRowID == sourceRowID, existing.sample == sample else {
            throw SampleConflict(index: index, uuid: sample.uuid,
                                 detail: "uuid \(sample.uuid.lowercasedString) exists with different content")
        }
    }

    private func deviceRowID(_ device: SampleDevice) throws -> Int64 {
        let body = DeviceBody.encode(device)
        try db.execute("INSERT INTO devices (body) VALUES (?) ON CONFLICT(body) DO NOTHING", [.blob(body)])
        guard let id = try db.firstInt64("SELECT id FROM devices WHERE body = ?", [.blob(body)]) else {
            throw StoreError.invalid("device could not be stored")
        }
        return id
    }

    func finish() throws {
        // One type_extents row per type: the longest over the type's groups.
        var typeLongest: [(typeCode: Int64, duration: Int64)] = []
        for (group, first) in firstSeq.enumerated() where first != 0 {
            let typeCode = groups[group].typeCode
            if let existing = typeLongest.firstIndex(where: { $0.typeCode == typeCode }) {
                typeLongest[existing].duration = max(typeLongest[existing].duration, longest[group])
            } else {
                typeLongest.append((typeCode, longest[group]))
            }
        }
        for (typeCode, duration) in typeLongest {
            try db.execute("""
                INSERT INTO type_extents (user_id, type_id, max_duration_ms) VALUES (?, ?, ?)
                ON CONFLICT(user_id, type_id) DO UPDATE SET max_duration_ms = max(max_duration_ms, excluded.max_duration_ms)
                """, [.integer(userRowID), .integer(typeCode), .integer(duration)])
        }
        for (group, first) in firstSeq.enumerated() where first != 0 {
            try db.execute("""
                INSERT INTO source_types (user_id, type_id, source_id, device_id, first_seq) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT DO NOTHING
                """, [.integer(userRowID), .integer(groups[group].typeCode), .integer(sourceRowID),
                      .integer(deviceRowIDs[groups[group].deviceSlot]), .integer(first)])
        }
        // After source_types: a source saving a type for the first time takes its place in the
        // default order before the days it shaped are merged.
        try rollups.apply(db, userRowID: userRowID, store: store)
        // The batch's run of uuid keys, in the transaction of its rows.
        try store.sampleKeys.append(keyEntries, userRowID: userRowID, runs: keyRuns, db: db)
        try ChangeSequence.store(lastSeq, db)
    }
}

/// Deletes rows inside the writer's transaction, leaving a tombstone per sample for the change feed.
struct SampleDeleter {
    let db: Database
    let userRowID: Int64
    let store: SQLiteHealthStore
    let deletedAt = SQLiteHealthStore.nowMilliseconds()
    private(set) var lastSeq: Int64
    private(set) var touchedTypes: Set<String> = []
    private var rollups = RollupChanges()
    /// The deleted rows' seqs, whose entries the uuid key runs drop at a later merge or compaction.
    private var deletedSeqs: [Int64] = []
    /// Set by `finish`: a compaction of the user's uuid key runs is under way, for the store to
    /// run after the commit (never inside this transaction).
    private(set) var keyCompactionPending = false

    init(db: Database, userRowID: Int64, store: SQLiteHealthStore) throws {
        self.db = db
        self.userRowID = userRowID
        self.store = store
        lastSeq = try ChangeSequence.current(db)
    }

    mutating func delete(_ row: SampleRow) throws {
        // A correlation's objects go with it: they were saved as part of it.
        let children = try db.cachedStatement("SELECT \(SQLiteHealthStore.sampleColumns) FROM samples WHERE parent_seq = ?")
        try children.bind([.integer(row.seq)])
        var childRows: [SampleRow] = []
        try children.forEachRow { childRows.append(try SampleRow($0)) }
        for child in childRows { try delete(child) }
        lastSeq += 1
        try db.execute("""
            INSERT INTO deleted_samples (seq, user_id, uuid, type_id, source_id, deleted_ms, sample_seq, start_ms, end_ms, value)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.integer(lastSeq), .integer(userRowID), .blob(row.uuid.bytes), .integer(row.typeCode),
                  .integer(row.sourceRowID), .integer(deletedAt), .integer(row.seq), .integer(row.start),
                  .integer(row.end), row.value.map { .real($0) } ?? .null])
        try db.execute("DELETE FROM samples WHERE seq = ?", [.integer(row.seq)])
        deletedSeqs.append(row.seq)
        rollups.noteDeleted(row, style: store.rollupStyles[row.typeCode])
        if let name = store.typeName(for: row.typeCode) { touchedTypes.insert(name) }
    }

    mutating func finish() throws {
        try rollups.apply(db, userRowID: userRowID, store: store)
        keyCompactionPending = try store.sampleKeys.noteDeleted(deletedSeqs, userRowID: userRowID, db: db)
        try ChangeSequence.store(lastSeq, db)
    }
}
