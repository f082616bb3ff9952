import HealthStore
import JSON
import SQLite

// Webhook subscriptions in SQLite: one process delivers, so leases are not used (the columns stay
// null) and every write only checks that the row still exists.

extension SQLiteHealthStore {
    static let webhookSchema = """
        -- A token's webhook: where it delivers, what it delivered up to (anchor_*), and the page on
        -- its way (message_id, page_*: stored before its first attempt and resent as stored).
        CREATE TABLE webhook_subscriptions (
            id TEXT PRIMARY KEY,
            authorization_id TEXT NOT NULL,
            user_id INTEGER NOT NULL,
            url TEXT NOT NULL,
            types TEXT NOT NULL,
            secret_key BLOB NOT NULL,
            created_ms INTEGER NOT NULL,
            anchor_seq INTEGER NOT NULL,
            anchor_floor INTEGER NOT NULL,
            disabled_reason TEXT,
            message_id TEXT,
            page_start_seq INTEGER,
            page_start_floor INTEGER,
            page_end_seq INTEGER,
            page_end_floor INTEGER,
            page_more INTEGER,
            page_body BLOB,
            next_attempt_ms INTEGER,
            -- Used by the PostgreSQL store (several nodes); null here.
            lease_owner TEXT,
            lease_until_ms INTEGER
        );
        CREATE INDEX webhook_subscriptions_by_authorization ON webhook_subscriptions(authorization_id);
        CREATE INDEX webhook_subscriptions_by_user ON webhook_subscriptions(user_id);
        -- The last attempts per subscription (trimmed on insert), for GET /v1/webhooks/{id}/deliveries.
        CREATE TABLE webhook_deliveries (
            id INTEGER PRIMARY KEY,
            webhook_id TEXT NOT NULL,
            user_id INTEGER NOT NULL,
            message_id TEXT NOT NULL,
            time_ms INTEGER NOT NULL,
            status INTEGER,
            duration_ms INTEGER NOT NULL,
            error TEXT
        );
        CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries(webhook_id, id);
        CREATE INDEX webhook_deliveries_by_user ON webhook_deliveries(user_id);
        """

