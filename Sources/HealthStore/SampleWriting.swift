import HealthModel
import SQLite

/// The change sequence shared by inserts and tombstones: every committed change gets the next
/// number, so the change feed reads in commit order. Only the single writer connection touches it.
enum ChangeSequence {
    static func current(_ db: Database) throws -> Int64 {
        try db.first("SELECT value FROM meta WHERE key = 'seq'", [], { $0.int64(at: 0) }) ?? 0
    }

    static func store(_ value: Int64, _ db: Database) throws {
        try db.execute("INSERT INTO meta (key, value) VALUES ('seq', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                       [.integer(value)])
    }
}

/// Inserts one batch inside the writer's transaction.
struct SampleWriter {
    let db: Database
    let store: HealthStore
    let userRowID: Int64
    let sourceRowID: Int64
    let created: Int64
    private(set) var lastSeq: Int64
    private(set) var touchedTypes: Set<String> = []
    private var deviceIDs: [SampleDevice: Int64] = [:]
    /// Per type code: the longest duration and the (device, first seq) pairs this batch saw.
    private var longest: [Int64: Int64] = [:]
    private var sourceDevices: [Int64: [Int64: Int64]] = [:]
    private let insert: Statement

    init(db: Database, store: HealthStore, userRowID: Int64, sourceRowID: Int64, created: Int64) throws {
        self.db = db
        self.store = store
        self.userRowID = userRowID
        self.sourceRowID = sourceRowID
        self.created = created
        lastSeq = try ChangeSequence.current(db)
        insert = try db.cachedStatement("""
            INSERT INTO samples (seq, user_id, uuid, type_id, source_id, device_id, start_ms, end_ms, value, parent_seq, created_ms, body)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(user_id, uuid) DO NOTHING
            """)
    }

    mutating func insert(_ sample: HealthSample, index: Int, parentSeq: Int64?) throws {
        guard let typeCode = store.typeCode(for: sample.type) else {
            throw SampleConflict(index: index, uuid: sample.uuid, detail: "unknown type \(sample.type)")
        }
        let seq = lastSeq + 1
        let deviceID = try sample.device.map { try deviceRowID($0) }
        insert.reset()
        try insert.bind(seq, at: 1)
        try insert.bind(userRowID, at: 2)
        try insert.bind(sample.uuid.bytes, at: 3)
        try insert.bind(typeCode, at: 4)
        try insert.bind(sourceRowID, at: 5)
        if let deviceID { try insert.bind(deviceID, at: 6) } else { try insert.bindNull(at: 6) }
        try insert.bind(sample.start, at: 7)
        try insert.bind(sample.end, at: 8)
        if let quantity = sample.quantity { try insert.bind(quantity, at: 9) } else { try insert.bindNull(at: 9) }
        if let parentSeq { try insert.bind(parentSeq, at: 10) } else { try insert.bindNull(at: 10) }
        try insert.bind(created, at: 11)
        if let body = SampleRowBody.encode(sample) { try insert.bind(body, at: 12) } else { try insert.bindNull(at: 12) }
        _ = try insert.step()
        guard db.changes > 0 else {
            try checkIdempotent(sample, index: index)
            return
        }
        lastSeq = seq
        touchedTypes.insert(sample.type)
        longest[typeCode] = max(longest[typeCode] ?? 0, sample.end - sample.start)
        let deviceKey = deviceID ?? 0
        if sourceDevices[typeCode]?[deviceKey] == nil { sourceDevices[typeCode, default: [:]][deviceKey] = seq }
        if case .correlation(let objects) = sample.content {
            for object in objects { try insert(object, index: index, parentSeq: seq) }
        }
    }

    /// The uuid exists: identical content (same app, same sample) is a harmless retry; anything
    /// else is a conflict that rejects the whole batch.
    private func checkIdempotent(_ sample: HealthSample, index: Int) throws {
        guard let row = try db.first("SELECT \(HealthStore.sampleColumns) FROM samples WHERE user_id = ? AND uuid = ?",
                                     [.integer(userRowID), .blob(sample.uuid.bytes)], { SampleRow($0) }) else {
            throw SampleConflict(index: index, uuid: sample.uuid, detail: "uuid \(sample.uuid.lowercasedString) could not be saved")
        }
        let existing = try store.materialize(row, db: db, userExternalID: "")
        guard row.sourceRowID == sourceRowID, existing.sample == sample else {
            throw SampleConflict(index: index, uuid: sample.uuid,
                                 detail: "uuid \(sample.uuid.lowercasedString) exists with different content")
        }
    }

    private mutating func deviceRowID(_ device: SampleDevice) throws -> Int64 {
        if let id = deviceIDs[device] { return id }
        let body = DeviceBody.encode(device)
        try db.execute("INSERT INTO devices (body) VALUES (?) ON CONFLICT(body) DO NOTHING", [.blob(body)])
        guard let id = try db.first("SELECT id FROM devices WHERE body = ?", [.blob(body)], { $0.int64(at: 0) }) else {
            throw StoreError.invalid("device could not be stored")
        }
        deviceIDs[device] = id
        return id
    }

    func finish() throws {
        for (typeCode, duration) in longest {
            try db.execute("""
                INSERT INTO type_extents (user_id, type_id, max_duration_ms) VALUES (?, ?, ?)
                ON CONFLICT(user_id, type_id) DO UPDATE SET max_duration_ms = max(max_duration_ms, excluded.max_duration_ms)
                """, [.integer(userRowID), .integer(typeCode), .integer(duration)])
        }
        for (typeCode, devices) in sourceDevices {
            for (device, firstSeq) in devices {
                try db.execute("""
                    INSERT INTO source_types (user_id, type_id, source_id, device_id, first_seq) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT DO NOTHING
                    """, [.integer(userRowID), .integer(typeCode), .integer(sourceRowID), .integer(device), .integer(firstSeq)])
            }
        }
        try ChangeSequence.store(lastSeq, db)
    }
}

/// Deletes rows inside the writer's transaction, leaving a tombstone per sample for the change feed.
struct SampleDeleter {
    let db: Database
    let userRowID: Int64
    let store: HealthStore
    let deletedAt = HealthStore.nowMilliseconds()
    private(set) var lastSeq: Int64
    private(set) var touchedTypes: Set<String> = []

    init(db: Database, userRowID: Int64, store: HealthStore) throws {
        self.db = db
        self.userRowID = userRowID
        self.store = store
        lastSeq = try ChangeSequence.current(db)
    }

    mutating func delete(_ row: SampleRow) throws {
        // A correlation's objects go with it: they were saved as part of it.
        let children = try db.cachedStatement("SELECT \(HealthStore.sampleColumns) FROM samples WHERE parent_seq = ?")
        try children.bind([.integer(row.seq)])
        var childRows: [SampleRow] = []
        try children.forEachRow { childRows.append(SampleRow($0)) }
        for child in childRows { try delete(child) }
        lastSeq += 1
        try db.execute("""
            INSERT INTO deleted_samples (seq, user_id, uuid, type_id, source_id, deleted_ms, sample_seq, start_ms, end_ms, value)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.integer(lastSeq), .integer(userRowID), .blob(row.uuid), .integer(row.typeCode),
                  .integer(row.sourceRowID), .integer(deletedAt), .integer(row.seq), .integer(row.start),
                  .integer(row.end), row.value.map { .real($0) } ?? .null])
        try db.execute("DELETE FROM samples WHERE seq = ?", [.integer(row.seq)])
        if let name = store.typeName(for: row.typeCode) { touchedTypes.insert(name) }
    }

    func finish() throws { try ChangeSequence.store(lastSeq, db) }
}
