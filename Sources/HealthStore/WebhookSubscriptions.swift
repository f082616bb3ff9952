import SQLSupport

// Webhook subscriptions as the stores keep them (docs/decisions.md, Webhooks: the design for
// wiring). The outbox is derived from the change feed: a row holds the position delivered up to
// and, while a page is on its way, that page (id, anchors, body) exactly as first sent, so a restart
// or another node sends the same bytes again. Writes to samples add nothing here.

/// One subscription: a token's URL and types, and where its deliveries stand.
public struct WebhookSubscription: Sendable, Equatable {
    public var id: String
    /// The token it belongs to: revoking it deletes the subscription.
    public var authorizationID: String
    public var userRowID: Int64
    public var url: String
    /// Sorted sample type identifiers.
    public var types: [String]
    /// The HMAC key (the bytes the `whsec_` secret encodes).
    public var secretKey: [UInt8]
    public var createdMs: Int64
    /// The change-feed position delivered up to.
    public var anchor: ChangePosition
    /// Why deliveries stopped; nil while active.
    public var disabledReason: String?
    /// The page on its way, with its attempts so far (read by `webhook(id:)` and the claim only).
    public var pending: WebhookPendingPage?

    public init(id: String, authorizationID: String, userRowID: Int64, url: String, types: [String], secretKey: [UInt8],
                createdMs: Int64, anchor: ChangePosition, disabledReason: String? = nil, pending: WebhookPendingPage? = nil) {
        self.id = id
        self.authorizationID = authorizationID
        self.userRowID = userRowID
        self.url = url
        self.types = types
        self.secretKey = secretKey
        self.createdMs = createdMs
        self.anchor = anchor
        self.disabledReason = disabledReason
        self.pending = pending
    }
}

/// A page stored before its first attempt.
public struct WebhookPendingPage: Sendable, Equatable {
    public var messageID: String
    public var start: ChangePosition
    public var end: ChangePosition
    public var more: Bool
    public var body: [UInt8]
    /// Attempts at this page, oldest first.
    public var attempts: [WebhookDeliveryAttempt]

    public init(messageID: String, start: ChangePosition, end: ChangePosition, more: Bool, body: [UInt8],
                attempts: [WebhookDeliveryAttempt] = []) {
        self.messageID = messageID
        self.start = start
        self.end = end
        self.more = more
        self.body = body
        self.attempts = attempts
    }
}

/// One attempt, as the deliveries list shows it.
public struct WebhookDeliveryAttempt: Sendable, Equatable {
    public var messageID: String
    public var timeMs: Int64
    /// The HTTP status, nil when no answer came.
    public var status: Int?
    public var durationMs: Int
    public var error: String?

    public init(messageID: String, timeMs: Int64, status: Int?, durationMs: Int, error: String?) {
        self.messageID = messageID
        self.timeMs = timeMs
        self.status = status
        self.durationMs = durationMs
        self.error = error
    }
}

/// Who may write a subscription's delivery state: on a store shared by nodes, the node holding its
/// lease (every write checks it, so a node that lost the lease cannot move the anchor); a
/// single-process store ignores it.
public struct WebhookLease: Sendable, Equatable {
    public var owner: String
    /// How long a claim or renewal holds, in milliseconds.
    public var duration: Int64

    public init(owner: String, duration: Int64 = 10_000) {
        self.owner = owner
        self.duration = duration
    }
}

/// What storing a new subscription came to.
public enum WebhookCreation: Sendable, Equatable {
    case created
    /// The token has the most subscriptions it may hold.
    case limitReached
    /// The token was revoked (or its user erased) before the subscription could be stored.
    case tokenRevoked
}

/// Why a new subscription was not stored (the façade's form of `WebhookCreation`).
public enum WebhookCreationRefused: Error, Sendable, Equatable {
    case limitReached
    case tokenRevoked
}

