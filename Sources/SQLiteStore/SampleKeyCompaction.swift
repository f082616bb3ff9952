import HealthStore
import Dispatch
import SQLite
import Synchronization

/// Compaction of a user's uuid key runs once most of their entries are of deleted rows, in short
/// steps of its own after the delete that called for it (`SampleKeyIndex.noteDeleted`).
///
/// Why steps: rewriting every run of a user with millions of samples at once took the delete
/// request that crossed the line (and the single writer, so every other user's writes) for as
/// long as the rewrite took (BENCHMARKS.md, "uuid keys"). A step rewrites at most
/// `compactionStepChunks` chunks of one run, in place, without the entries of rows listed as
/// deleted before the compaction began, and commits; the writer runs other work between steps.
///
/// Why lookups stay exact at every step: a run's chunks are found by their first key, the greatest
/// at or below the key looked for. A step replaces the chunks of one key range [first, next) of a
/// run by chunks of the same entries minus deleted ones, all with first keys in that range, so every
/// key still finds the one chunk that holds its entries (or a chunk before the range, which holds
/// none of it: only deleted entries are ever left out). Each step is one transaction: `kill -9`
/// leaves the runs of the last committed step, and the cursor in `sample_key_compactions`,
/// written in the same transaction, says where the next step resumes after a restart.
///
/// Why a generation: the list `sample_key_deletions` is keyed by seq, and the entries a step drops
/// are in key order, spread over the whole list; deleting their list rows one by one would dirty
/// most of the list's pages at every step. Instead, the compaction drops the entries of every row
/// listed under its generation or before, leaves those list rows in place while it goes through the
/// runs (a row listed with no entry left costs nothing: merges only drop entries they find), and
/// deletes them afterwards in seq order, a range per step. Deletions noted meanwhile are listed
/// under the next generation and stay listed with their entries, for the next merge or compaction.
extension SampleKeyIndex {
    /// The compaction tables (migration `017-sample-key-compaction`).
    package static let compactionSchema = """
        -- The compaction that drops a listed row's entry: every row listed at or below the
        -- generation of a compaction under way for its user.
        ALTER TABLE sample_key_deletions ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
        -- The generation the user's deletions are listed under now.
        ALTER TABLE sample_key_users ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
        -- Per user, the compaction under way: the runs up to last_run_id, chunk by chunk from
        -- (run_id, next_key), then (once after_seq is set) the list's rows of its generations
        -- after after_seq.
        CREATE TABLE sample_key_compactions (
            user_id INTEGER PRIMARY KEY,
            generation INTEGER NOT NULL,
            last_run_id INTEGER NOT NULL,
            run_id INTEGER NOT NULL,
            next_key INTEGER NOT NULL,
            after_seq INTEGER
        );
        """

    struct Compaction {
        var userRowID: Int64
        var generation: Int64
        var lastRunID: Int64
        var runID: Int64
        var nextKey: Int64
        var afterSeq: Int64?
    }

    /// Begins a compaction of the user's runs unless one is under way; true either way when one
    /// is under way afterwards. In the caller's transaction; rewrites nothing.
    func beginCompaction(userRowID: Int64, runs: [RunInfo], db: Database) throws -> Bool {
        if try compaction(userRowID: userRowID, db: db) != nil { return true }
        guard let first = runs.map(\.id).min(), let last = runs.map(\.id).max() else { return false }
        let generation = try deletionGeneration(userRowID: userRowID, db: db)
        try db.execute("""
            INSERT INTO sample_key_compactions (user_id, generation, last_run_id, run_id, next_key, after_seq)
            VALUES (?, ?, ?, ?, 0, NULL)
            """, [.integer(userRowID), .integer(generation), .integer(last), .integer(first)])
        // Deletions from now on are the next compaction's.
        try db.execute("UPDATE sample_key_users SET generation = generation + 1 WHERE user_id = ?", [.integer(userRowID)])
        return true
    }

