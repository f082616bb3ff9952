import HealthStore
import PostgreSQL

// Webhook subscriptions on PostgreSQL, where any node may deliver: a node claims a subscription by
// a lease in its row (`FOR UPDATE SKIP LOCKED`, so two nodes never claim the same one), renews it,
// and every write of delivery state checks that it still holds it, so a node that lost the lease
// (paused, partitioned) cannot move the anchor. Commits reach every node through the NOTIFY each
// sample commit already sends.

enum PostgresWebhookSchema {
    static let migrationName = "013-webhooks"

    /// Reference tables on Citus, like `authorizations`: a node claims subscriptions across users
    /// (`FOR UPDATE SKIP LOCKED`), the rows are few (at most 20 per token) and written once or twice
    /// per delivered page.
    static let referenceTables = ["webhook_subscriptions", "webhook_deliveries"]

    static let sql = """
        -- A token's webhook: where it delivers, what it delivered up to (anchor_*), the page on its
        -- way (message_id, page_*: stored before its first attempt, resent as stored), and which
        -- node holds it (lease_owner until lease_until_ms, node clock in Unix ms).
        CREATE TABLE webhook_subscriptions (
            id text PRIMARY KEY,
            authorization_id text NOT NULL,
            user_id bigint NOT NULL,
            url text NOT NULL,
            types text NOT NULL,
            secret_key bytea NOT NULL,
            created_ms bigint NOT NULL,
            anchor_seq bigint NOT NULL,
            anchor_floor bigint NOT NULL,
            disabled_reason text,
            message_id text,
            page_start_seq bigint,
            page_start_floor bigint,
            page_end_seq bigint,
            page_end_floor bigint,
            page_more boolean,
            page_body bytea,
            next_attempt_ms bigint,
            lease_owner text,
            lease_until_ms bigint
        );
        CREATE INDEX webhook_subscriptions_by_authorization ON webhook_subscriptions (authorization_id);
        CREATE INDEX webhook_subscriptions_by_user ON webhook_subscriptions (user_id);
        -- The last attempts per subscription (trimmed on insert), for GET /v1/webhooks/{id}/deliveries.
        CREATE TABLE webhook_deliveries (
            webhook_id text NOT NULL,
            user_id bigint NOT NULL,
            number bigint NOT NULL,
            message_id text NOT NULL,
            time_ms bigint NOT NULL,
            status integer,
            duration_ms integer NOT NULL,
            error text,
            PRIMARY KEY (webhook_id, number)
        );
        CREATE INDEX webhook_deliveries_by_user ON webhook_deliveries (user_id);
        """
}

extension PostgresHealthStore {
    /// The lease check every write of delivery state carries ($2 the owner, $3 now).
    private static let leaseHeld = "lease_owner = $2 AND lease_until_ms >= $3"

    public func createWebhook(_ subscription: WebhookSubscription, limit: Int, lease: WebhookLease) throws -> WebhookCreation {
        let now = StoreClock.nowMilliseconds()
        return try pool.transaction { connection in
            try Self.requireUser(subscription.userRowID, connection)
            // The token's row, locked: concurrent creations of one token (any node) count one after
            // another, and a revocation either came first (no row) or waits and then deletes this one.
            guard try connection.scalarInt64("SELECT 1 FROM authorizations WHERE id = $1 AND revoked_ms IS NULL FOR UPDATE",
                                             [.text(subscription.authorizationID)]) != nil else { return .tokenRevoked }
            let held = try connection.scalarInt64("SELECT count(*) FROM webhook_subscriptions WHERE authorization_id = $1",
                                                  [.text(subscription.authorizationID)]) ?? 0
            guard held < Int64(limit) else { return .limitReached }
            _ = try connection.execute("""
                INSERT INTO webhook_subscriptions (id, authorization_id, user_id, url, types, secret_key, created_ms,
                    anchor_seq, anchor_floor, lease_owner, lease_until_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                """, [.text(subscription.id), .text(subscription.authorizationID), .int64(subscription.userRowID),
                      .text(subscription.url), .text(subscription.types.joined(separator: ",")), .bytes(subscription.secretKey),
                      .int64(subscription.createdMs), .int64(subscription.anchor.seq), .int64(subscription.anchor.tombstoneFloor),
                      .text(lease.owner), .int64(now + lease.duration)])
            return .created
        }
    }

    public func webhooks(authorizationID: String) throws -> [WebhookSubscription] {
        try pool.withConnection { connection in
            try connection.map("""
                SELECT \(WebhookSubscriptionColumn.selectList) FROM webhook_subscriptions WHERE authorization_id = $1
                ORDER BY created_ms, id
                """, [.text(authorizationID)]) { row in try WebhookSubscription(row: row, withPage: false) }
        }
    }

