import Dispatch
import Foundation
import HealthModel
import HealthStore
import JSON
import Synchronization

/// Publishes `event: zone` on the change streams while workout sessions run. Driven by the store's
/// commit observer: a commit touching `heartRate` for a user with an active session makes the
/// store judge that user's new readings (`advanceWorkoutZones`), and the changes go back to the
/// store as stream events (`broadcast`), which the change feed's streams read like changes: the
/// store gives each stream only what its app may read (heart rate). One judgement runs per user at a time, on the worker
/// pool; a commit meanwhile makes it run once more, so readings are judged in commit order.
///
/// Several nodes on one database: every node hears every node's commits, the judgement's progress
/// is stored (so a reading is judged once, by whichever node gets there first), and the zone
/// changes go out through `HealthDataStore.broadcast`, so every node's streams send them. A node
/// learns of sessions started elsewhere by re-reading the running sessions every few seconds; the
/// readings in between are not lost, only judged at the next commit after that.
final class WorkoutZoneMonitor: Sendable {
    static let eventName = "zone"

    let data: HealthData
    let feed: ChangeFeed
    private let state: Mutex<State>

    private struct State {
        /// Running or paused sessions per user: commits of other users cost a dictionary lookup.
        /// nil while unknown (the store could not be read at startup): then every heart-rate
        /// commit is judged, and the counts are read again at the next judgement.
        var activeSessions: [Int64: Int]?
        var judging: Set<Int64> = []
        var pending: Set<Int64> = []
        var refreshTimer: (any DispatchSourceTimer)?
    }

    /// How often a node serving a shared database re-reads the running sessions.
    static let sharedRefreshSeconds = 5

    init(data: HealthData, feed: ChangeFeed) {
        self.data = data
        self.feed = feed
        state = Mutex(State(activeSessions: nil))
        // Starting with no sessions would silence the zone events of every session that was
        // running before a restart: unknown counts judge every heart-rate commit instead.
        loadActiveSessions()
        data.addCommitObserver { [weak self] change in self?.committed(change) }
        if data.isSharedByNodes {
            state.withLock { state in
                let timer = DispatchSource.makeTimerSource(queue: feed.workers)
                let interval = DispatchTimeInterval.seconds(Self.sharedRefreshSeconds)
                timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .seconds(1))
                timer.setEventHandler { [weak self] in self?.loadActiveSessions() }
                timer.resume()
                state.refreshTimer = timer
            }
        }
    }

    deinit {
        state.withLock { $0.refreshTimer?.cancel() }
    }

    private func loadActiveSessions() {
        do {
            let counts = try data.activeWorkoutSessionCounts()
            state.withLock { $0.activeSessions = counts }
        } catch {
            feed.log?.event("cannot read the active workout sessions; judging every heart-rate commit until it works",
                            level: "warning", fields: [("error", String(describing: error))])
        }
    }

    func sessionStarted(userRowID: Int64) {
        state.withLock { $0.activeSessions?[userRowID, default: 0] += 1 }
    }

    func sessionEnded(userRowID: Int64) {
        state.withLock { state in
            guard state.activeSessions != nil else { return }
            let remaining = (state.activeSessions?[userRowID] ?? 1) - 1
            state.activeSessions?[userRowID] = remaining > 0 ? remaining : nil
        }
    }

    private func committed(_ change: CommittedChange) {
        guard change.typeIDs.contains("heartRate") else { return }
        let user = change.userRowID
        let start = state.withLock { state -> Bool in
            if let counts = state.activeSessions, counts[user] == nil { return false }
            if state.judging.contains(user) {
                state.pending.insert(user)
                return false
            }
            state.judging.insert(user)
            return true
        }
        // The observer runs on the committing request's thread: the judgement goes to the pool.
        if start { feed.workers.async { [self] in judge(user: user) } }
    }

    private func judge(user: Int64) {
        while true {
            let countsUnknown = state.withLock { state -> Bool in
                state.pending.remove(user)
                return state.activeSessions == nil
            }
            if countsUnknown { loadActiveSessions() }
            let changes: [WorkoutZoneChange]
            do {
                changes = try data.advanceWorkoutZones(userRowID: user)
            } catch {
                // The stored progress is as it was (judging and progress share one transaction):
                // the user's next heart-rate commit judges these readings again.
                feed.log?.event("workout zone judgement failed; the next heart-rate commit retries it", level: "warning",
                                fields: [("error", String(describing: error))])
                changes = []
            }
            for change in changes {
                do {
                    try data.broadcast(StreamEvent(userRowID: user, name: Self.eventName, data: Self.eventData(change),
                                                    readableType: "heartRate"))
                } catch {
                    // This node's streams have it; other nodes' streams miss this one event.
                    feed.log?.event("a workout zone event could not reach the other nodes", level: "warning",
                                    fields: [("error", String(describing: error))])
                }
            }
            let again = state.withLock { state -> Bool in
                if state.pending.contains(user) { return true }
                state.judging.remove(user)
                return false
            }
            if !again { return }
        }
    }

    /// `{"session","heartRate","state","date","zone":{"low","high"}}`.
    static func eventData(_ change: WorkoutZoneChange) -> [UInt8] {
        var writer = JSONWriter(capacity: 128)
        writer.beginObject()
        writer.field("session", change.session)
        writer.field("heartRate", change.heartRate)
        writer.field("state", change.state.rawValue)
        writer.field("date", RFC3339.format(change.date))
        writer.key("zone")
        writer.beginObject()
        writer.field("low", change.zone.low)
        writer.field("high", change.zone.high)
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }
}