    /// The compaction under way for the user (or, without a user, the one of the lowest user).
    func compaction(userRowID: Int64?, db: Database) throws -> Compaction? {
        let sql = "SELECT user_id, generation, last_run_id, run_id, next_key, after_seq FROM sample_key_compactions"
        let statement = try db.cachedStatement(userRowID == nil ? sql + " ORDER BY user_id LIMIT 1" : sql + " WHERE user_id = ?")
        if let userRowID { try statement.bind(userRowID, at: 1) }
        enum Column: Int, TableColumns {
            case userID, generation, lastRunID, runID, nextKey, afterSeq
            static let table = "sample_key_compactions"
        }
        return try statement.first { row in
            Compaction(userRowID: try row.int64(Column.userID), generation: try row.int64(Column.generation),
                       lastRunID: try row.int64(Column.lastRunID), runID: try row.int64(Column.runID),
                       nextKey: try row.int64(Column.nextKey), afterSeq: row.int64IfPresent(Column.afterSeq))
        }
    }

    /// True while some user's compaction is under way (tests, benchmarks, the store at open).
    package func compactionPending(db: Database) throws -> Bool {
        try compaction(userRowID: nil, db: db) != nil
    }

    /// One bounded step of a compaction under way, in the caller's transaction (the writer's):
    /// at most `compactionStepChunks` chunks of one run rewritten, or as many times
    /// `SampleKeyRun.chunkEntries` rows of the list deleted. False when none is under way.
    package func compactionStep(db: Database) throws -> Bool {
        guard let compaction = try compaction(userRowID: nil, db: db) else { return false }
        if let afterSeq = compaction.afterSeq {
            try dropListedRows(compaction, after: afterSeq, db: db)
        } else {
            try compactChunks(compaction, db: db)
        }
        return true
    }

    /// The next chunks of the compaction's current run, without the entries of rows listed under
    /// its generation or before; the cursor moves past them (to the next run after a run's last).
    private func compactChunks(_ compaction: Compaction, db: Database) throws {
        let user = compaction.userRowID
        let runStatement = try db.cachedStatement("""
            SELECT id, count FROM sample_key_runs WHERE user_id = ? AND id >= ? AND id <= ? ORDER BY id LIMIT 1
            """)
        try runStatement.bind(user, at: 1)
        try runStatement.bind(compaction.runID, at: 2)
        try runStatement.bind(compaction.lastRunID, at: 3)
        let pending = try deletedEntries(userRowID: user, db: db)
        // Runs merged meanwhile left the deleted entries out already; with no deleted entry left
        // at all, the list is next.
        enum Run: Int, TableColumns {
            case id, count
            static let table = "sample_key_runs"
        }
        guard pending > 0, let (runID, count) = try runStatement.first({ (try $0.int64(Run.id), try $0.int(Run.count)) }) else {
            try db.execute("UPDATE sample_key_compactions SET after_seq = ? WHERE user_id = ?", [.integer(Int64.min), .integer(user)])
            return
        }
        let from = runID == compaction.runID ? compaction.nextKey : 0
        let chunks = try db.cachedStatement("SELECT first_key, entries FROM sample_key_chunks WHERE run_id = ? AND first_key >= ? ORDER BY first_key LIMIT ?")
        try chunks.bind(runID, at: 1)
        try chunks.bind(from, at: 2)
        try chunks.bind(Int64(compactionStepChunks + 1), at: 3)
        enum Chunk: Int, TableColumns {
            case firstKey, entries
            static let table = "sample_key_chunks"
        }
        var keys: [UInt32] = []
        var seqs: [Int64]? = []
        var read = 0
        var next: Int64?
        try chunks.forEachRow { row in
            guard read < compactionStepChunks else {
                next = try row.int64(Chunk.firstKey)
                return
            }
            read += 1
            try Self.appendChunk(row, Chunk.entries, ofRun: runID, keys: &keys, seqs: &seqs)
        }
        let entrySeqs = seqs ?? []
        // Which entries are of rows this compaction drops: one probe of the list's key per entry.
        let probe = try db.cachedStatement("SELECT generation FROM sample_key_deletions WHERE user_id = ? AND seq = ?")
        var liveKeys: [UInt32] = []
        var liveSeqs: [Int64] = []
        liveKeys.reserveCapacity(keys.count)
        liveSeqs.reserveCapacity(keys.count)
        for index in keys.indices {
            probe.reset()
            try probe.bind(user, at: 1)
            try probe.bind(entrySeqs[index], at: 2)
            if let generation = try probe.firstInt64(), generation <= compaction.generation { continue }
            liveKeys.append(keys[index])
            liveSeqs.append(entrySeqs[index])
        }
        let removed = keys.count - liveKeys.count
        if removed > 0 {
            if let next {
                try db.execute("DELETE FROM sample_key_chunks WHERE run_id = ? AND first_key >= ? AND first_key < ?",
                               [.integer(runID), .integer(from), .integer(next)])
            } else {
                try db.execute("DELETE FROM sample_key_chunks WHERE run_id = ? AND first_key >= ?", [.integer(runID), .integer(from)])
            }
            let live = SampleKeyRun(sortedKeys: liveKeys, seqs: liveSeqs)
            try insertChunks(of: live, runID: runID, db: db)
            if count - removed > 0 {
                try db.execute("UPDATE sample_key_runs SET count = ? WHERE id = ?", [.integer(Int64(count - removed)), .integer(runID)])
            } else {
                try delete([runID], db: db)
            }
            try setDeletedEntries(max(0, pending - removed), userRowID: user, db: db)
        }
        // The keys held of the run, if any, still include the dropped ones until it is next read
        // from its chunks: a superset costs at most a chunk read for a new key equal to a dropped
        // one, never a wrong answer.
        if let next {
            try db.execute("UPDATE sample_key_compactions SET run_id = ?, next_key = ? WHERE user_id = ?",
                           [.integer(runID), .integer(next), .integer(user)])
        } else {
            try db.execute("UPDATE sample_key_compactions SET run_id = ?, next_key = 0 WHERE user_id = ?",
                           [.integer(runID + 1), .integer(user)])
        }
    }

