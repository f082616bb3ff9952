import CSQLite
import Foundation
import Synchronization

/// The server's database: one writer connection and a fixed set of reader connections on a
/// WAL-mode file. Safe to share across threads; every connection is used by one thread at a time.
/// Dropping the pool without `close()` still closes the connections, only the final checkpoint is skipped.
///
/// Not reentrant: do not call `write`, `barrier` or `close` from inside a `write` or `read` body
/// (the writer lock is not recursive, and `close` waits for readers), and keep read bodies from
/// calling `read` when all readers could be taken. Pass `Database` to helpers instead.
///
/// - `write` serializes callers on the writer and wraps the body in BEGIN IMMEDIATE…COMMIT.
///   It returns only after COMMIT succeeded, i.e. after the WAL was fsynced (synchronous=FULL),
///   so publishing the returned value (change feed, 2xx response) happens after durability.
/// - `read` borrows a reader (waiting while all are busy) and wraps the body in a deferred
///   transaction, so every statement in the body sees the same snapshot.
public final class DatabasePool: @unchecked Sendable {
    // @unchecked: all mutable state below is guarded — `writer` by `writerLock`,
    // `idleReaders`/`isClosed` by `readerCondition`; a connection is touched only by the thread
    // that holds it (the writer lock, or a reader checked out of `idleReaders`).

    public struct Configuration: Sendable {
        /// Reader connections opened up front.
        public var readerCount: Int = 4
        /// How long a connection waits for a lock held by another process/connection before SQLITE_BUSY.
        public var busyTimeoutMilliseconds: Int = 5_000
        /// Page cache per connection, in KiB (negative `cache_size` means KiB in SQLite).
        public var cacheSizeKiB: Int = 32 * 1024
        /// Memory-mapped I/O size in bytes; 0 disables it. Off by default because an I/O error
        /// on a mapped page becomes SIGBUS instead of an error code.
        public var mmapSizeBytes: Int = 0
        /// Pages in the WAL before the writer checkpoints automatically after a commit.
        public var walAutocheckpointPages: Int = 4_000
        /// Size the WAL file is truncated back to after a checkpoint, so one large batch does
        /// not leave a huge WAL on disk forever.
        public var journalSizeLimitBytes: Int = 64 * 1024 * 1024

        public init() {}
    }

    public let path: String
    public let configuration: Configuration

    private let writerLock = NSLock()
    private var writer: Database?
    /// Bodies waiting for `groupedWrite`'s next group, and whether a drain on `writerQueue` is
    /// already scheduled for the asynchronous ones.
    private let pendingGroup = Mutex(PendingGroup())
    private struct PendingGroup {
        var members: [any GroupCommitMember] = []
        var drainScheduled = false
    }
    /// Runs asynchronous group commits, so no request thread waits for the writer or its fsync.
    private let writerQueue = DispatchQueue(label: "healthd.sqlite.writer", qos: .userInitiated)
    private let commits = Atomic<Int>(0)

    /// Grouped writes waiting for the writer (for tests and metrics).
    public var queuedGroupMemberCount: Int { pendingGroup.withLock { $0.members.count } }

    /// Write transactions committed since the pool opened (a group commit counts once).
    public var committedTransactionCount: Int { commits.load(ordering: .relaxed) }

    private let readerCondition = NSCondition()
    private var idleReaders: [Database] = []
    private var readerTotal = 0
    private var isClosed = false

