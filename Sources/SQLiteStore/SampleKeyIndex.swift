import HealthStore
import HealthModel
import SQLite
import Synchronization

/// Finds a user's samples by uuid without a B-tree index on the uuid: per user, sorted runs of
/// (32-bit key, seq) entries (`SampleKeyRun`), written once per batch in the batch's own
/// transaction and merged in tiers, plus their keys held in memory.
///
/// Why: a unique (user, uuid) index takes every random uuid as a random insert, which dirties a
/// page of its own once the index outgrows a batch: a WAL page write per sample. A run is one
/// sequential write per batch (8 bytes a sample), and merging `fanout` runs of a level into one of
/// the next keeps a user's runs few (fewer than `fanout` per level, levels logarithmic in the data).
///
/// A save asks for all of its batch's keys at once: a key absent from every run's in-memory keys is
/// new without touching the database; a key present (the same uuid again, or another uuid with the
/// same key) is checked exactly: the run's one chunk holding the key is read, and the full uuid of
/// each row it points to is compared. A deleted sample's entry stays until a merge of its run, or a
/// compaction of the user's runs (SampleKeyCompaction.swift), leaves it out (`sample_key_deletions`
/// lists the deleted rows whose entries may remain); meanwhile a lookup checks that the row still
/// exists (and is the same uuid), so a deleted uuid can be saved again, as with an index. Entries
/// are written in their rows' transactions, and dropped only after their rows are.
///
/// Memory: 4 bytes per key of the runs held, within `memoryBudget` (least recently used runs are
/// dropped first, and reloaded from their chunks when next needed by a save; a read by uuid of a run
/// not held probes its chunk directly; a run larger than the budget is never held).
package final class SampleKeyIndex: Sendable {
    package let derivation: SampleKeyDerivation
    /// Runs of one level merged into one at the next once there are this many.
    package let fanout: Int
    package let memoryBudget: Int
    /// Chunks a compaction step rewrites at most (about 480 entries each).
    package let compactionStepChunks: Int
    /// Whether the store runs compactions by itself after the deletes that call for them (tests
    /// turn it off to step through one).
    package let compactsInBackground: Bool
    private let cache: Mutex<Cache>
    private let rewrittenCount = Atomic<Int>(0)
    private let batchLookupCount = Atomic<Int>(0)
    private let chunkReadCount = Atomic<Int>(0)

    package static let defaultMemoryBudget = SQLiteHealthStore.defaultUUIDKeyMemoryBudget

    private struct Cache {
        var runs: [Int64: Held] = [:]
        var bytes = 0
        var clock: UInt64 = 0
        /// Run ids are handed out here, never reused in a process (a rolled-back run's id stays
        /// taken), so a held run's keys are those of the committed run with its id, if any.
        var lastRunID: Int64?
    }

    private struct Held {
        var keys: [UInt32]
        var lastUsed: UInt64
    }

    /// One of a user's runs, as listed in `sample_key_runs`.
    package struct RunInfo: Sendable, Equatable {
        package var id: Int64
        package var level: Int
        package var count: Int
    }

    package init(derivation: SampleKeyDerivation = .standard, fanout: Int = 8, memoryBudget: Int = SampleKeyIndex.defaultMemoryBudget,
                 compactionStepChunks: Int = 8, compactsInBackground: Bool = true) {
        self.derivation = derivation
        self.fanout = max(2, fanout)
        self.memoryBudget = memoryBudget
        self.compactionStepChunks = max(1, compactionStepChunks)
        self.compactsInBackground = compactsInBackground
        cache = Mutex(Cache())
    }

    /// The runs' tables (migration `014-sample-key-runs`).
    package static let runsSchema = """
        -- Per user, runs of (key, seq) entries sorted by key: the uuid lookup (SampleKeyIndex).
        CREATE TABLE sample_key_runs (
            id INTEGER PRIMARY KEY,
            user_id INTEGER NOT NULL,
            level INTEGER NOT NULL,
            count INTEGER NOT NULL
        );
        CREATE INDEX sample_key_runs_by_user ON sample_key_runs(user_id, level);
        -- A run's entries in chunks of about 480 (one page each), found by their first key.
        CREATE TABLE sample_key_chunks (
            run_id INTEGER NOT NULL,
            first_key INTEGER NOT NULL,
            entries BLOB NOT NULL,
            PRIMARY KEY (run_id, first_key)
        );
        """

    /// The deleted rows whose entries the runs still hold (migration `015-sample-key-deletions`).
    package static let deletionsSchema = """
        -- Seqs of deleted samples whose entries some run of the user still holds: dropped from the
        -- runs by the next merge that reads them, then from here.
        CREATE TABLE sample_key_deletions (
            user_id INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            PRIMARY KEY (user_id, seq)
        ) WITHOUT ROWID;
        -- Per user, how many rows sample_key_deletions holds (read by every merge and delete).
        CREATE TABLE sample_key_users (
            user_id INTEGER PRIMARY KEY,
            deleted INTEGER NOT NULL
        );
        """

    /// Every table, for the benchmark's raw SQLite.
    package static let schema = runsSchema + deletionsSchema + compactionSchema

    /// The level a run of `count` entries belongs to: 0 below 1,024 × fanout, then one more per
    /// factor of `fanout`.
    package func level(forCount count: Int) -> Int {
        var level = 0
        var bound = 1_024 * fanout
        while count >= bound, level < 40 {
            level += 1
            bound = bound.multipliedReportingOverflow(by: fanout).overflow ? Int.max : bound * fanout
        }
        return level
    }

    package func key(userRowID: Int64, uuid: HealthUUID) -> UInt32 { derivation.key(userRowID: userRowID, uuid: uuid) }

    // MARK: Lookups

    package func runs(userRowID: Int64, db: Database) throws -> [RunInfo] {
        enum Column: Int, TableColumns {
            case id, level, count
            static let table = "sample_key_runs"
        }
        let statement = try db.cachedStatement("SELECT id, level, count FROM sample_key_runs WHERE user_id = ? ORDER BY id")
        try statement.bind(userRowID, at: 1)
        return try statement.map { RunInfo(id: try $0.int64(Column.id), level: try $0.int(Column.level), count: try $0.int(Column.count)) }
    }

    /// The stored rows of `uuids` (keys from `key(userRowID:uuid:)`, in the same order), by position
    /// in `uuids`: the save path's check of a whole batch. Loads the user's runs into memory
    /// (within the budget) and reads the database only for keys some run holds.
    package func find(_ uuids: [HealthUUID], keys: [UInt32], userRowID: Int64, runs: [RunInfo], db: Database) throws -> [Int: SampleRow] {
        batchLookupCount.add(1, ordering: .relaxed)
        guard !uuids.isEmpty, !runs.isEmpty else { return [:] }
        var order = Array(uuids.indices)
        order.sort { keys[$0] < keys[$1] }
        let sortedKeys = order.map { keys[$0] }
        var found: [Int: SampleRow] = [:]
        for run in runs {
            let held = try heldKeys(run.id, db: db)
            var candidates: [Int] = []
            SampleKeyFilter.forEachPresent(sortedKeys, in: held) { candidates.append(order[$0]) }
            for position in candidates where found[position] == nil {
                if let match = try exactMatch(uuids[position], key: keys[position], runID: run.id, userRowID: userRowID, db: db) {
                    found[position] = match
                }
            }
        }
        return found
    }

    /// One uuid's row (GET and DELETE by uuid): a held run rules the key in or out from memory; a
    /// run not held is probed in its chunk, the largest first: a stored uuid is most likely in the
    /// largest run (half of a user's samples or more), and after a restart, before the user's next
    /// save, no run is held. Works on any connection (a reader's snapshot).
    package func find(_ uuid: HealthUUID, userRowID: Int64, db: Database) throws -> SampleRow? {
        let key = key(userRowID: userRowID, uuid: uuid)
        var notHeld: [RunInfo] = []
        for run in try runs(userRowID: userRowID, db: db).reversed() {
            guard let held = touch(run.id) else {
                notHeld.append(run)
                continue
            }
            let index = SampleKeyFilter.lowerBound(key, in: held, from: 0)
            guard index < held.count, held[index] == key else { continue }
            if let match = try exactMatch(uuid, key: key, runID: run.id, userRowID: userRowID, db: db) { return match }
        }
        for run in notHeld.sorted(by: { $0.count > $1.count }) {
            if let match = try exactMatch(uuid, key: key, runID: run.id, userRowID: userRowID, db: db) { return match }
        }
        return nil
    }

    /// Reads the chunk of run `runID` that would hold `key`, and the rows its entries for the key
    /// point to: the one with this user and uuid, if any (others share the key, or were deleted).
    private func exactMatch(_ uuid: HealthUUID, key: UInt32, runID: Int64, userRowID: Int64, db: Database) throws -> SampleRow? {
        chunkReadCount.add(1, ordering: .relaxed)
        let chunk = try db.cachedStatement("""
            SELECT entries FROM sample_key_chunks WHERE run_id = ? AND first_key <= ? ORDER BY first_key DESC LIMIT 1
            """)
        try chunk.bind(runID, at: 1)
        try chunk.bind(Int64(key), at: 2)
        // Searched in place: one chunk's key, not its 480 entries decoded.
        let found = try chunk.first { row in row.withBlob(ChunkColumn.entries) { SampleKeyRun.seqs(for: key, inChunk: $0) } }
        guard let found else { return nil }
        guard let seqs = found else { throw Self.damagedChunk(ofRun: runID) }
        let read = try db.cachedStatement("SELECT \(SampleRow.selectList) FROM samples WHERE seq = ? AND user_id = ?")
        for seq in seqs {
            read.reset()
            try read.bind(seq, at: 1)
            try read.bind(userRowID, at: 2)
            if let stored = try read.first({ try SampleRow($0) }), stored.uuid == uuid { return stored }
        }
        return nil
    }

    /// A run's keys: held, or read from its chunks and held (evicting others past the budget).
    private func heldKeys(_ runID: Int64, db: Database) throws -> [UInt32] {
        if let keys = touch(runID) { return keys }
        let run = try readRun(runID, db: db, withSeqs: false)
        hold(runID, keys: run.keys)
        return run.keys
    }

    /// A held run's keys, marked as just used; nil if not held.
    private func touch(_ runID: Int64) -> [UInt32]? {
        cache.withLock { cache -> [UInt32]? in
            guard cache.runs[runID] != nil else { return nil }
            cache.clock += 1
            cache.runs[runID]?.lastUsed = cache.clock
            return cache.runs[runID]?.keys
        }
    }

    /// Holds a run's keys, dropping the least recently used others past the budget. A run larger
    /// than the whole budget is not held (a save reads it from its chunks each time), so the keys
    /// held never exceed the budget.
    private func hold(_ runID: Int64, keys: [UInt32]) {
        cache.withLock { cache in
            cache.clock += 1
            if let old = cache.runs.removeValue(forKey: runID) { cache.bytes -= old.keys.count * 4 }
            guard keys.count * 4 <= memoryBudget else { return }
            cache.runs[runID] = Held(keys: keys, lastUsed: cache.clock)
            cache.bytes += keys.count * 4
            guard cache.bytes > memoryBudget else { return }
            // Oldest first, never the run just held.
            let byAge = cache.runs.filter { $0.key != runID }.sorted { $0.value.lastUsed < $1.value.lastUsed }
            for (id, entry) in byAge {
                guard cache.bytes > memoryBudget else { break }
                cache.runs[id] = nil
                cache.bytes -= entry.keys.count * 4
            }
        }
    }

    private func forget(_ runIDs: [Int64]) {
        cache.withLock { cache in
            for id in runIDs {
                if let old = cache.runs.removeValue(forKey: id) { cache.bytes -= old.keys.count * 4 }
            }
        }
    }

    /// Batch lookups (`find` with a batch's uuids) since the store opened, for tests.
    package var batchLookups: Int { batchLookupCount.load(ordering: .relaxed) }

    /// Chunks read to check a key exactly since the store opened, for tests.
    package var chunkReads: Int { chunkReadCount.load(ordering: .relaxed) }

    /// Entries written to chunks since the store opened (new runs, merges, compaction steps), for tests.
    package var entriesRewritten: Int { rewrittenCount.load(ordering: .relaxed) }

    /// Bytes of keys held in memory (for tests and metrics).
    package var heldBytes: Int { cache.withLock { $0.bytes } }

    /// A run's entries from its chunks.
    package func readRun(_ runID: Int64, db: Database, withSeqs: Bool) throws -> SampleKeyRun {
        let statement = try db.cachedStatement("SELECT entries FROM sample_key_chunks WHERE run_id = ? ORDER BY first_key")
        try statement.bind(runID, at: 1)
        var keys: [UInt32] = []
        var seqs: [Int64]? = withSeqs ? [] : nil
        try statement.forEachRow { row in try Self.appendChunk(row, ChunkColumn.entries, ofRun: runID, keys: &keys, seqs: &seqs) }
        return SampleKeyRun(sortedKeys: keys, seqs: seqs ?? Array(repeating: 0, count: keys.count))
    }

    /// Appends the entries of the chunk in `row`'s `column` (and their seqs, when `seqs` is not
    /// nil); a blob that is not a chunk is a decoding error naming the run.
    static func appendChunk<C: TableColumns>(_ row: Row, _ column: C, ofRun runID: Int64, keys: inout [UInt32],
                                            seqs: inout [Int64]?) throws {
        guard row.withBlob(column, { SampleKeyRun.decode($0, keys: &keys, seqs: &seqs) }) else { throw damagedChunk(ofRun: runID) }
    }

    static func damagedChunk(ofRun runID: Int64) -> RowDecodingError {
        RowDecodingError(table: "sample_key_chunks", column: "entries", problem: "of run \(runID) is not a chunk of uuid keys")
    }

    // MARK: Writing (the writer's transaction only)

    /// Adds a batch's entries as a new run of the user and merges a level that reached `fanout`
    /// runs, all in the caller's transaction. `runs`: the user's runs before this batch (as `find`
    /// was given them). A merge leaves out the entries of deleted rows.
    package func append(_ entries: [(key: UInt32, seq: Int64)], userRowID: Int64, runs: [RunInfo], db: Database) throws {
        guard !entries.isEmpty else { return }
        let run = SampleKeyRun(unsorted: entries)
        var all = runs
        all.append(try write(run, userRowID: userRowID, db: db))
        var fresh: [Int64: SampleKeyRun] = [all[all.count - 1].id: run]
        // Merge while some level holds `fanout` runs (a merge can fill the next level).
        while let level = Dictionary(grouping: all, by: \.level).filter({ $0.value.count >= fanout }).keys.min() {
            let members = all.filter { $0.level == level }
            var parts: [SampleKeyRun] = []
            for member in members { parts.append(try fresh[member.id] ?? readRun(member.id, db: db, withSeqs: true)) }
            let ids = members.map(\.id)
            all.removeAll { ids.contains($0.id) }
            fresh = [:]
            if let merged = try replace(ids, by: SampleKeyRun.merged(parts), minimumLevel: level + 1, userRowID: userRowID, db: db) {
                all.append(merged.info)
                fresh = [merged.info.id: merged.run]
            }
        }
    }

    /// Replaces runs `ids` of the user by `merged` (their entries) minus the entries of deleted
    /// rows; nil when none is left.
    private func replace(_ ids: [Int64], by merged: SampleKeyRun, minimumLevel: Int, userRowID: Int64,
                         db: Database) throws -> (info: RunInfo, run: SampleKeyRun)? {
        let live = try purged(merged, userRowID: userRowID, db: db)
        try delete(ids, db: db)
        guard live.count > 0 else { return nil }
        return (try write(live, userRowID: userRowID, db: db, minimumLevel: minimumLevel), live)
    }

    // MARK: Deleted rows

    /// Notes rows of the user deleted in the caller's transaction: their entries are left out by
    /// the next merge of the runs holding them. Once more than half the user's entries are of
    /// deleted rows, a compaction of the user's runs begins, which the store runs afterwards in
    /// short steps of their own (SampleKeyCompaction.swift), so a user who deletes without saving
    /// again holds at most about twice the live samples' entries, and the delete rewrites nothing.
    /// Returns whether a compaction of the user is under way (for the store to run it).
    @discardableResult
    package func noteDeleted(_ seqs: [Int64], userRowID: Int64, db: Database) throws -> Bool {
        guard !seqs.isEmpty else { return false }
        let generation = try deletionGeneration(userRowID: userRowID, db: db)
        try forEach(seqs, userRowID: userRowID, db: db, run: "INSERT INTO sample_key_deletions (user_id, seq, generation) VALUES (?, ?, ?)",
                    generation: generation)
        let pending = try deletedEntries(userRowID: userRowID, db: db) + seqs.count
        try setDeletedEntries(pending, userRowID: userRowID, db: db)
        let runs = try runs(userRowID: userRowID, db: db)
        let entries = runs.reduce(0) { $0 + $1.count }
        guard pending * 2 > entries else { return try compaction(userRowID: userRowID, db: db) != nil }
        return try beginCompaction(userRowID: userRowID, runs: runs, db: db)
    }

    /// Runs `sql` (parameters: user, seq, and `generation` when given) once per seq.
    func forEach(_ seqs: [Int64], userRowID: Int64, db: Database, run sql: String, generation: Int64? = nil) throws {
        let statement = try db.cachedStatement(sql)
        for seq in seqs {
            statement.reset()
            try statement.bind(userRowID, at: 1)
            try statement.bind(seq, at: 2)
            if let generation { try statement.bind(generation, at: 3) }
            _ = try statement.step()
        }
    }

    /// The generation the user's deletions are listed under now (SampleKeyCompaction.swift).
    func deletionGeneration(userRowID: Int64, db: Database) throws -> Int64 {
        let statement = try db.cachedStatement("SELECT generation FROM sample_key_users WHERE user_id = ?")
        try statement.bind(userRowID, at: 1)
        return try statement.firstInt64() ?? 0
    }

    /// How many entries of the user's runs are of deleted rows (listed in `sample_key_deletions`).
    package func deletedEntries(userRowID: Int64, db: Database) throws -> Int {
        let statement = try db.cachedStatement("SELECT deleted FROM sample_key_users WHERE user_id = ?")
        try statement.bind(userRowID, at: 1)
        return try statement.firstInt() ?? 0
    }

    func setDeletedEntries(_ count: Int, userRowID: Int64, db: Database) throws {
        try db.execute("""
            INSERT INTO sample_key_users (user_id, deleted) VALUES (?, ?)
            ON CONFLICT(user_id) DO UPDATE SET deleted = excluded.deleted
            """, [.integer(userRowID), .integer(Int64(count))])
    }

    /// `run` without the entries of the user's deleted rows, which then leave `sample_key_deletions`.
    /// Costs one indexed range read when the user has deleted rows, nothing otherwise.
    private func purged(_ run: SampleKeyRun, userRowID: Int64, db: Database) throws -> SampleKeyRun {
        let pending = try deletedEntries(userRowID: userRowID, db: db)
        guard pending > 0, let lowest = run.seqs.min(), let highest = run.seqs.max() else { return run }
        let range = try db.cachedStatement("SELECT seq FROM sample_key_deletions WHERE user_id = ? AND seq BETWEEN ? AND ?")
        try range.bind(userRowID, at: 1)
        try range.bind(lowest, at: 2)
        try range.bind(highest, at: 3)
        var deleted = Set<Int64>()
        try range.forEachRow { deleted.insert(try $0.int64(DeletionColumn.seq)) }
        guard !deleted.isEmpty else { return run }
        let (live, removed) = run.removing(deleted)
        guard !removed.isEmpty else { return run }
        try forEach(removed, userRowID: userRowID, db: db, run: "DELETE FROM sample_key_deletions WHERE user_id = ? AND seq = ?")
        try setDeletedEntries(max(0, pending - removed.count), userRowID: userRowID, db: db)
        return live
    }
    /// Writes `run` as a new run of the user (its id never used before in this process).
    @discardableResult
    package func write(_ run: SampleKeyRun, userRowID: Int64, db: Database, minimumLevel: Int = 0) throws -> RunInfo {
        let stored = try db.scalarInt64("SELECT max(id) FROM sample_key_runs") ?? 0
        let id = cache.withLock { cache -> Int64 in
            let next = max(cache.lastRunID ?? 0, stored) + 1
            cache.lastRunID = next
            return next
        }
        let info = RunInfo(id: id, level: max(minimumLevel, level(forCount: run.count)), count: run.count)
        try db.execute("INSERT INTO sample_key_runs (id, user_id, level, count) VALUES (?, ?, ?, ?)",
                       [.integer(id), .integer(userRowID), .integer(Int64(info.level)), .integer(Int64(run.count))])
        try insertChunks(of: run, runID: id, db: db)
        hold(id, keys: run.keys)
        return info
    }

    /// Stores `run`'s entries as chunks of run `runID`.
    func insertChunks(of run: SampleKeyRun, runID: Int64, db: Database) throws {
        let insert = try db.cachedStatement("INSERT INTO sample_key_chunks (run_id, first_key, entries) VALUES (?, ?, ?)")
        for chunk in run.chunks() {
            insert.reset()
            try insert.bind(runID, at: 1)
            try insert.bind(Int64(chunk.firstKey), at: 2)
            try insert.bind(chunk.entries, at: 3)
            _ = try insert.step()
        }
        rewrittenCount.add(run.count, ordering: .relaxed)
    }

    func delete(_ runIDs: [Int64], db: Database) throws {
        for id in runIDs {
            try db.execute("DELETE FROM sample_key_chunks WHERE run_id = ?", [.integer(id)])
            try db.execute("DELETE FROM sample_key_runs WHERE id = ?", [.integer(id)])
        }
        forget(runIDs)
    }

    /// Builds every user's runs from the rows of `samples` (a migration from the unique uuid index,
    /// or a rebuild): one run per user, at the level its size gives.
    package func rebuildAll(_ db: Database) throws {
        enum KeyedColumn: Int, TableColumns {
            case userID, seq, uuid
            static let table = "samples"
        }
        try db.execute("DELETE FROM sample_key_chunks; DELETE FROM sample_key_runs")
        let statement = try db.cachedStatement("SELECT user_id, seq, uuid FROM samples ORDER BY user_id")
        var user: Int64?
        var entries: [(key: UInt32, seq: Int64)] = []
        func flush() throws {
            if let user, !entries.isEmpty { try write(SampleKeyRun(unsorted: entries), userRowID: user, db: db) }
            entries.removeAll(keepingCapacity: true)
        }
        try statement.forEachRow { row in
            let rowUser = try row.int64(KeyedColumn.userID)
            if rowUser != user {
                try flush()
                user = rowUser
            }
            let uuid = try row.decode(KeyedColumn.uuid, as: "a 16-byte uuid") { HealthUUID(bytes: $0) }
            let seq = try row.int64(KeyedColumn.seq)
            entries.append((derivation.key(userRowID: rowUser, uuid: uuid), seq))
        }
        try flush()
    }
}

extension SQLiteHealthStore {
    /// The user's uuid key runs and the entries they hold (benchmarks and tests).
    package func uuidKeyRunCounts(userRowID: Int64) throws -> (runs: Int, entries: Int) {
        try pool.read { db in
            let runs = try sampleKeys.runs(userRowID: userRowID, db: db)
            return (runs.count, runs.reduce(0) { $0 + $1.count })
        }
    }
}

/// A chunk of a run as its lookups read it: `SELECT entries FROM sample_key_chunks ...`.
enum ChunkColumn: Int, TableColumns {
    case entries

    static let table = "sample_key_chunks"
}

/// A deleted row's seq: `SELECT seq FROM sample_key_deletions ...`.
enum DeletionColumn: Int, TableColumns {
    case seq

    static let table = "sample_key_deletions"
}