    public func createWebhook(_ subscription: WebhookSubscription, limit: Int, lease: WebhookLease) throws -> WebhookCreation {
        try pool.write { db in
            try Self.requireUser(db, userRowID: subscription.userRowID)
            // One writer at a time: the token and the count read here stand until the insert commits.
            guard try db.firstInt64("SELECT 1 FROM authorizations WHERE id = ? AND revoked_ms IS NULL",
                                    [.text(subscription.authorizationID)]) != nil else { return .tokenRevoked }
            let held = try db.firstInt64("SELECT count(*) FROM webhook_subscriptions WHERE authorization_id = ?",
                                         [.text(subscription.authorizationID)]) ?? 0
            guard held < Int64(limit) else { return .limitReached }
            try db.execute("""
                INSERT INTO webhook_subscriptions (id, authorization_id, user_id, url, types, secret_key, created_ms,
                    anchor_seq, anchor_floor) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, [.text(subscription.id), .text(subscription.authorizationID), .integer(subscription.userRowID),
                      .text(subscription.url), .text(subscription.types.joined(separator: ",")), .blob(subscription.secretKey),
                      .integer(subscription.createdMs), .integer(subscription.anchor.seq), .integer(subscription.anchor.tombstoneFloor)])
            return .created
        }
    }

    public func webhooks(authorizationID: String) throws -> [WebhookSubscription] {
        try pool.read { db in
            try db.map("""
                SELECT \(WebhookSubscriptionColumn.selectList) FROM webhook_subscriptions WHERE authorization_id = ?
                ORDER BY created_ms, id
                """, [.text(authorizationID)]) { row in try WebhookSubscription(row: row, withPage: false) }
        }
    }

    public func webhook(id: String) throws -> WebhookSubscription? {
        try pool.read { db in try Self.webhook(db, id: id) }
    }

    static func webhook(_ db: Database, id: String) throws -> WebhookSubscription? {
        guard var subscription = try db.first("SELECT \(WebhookSubscriptionColumn.selectList) FROM webhook_subscriptions WHERE id = ?",
                                               [.text(id)], { row in try WebhookSubscription(row: row, withPage: true) }) else { return nil }
        if let messageID = subscription.pending?.messageID {
            subscription.pending?.attempts = try db.map("""
                SELECT \(WebhookDeliveryColumn.selectList) FROM webhook_deliveries WHERE webhook_id = ? AND message_id = ? ORDER BY id
                """, [.text(id), .text(messageID)]) { row in try WebhookDeliveryAttempt(row: row) }
        }
        return subscription
    }

    public func deleteWebhook(id: String, authorizationID: String) throws -> Bool {
        try pool.write { db in
            try db.execute("DELETE FROM webhook_subscriptions WHERE id = ? AND authorization_id = ?", [.text(id), .text(authorizationID)])
            guard db.changes > 0 else { return false }
            try db.execute("DELETE FROM webhook_deliveries WHERE webhook_id = ?", [.text(id)])
            return true
        }
    }

    public func deleteWebhooks(authorizationID: String) throws -> [String] {
        try pool.write { db in try Self.deleteWebhooks(db, authorizationID: authorizationID) }
    }

    /// In the caller's transaction (the revocation's).
    static func deleteWebhooks(_ db: Database, authorizationID: String) throws -> [String] {
        let ids = try db.map("SELECT id FROM webhook_subscriptions WHERE authorization_id = ?", [.text(authorizationID)]) { row in
            try row.string(WebhookSubscriptionColumn.id)
        }
        guard !ids.isEmpty else { return [] }
        try db.execute("""
            DELETE FROM webhook_deliveries WHERE webhook_id IN (SELECT id FROM webhook_subscriptions WHERE authorization_id = ?)
            """, [.text(authorizationID)])
        try db.execute("DELETE FROM webhook_subscriptions WHERE authorization_id = ?", [.text(authorizationID)])
        return ids
    }

    public func webhookDeliveries(id: String) throws -> [WebhookDeliveryAttempt] {
        try pool.read { db in
            try db.map("""
                SELECT \(WebhookDeliveryColumn.selectList) FROM webhook_deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT ?
                """, [.text(id), .integer(Int64(WebhookLimits.deliveriesKept))]) { row in try WebhookDeliveryAttempt(row: row) }
        }
    }

    public func claimWebhooks(lease: WebhookLease, limit: Int) throws -> [WebhookSubscription] {
        try pool.read { db in
            let ids = try db.map("SELECT id FROM webhook_subscriptions WHERE disabled_reason IS NULL ORDER BY id LIMIT ?",
                                 [.integer(Int64(limit))]) { row in try row.string(WebhookSubscriptionColumn.id) }
            return try ids.compactMap { id in try Self.webhook(db, id: id) }
        }
    }

    /// One process holds every subscription: this only says which of `ids` still exist and are active.
    public func renewWebhookLeases(ids: [String], lease: WebhookLease) throws -> Set<String> {
        guard !ids.isEmpty else { return [] }
        var list = JSONWriter()
        list.beginArray()
        for id in ids { list.string(id) }
        list.endArray()
        let idList = String(decoding: list.bytes, as: UTF8.self)
        return try pool.read { db in
            Set(try db.map("""
                SELECT id FROM webhook_subscriptions WHERE id IN (SELECT value FROM json_each(?)) AND disabled_reason IS NULL
                """, [.text(idList)]) { row in try row.string(WebhookSubscriptionColumn.id) })
        }
    }

    public func storeWebhookPage(id: String, page: WebhookPendingPage, nextAttemptMs: Int64, lease: WebhookLease) throws -> Bool {
        try pool.write { db in
            try db.execute("""
                UPDATE webhook_subscriptions SET anchor_seq = ?, anchor_floor = ?, message_id = ?, page_start_seq = ?,
                    page_start_floor = ?, page_end_seq = ?, page_end_floor = ?, page_more = ?, page_body = ?, next_attempt_ms = ?
                WHERE id = ? AND disabled_reason IS NULL
                """, [.integer(page.start.seq), .integer(page.start.tombstoneFloor), .text(page.messageID),
                      .integer(page.start.seq), .integer(page.start.tombstoneFloor), .integer(page.end.seq),
                      .integer(page.end.tombstoneFloor), .integer(page.more ? 1 : 0), .blob(page.body), .integer(nextAttemptMs),
                      .text(id)])
            return db.changes > 0
        }
    }

    public func recordWebhookAttempt(id: String, userRowID: Int64, attempt: WebhookDeliveryAttempt, nextAttemptMs: Int64?,
                                     lease: WebhookLease) throws -> Bool {
        try pool.write { db in
            try db.execute("UPDATE webhook_subscriptions SET next_attempt_ms = ? WHERE id = ?",
                           [nextAttemptMs.map { .integer($0) } ?? .null, .text(id)])
            guard db.changes > 0 else { return false }
            try db.execute("""
                INSERT INTO webhook_deliveries (webhook_id, user_id, message_id, time_ms, status, duration_ms, error)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, [.text(id), .integer(userRowID), .text(attempt.messageID), .integer(attempt.timeMs),
                      attempt.status.map { .integer(Int64($0)) } ?? .null, .integer(Int64(attempt.durationMs)),
                      attempt.error.map { .text($0) } ?? .null])
            try db.execute("""
                DELETE FROM webhook_deliveries WHERE webhook_id = ?1 AND id <= (
                    SELECT id FROM webhook_deliveries WHERE webhook_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)
                """, [.text(id), .integer(Int64(WebhookLimits.deliveriesKept))])
            return true
        }
    }

    public func advanceWebhook(id: String, to anchor: ChangePosition, lease: WebhookLease) throws -> Bool {
        try pool.write { db in
            try db.execute("""
                UPDATE webhook_subscriptions SET anchor_seq = ?, anchor_floor = ?, message_id = NULL, page_start_seq = NULL,
                    page_start_floor = NULL, page_end_seq = NULL, page_end_floor = NULL, page_more = NULL, page_body = NULL,
                    next_attempt_ms = NULL
                WHERE id = ?
                """, [.integer(anchor.seq), .integer(anchor.tombstoneFloor), .text(id)])
            return db.changes > 0
        }
    }

    public func discardWebhookPage(id: String, lease: WebhookLease) throws -> Bool {
        try pool.write { db in
            try db.execute("""
                UPDATE webhook_subscriptions SET message_id = NULL, page_start_seq = NULL, page_start_floor = NULL,
                    page_end_seq = NULL, page_end_floor = NULL, page_more = NULL, page_body = NULL, next_attempt_ms = NULL
                WHERE id = ?
                """, [.text(id)])
            return db.changes > 0
        }
    }

    public func disableWebhook(id: String, reason: String, lease: WebhookLease) throws -> Bool {
        try pool.write { db in
            try db.execute("UPDATE webhook_subscriptions SET disabled_reason = ?, next_attempt_ms = NULL WHERE id = ?",
                           [.text(reason), .text(id)])
            return db.changes > 0
        }
    }
}