    public func webhook(id: String) throws -> WebhookSubscription? {
        try pool.read { connection in try Self.webhook(connection, id: id) }
    }

    static func webhook(_ connection: PostgresConnection, id: String) throws -> WebhookSubscription? {
        guard var subscription = try connection.first("""
            SELECT \(WebhookSubscriptionColumn.selectList) FROM webhook_subscriptions WHERE id = $1
            """, [.text(id)], { row in try WebhookSubscription(row: row, withPage: true) }) else { return nil }
        if let messageID = subscription.pending?.messageID {
            subscription.pending?.attempts = try connection.map("""
                SELECT \(WebhookDeliveryColumn.selectList) FROM webhook_deliveries WHERE webhook_id = $1 AND message_id = $2
                ORDER BY number
                """, [.text(id), .text(messageID)]) { row in try WebhookDeliveryAttempt(row: row) }
        }
        return subscription
    }

    public func deleteWebhook(id: String, authorizationID: String) throws -> Bool {
        try pool.transaction { connection in
            let deleted = try connection.execute("DELETE FROM webhook_subscriptions WHERE id = $1 AND authorization_id = $2",
                                                 [.text(id), .text(authorizationID)])
            guard deleted > 0 else { return false }
            _ = try connection.execute("DELETE FROM webhook_deliveries WHERE webhook_id = $1", [.text(id)])
            return true
        }
    }

    public func deleteWebhooks(authorizationID: String) throws -> [String] {
        try pool.transaction { connection in try Self.deleteWebhooks(connection, authorizationID: authorizationID) }
    }

    /// In the caller's transaction (the revocation's).
    static func deleteWebhooks(_ connection: PostgresConnection, authorizationID: String) throws -> [String] {
        let ids = try connection.map("DELETE FROM webhook_subscriptions WHERE authorization_id = $1 RETURNING id",
                                     [.text(authorizationID)]) { row in try row.string(WebhookSubscriptionColumn.id) }
        guard !ids.isEmpty else { return [] }
        _ = try connection.execute("DELETE FROM webhook_deliveries WHERE webhook_id = ANY($1::text[])", [.text(Self.textArray(ids))])
        return ids
    }

    public func webhookDeliveries(id: String) throws -> [WebhookDeliveryAttempt] {
        try pool.withConnection { connection in
            try connection.map("""
                SELECT \(WebhookDeliveryColumn.selectList) FROM webhook_deliveries WHERE webhook_id = $1
                ORDER BY number DESC LIMIT $2
                """, [.text(id), .int64(Int64(WebhookLimits.deliveriesKept))]) { row in try WebhookDeliveryAttempt(row: row) }
        }
    }

    public func claimWebhooks(lease: WebhookLease, limit: Int) throws -> [WebhookSubscription] {
        let now = StoreClock.nowMilliseconds()
        return try pool.transaction { connection in
            let ids = try connection.map("""
                SELECT id FROM webhook_subscriptions
                WHERE disabled_reason IS NULL AND (lease_until_ms IS NULL OR lease_until_ms < $1)
                    AND (next_attempt_ms IS NULL OR next_attempt_ms <= $1)
                ORDER BY next_attempt_ms NULLS FIRST LIMIT $2 FOR UPDATE SKIP LOCKED
                """, [.int64(now), .int64(Int64(limit))]) { row in try row.string(WebhookSubscriptionColumn.id) }
            guard !ids.isEmpty else { return [] }
            _ = try connection.execute("UPDATE webhook_subscriptions SET lease_owner = $1, lease_until_ms = $2 WHERE id = ANY($3::text[])",
                                       [.text(lease.owner), .int64(now + lease.duration), .text(Self.textArray(ids))])
            return try ids.compactMap { id in try Self.webhook(connection, id: id) }
        }
    }

    public func renewWebhookLeases(ids: [String], lease: WebhookLease) throws -> Set<String> {
        guard !ids.isEmpty else { return [] }
        let now = StoreClock.nowMilliseconds()
        let held = try pool.withConnection { connection in
            try connection.map("""
                UPDATE webhook_subscriptions SET lease_until_ms = $1
                WHERE id = ANY($2::text[]) AND lease_owner = $3 AND disabled_reason IS NULL RETURNING id
                """, [.int64(now + lease.duration), .text(Self.textArray(ids)), .text(lease.owner)]) { row in
                    try row.string(WebhookSubscriptionColumn.id)
                }
        }
        return Set(held)
    }

