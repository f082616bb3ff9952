import HealthModel
import HealthStore
import PostgreSQL
import Statistics

/// A batch turned into row values before any connection is taken, so the transaction only sends
/// them: type codes, bodies, device ids, in-batch repeats, the rows' binary COPY encoding and what
/// storing them records beside them (`Bookkeeping`) are worked out here, off the user's
/// change-number lock, in one pass over the samples. A correlation's objects follow it, pointing
/// back at its position.
struct PostgresSampleBatch: Sendable {
    /// One row of `samples`: the columns, and where its sample is in the request (read from
    /// there, not copied, when the whole sample is needed).
    struct Row: Sendable {
        /// The sample's position in the request (a correlation's objects share it).
        var index: Int
        /// Which object of the correlation at `index` this is; nil for the request's sample itself.
        var object: Int?
        var uuid: HealthUUID
        var typeCode: Int64
        var sourceRowID: Int64
        var deviceID: Int64?
        var start: Int64
        var end: Int64
        var value: Double?
        /// Position in `rows` of the correlation this object belongs to.
        var parent: Int?
    }

    /// What storing some of the rows records beside them, rows numbered by position from 1:
    /// their (type, source, device) groups with each one's first row (`source_types`), the
    /// longest sample per type (`type_extents`), the types touched (NOTIFY, observers) and the
    /// statistics rollups' changes (moved to the real change numbers with
    /// `RollupDayChanges.offsettingIDs`).
    struct Bookkeeping: Sendable {
        struct Group: Hashable, Sendable {
            var typeCode: Int64
            var sourceRowID: Int64
            var deviceID: Int64
        }

        private(set) var groups: [(group: Group, firstPosition: Int)] = []
        /// Per type, in the order first seen: the longest sample and the rollups' style.
        private(set) var types: [(typeCode: Int64, longest: Int64, style: AggregationStyle?)] = []
        private(set) var rollups = RollupDayChanges()
        private var groupIndex = SmallIndex<Group>()
        private var typeIndex = SmallIndex<Int64>()

        /// Notes the row at `position`; `rollupStyles` as `PostgresHealthStore.rollupStyles`.
        mutating func note(_ row: Row, at position: Int, rollupStyles: [Int64: AggregationStyle]) {
            let group = Group(typeCode: row.typeCode, sourceRowID: row.sourceRowID, deviceID: row.deviceID ?? 0)
            if groupIndex.find(group) == nil {
                groupIndex.append(group)
                groups.append((group, position))
            }
            let type: Int
            if let known = typeIndex.find(row.typeCode) {
                type = known
                types[type].longest = max(types[type].longest, row.end - row.start)
            } else {
                type = typeIndex.append(row.typeCode)
                types.append((row.typeCode, max(0, row.end - row.start), rollupStyles[row.typeCode]))
            }
            // Source ids are numbered per user from 1; one past Int32 is a sample the statistics cannot hold.
            guard let value = row.value, let style = types[type].style, let source = Int32(exactly: row.sourceRowID) else { return }
            rollups.noteSaved(typeCode: row.typeCode, style: style,
                              sample: StatisticsSample(id: Int64(position) + 1, start: row.start, end: row.end, value: value, source: source))
        }
    }

    private let samples: [HealthSample]
    private(set) var rows: [Row] = []
    /// Distinct devices of the batch: (id, stored body).
    private(set) var devices: [(id: Int64, body: [UInt8])] = []
    /// The bookkeeping of every row: what a batch of new samples (the usual case) records.
    private(set) var allStored = Bookkeeping()
    /// `rows` as `samples` rows in binary COPY form, numbered by `number(after:)`.
    private(set) var encoded = PostgresCopyRows()
    /// Where each row's `seq`, and each object's `parent_seq`, lies in `encoded`.
    private var seqOffsets: [Int] = []
    private var parentOffsets: [(offset: Int, parent: Int)] = []
    private let rollupStyles: [Int64: AggregationStyle]