public enum WebhookLimits {
    /// Attempts kept per subscription for `GET /v1/webhooks/{id}/deliveries` (a page's whole retry
    /// history, about 33 attempts in 24 hours, fits).
    public static let deliveriesKept = 50
    /// Subscriptions one token may hold.
    public static let perToken = 20
}

/// The columns of `webhook_subscriptions` a subscription is read from, in both stores.
package enum WebhookSubscriptionColumn: Int, TableColumns {
    case id, authorizationID, userRowID, url, types, secretKey, createdMs, anchorSeq, anchorFloor, disabledReason
    case messageID, pageStartSeq, pageStartFloor, pageEndSeq, pageEndFloor, pageMore, pageBody

    package static let table = "webhook_subscriptions"

    package var name: String {
        switch self {
        case .id: "id"
        case .authorizationID: "authorization_id"
        case .userRowID: "user_id"
        case .url: "url"
        case .types: "types"
        case .secretKey: "secret_key"
        case .createdMs: "created_ms"
        case .anchorSeq: "anchor_seq"
        case .anchorFloor: "anchor_floor"
        case .disabledReason: "disabled_reason"
        case .messageID: "message_id"
        case .pageStartSeq: "page_start_seq"
        case .pageStartFloor: "page_start_floor"
        case .pageEndSeq: "page_end_seq"
        case .pageEndFloor: "page_end_floor"
        case .pageMore: "page_more"
        case .pageBody: "page_body"
        }
    }
}

/// The columns of `webhook_deliveries` an attempt is read from, in both stores.
package enum WebhookDeliveryColumn: Int, TableColumns {
    case messageID, timeMs, status, durationMs, error

    package static let table = "webhook_deliveries"

    package var name: String {
        switch self {
        case .messageID: "message_id"
        case .timeMs: "time_ms"
        case .status: "status"
        case .durationMs: "duration_ms"
        case .error: "error"
        }
    }
}

extension WebhookSubscription {
    /// A row selected with `WebhookSubscriptionColumn.selectList`; `withPage` reads the page on its
    /// way too (its attempts are the caller's to add).
    package init(row: some TypedRow, withPage: Bool) throws(RowDecodingError) {
        typealias Column = WebhookSubscriptionColumn
        var pending: WebhookPendingPage?
        if withPage, let messageID = try row.stringIfPresent(Column.messageID) {
            pending = WebhookPendingPage(
                messageID: messageID,
                start: ChangePosition(seq: try row.int64(Column.pageStartSeq), tombstoneFloor: try row.int64(Column.pageStartFloor)),
                end: ChangePosition(seq: try row.int64(Column.pageEndSeq), tombstoneFloor: try row.int64(Column.pageEndFloor)),
                more: try row.bool(Column.pageMore), body: try row.blob(Column.pageBody))
        }
        self.init(
            id: try row.string(Column.id), authorizationID: try row.string(Column.authorizationID),
            userRowID: try row.int64(Column.userRowID), url: try row.string(Column.url),
            types: try row.string(Column.types).split(separator: ",").map(String.init), secretKey: try row.blob(Column.secretKey),
            createdMs: try row.int64(Column.createdMs),
            anchor: ChangePosition(seq: try row.int64(Column.anchorSeq), tombstoneFloor: try row.int64(Column.anchorFloor)),
            disabledReason: try row.stringIfPresent(Column.disabledReason), pending: pending)
    }
}

extension WebhookDeliveryAttempt {
    /// A row selected with `WebhookDeliveryColumn.selectList`.
    package init(row: some TypedRow) throws(RowDecodingError) {
        typealias Column = WebhookDeliveryColumn
        self.init(messageID: try row.string(Column.messageID), timeMs: try row.int64(Column.timeMs),
                  status: try row.int64IfPresent(Column.status).map { Int($0) },
                  durationMs: try row.int(Column.durationMs), error: try row.stringIfPresent(Column.error))
    }
}