    /// Deletes the next rows of the list that the compaction dropped from the runs, in seq order;
    /// after the last, the compaction is done (and another begins if deletions noted meanwhile
    /// are again more than half of the user's entries).
    private func dropListedRows(_ compaction: Compaction, after afterSeq: Int64, db: Database) throws {
        let user = compaction.userRowID
        let limit = compactionStepChunks * SampleKeyRun.chunkEntries
        let range = try db.cachedStatement("""
            SELECT count(*), max(seq) FROM (SELECT seq FROM sample_key_deletions WHERE user_id = ? AND seq > ? ORDER BY seq LIMIT ?)
            """)
        try range.bind(user, at: 1)
        try range.bind(afterSeq, at: 2)
        try range.bind(Int64(limit), at: 3)
        enum Step: Int, TableColumns {
            case rows, last
            static let table = "sample_key_deletions"
        }
        let (rows, last) = try range.first { (try $0.int(Step.rows), $0.int64IfPresent(Step.last) ?? afterSeq) } ?? (0, afterSeq)
        if rows > 0 {
            try db.execute("DELETE FROM sample_key_deletions WHERE user_id = ? AND seq > ? AND seq <= ? AND generation <= ?",
                           [.integer(user), .integer(afterSeq), .integer(last), .integer(compaction.generation)])
        }
        guard rows < limit else {
            try db.execute("UPDATE sample_key_compactions SET after_seq = ? WHERE user_id = ?", [.integer(last), .integer(user)])
            return
        }
        try db.execute("DELETE FROM sample_key_compactions WHERE user_id = ?", [.integer(user)])
        let runs = try runs(userRowID: user, db: db)
        if try deletedEntries(userRowID: user, db: db) * 2 > runs.reduce(0, { $0 + $1.count }) {
            _ = try beginCompaction(userRowID: user, runs: runs, db: db)
        }
    }
}