    /// Throws `SampleConflict` for an unknown type, or a uuid repeated in the batch with other
    /// content; a repeat with the same content is stored once. Sample i is saved by the source
    /// `sourceRowID(i)`; `created` is the rows' creation time.
    init(_ samples: [HealthSample], sourceRowID: (Int) -> Int64, typeCodes: [String: Int64],
         rollupStyles: [Int64: AggregationStyle], userRowID: Int64, created: Int64) throws {
        self.samples = samples
        self.rollupStyles = rollupStyles
        rows.reserveCapacity(samples.count)
        seqOffsets.reserveCapacity(samples.count)
        // About 90 bytes a row, and a body for most.
        encoded = PostgresCopyRows(reservingCapacity: samples.count * 128)
        var seen = UUIDPositions(capacity: samples.count)
        var deviceIDs = DeviceIDs()
        var types = TypeCodes(typeCodes)
        var bodies = RecentBodies()
        for index in samples.indices {
            let source = sourceRowID(index)
            if let earlier = seen.insert(samples[index].uuid, at: index) {
                guard samples[earlier] == samples[index], sourceRowID(earlier) == source else {
                    throw SampleConflict(index: index, uuid: samples[index].uuid, detail:
                        "uuid \(samples[index].uuid.lowercasedString) appears twice in the batch with different content")
                }
                continue
            }
            let position = rows.count
            let sample = samples[index]
            try append(sample, index: index, object: nil, sourceRowID: source, parent: nil, userRowID: userRowID, created: created,
                       types: &types, deviceIDs: &deviceIDs, bodies: &bodies)
            if case .correlation(let objects) = sample.content {
                for (object, item) in objects.enumerated() {
                    try append(item, index: index, object: object, sourceRowID: source, parent: position, userRowID: userRowID,
                               created: created, types: &types, deviceIDs: &deviceIDs, bodies: &bodies)
                }
            }
        }
        devices = deviceIDs.devices
    }

    /// Adds `sample` as the next row: its values, its COPY encoding (numbered by position from 1
    /// until `number(after:)`) and its bookkeeping.
    private mutating func append(_ sample: HealthSample, index: Int, object: Int?, sourceRowID: Int64, parent: Int?,
                                 userRowID: Int64, created: Int64, types: inout TypeCodes, deviceIDs: inout DeviceIDs,
                                 bodies: inout RecentBodies) throws {
        guard let typeCode = types.code(of: sample.type) else {
            throw SampleConflict(index: index, uuid: sample.uuid, detail: "unknown type \(sample.type)")
        }
        let position = rows.count
        let row = Row(index: index, object: object, uuid: sample.uuid, typeCode: typeCode, sourceRowID: sourceRowID,
                      deviceID: sample.device.map { deviceIDs.id(of: $0) }, start: sample.start, end: sample.end,
                      value: sample.quantity, parent: parent)
        rows.append(row)
        try encoded.beginRow(fieldCount: 12)
        try encoded.append(int64: userRowID)
        try encoded.append(uuidHigh: row.uuid.high, low: row.uuid.low)
        seqOffsets.append(try encoded.append(int64: Int64(position) + 1))
        try encoded.append(int32: Int32(truncatingIfNeeded: row.typeCode))
        try encoded.append(int32: Int32(truncatingIfNeeded: row.sourceRowID))
        if let device = row.deviceID { try encoded.append(int64: device) } else { try encoded.appendNull() }
        try encoded.append(int64: row.start)
        try encoded.append(int64: row.end)
        if let value = row.value { try encoded.append(double: value) } else { try encoded.appendNull() }
        if let parent {
            parentOffsets.append((try encoded.append(int64: Int64(parent) + 1), parent))
        } else {
            try encoded.appendNull()
        }
        try encoded.append(int64: created)
        if let body = bodies.body(of: sample) {
            try encoded.append(bytes: body)
        } else {
            try encoded.appendNull()
        }
        allStored.note(row, at: position, rollupStyles: rollupStyles)
    }

    /// The sample a row stores, as the request sent it.
    func sample(of row: Row) -> HealthSample {
        let sample = samples[row.index]
        guard let object = row.object, case .correlation(let objects) = sample.content, objects.indices.contains(object) else {
            return sample
        }
        return objects[object]
    }

    var isEmpty: Bool { rows.isEmpty }

    /// Writes the change numbers into `encoded`, in place: row `position` gets
    /// `base + 1 + position` (a correlation's objects point at their correlation's). Every
    /// number is written each time, so a transaction run again numbers the rows afresh.
    mutating func number(after base: Int64) throws(PostgresError) {
        for (position, offset) in seqOffsets.enumerated() {
            try encoded.overwrite(int64: base + 1 + Int64(position), at: offset)
        }
        for (offset, parent) in parentOffsets {
            try encoded.overwrite(int64: base + 1 + Int64(parent), at: offset)
        }
    }

