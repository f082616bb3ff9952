import Foundation
import HealthStore
import PostgresStore
import Synchronization
import Testing

/// Stream events (workout zone changes) reach every node's observers exactly once.
@Suite struct StreamEventTests {
    final class Received: Sendable {
        let events = Mutex<[StreamEvent]>([])
        var names: [String] { events.withLock { $0.map(\.name) } }
    }

    @Test func sqliteDeliversToItsOwnObserversOnly() throws {
        let test = try TestStore(.sqlite)
        let received = Received()
        test.store.addStreamEventObserver { event in received.events.withLock { $0.append(event) } }
        try test.store.broadcast(StreamEvent(userRowID: 1, name: "zone", data: Array(#"{"a":1}"#.utf8), readableType: "heartRate"))
        #expect(received.names == ["zone"])
        #expect(!test.store.isSharedByNodes)
    }

    @Test(.enabled(if: TestPostgres.isAvailable, "HEALTHD_TEST_POSTGRES_URL is not set: PostgreSQL tests skipped"))
    func postgresDeliversToEveryNodeOnce() throws {
        let test = try TestStore(.postgres)
        let other = try test.secondNode()
        let here = Received()
        let there = Received()
        test.store.addStreamEventObserver { event in here.events.withLock { $0.append(event) } }
        other.addStreamEventObserver { event in there.events.withLock { $0.append(event) } }
        // JSON with spaces survives the space-separated payload.
        let event = StreamEvent(userRowID: 42, name: "zone", data: Array(#"{"state": "above", "zone": {"low": 120}}"#.utf8),
                                readableType: "heartRate")
        try test.store.broadcast(event)
        #expect(here.events.withLock { $0 } == [event])
        #expect(eventually { there.events.withLock { $0 } == [event] })
        usleep(200_000)
        // The sender heard its own NOTIFY come back and ignored it.
        #expect(here.events.withLock { $0.count } == 1)
        #expect(there.events.withLock { $0.count } == 1)
        #expect(test.store.isSharedByNodes)
    }
}
