import Foundation
import HealthStore
import PostgresStore
import Synchronization
import PostgresTestSupport
import Testing

/// Stream events (workout zone changes) reach every node's store exactly once, and a stream reads
/// back only what its app may see.
@Suite struct StreamEventTests {
    final class Received: Sendable {
        let users = Mutex<[Int64]>([])
    }

    static func app(user: Int64, read: Set<String>) -> AppAuthorization {
        AppAuthorization(id: "a", userRowID: user, userID: "u\(user)", appName: "coach", sourceRowID: 1, read: read, share: [])
    }

    static func zone(user: Int64, _ json: String = #"{"a":1}"#) -> StreamEvent {
        StreamEvent(userRowID: user, name: "zone", data: Array(json.utf8), readableType: "heartRate")
    }

    @Test func sqliteDeliversToItsOwnStreamsOnly() throws {
        let test = try TestStore(.sqlite)
        let received = Received()
        test.store.streamEventLog.addObserver { user in received.users.withLock { $0.append(user) } }
        let start = test.store.streamEventLog.current
        try test.store.broadcast(Self.zone(user: 1))
        #expect(received.users.withLock { $0 } == [1])
        #expect(test.store.streamEventLog.events(after: start, for: Self.app(user: 1, read: ["heartRate"])).events == [Self.zone(user: 1)])
        #expect(!test.store.isSharedByNodes)
    }

    /// The store applies read privacy to events: another user's, or a type the app may not read, are left out.
    @Test func readsOnlyWhatTheAppMayRead() throws {
        let log = StreamEventLog()
        let start = log.current
        log.append(Self.zone(user: 1, #"{"n":1}"#))
        log.append(Self.zone(user: 2, #"{"n":2}"#))
        log.append(StreamEvent(userRowID: 1, name: "zone", data: Array(#"{"n":3}"#.utf8), readableType: "stepCount"))
        let reader = log.events(after: start, for: Self.app(user: 1, read: ["heartRate"]))
        #expect(reader.events.map { String(decoding: $0.data, as: UTF8.self) } == [#"{"n":1}"#])
        #expect(reader.next == log.current)
        #expect(log.events(after: start, for: Self.app(user: 1, read: ["stepCount"])).events.count == 1)
        #expect(log.events(after: start, for: Self.app(user: 1, read: [])).events.isEmpty)
        // Nothing new after `next`; the next event is read once.
        #expect(log.events(after: reader.next, for: Self.app(user: 1, read: ["heartRate"])).events.isEmpty)
        log.append(Self.zone(user: 1, #"{"n":4}"#))
        #expect(log.events(after: reader.next, for: Self.app(user: 1, read: ["heartRate"])).events.count == 1)
    }

    @Test func keepsOnlyTheLatestEvents() {
        let log = StreamEventLog()
        let start = log.current
        for n in 0..<(StreamEventLog.retainedCount + 10) { log.append(Self.zone(user: 1, "{\"n\":\(n)}")) }
        let all = log.events(after: start, for: Self.app(user: 1, read: ["heartRate"])).events
        #expect(all.count == StreamEventLog.retainedCount)
        #expect(all.first.map { String(decoding: $0.data, as: UTF8.self) } == "{\"n\":10}")
    }

    @Test(.enabled(if: TestPostgres.isAvailable, "HEALTHD_TEST_POSTGRES_URL is not set: PostgreSQL tests skipped"))
    func postgresDeliversToEveryNodeOnce() throws {
        let test = try TestStore(.postgres)
        let other = try test.secondNode()
        let here = Received()
        let there = Received()
        test.store.streamEventLog.addObserver { user in here.users.withLock { $0.append(user) } }
        other.streamEventLog.addObserver { user in there.users.withLock { $0.append(user) } }
        let hereStart = test.store.streamEventLog.current
        let thereStart = other.streamEventLog.current
        // JSON with spaces survives the space-separated payload.
        let event = Self.zone(user: 42, #"{"state": "above", "zone": {"low": 120}}"#)
        try test.store.broadcast(event)
        #expect(here.users.withLock { $0 } == [42])
        #expect(eventually { there.users.withLock { $0 } == [42] })
        usleep(200_000)
        // The sender heard its own NOTIFY come back and ignored it.
        let reader = Self.app(user: 42, read: ["heartRate"])
        #expect(test.store.streamEventLog.events(after: hereStart, for: reader).events == [event])
        #expect(other.streamEventLog.events(after: thereStart, for: reader).events == [event])
        #expect(here.users.withLock { $0.count } == 1)
        #expect(there.users.withLock { $0.count } == 1)
        #expect(test.store.isSharedByNodes)
    }
}
