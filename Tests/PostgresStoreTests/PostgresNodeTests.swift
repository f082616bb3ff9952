import Foundation
import HealthModel
import HealthStore
import PostgreSQL
import PostgresStore
import PostgresTestSupport
import Synchronization
import Testing
import ClientThreads

/// Two PostgreSQL stores on one schema behave as two healthd nodes: each hears the other's
/// commits, a revocation reaches both, and one user's change feed stays complete and in order
/// while both write.
@Suite(.enabled(if: TestPostgres.isAvailable, "set HEALTHD_TEST_POSTGRES_URL to run the PostgreSQL store's tests"))
struct PostgresNodeTests {
    let t0: Int64 = 1_700_000_000_000

    @Test func commitsOnOneNodeReachTheOthersObservers() throws {
        let t = try TestStore(.postgres)
        let nodeB = try t.secondNode()
        final class Heard: @unchecked Sendable {
            let lock = NSLock()
            var changes: [CommittedChange] = []
        }
        let heard = Heard()
        nodeB.addCommitObserver { change in heard.lock.withLock { heard.changes.append(change) } }
        let own = Heard()
        t.store.addCommitObserver { change in own.lock.withLock { own.changes.append(change) } }
        let user = try t.store.createUser(name: "alice")
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        _ = try t.store.save([steps(5, start: t0)], by: app)
        let last = try t.store.currentChangePosition(userRowID: user.rowID).seq
        #expect(eventually { heard.lock.withLock { heard.changes.contains { $0.userRowID == user.rowID && $0.lastSeq == last } } })
        #expect(heard.lock.withLock { heard.changes.first { $0.userRowID == user.rowID }?.typeIDs } == ["stepCount"])
        // The writing node published its commit once, when it committed; its own NOTIFY echo is ignored.
        usleep(200_000)
        // (Each test's schema has its own channel; counting only this user's changes keeps it exact anyway.)
        #expect(own.lock.withLock { own.changes.filter { $0.userRowID == user.rowID }.map(\.lastSeq) } == [last])
        // Node B reads what A wrote, and both sign anchors with the same secret.
        #expect(nodeB.secret == t.store.secret)
        let page = try nodeB.changes(ChangeRequest(types: nil, after: nil, limit: 10), for: app, userExternalID: user.id)
        #expect(page.added.count == 1 && page.next.seq == last)
    }

    @Test func storesInTwoSchemasOfOneDatabaseDoNotHearEachOther() throws {
        let a = try TestStore(.postgres), b = try TestStore(.postgres)
        final class Heard: @unchecked Sendable {
            let lock = NSLock()
            var changes: [CommittedChange] = []
        }
        let heardByB = Heard(), heardByA = Heard()
        b.store.addCommitObserver { change in heardByB.lock.withLock { heardByB.changes.append(change) } }
        let nodeA2 = try a.secondNode()
        nodeA2.addCommitObserver { change in heardByA.lock.withLock { heardByA.changes.append(change) } }
        let user = try a.store.createUser(name: "alice")
        let (app, _) = try a.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        _ = try a.store.save([steps(5, start: t0)], by: app)
        // The other node of schema A hears the commit; by then B's listener has had it too if it ever would.
        #expect(eventually { heardByA.lock.withLock { !heardByA.changes.isEmpty } })
        usleep(200_000)
        #expect(heardByB.lock.withLock { heardByB.changes.isEmpty })
    }