/// Runs uuid key compactions on the writer in the background: one step per write transaction,
/// with a pause between steps, so a request waits for at most one step of it.
final class UUIDKeyCompactor: Sendable {
    private let pool: DatabasePool
    private let keys: SampleKeyIndex
    private let queue = DispatchQueue(label: "healthd.uuid-key-compaction", qos: .utility)
    private let state = Mutex(State())
    private let figures = Mutex(SQLiteHealthStore.UUIDKeyCompactionFigures())

    private struct State {
        var running = false
        /// Asked for while running: one more look before stopping.
        var requested = false
        var stopped = false
    }

    init(pool: DatabasePool, keys: SampleKeyIndex) {
        self.pool = pool
        self.keys = keys
    }

    /// Starts stepping unless already stepping (a compaction may have begun, or be left from
    /// before a restart).
    func schedule() {
        guard keys.compactsInBackground else { return }
        let start = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            if state.running {
                state.requested = true
                return false
            }
            state.running = true
            return true
        }
        if start { queue.async { [self] in step() } }
    }

    func stop() { state.withLock { $0.stopped = true } }

    /// One step on the writer. A failed step (a full disk, a closed store) stops the stepping;
    /// the next delete of the user, or the next start, resumes it from the committed cursor.
    private func step() {
        var more = false
        do {
            more = try runStep()
        } catch {
            more = false
        }
        let again = state.withLock { state -> Bool in
            if state.stopped || (!more && !state.requested) {
                state.running = false
                return false
            }
            state.requested = false
            return true
        }
        // The pause lets requests waiting for the writer take it between steps.
        if again { queue.asyncAfter(deadline: .now() + .milliseconds(1)) { [self] in step() } }
    }

    /// One step, timed from when the writer is held to its commit; false when nothing is under way.
    func runStep() throws -> Bool {
        var began: UInt64 = 0
        var worked: UInt64 = 0
        let more = try pool.write { db -> Bool in
            began = DispatchTime.now().uptimeNanoseconds
            defer { worked = DispatchTime.now().uptimeNanoseconds }
            return try keys.compactionStep(db: db)
        }
        let held = DispatchTime.now().uptimeNanoseconds - began
        if more {
            figures.withLock { figures in
                figures.steps += 1
                figures.totalNanoseconds += held
                figures.maxNanoseconds = max(figures.maxNanoseconds, held)
                figures.maxWorkNanoseconds = max(figures.maxWorkNanoseconds, worked - began)
            }
        }
        return more
    }

    var currentFigures: SQLiteHealthStore.UUIDKeyCompactionFigures { figures.withLock { $0 } }
}

extension SQLiteHealthStore {
    /// What the background uuid key compaction has done since the store opened (benchmarks).
    package struct UUIDKeyCompactionFigures: Sendable {
        package var steps = 0
        package var totalNanoseconds: UInt64 = 0
        /// The longest a step held the writer (from BEGIN to COMMIT).
        package var maxNanoseconds: UInt64 = 0
        /// The longest a step's own reads and writes took, its COMMIT (the WAL's fsync, and a
        /// checkpoint when one falls due) left out.
        package var maxWorkNanoseconds: UInt64 = 0
    }

    package var uuidKeyCompactionFigures: UUIDKeyCompactionFigures { keyCompactor.currentFigures }

    /// Runs one step of a uuid key compaction under way on the writer, now; false when none is
    /// (tests step through a compaction with background compaction off).
    @discardableResult
    package func compactUUIDKeysStep() throws -> Bool { try keyCompactor.runStep() }

    /// Runs compactions under way to their end on the calling thread; returns the steps taken.
    @discardableResult
    package func compactUUIDKeys() throws -> Int {
        var steps = 0
        while try compactUUIDKeysStep() { steps += 1 }
        return steps
    }

    /// True while a uuid key compaction is under way (its steps not all committed).
    package func uuidKeyCompactionPending() throws -> Bool {
        try pool.read { db in try sampleKeys.compactionPending(db: db) }
    }
}