    /// The bookkeeping of the rows at `positions` (ascending): when only some were stored.
    func bookkeeping(of positions: [Int]) -> Bookkeeping {
        var bookkeeping = Bookkeeping()
        for position in positions { bookkeeping.note(rows[position], at: position, rollupStyles: rollupStyles) }
        return bookkeeping
    }
}

/// Keys seen so far and the position each was first appended at: compared one by one while
/// there are few (a batch has a type or two, a device or two, each looked up for every row:
/// equal strings sharing storage compare at once, where a dictionary hashes every byte), in a
/// dictionary once there are many.
struct SmallIndex<Key: Hashable>: Sendable where Key: Sendable {
    private var keys: [Key] = []
    private var many: [Key: Int]?
    private var last = 0
    private static var linearLimit: Int { 8 }

    func position(of key: Key) -> Int? {
        if last < keys.count, keys[last] == key { return last }
        if let many { return many[key] }
        return keys.firstIndex(of: key)
    }

    /// Appends `key` (not present) and returns its position.
    @discardableResult
    mutating func append(_ key: Key) -> Int {
        keys.append(key)
        if many != nil {
            many?[key] = keys.count - 1
        } else if keys.count > Self.linearLimit {
            many = Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($0.element, $0.offset) })
        }
        return keys.count - 1
    }

    /// `position(of:)`, remembering the answer as the first candidate of the next lookup.
    mutating func find(_ key: Key) -> Int? {
        guard let found = position(of: key) else { return nil }
        last = found
        return found
    }
}

/// Type names to codes, for a batch that names a type or two over and over.
private struct TypeCodes {
    private let all: [String: Int64]
    private var seen = SmallIndex<String>()
    private var codes: [Int64] = []

    init(_ all: [String: Int64]) { self.all = all }

    mutating func code(of type: String) -> Int64? {
        if let position = seen.find(type) { return codes[position] }
        guard let code = all[type] else { return nil }
        seen.append(type)
        codes.append(code)
        return code
    }
}

/// The distinct devices of a batch and their ids (a batch usually comes from one or two devices).
private struct DeviceIDs {
    private(set) var devices: [(id: Int64, body: [UInt8])] = []
    private var seen = SmallIndex<SampleDevice>()

    mutating func id(of device: SampleDevice) -> Int64 {
        if let position = seen.find(device) { return devices[position].id }
        let body = DeviceBody.encode(device)
        let id = DeviceID.of(body: body)
        seen.append(device)
        devices.append((id, body))
        return id
    }
}

/// Stored bodies of quantity samples, which hold only their metadata: a batch repeats a few
/// metadata sets over and over (a motion context, a flag), so the last few bodies are kept and
/// a repeat is compared, not encoded again. Other samples are encoded each time.
private struct RecentBodies {
    private var recent: [(metadata: [MetadataEntry], body: [UInt8]?)] = []
    private var next = 0
    private static let kept = 8

    mutating func body(of sample: HealthSample) -> [UInt8]? {
        guard case .quantity = sample.content else { return SampleRowBody.encode(sample) }
        if sample.metadata.isEmpty { return nil }
        if let known = recent.first(where: { $0.metadata == sample.metadata }) { return known.body }
        let body = SampleRowBody.encode(sample)
        if recent.count < Self.kept {
            recent.append((sample.metadata, body))
        } else {
            recent[next] = (sample.metadata, body)
            next = (next + 1) % Self.kept
        }
        return body
    }
}

/// Which position of the batch holds each uuid seen so far: open addressing on the uuid's bits
/// mixed by multipliers drawn once per process (uuids are the client's, so the mixing is what
/// keeps crafted ones from piling into one probe chain). Cheaper than hashing every uuid through
/// `Hasher` for the one question a batch asks of each: was it seen before?
private struct UUIDPositions {
    private static let multipliers = (UInt64.random(in: 0...UInt64.max) | 1, UInt64.random(in: 0...UInt64.max) | 1)
    private var slots: [(uuid: HealthUUID, position: Int)?]
    private let shift: UInt64

