import Dispatch
import HealthModel
import Synchronization

/// Recent access (Health Connect's list, for at least 90 days): how often each app read and wrote
/// each type for its user, counted per UTC quarter hour and never with a value.
///
/// Quarter hours, not days: every UTC offset in use today is a whole number of quarter hours (India
/// +5:30, Nepal +5:45, Chatham +12:45), so the person's days in any time zone are exact unions of
/// quarter hours, whichever zone they ask in later.
public enum AccessSlot {
    public static let milliseconds: Int64 = 900_000

    /// The start of the quarter hour holding `instant` (Unix ms).
    public static func start(of instant: Int64) -> Int64 {
        let quotient = instant / milliseconds
        return (instant % milliseconds < 0 ? quotient - 1 : quotient) * milliseconds
    }
}

/// Counts of one app's accesses to one type: `reads`/`writes` count answers and requests,
/// `samplesRead`/`samplesWritten` the samples (or statistics, one per bucket) in them.
public struct AccessCounts: Sendable, Equatable {
    public var reads: Int64
    public var samplesRead: Int64
    public var writes: Int64
    public var samplesWritten: Int64
    /// The latest access counted (Unix ms).
    public var lastAccess: Int64

    public init(reads: Int64 = 0, samplesRead: Int64 = 0, writes: Int64 = 0, samplesWritten: Int64 = 0, lastAccess: Int64 = 0) {
        self.reads = reads
        self.samplesRead = samplesRead
        self.writes = writes
        self.samplesWritten = samplesWritten
        self.lastAccess = lastAccess
    }

    public mutating func add(_ other: AccessCounts) {
        reads += other.reads
        samplesRead += other.samplesRead
        writes += other.writes
        samplesWritten += other.samplesWritten
        lastAccess = max(lastAccess, other.lastAccess)
    }
}

/// One row of the access log: a user's app, a type and a quarter hour.
public struct AccessLogEntry: Sendable, Equatable {
    public var userRowID: Int64
    public var app: String
    public var type: String
    /// The start of the UTC quarter hour (`AccessSlot`).
    public var slot: Int64
    public var counts: AccessCounts

    public init(userRowID: Int64, app: String, type: String, slot: Int64, counts: AccessCounts) {
        self.userRowID = userRowID
        self.app = app
        self.type = type
        self.slot = slot
        self.counts = counts
    }
}

/// Counts accesses in memory and adds them to the store's access log in one transaction a second,
/// so a read costs a dictionary update under a lock, never a database write.
///
/// What a `kill -9` loses is the counts of the last second at most (a graceful stop flushes): the
/// log is an account of access, not data the person saved, and a write per read would cost every
/// read a disk sync. A flush that fails keeps its counts for the next one.
public final class AccessRecorder: Sendable {
    private struct Key: Hashable {
        var userRowID: Int64
        var app: String
        var type: String
        var slot: Int64
    }

    private struct State {
        var pending: [Key: AccessCounts] = [:]
        var flushScheduled = false
        /// Users erased since the last flush: counts of theirs still arriving (a request that was
        /// in flight) are dropped rather than flushed.
        var erased: Set<Int64> = []
    }