    public func storeWebhookPage(id: String, page: WebhookPendingPage, nextAttemptMs: Int64, lease: WebhookLease) throws -> Bool {
        let now = StoreClock.nowMilliseconds()
        return try pool.withConnection { connection in
            try connection.execute("""
                UPDATE webhook_subscriptions SET anchor_seq = $4, anchor_floor = $5, message_id = $6, page_start_seq = $4,
                    page_start_floor = $5, page_end_seq = $7, page_end_floor = $8, page_more = $9, page_body = $10,
                    next_attempt_ms = $11
                WHERE id = $1 AND disabled_reason IS NULL AND \(Self.leaseHeld)
                """, [.text(id), .text(lease.owner), .int64(now), .int64(page.start.seq), .int64(page.start.tombstoneFloor),
                      .text(page.messageID), .int64(page.end.seq), .int64(page.end.tombstoneFloor), .bool(page.more),
                      .bytes(page.body), .int64(nextAttemptMs)]) > 0
        }
    }

    public func recordWebhookAttempt(id: String, userRowID: Int64, attempt: WebhookDeliveryAttempt, nextAttemptMs: Int64?,
                                     lease: WebhookLease) throws -> Bool {
        let now = StoreClock.nowMilliseconds()
        return try pool.transaction { connection in
            let updated = try connection.execute("""
                UPDATE webhook_subscriptions SET next_attempt_ms = $4 WHERE id = $1 AND \(Self.leaseHeld)
                """, [.text(id), .text(lease.owner), .int64(now), nextAttemptMs.map { .int64($0) } ?? .null])
            guard updated > 0 else { return false }
            // The row lock taken above orders the numbers of one subscription's attempts.
            let number = try connection.firstInt64("SELECT coalesce(max(number), 0) + 1 FROM webhook_deliveries WHERE webhook_id = $1",
                                                   [.text(id)]) ?? 1
            _ = try connection.execute("""
                INSERT INTO webhook_deliveries (webhook_id, user_id, number, message_id, time_ms, status, duration_ms, error)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                """, [.text(id), .int64(userRowID), .int64(number), .text(attempt.messageID), .int64(attempt.timeMs),
                      attempt.status.map { .int64(Int64($0)) } ?? .null, .int64(Int64(attempt.durationMs)),
                      attempt.error.map { .text($0) } ?? .null])
            _ = try connection.execute("DELETE FROM webhook_deliveries WHERE webhook_id = $1 AND number <= $2",
                                       [.text(id), .int64(number - Int64(WebhookLimits.deliveriesKept))])
            return true
        }
    }

    public func advanceWebhook(id: String, to anchor: ChangePosition, lease: WebhookLease) throws -> Bool {
        let now = StoreClock.nowMilliseconds()
        return try pool.withConnection { connection in
            try connection.execute("""
                UPDATE webhook_subscriptions SET anchor_seq = $4, anchor_floor = $5, message_id = NULL, page_start_seq = NULL,
                    page_start_floor = NULL, page_end_seq = NULL, page_end_floor = NULL, page_more = NULL, page_body = NULL,
                    next_attempt_ms = NULL
                WHERE id = $1 AND \(Self.leaseHeld)
                """, [.text(id), .text(lease.owner), .int64(now), .int64(anchor.seq), .int64(anchor.tombstoneFloor)]) > 0
        }
    }

    public func discardWebhookPage(id: String, lease: WebhookLease) throws -> Bool {
        let now = StoreClock.nowMilliseconds()
        return try pool.withConnection { connection in
            try connection.execute("""
                UPDATE webhook_subscriptions SET message_id = NULL, page_start_seq = NULL, page_start_floor = NULL,
                    page_end_seq = NULL, page_end_floor = NULL, page_more = NULL, page_body = NULL, next_attempt_ms = NULL
                WHERE id = $1 AND \(Self.leaseHeld)
                """, [.text(id), .text(lease.owner), .int64(now)]) > 0
        }
    }

    public func disableWebhook(id: String, reason: String, lease: WebhookLease) throws -> Bool {
        let now = StoreClock.nowMilliseconds()
        return try pool.withConnection { connection in
            try connection.execute("""
                UPDATE webhook_subscriptions SET disabled_reason = $4, next_attempt_ms = NULL, lease_owner = NULL, lease_until_ms = NULL
                WHERE id = $1 AND \(Self.leaseHeld)
                """, [.text(id), .text(lease.owner), .int64(now), .text(reason)]) > 0
        }
    }

    /// A text[] literal of `values` (quoted, so any text is safe).
    static func textArray(_ values: [String]) -> String {
        "{" + values.map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
            .joined(separator: ",") + "}"
    }
}