    init(capacity: Int) {
        var bits = 4
        while 1 << bits < 2 * max(capacity, 1) { bits += 1 }
        slots = Array(repeating: nil, count: 1 << bits)
        shift = UInt64(64 - bits)
    }

    /// Records `uuid` at `position` and returns nil, or returns the position it was first seen at.
    mutating func insert(_ uuid: HealthUUID, at position: Int) -> Int? {
        // Multiply-shift: the top bits of a sum of products with random odd multipliers.
        var slot = Int(truncatingIfNeeded: ((uuid.high &* Self.multipliers.0) &+ (uuid.low &* Self.multipliers.1)) >> shift)
        while let entry = slots[slot] {
            if entry.uuid == uuid { return entry.position }
            slot = (slot + 1) & (slots.count - 1)
        }
        slots[slot] = (uuid, position)
        return nil
    }
}

/// A sample a write changed, for the statistics rollups (saved or deleted; kept in the order done).
struct RollupTouch: Sendable, Equatable {
    var typeCode: Int64
    /// The sample's row sequence: what orders equal-time samples for `mostRecent`.
    var seq: Int64
    var sourceRowID: Int64
    var start: Int64
    var end: Int64
    var value: Double?
    var deleted: Bool
}

/// What one write transaction did to a user's samples: for the commit's observers and NOTIFY, and
/// for the statistics rollups.
struct SampleWriteEffects {
    var touchedTypes: Set<String> = []
    /// The statistics rollups' share: the samples saved or deleted, by their change numbers.
    var rollups = RollupDayChanges()
}

extension PostgresHealthStore {
    /// Reserves `count` change numbers for the user and returns the last one. Holds the user's
    /// counter row locked until the transaction ends: that is what orders one user's changes by
    /// commit, whichever node writes.
    static func reserveChangeNumbers(_ count: Int, userRowID: Int64, _ connection: PostgresConnection) throws -> Int64 {
        guard let last = try connection.scalarInt64("""
            INSERT INTO change_counters (user_id, seq) VALUES ($1, $2)
            ON CONFLICT (user_id) DO UPDATE SET seq = change_counters.seq + excluded.seq
            RETURNING seq
            """, [.int64(userRowID), .int64(Int64(count))]) else {
            throw StoreError.notFound("the change counter of user \(userRowID) vanished")
        }
        // Read after the counter's lock is held: an erasure holds that lock until it commits, so a
        // write of an erased user (its token was in flight) stores nothing rather than orphan rows.
        guard try connection.scalarInt64("SELECT 1 FROM users WHERE id = $1", [.int64(userRowID)]) != nil else {
            throw AccountErased()
        }
        return last
    }

    /// Throws `accountErased` unless the user still exists, and holds their row (`FOR KEY SHARE`)
    /// until the transaction ends: an erasure locks that row first, so a write that saves no sample
    /// (a session, a webhook, an empty IMU batch) either sees the erasure done or is erased with
    /// the user, never left behind as a row that names no one.
    static func requireUser(_ userRowID: Int64, _ connection: PostgresConnection) throws {
        guard try connection.scalarInt64("SELECT 1 FROM users WHERE id = $1 FOR KEY SHARE", [.int64(userRowID)]) != nil else {
            throw AccountErased()
        }
    }

    /// The user's last change number, as seen by the connection's snapshot.
    static func currentChangeNumber(userRowID: Int64, _ connection: PostgresConnection) throws -> Int64 {
        try connection.scalarInt64("SELECT seq FROM change_counters WHERE user_id = $1", [.int64(userRowID)]) ?? 0
    }

    static let copySamples = """
        COPY samples (user_id, uuid, seq, type_id, source_id, device_id, start_ms, end_ms, value, parent_seq, created_ms, body)
        FROM STDIN (FORMAT binary)
        """

    /// What `write` does when the batch holds a uuid the user already has.
    enum StoredUUIDs {
        /// COPY inside a savepoint; on the key conflict, undo to it and `compare`.
        case undoAndCompare
        /// COPY without a savepoint: the key conflict aborts the transaction and reaches the
        /// caller, who runs it again with `compare`. The usual batch, all new uuids, saves the
        /// savepoint's round trips and its subtransaction.
        case abortTransaction
        /// Through a temporary table and `INSERT ... ON CONFLICT DO NOTHING`; every row not stored
        /// must equal the stored one (same sample, same app), or the batch is a `SampleConflict`.
        case compare
    }