    /// Opens or creates the database at `path`, applies `migrator` on the writer, then opens readers.
    public init(path: String, configuration: Configuration = Configuration(), migrator: DatabaseMigrator? = nil) throws {
        self.path = path
        self.configuration = configuration
        let writer = try Database(path: path, mode: .readWriteCreate)
        try writer.setBusyTimeout(milliseconds: configuration.busyTimeoutMilliseconds)
        let journalMode = try writer.setPragma("journal_mode", "WAL")
        guard journalMode?.lowercased() == "wal" else {
            throw SQLiteError(extendedCode: SQLITE_ERROR,
                              message: "could not enable WAL (journal_mode is \(journalMode ?? "unknown"))", sql: "PRAGMA journal_mode = WAL")
        }
        // FULL in WAL mode fsyncs the WAL at every commit: a committed write survives power loss,
        // not just a process crash (NORMAL would only promise the latter).
        try writer.execute("PRAGMA synchronous = FULL")
        try writer.execute("PRAGMA foreign_keys = ON")
        try writer.execute("PRAGMA wal_autocheckpoint = \(configuration.walAutocheckpointPages)")
        try writer.execute("PRAGMA journal_size_limit = \(configuration.journalSizeLimitBytes)")
        try DatabasePool.applyConnectionPragmas(writer, configuration)
        try migrator?.migrate(writer)
        self.writer = writer

        var readers: [Database] = []
        for _ in 0..<max(1, configuration.readerCount) {
            let reader = try Database(path: path, mode: .readOnly)
            try reader.setBusyTimeout(milliseconds: configuration.busyTimeoutMilliseconds)
            try reader.execute("PRAGMA foreign_keys = ON")
            try DatabasePool.applyConnectionPragmas(reader, configuration)
            readers.append(reader)
        }
        self.idleReaders = readers
        self.readerTotal = readers.count
    }

    private static func applyConnectionPragmas(_ db: Database, _ configuration: Configuration) throws {
        try db.execute("PRAGMA cache_size = -\(max(0, configuration.cacheSizeKiB))")
        // Sorts and temp indexes for large aggregation queries stay off disk.
        try db.execute("PRAGMA temp_store = MEMORY")
        if configuration.mmapSizeBytes > 0 {
            try db.execute("PRAGMA mmap_size = \(configuration.mmapSizeBytes)")
        }
    }

    // MARK: Writing

    /// Runs `body` in an IMMEDIATE transaction on the writer. Callers queue up; one runs at a time.
    /// Rolls back if `body` throws. Returns after a successful, durable COMMIT.
    public func write<T>(_ body: (Database) throws -> T) throws -> T {
        try withWriter { writer in
            let result = try writer.transaction(.immediate) { try body(writer) }
            commits.add(1, ordering: .relaxed)
            return result
        }
    }

    /// Like `write`, but lets concurrent callers share one transaction (group commit): whoever
    /// gets the writer runs every queued body, each in its own SAVEPOINT, then COMMITs once.
    ///
    /// Why: with synchronous=FULL every COMMIT fsyncs the WAL and writes each dirtied page once;
    /// a batch's random uuid-index inserts dirty roughly a page per row, so several requests'
    /// batches committed together share their index pages and their fsync. Latency does not
    /// grow: bodies only wait while an earlier transaction is running anyway.
    ///
    /// Each body is still all-or-nothing on its own: if it throws, only its savepoint is rolled
    /// back and only its caller gets the error. Every caller returns after the shared COMMIT
    /// succeeded (or with its error), so the durability promise of `write` holds. Bodies must not
    /// depend on being the transaction's first statement.
    public func groupedWrite<T>(_ body: (Database) throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { body in
            let member = GroupMember<T>(body)
            pendingGroup.withLock { $0.members.append(member) }
            writerLock.lock()
            defer { writerLock.unlock() }
            // An earlier leader may have run (and committed) this member already.
            if member.result == nil {
                var group = pendingGroup.withLock { pending in
                    let taken = pending.members
                    pending.members.removeAll()
                    return taken
                }
                runGroup(group)
                // Drop the references to other callers' bodies before they may return
                // (withoutActuallyEscaping checks that none outlives its call).
                group.removeAll()
            }
            guard let result = member.result else { throw DatabasePoolError.closed }
            return try result.get()
        }
    }