    @Test func aRevocationOnOneNodeStopsTheTokenOnTheOther() throws {
        let t = try TestStore(.postgres)
        let nodeB = try t.secondNode()
        let user = try t.store.createUser(name: "alice")
        let (app, token) = try t.store.createAuthorization(user: user, app: "phone", read: [], share: [])
        let hash = TokenHashing.hash(token)
        #expect(try nodeB.authorization(tokenHash: hash) == app)
        #expect(nodeB.cachedAuthorization(tokenHash: hash) == app)
        #expect(try t.store.revokeAuthorization(id: app.id))
        // The NOTIFY arrives in milliseconds; the revalidation bound holds even without it.
        #expect(eventually(within: Double(PostgresHealthStore.authorizationRevalidation) / 1_000) {
            nodeB.cachedAuthorization(tokenHash: hash) == nil
        })
        #expect(try nodeB.authorization(tokenHash: hash) == nil)
    }

    /// Another node's streams end on a revocation before any later commit reaches them: its
    /// authorization observers hear it first (in milliseconds on a quiet machine; how fast is for
    /// the two-node e2e check, not a unit test), and its live list drops it.
    @Test func aRevocationReachesTheOtherNodesObserversBeforeLaterCommits() throws {
        let t = try TestStore(.postgres)
        let nodeB = try t.secondNode()
        let user = try t.store.createUser(name: "alice")
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        let heard = Mutex<[String]>([])
        nodeB.addAuthorizationObserver { id in heard.withLock { $0.append("revoked \(id)") } }
        nodeB.addCommitObserver { _ in heard.withLock { $0.append("commit") } }
        #expect(try nodeB.liveAuthorizations(ids: [app.id, "nosuch"]) == [app.id: app])
        #expect(try t.store.revokeAuthorization(id: app.id))
        let (other, _) = try t.store.createAuthorization(user: user, app: "watch", read: [], share: ["stepCount"])
        _ = try t.store.save([steps(5, start: t0)], by: other)
        #expect(eventually { heard.withLock { $0.contains("commit") } })
        #expect(heard.withLock { $0 }.first == "revoked \(app.id)", "\(heard.withLock { $0 })")
        #expect(try nodeB.liveAuthorizations(ids: [app.id]).isEmpty)
    }

    @Test func oneUsersFeedStaysCompleteAndOrderedWhileBothNodesWrite() throws {
        let t = try TestStore(.postgres)
        let nodeB = try t.secondNode()
        let user = try t.store.createUser(name: "alice")
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        let nodes: [any HealthDataStore] = [t.store, nodeB]
        final class Saved: @unchecked Sendable {
            let lock = NSLock()
            var uuids: Set<HealthUUID> = []
            var failures = 0
        }
        let saved = Saved()
        // A reader follows the feed while eight writers (four per node) commit small batches.
        let writers = DispatchGroup()
        for writer in 0..<8 {
            DispatchQueue.global().async(group: writers) {
                for batch in 0..<10 {
                    let samples = (0..<5).map { steps(1, start: self.t0 + Int64((writer * 1_000 + batch * 10 + $0) * 60_000)) }
                    do {
                        _ = try nodes[writer % 2].save(samples, by: app)
                        saved.lock.withLock { saved.uuids.formUnion(samples.map(\.uuid)) }
                    } catch {
                        saved.lock.withLock { saved.failures += 1 }
                    }
                }
            }
        }
        var seen: [HealthUUID] = []
        var position: ChangePosition?
        var lastSeq: Int64 = -1
        var writing = true
        while true {
            let page = try nodes[seen.count % 2].changes(ChangeRequest(types: nil, after: position, limit: 7), for: app,
                                                           userExternalID: user.id)
            #expect(page.next.seq >= lastSeq, "anchors never move back")
            lastSeq = page.next.seq
            seen += page.added.map(\.sample.uuid)
            position = page.next
            if !writing && !page.more { break }
            if writers.wait(timeout: .now()) == .success { writing = false }
            if page.isEmpty { usleep(2_000) }
        }
        #expect(saved.failures == 0)
        #expect(seen.count == Set(seen).count, "no change listed twice")
        #expect(Set(seen) == saved.uuids, "no committed change missed")
    }

    @Test func theSameBatchSentToBothNodesAtOnceIsStoredOnceAndAcceptedTwice() throws {
        let t = try TestStore(.postgres)
        let nodeB = try t.secondNode()
        let user = try t.store.createUser(name: "alice")
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        let nodes: [any HealthDataStore] = [t.store, nodeB]
        for round in 0..<5 {
            let batch = (0..<200).map { steps(1, start: t0 + Int64(round * 1_000 + $0) * 60_000) }
            final class Answers: @unchecked Sendable {
                let lock = NSLock()
                var values: [Result<[HealthUUID], any Error>] = []
            }
            let answers = Answers()
            onThreads(2) { index in
                let result = Result { try nodes[index].save(batch, by: app) }
                answers.lock.withLock { answers.values.append(result) }
            }
            // A lost answer re-sent to another node is the idempotent success the API promises.
            #expect(answers.values.count == 2)
            #expect(answers.values.allSatisfy { (try? $0.get()) == batch.map(\.uuid) })
        }
        var query = SampleQuery(type: "stepCount")
        query.limit = 5_000
        #expect(try t.store.samples(query, for: app, userExternalID: user.id).samples.count == 1_000)
        let feed = try nodeB.changes(ChangeRequest(types: nil, after: nil, limit: 5_000), for: app, userExternalID: user.id)
        #expect(feed.added.count == 1_000 && Set(feed.added.map(\.sample.uuid)).count == 1_000)
    }
}