    /// Writes a prepared batch inside the caller's transaction, numbering its rows (`batch` is
    /// changed only there: a transaction run again numbers them afresh).
    ///
    /// New uuids (the usual case) go straight into `samples` by binary COPY. A batch holding a uuid
    /// the user already has (a re-sent batch, an import repeating itself) goes through a temporary
    /// table and `INSERT ... ON CONFLICT DO NOTHING`, and every row not stored is compared with what
    /// is stored: the same sample from the same app is the idempotent success the API promises,
    /// anything else a `SampleConflict` that rolls the whole batch back (see `StoredUUIDs`).
    ///
    /// From the change numbers' reservation to the commit, the user's other writers wait (see
    /// `reserveChangeNumbers`): what needs no change number was worked out before (the rows'
    /// encoding and, for a batch of new samples, its bookkeeping), so only the numbering, the
    /// database's work and the rollup rows' fold are left inside.
    func write(_ batch: inout PostgresSampleBatch, userRowID: Int64, userExternalID: String, storedUUIDs: StoredUUIDs = .undoAndCompare,
               _ connection: PostgresConnection) throws -> (effects: SampleWriteEffects, lastSeq: Int64) {
        guard !batch.isEmpty else {
            try Self.requireUser(userRowID, connection)
            return (SampleWriteEffects(), try Self.currentChangeNumber(userRowID: userRowID, connection))
        }
        let last = try Self.reserveChangeNumbers(batch.rows.count, userRowID: userRowID, connection)
        let base = last - Int64(batch.rows.count)
        try batch.number(after: base)
        var copied = false
        switch storedUUIDs {
        case .abortTransaction:
            copied = try connection.copyIn(Self.copySamples, rows: batch.encoded) == batch.rows.count
        case .undoAndCompare:
            let rows = batch.encoded
            do {
                copied = try connection.savepoint { try connection.copyIn(Self.copySamples, rows: rows) } == batch.rows.count
            } catch let error as PostgresError where error.isUniqueViolation {}
        case .compare:
            break
        }
        let bookkeeping: PostgresSampleBatch.Bookkeeping
        if copied {
            bookkeeping = batch.allStored
        } else {
            let inserted = try insertSkippingStored(batch.encoded, userRowID: userRowID, base: base, last: last, connection)
            try checkIdempotent(batch, inserted: inserted, userRowID: userRowID, userExternalID: userExternalID, connection)
            bookkeeping = batch.bookkeeping(of: inserted)
        }
        try record(bookkeeping, devices: batch.devices, userRowID: userRowID, base: base, connection)
        var effects = SampleWriteEffects(rollups: bookkeeping.rollups.offsettingIDs(by: base))
        for (type, _, _) in bookkeeping.types {
            if let name = typeName(for: type) { effects.touchedTypes.insert(name) }
        }
        return (effects, last)
    }

    /// The slow path: stores the rows whose uuid is free (a correlation's objects only with their
    /// correlation) and returns their positions.
    private func insertSkippingStored(_ rows: PostgresCopyRows, userRowID: Int64, base: Int64, last: Int64,
                                      _ connection: PostgresConnection) throws -> [Int] {
        // Dropped at commit; a transaction writes one batch, so it is created once per transaction.
        try connection.execute("CREATE TEMPORARY TABLE incoming_samples (LIKE samples) ON COMMIT DROP")
        try connection.copyIn(Self.copySamples.replacingOccurrences(of: "COPY samples", with: "COPY incoming_samples"), rows: rows)
        try connection.execute("""
            INSERT INTO samples SELECT * FROM incoming_samples WHERE parent_seq IS NULL ON CONFLICT DO NOTHING
            """, [])
        // Objects of the correlations stored just now (their seqs are this batch's, in the reserved range).
        try connection.execute("""
            INSERT INTO samples SELECT i.* FROM incoming_samples i
            WHERE i.parent_seq IS NOT NULL AND EXISTS (SELECT 1 FROM samples s WHERE s.user_id = $1 AND s.seq = i.parent_seq)
            ON CONFLICT DO NOTHING
            """, [.int64(userRowID)])
        let stored = try connection.map("SELECT seq FROM samples WHERE user_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq",
                                        [.int64(userRowID), .int64(base), .int64(last)], { try $0.int64(SampleColumn.seq) })
        return stored.map { Int($0 - base - 1) }
    }