    /// Asynchronous `groupedWrite`: `body` runs on the pool's writer queue in the next group
    /// commit, and `completion` gets its result after that group's COMMIT (or its error), on a
    /// global queue. The calling thread never waits, so on a small machine the request threads
    /// keep parsing while the writer commits and fsyncs. Same all-or-nothing and durability
    /// rules as the synchronous form; both kinds can share a group.
    public func groupedWrite<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T,
                                          completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        let member = AsyncGroupMember(body, completion: completion)
        let scheduleDrain = pendingGroup.withLock { pending -> Bool in
            pending.members.append(member)
            defer { pending.drainScheduled = true }
            return !pending.drainScheduled
        }
        if scheduleDrain { writerQueue.async { [self] in drainPendingGroups() } }
    }

    /// Commits groups until nothing is pending; the last empty look clears `drainScheduled` under
    /// the same lock that enqueues, so a member is never left without a drain.
    private func drainPendingGroups() {
        writerLock.lock()
        defer { writerLock.unlock() }
        while true {
            let group = pendingGroup.withLock { pending -> [any GroupCommitMember] in
                let taken = pending.members
                pending.members.removeAll()
                if taken.isEmpty { pending.drainScheduled = false }
                return taken
            }
            if group.isEmpty { return }
            runGroup(group)
        }
    }

    /// Runs `group` on the writer; the caller holds `writerLock`. Members whose body failed get
    /// their own error; if SQLite aborted the whole transaction (SQLITE_FULL, IOERR…) the members
    /// already run lose their work with it, so they fail too, and the rest start a new transaction.
    /// If BEGIN or COMMIT itself fails, every member not yet answered fails with that error.
    private func runGroup(_ group: [any GroupCommitMember]) {
        guard let writer else {
            for member in group { member.fail(DatabasePoolError.closed) }
            return
        }
        var remaining = group[...]
        while !remaining.isEmpty {
            var ran: [any GroupCommitMember] = []
            do {
                try writer.transaction(.immediate) {
                    while let member = remaining.first {
                        remaining = remaining.dropFirst()
                        do {
                            try writer.savepoint { try member.run(writer) }
                            ran.append(member)
                        } catch {
                            member.fail(error)
                            // Savepoint rollback happened; the transaction itself is gone only
                            // after errors that make SQLite roll everything back.
                            if !writer.isInTransaction { throw GroupAborted(error: error) }
                        }
                    }
                }
                commits.add(1, ordering: .relaxed)
                for member in ran { member.succeed() }
            } catch let aborted as GroupAborted {
                for member in ran { member.fail(aborted.error) }
            } catch {
                // BEGIN or COMMIT failed: nothing of this transaction is durable. A failed BEGIN
                // (SQLITE_BUSY from another process, SQLITE_FULL, an I/O error) ran no member, and
                // trying again at once would hold the writer in a loop: the members not yet run
                // fail with it too, and their callers decide whether to retry.
                for member in ran { member.fail(error) }
                for member in remaining { member.fail(error) }
                remaining = []
            }
        }
    }

    private struct GroupAborted: Error { var error: any Error }

    /// Runs `body` on the writer outside any transaction (for VACUUM, checkpoints, PRAGMAs).
    public func writeWithoutTransaction<T>(_ body: (Database) throws -> T) throws -> T {
        try withWriter(body)
    }

    private func withWriter<T>(_ body: (Database) throws -> T) throws -> T {
        writerLock.lock()
        defer { writerLock.unlock() }
        guard let writer else { throw DatabasePoolError.closed }
        return try body(writer)
    }

    // MARK: Reading

    /// Runs `body` on a reader inside a deferred transaction (one snapshot for the whole body).
    /// Waits while all readers are busy.
    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        let reader = try checkOutReader()
        defer { checkIn(reader) }
        return try reader.transaction(.deferred) { try body(reader) }
    }

    private func checkOutReader() throws -> Database {
        readerCondition.lock()
        defer { readerCondition.unlock() }
        while true {
            if isClosed { throw DatabasePoolError.closed }
            if let reader = idleReaders.popLast() { return reader }
            readerCondition.wait()
        }
    }

    private func checkIn(_ reader: Database) {
        readerCondition.lock()
        idleReaders.append(reader)
        readerCondition.unlock()
        // Broadcast: both waiting readers and a waiting close()/barrier care.
        readerCondition.broadcast()
    }

    // MARK: Exclusive access

    /// Runs `body` on the writer, outside a transaction, while no read is in flight and none can
    /// start. For operations that want the database quiet, e.g. `checkpoint(.truncate)`.
    public func barrier<T>(_ body: (Database) throws -> T) throws -> T {
        try withWriter { writer in
            let readers = try takeAllReaders(closing: false)
            defer { returnReaders(readers) }
            return try body(writer)
        }
    }

    private func takeAllReaders(closing: Bool) throws -> [Database] {
        readerCondition.lock()
        defer { readerCondition.unlock() }
        if isClosed { throw DatabasePoolError.closed }
        if closing { isClosed = true }
        while idleReaders.count < readerTotal { readerCondition.wait() }
        let readers = idleReaders
        idleReaders.removeAll()
        // Keep readerTotal so concurrent checkOuts wait instead of seeing an empty, finished pool.
        return readers
    }

    private func returnReaders(_ readers: [Database]) {
        readerCondition.lock()
        idleReaders.append(contentsOf: readers)
        readerCondition.unlock()
        readerCondition.broadcast()
    }

    /// Waits for in-flight reads and writes, refuses new ones, checkpoints the WAL into the main
    /// file (TRUNCATE leaves an empty WAL), and closes every connection. Calling it twice is harmless.
    public func close() throws {
        writerLock.lock()
        defer { writerLock.unlock() }
        guard let writer else { return }
        // Wake readers waiting for a connection so they fail with `.closed` rather than hang.
        let readers = try takeAllReaders(closing: true)
        readerCondition.broadcast()
        for reader in readers { reader.close() }
        self.writer = nil
        defer { writer.close() }
        try writer.checkpoint(.truncate)
    }

    // MARK: Metrics

    public struct Statistics: Sendable, Equatable {
        public var databaseBytes: Int64
        public var walBytes: Int64
        public var sharedMemoryBytes: Int64
        public var totalBytes: Int64 { databaseBytes + walBytes + sharedMemoryBytes }
    }

    /// Current on-disk sizes of the database, its WAL and its shared-memory index (0 if absent).
    public func statistics() -> Statistics {
        Statistics(databaseBytes: DatabasePool.fileSize(path),
                   walBytes: DatabasePool.fileSize(path + "-wal"),
                   sharedMemoryBytes: DatabasePool.fileSize(path + "-shm"))
    }

    private static func fileSize(_ path: String) -> Int64 {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        return Int64(info.st_size)
    }
}