    private let store: any HealthDataStore
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "healthd.access-log", qos: .utility)
    private let clock: @Sendable () -> Int64
    /// How long counts wait in memory before a flush writes them.
    public let flushInterval: DispatchTimeInterval
    /// Failures of background flushes and purges go here (the server's event log).
    private let failures = Mutex<(@Sendable (String, any Error) -> Void)?>(nil)
    private let retentionTimer = Mutex<(any DispatchSourceTimer)?>(nil)
    /// Held while a flush moves counts from memory to the store, and while `counts` reads both:
    /// an answer never misses a batch in flight or counts it twice. `record` never waits for it.
    private let flushing = Mutex(())

    public init(store: any HealthDataStore, flushInterval: DispatchTimeInterval = .seconds(1),
                clock: @escaping @Sendable () -> Int64 = StoreClock.nowMilliseconds) {
        self.store = store
        self.flushInterval = flushInterval
        self.clock = clock
    }

    /// Where a failed background flush or purge is reported.
    public func onFailure(_ report: @escaping @Sendable (String, any Error) -> Void) { failures.withLock { $0 = report } }

    /// Counts one access of `app` to `type` for a user, now.
    public func record(userRowID: Int64, app: String, type: String, _ counts: AccessCounts) {
        let now = clock()
        var counts = counts
        counts.lastAccess = now
        let key = Key(userRowID: userRowID, app: app, type: type, slot: AccessSlot.start(of: now))
        let schedule = state.withLock { state -> Bool in
            guard !state.erased.contains(userRowID) else { return false }
            state.pending[key, default: AccessCounts()].add(counts)
            guard !state.flushScheduled else { return false }
            state.flushScheduled = true
            return true
        }
        if schedule {
            queue.asyncAfter(deadline: .now() + flushInterval) { [weak self] in self?.flushInBackground() }
        }
    }

    private func flushInBackground() {
        do { try flush() } catch {
            failures.withLock { $0 }?("access log flush failed; its counts wait for the next one", error)
        }
    }

    /// Writes every pending count to the store now (at shutdown, and in tests).
    public func flush() throws {
        try flushing.withLock { _ throws in try flushPending() }
    }

    private func flushPending() throws {
        let (batch, erased) = state.withLock { state -> ([Key: AccessCounts], Set<Int64>) in
            let taken = (state.pending, state.erased)
            state.pending = [:]
            state.erased = []
            state.flushScheduled = false
            return taken
        }
        guard !batch.isEmpty else { return }
        let entries = batch.compactMap { key, counts -> AccessLogEntry? in
            erased.contains(key.userRowID) ? nil
                : AccessLogEntry(userRowID: key.userRowID, app: key.app, type: key.type, slot: key.slot, counts: counts)
        }
        do {
            try store.recordAccess(entries)
        } catch {
            // Back into the pending counts (merged with any that arrived meanwhile) for the next flush.
            let reschedule = state.withLock { state -> Bool in
                for entry in entries where !state.erased.contains(entry.userRowID) {
                    let key = Key(userRowID: entry.userRowID, app: entry.app, type: entry.type, slot: entry.slot)
                    state.pending[key, default: AccessCounts()].add(entry.counts)
                }
                guard !state.flushScheduled else { return false }
                state.flushScheduled = true
                return true
            }
            if reschedule {
                queue.asyncAfter(deadline: .now() + flushInterval) { [weak self] in self?.flushInBackground() }
            }
            throw error
        }
    }

    /// The user's counts of the quarter hours starting in [from, to): the stored log and this
    /// node's counts not yet flushed.
    public func counts(userRowID: Int64, from: Int64, to: Int64) throws -> [AccessLogEntry] {
        try flushing.withLock { _ throws in
            try store.accessLog(userRowID: userRowID, from: from, to: to) + pending(userRowID: userRowID, from: from, to: to)
        }
    }

    /// The user's counts not yet flushed, in [from, to).
    func pending(userRowID: Int64, from: Int64, to: Int64) -> [AccessLogEntry] {
        state.withLock { state in
            state.pending.compactMap { key, counts in
                guard key.userRowID == userRowID, key.slot >= from, key.slot < to else { return nil }
                return AccessLogEntry(userRowID: key.userRowID, app: key.app, type: key.type, slot: key.slot, counts: counts)
            }
        }
    }

    /// Drops the user's pending counts and any that arrive before the next flush (their erasure).
    public func forget(userRowID: Int64) {
        state.withLock { state in
            state.pending = state.pending.filter { $0.key.userRowID != userRowID }
            state.erased.insert(userRowID)
        }
    }

    /// Purges stored counts older than `days` days.
    @discardableResult
    public func purge(retentionDays days: Int) throws -> Int {
        try store.purgeAccessLog(before: AccessSlot.start(of: clock() - Int64(days) * 86_400_000))
    }

    /// Purges now and then hourly, until `stopRetention()`.
    public func startRetention(days: Int) {
        retentionTimer.withLock { current in
            current?.cancel()
            current = makeRetentionTimer(days: days)
        }
    }

    private func makeRetentionTimer(days: Int) -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now(), repeating: .seconds(3600), leeway: .seconds(60))
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            do { try self.purge(retentionDays: days) } catch {
                self.failures.withLock { $0 }?("access log purge failed; retrying in an hour", error)
            }
        }
        timer.resume()
        return timer
    }

    public func stopRetention() {
        retentionTimer.withLock { timer in
            timer?.cancel()
            timer = nil
        }
    }

    deinit { retentionTimer.withLock { $0?.cancel() } }
}

/// The recent-access answer: the stored and pending counts summed per (app, type, day), where a
/// day is the local day (`day(of:)`) holding the quarter hour's start.
public struct RecentAccessDay: Sendable, Equatable {
    public var app: String
    public var type: String
    /// Days since 1970-01-01 in the asked time zone.
    public var day: Int64
    public var counts: AccessCounts

    public init(app: String, type: String, day: Int64, counts: AccessCounts) {
        self.app = app
        self.type = type
        self.day = day
        self.counts = counts
    }

    /// Sums `entries` per (app, type, day), ordered by day (latest first), then app and type.
    public static func summing(_ entries: [AccessLogEntry], day: (Int64) -> Int64) -> [RecentAccessDay] {
        struct Key: Hashable {
            var app: String
            var type: String
            var day: Int64
        }
        var sums: [Key: AccessCounts] = [:]
        for entry in entries {
            sums[Key(app: entry.app, type: entry.type, day: day(entry.slot)), default: AccessCounts()].add(entry.counts)
        }
        return sums.map { RecentAccessDay(app: $0.key.app, type: $0.key.type, day: $0.key.day, counts: $0.value) }
            .sorted { ($1.day, $0.app, $0.type) < ($0.day, $1.app, $1.type) }
    }
}

extension ActivitySummary {
    /// The type activity summaries are counted under in the access log (HKActivitySummaryType).
    public static let accessType = "activitySummary"
}