    /// Every row not stored must be the same sample from the same app as the one holding its uuid
    /// (objects of a correlation that was not stored are judged with it).
    private func checkIdempotent(_ batch: PostgresSampleBatch, inserted: [Int], userRowID: Int64, userExternalID: String,
                                 _ connection: PostgresConnection) throws {
        let insertedSet = Set(inserted)
        let judged = batch.rows.indices.filter { position in
            !insertedSet.contains(position) && batch.rows[position].parent.map(insertedSet.contains) ?? true
        }
        // The stored rows of those uuids, 1,000 per query (a whole re-sent batch is one or a few reads).
        var stored: [HealthUUID: SampleRow] = [:]
        var start = 0
        while start < judged.count {
            let chunk = judged[start..<min(judged.count, start + 1_000)].map { batch.rows[$0].uuid }
            for row in try connection.map("""
                SELECT \(SampleRow.selectList) FROM samples WHERE user_id = $1 AND uuid = ANY($2::uuid[])
                """, [.int64(userRowID), Self.uuidArray(chunk)], SampleRow.init) {
                stored[row.uuid] = row
            }
            start += 1_000
        }
        var materializer = Materializer(store: self, connection: connection, userRowID: userRowID, userExternalID: userExternalID)
        for position in judged {
            let row = batch.rows[position]
            guard let existing = stored[row.uuid] else {
                throw SampleConflict(index: row.index, uuid: row.uuid,
                                     detail: "uuid \(row.uuid.lowercasedString) could not be saved")
            }
            guard existing.sourceRowID == row.sourceRowID, existing.parentSeq == nil || row.parent != nil,
                  try materializer.sample(existing).sample == batch.sample(of: row) else {
                throw SampleConflict(index: row.index, uuid: row.uuid,
                                     detail: "uuid \(row.uuid.lowercasedString) exists with different content")
            }
        }
    }

    /// The devices, sources' types and type extents of the rows stored now, in one statement.
    private func record(_ bookkeeping: PostgresSampleBatch.Bookkeeping, devices: [(id: Int64, body: [UInt8])], userRowID: Int64,
                        base: Int64, _ connection: PostgresConnection) throws {
        // Devices, sources' types and type extents in one statement: a round trip, not one per row.
        var values: [PostgresValue] = [.int64(userRowID)]
        func tuples<T>(_ items: [T], _ row: (T) -> [PostgresValue]) -> String {
            items.map { item in
                let fields = row(item)
                let first = values.count + 1
                values += fields
                return "($1, " + (first..<(first + fields.count)).map { "$\($0)" }.joined(separator: ", ") + ")"
            }.joined(separator: ", ")
        }
        var parts: [String] = []
        if !devices.isEmpty {
            parts.append("devices AS (INSERT INTO devices (user_id, id, body) VALUES "
                         + tuples(devices) { [.int64($0.id), .bytes($0.body)] } + " ON CONFLICT DO NOTHING)")
        }
        if !bookkeeping.groups.isEmpty {
            parts.append("source_types AS (INSERT INTO source_types (user_id, type_id, source_id, device_id, first_seq) VALUES "
                         + tuples(bookkeeping.groups) { entry in
                             [.int64(entry.group.typeCode), .int64(entry.group.sourceRowID), .int64(entry.group.deviceID),
                              .int64(base + 1 + Int64(entry.firstPosition))]
                         }
                         + " ON CONFLICT DO NOTHING)")
        }
        let extents = bookkeeping.types.map { (key: $0.typeCode, value: $0.longest) }.sorted { $0.key < $1.key }
        guard !extents.isEmpty || !parts.isEmpty else { return }
        let head = parts.isEmpty ? "" : "WITH " + parts.joined(separator: ", ") + " "
        let sql = extents.isEmpty ? head + "SELECT 1" : head + """
            INSERT INTO type_extents (user_id, type_id, max_duration_ms) VALUES \(tuples(extents) { [.int64($0.key), .int64($0.value)] })
            ON CONFLICT (user_id, type_id) DO UPDATE
            SET max_duration_ms = greatest(type_extents.max_duration_ms, excluded.max_duration_ms)
            """
        try connection.execute(sql, values)
    }
}
