import Foundation
import Synchronization
import Testing
import HealthModel
@testable import HealthStore
@testable import SQLiteStore

/// The store's half of exactly-once IMU ingest: read on a reader, commit only if the session has
/// not moved since (the pedometer itself is the caller's business and is stood in for here).
@Suite struct IMUSessionTests {
    static func result(steps: Int, state: String, ended: Bool = false) -> IMUBatchResult {
        let samples = steps == 0 ? [] : [HealthSample(uuid: .random(), type: "stepCount", start: 1_772_000_000_000,
                                                      end: 1_772_000_005_000, content: .quantity(Double(steps)))]
        return IMUBatchResult(state: Array(state.utf8), samples: samples, start: 1_772_000_000_000, end: 1_772_000_005_000,
                              steps: steps, distance: 0, floorsAscended: 0, floorsDescended: 0, cadence: nil, pace: nil,
                              ended: ended, response: Array("{\"answer\":\"\(state)\"}".utf8))
    }

    static func commit(_ store: SQLiteHealthStore, _ app: AppAuthorization, seq: Int?, basis: IMUSessionState,
                       _ result: IMUBatchResult) -> Result<[UInt8], any Error> {
        let outcome = Mutex<Result<[UInt8], any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        store.commitIMU(app: app, session: "walk", seq: seq, device: nil, basis: basis, result: result) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return outcome.withLock { $0 } ?? .failure(IMUIngestError.unknownSession)
    }

    static func ready(_ lookup: IMUSessionLookup) throws -> IMUSessionState {
        guard case .ready(let state) = lookup else { throw IMUIngestError.sessionChanged }
        return state
    }

    @Test func batchesCommitOnceReplayAndRefuseGaps() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "walker")
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        #expect(throws: IMUIngestError.unexpectedSeq(expected: 0)) { try t.store.imuSession(app: app, session: "walk", seq: 3) }
        #expect(throws: IMUIngestError.unknownSession) { try t.store.imuSession(app: app, session: "walk", seq: nil) }

        let first = try Self.ready(t.store.imuSession(app: app, session: "walk", seq: 0))
        #expect(first.detectorState == nil && first.nextSeq == 0)
        let answer = try Self.commit(t.store, app, seq: 0, basis: first, Self.result(steps: 10, state: "s0")).get()
        #expect(try t.store.imuSession(app: app, session: "walk", seq: 0) == .replay(answer))
        #expect(throws: IMUIngestError.unexpectedSeq(expected: 1)) { try t.store.imuSession(app: app, session: "walk", seq: 2) }

        let second = try Self.ready(t.store.imuSession(app: app, session: "walk", seq: 1))
        #expect(second.detectorState == Array("s0".utf8) && second.nextSeq == 1)
        _ = try Self.commit(t.store, app, seq: 1, basis: second, Self.result(steps: 5, state: "s1")).get()
        let end = try Self.ready(t.store.imuSession(app: app, session: "walk", seq: nil))
        let endAnswer = try Self.commit(t.store, app, seq: nil, basis: end, Self.result(steps: 1, state: "s2", ended: true)).get()
        #expect(try t.store.imuSession(app: app, session: "walk", seq: nil) == .replay(endAnswer))
        #expect(throws: IMUIngestError.sessionEnded) { try t.store.imuSession(app: app, session: "walk", seq: 2) }
        #expect(try t.store.pedometerTotals(app: app, start: 0, end: .max).steps == 16)
    }

    @Test func aCommitFromAStaleReadIsRefusedAndSavesNothing() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "walker")
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        // Two requests for a new session read before either commits: the second loses.
        let a = try Self.ready(t.store.imuSession(app: app, session: "walk", seq: 0))
        let b = try Self.ready(t.store.imuSession(app: app, session: "walk", seq: 0))
        let answer = try Self.commit(t.store, app, seq: 0, basis: a, Self.result(steps: 10, state: "a")).get()
        let lost = Self.commit(t.store, app, seq: 0, basis: b, Self.result(steps: 99, state: "b"))
        #expect(throws: IMUIngestError.sessionChanged) { try lost.get() }
        // Reading again finds the winner's answer to replay.
        #expect(try t.store.imuSession(app: app, session: "walk", seq: 0) == .replay(answer))
        // The same for an existing session.
        let c = try Self.ready(t.store.imuSession(app: app, session: "walk", seq: 1))
        let d = try Self.ready(t.store.imuSession(app: app, session: "walk", seq: 1))
        _ = try Self.commit(t.store, app, seq: 1, basis: c, Self.result(steps: 3, state: "c")).get()
        #expect(throws: IMUIngestError.sessionChanged) {
            try Self.commit(t.store, app, seq: 1, basis: d, Self.result(steps: 99, state: "d")).get()
        }
        // Nothing of the losers is stored: no samples, no figures, no state.
        #expect(try t.store.pedometerTotals(app: app, start: 0, end: .max).steps == 13)
        var query = SampleQuery(type: "stepCount")
        query.limit = 100
        #expect(try t.store.samples(query, for: app, userExternalID: user.id).samples.map(\.sample.content) == [.quantity(10), .quantity(3)])
        #expect(try Self.ready(t.store.imuSession(app: app, session: "walk", seq: 2)).detectorState == Array("c".utf8))
    }
}
