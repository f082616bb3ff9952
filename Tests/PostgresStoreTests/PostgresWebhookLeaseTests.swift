import Dispatch
import Foundation
import HealthModel
import HealthStore
import PostgresTestSupport
import Synchronization
import Testing

/// Webhook subscriptions on two PostgreSQL nodes: one node at a time holds a subscription by its
/// lease, a node that lost it cannot write its delivery state, and an expired lease is claimed by
/// the other node with the pending page as stored.
@Suite(.enabled(if: TestPostgres.isAvailable, "set HEALTHD_TEST_POSTGRES_URL to run the PostgreSQL store's tests"))
struct PostgresWebhookLeaseTests {
    func subscription(_ t: TestStore) throws -> WebhookSubscription {
        let user = try t.store.createUser(name: "hooks")
        let (app, _) = try t.store.createAuthorization(user: user, app: "hub", read: ["stepCount"], share: [])
        return WebhookSubscription(id: "wh_test", authorizationID: app.id, userRowID: user.rowID, url: "http://203.0.113.1/",
                                   types: ["stepCount"], secretKey: [1, 2, 3], createdMs: 1,
                                   anchor: try t.store.currentChangePosition(userRowID: user.rowID))
    }

    @Test func oneNodeHoldsASubscriptionAndOnlyItWrites() throws {
        let t = try TestStore(.postgres)
        let nodeB = try t.secondNode()
        let a = WebhookLease(owner: "node-a", duration: 60_000)
        let b = WebhookLease(owner: "node-b", duration: 60_000)
        let made = try subscription(t)
        #expect(try t.store.createWebhook(made, limit: WebhookLimits.perToken, lease: a) == .created)
        // Made on A, held by A: B claims nothing and cannot write.
        #expect(try nodeB.claimWebhooks(lease: b, limit: 16).isEmpty)
        let page = WebhookPendingPage(messageID: "msg_1", start: made.anchor, end: ChangePosition(seq: made.anchor.seq + 1,
                                      tombstoneFloor: made.anchor.tombstoneFloor), more: false, body: Array("{}".utf8))
        #expect(try nodeB.storeWebhookPage(id: made.id, page: page, nextAttemptMs: 0, lease: b) == false)
        #expect(try nodeB.renewWebhookLeases(ids: [made.id], lease: b).isEmpty)
        #expect(try t.store.storeWebhookPage(id: made.id, page: page, nextAttemptMs: 0, lease: a))
        #expect(try t.store.renewWebhookLeases(ids: [made.id], lease: a) == [made.id])
        let attempt = WebhookDeliveryAttempt(messageID: "msg_1", timeMs: 5, status: nil, durationMs: 10, error: "refused")
        #expect(try nodeB.recordWebhookAttempt(id: made.id, userRowID: made.userRowID, attempt: attempt, nextAttemptMs: 0, lease: b) == false)
        #expect(try t.store.recordWebhookAttempt(id: made.id, userRowID: made.userRowID, attempt: attempt, nextAttemptMs: 0, lease: a))
        #expect(try nodeB.advanceWebhook(id: made.id, to: page.end, lease: b) == false)
        #expect(try t.store.webhook(id: made.id)?.anchor == made.anchor)
    }

    @Test func anExpiredLeaseIsClaimedWithItsPendingPage() throws {
        let t = try TestStore(.postgres)
        let nodeB = try t.secondNode()
        let made = try subscription(t)
        let a = WebhookLease(owner: "node-a", duration: 1)
        #expect(try t.store.createWebhook(made, limit: WebhookLimits.perToken, lease: a) == .created)
        let page = WebhookPendingPage(messageID: "msg_2", start: made.anchor, end: made.anchor, more: true, body: Array("[1]".utf8))
        // A writes while its lease holds (renewed), then stops renewing: it lapses.
        let renewing = WebhookLease(owner: "node-a", duration: 60_000)
        #expect(try t.store.renewWebhookLeases(ids: [made.id], lease: renewing) == [made.id])
        #expect(try t.store.storeWebhookPage(id: made.id, page: page, nextAttemptMs: 0, lease: renewing))
        #expect(try t.store.renewWebhookLeases(ids: [made.id], lease: a) == [made.id])
        usleep(10_000)
        let b = WebhookLease(owner: "node-b", duration: 60_000)
        let claimed = try nodeB.claimWebhooks(lease: b, limit: 16)
        #expect(claimed.map(\.id) == [made.id])
        #expect(claimed.first?.pending?.messageID == "msg_2")
        #expect(claimed.first?.pending?.body == Array("[1]".utf8))
        // Now A lost it: its writes fail, B's succeed.
        #expect(try t.store.advanceWebhook(id: made.id, to: made.anchor, lease: renewing) == false)
        #expect(try nodeB.advanceWebhook(id: made.id, to: made.anchor, lease: b))
        #expect(try t.store.claimWebhooks(lease: renewing, limit: 16).isEmpty)
    }

    /// Creations on two nodes at once count one after another (the token's row is locked), and a
    /// revoked token gets none.
    @Test func creationsOnTwoNodesKeepTheLimitAndARevokedTokenGetsNone() throws {
        let t = try TestStore(.postgres)
        let nodeB = try t.secondNode()
        let made = try subscription(t)
        let lease = WebhookLease(owner: "node-a", duration: 60_000)
        let outcomes = Mutex<[WebhookCreation]>([])
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 3 * WebhookLimits.perToken) { index in
            var one = made
            one.id = "wh_race\(index)"
            do {
                let outcome = try (index.isMultiple(of: 2) ? t.store : nodeB as any HealthDataStore).createWebhook(one, limit: WebhookLimits.perToken, lease: lease)
                outcomes.withLock { $0.append(outcome) }
            } catch {
                failures.withLock { $0.append(String(describing: error)) }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(outcomes.withLock { $0 }.filter { $0 == .created }.count == WebhookLimits.perToken)
        #expect(try t.store.webhooks(authorizationID: made.authorizationID).count == WebhookLimits.perToken)
        #expect(try t.store.revokeAuthorization(id: made.authorizationID))
        var late = made
        late.id = "wh_late"
        #expect(try nodeB.createWebhook(late, limit: WebhookLimits.perToken, lease: lease) == .tokenRevoked)
        #expect(try t.store.webhook(id: "wh_late") == nil)
    }
}