public enum DatabasePoolError: Error, Sendable, CustomStringConvertible {
    case closed

    public var description: String {
        switch self {
        case .closed: "database pool is closed"
        }
    }
}

/// One caller's body in a group commit, type-erased so one leader can run bodies of any result type.
private protocol GroupCommitMember: AnyObject, Sendable {
    func run(_ db: Database) throws
    func succeed()
    func fail(_ error: any Error)
}

/// @unchecked Sendable: `body` and `pending` are touched only by the thread holding the pool's
/// writer lock (the leader running the group); `result` is written under that lock before the
/// leader unlocks and read by the caller only after it has taken the same lock, so the lock orders
/// every access. The caller stays blocked in `groupedWrite` until then, which keeps `body`'s
/// captures alive.
private final class GroupMember<T>: GroupCommitMember, @unchecked Sendable {
    private let body: (Database) throws -> T
    private var pending: T?
    private(set) var result: Result<T, any Error>?

    init(_ body: @escaping (Database) throws -> T) { self.body = body }

    func run(_ db: Database) throws { pending = try body(db) }

    func succeed() {
        if let pending { result = .success(pending) }
        pending = nil
    }

    func fail(_ error: any Error) {
        pending = nil
        result = .failure(error)
    }
}

/// An asynchronous caller's body: its completion is called once, on a global queue, so the
/// writer never runs response code.
private final class AsyncGroupMember<T: Sendable>: GroupCommitMember, @unchecked Sendable {
    // @unchecked: `pending` is touched only by the thread holding the writer lock.
    private let body: @Sendable (Database) throws -> T
    private let completion: @Sendable (Result<T, any Error>) -> Void
    private var pending: T?

    init(_ body: @escaping @Sendable (Database) throws -> T, completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        self.body = body
        self.completion = completion
    }

    func run(_ db: Database) throws { pending = try body(db) }

    func succeed() {
        guard let value = pending else { return }
        pending = nil
        let completion = completion
        DispatchQueue.global(qos: .userInitiated).async { completion(.success(value)) }
    }

    func fail(_ error: any Error) {
        pending = nil
        let completion = completion
        DispatchQueue.global(qos: .userInitiated).async { completion(.failure(error)) }
    }
}
