import Crypto
import HTTP
import HTTPClient
import HealthModel
import HealthStore
import JSON
import NetworkPolicy
import Synchronization
import Webhooks

/// Webhook subscriptions (docs/api.md, Webhooks): a token's receivers of its change-feed pages.
struct WebhookRoutes: Sendable {
    let data: HealthData
    let delivery: WebhookDelivery
    let policy: SSRFPolicy
    let resolve: @Sendable (_ host: String, _ port: Int) -> Result<[NetworkPolicy.IPAddress], HTTPClientError>
    /// Name resolutions under way: the system resolver blocks a worker thread for as long as a
    /// name's servers take (seconds for a name made to be slow), so a token cannot hold more than
    /// `maximumResolutions` of them at once; past that a creation is a 503 with Retry-After.
    let resolutions = ResolutionGate(limit: WebhookRoutes.maximumResolutions)

    static let maximumResolutions = 8

    static func register(into router: inout Router<Route>, data: HealthData, delivery: WebhookDelivery, policy: SSRFPolicy,
                         resolve: @escaping @Sendable (String, Int) -> Result<[NetworkPolicy.IPAddress], HTTPClientError>) {
        let routes = WebhookRoutes(data: data, delivery: delivery, policy: policy, resolve: resolve)
        router.register(.post, "/v1/webhooks", Route(access: .token, handler: routes.create))
        router.register(.get, "/v1/webhooks", Route(access: .token, handler: routes.list))
        router.register(.delete, "/v1/webhooks/{id}", Route(access: .token, handler: routes.delete))
        router.register(.get, "/v1/webhooks/{id}/deliveries", Route(access: .token, handler: routes.deliveries))
    }

    /// Subscriptions one token may hold.
    static let maximumPerToken = WebhookLimits.perToken

    /// `POST /v1/webhooks`: a receiver URL (checked against the SSRF policy, resolved and every
    /// address checked) and the types; answers the secret, once.
    func create(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let app = try context.app()
        var body = try RequestBody.json(context.request)
        let (urlText, typeNames) = try RequestBody.decode { () throws(JSONFieldError) in
            let url = try body.requiredString("url")
            let types = try body.requiredArray("types").strings()
            try body.finish()
            return (url, types)
        }
        let url = try checkedURL(urlText)
        let types = try Self.sampleTypes(typeNames)
        let secret = WebhookSecret.generate()
        let id = "wh_" + Base64URL.encode(SecureRandom.bytes(12))
        let created = try storeCall {
            try data.app(app).createWebhook(id: id, url: url.description, types: types, secretKey: secret.key, lease: delivery.lease)
        }
        let subscription: WebhookSubscription
        switch created {
        case .success(let stored):
            subscription = stored
        case .failure(.limitReached):
            throw APIError.conflict("this token has \(Self.maximumPerToken) webhooks already; delete one first")
        case .failure(.tokenRevoked):
            throw APIError.authenticationRequired("the token is not valid (unknown or revoked)")
        }
        delivery.add(subscription)
        return JSONResponse.write(status: .created) { writer in
            writer.beginObject()
            writer.field("id", subscription.id)
            writer.field("url", subscription.url)
            writer.key("types"); AccountRoutes.writeStrings(subscription.types, into: &writer)
            writer.field("secret", secret.text)
            writer.field("created", RFC3339.format(subscription.createdMs))
            writer.endObject()
        }
    }

    /// `GET /v1/webhooks`: the token's subscriptions, without their secrets.
    func list(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let app = try context.app()
        let subscriptions = try storeCall { try data.app(app).webhooks() }
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.key("webhooks")
            writer.beginArray()
            for subscription in subscriptions {
                writer.beginObject()
                writer.field("id", subscription.id)
                writer.field("url", subscription.url)
                writer.key("types"); AccountRoutes.writeStrings(subscription.types, into: &writer)
                writer.field("created", RFC3339.format(subscription.createdMs))
                writer.field("disabled", subscription.disabledReason)
                writer.endObject()
            }
            writer.endArray()
            writer.endObject()
        }
    }

    /// `DELETE /v1/webhooks/{id}`: deletes it; its deliveries stop, pending retries included.
    func delete(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let app = try context.app()
        let id = context.parameter("id")
        guard try storeCall({ try data.app(app).deleteWebhook(id: id) }) else {
            throw APIError.notFound("no webhook \(id)")
        }
        delivery.remove(id: id)
        return HTTPResponse(status: .noContent)
    }

    /// `GET /v1/webhooks/{id}/deliveries`: its last 50 attempts, newest first.
    func deliveries(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let app = try context.app()
        let id = context.parameter("id")
        guard let attempts = try storeCall({ try data.app(app).webhookDeliveries(id: id) }) else {
            throw APIError.notFound("no webhook \(id)")
        }
        return JSONResponse.write(capacity: 256 + attempts.count * 160) { writer in
            writer.beginObject()
            writer.key("deliveries")
            writer.beginArray()
            for attempt in attempts {
                writer.beginObject()
                writer.field("webhookId", attempt.messageID)
                writer.field("time", RFC3339.format(attempt.timeMs))
                writer.field("status", attempt.status.map(Int64.init))
                writer.field("durationMs", Int64(attempt.durationMs))
                writer.field("error", attempt.error)
                writer.endObject()
            }
            writer.endArray()
            writer.endObject()
        }
    }

    /// The URL parsed strictly, then judged by the SSRF policy: the literal or a loopback name
    /// first, then every address the name resolves to. A 400 says which rule refused it.
    func checkedURL(_ text: String) throws(APIError) -> ReceiverURL {
        let url: ReceiverURL
        do {
            url = try ReceiverURL(parsing: text)
        } catch {
            throw APIError.invalidField("url", error.description)
        }
        guard !url.needsForwardProxy else {
            throw APIError.invalidField("url", "https receivers need a forward proxy, which this server does not have; use http")
        }
        if case .refuse(let address, let addressClass) = policy.check(url) {
            throw APIError.invalidField("url", Self.refusal(host: url.host, address: address, addressClass))
        }
        if url.literalAddress == nil && !policy.isAllowListed(url.host) {
            guard resolutions.enter() else {
                throw APIError.busy("too many receiver names are being resolved at once; retry in a second")
            }
            defer { resolutions.leave() }
            switch resolve(url.host, url.port) {
            case .failure(let error):
                throw APIError.invalidField("url", error.description)
            case .success(let addresses):
                if case .refuse(_, let addressClass) = policy.check(host: url.host, addresses: addresses) {
                    throw APIError.invalidField("url", Self.refusal(host: url.host, address: nil, addressClass, resolved: true))
                }
            }
        }
        return url
    }

    /// Why the URL is refused. A name's resolved addresses stay unsaid (the answer would map the
    /// server's network for whoever holds a token); a literal host is its address already.
    static func refusal(host: String, address: NetworkPolicy.IPAddress?, _ addressClass: AddressClass, resolved: Bool = false) -> String {
        let what: String
        if resolved {
            what = "\(host) resolves to \(addressClass.withArticle) address"
        } else if let address {
            what = "\(host) is \(address), \(addressClass.withArticle) address"
        } else {
            what = "\(host) is \(addressClass.withArticle) address"
        }
        return what + ": webhooks go to public addresses only, unless the host is listed in webhookAllowedHosts"
    }

    /// The subscribed types: at least one, each a sample type of the catalog (canonical ids).
    static func sampleTypes(_ names: [String]) throws(APIError) -> [String] {
        guard !names.isEmpty else { throw APIError.invalidField("types", "must list at least one sample type") }
        var types = Set<String>()
        for (index, name) in names.enumerated() {
            guard let type = HealthTypeCatalog.type(name) else {
                throw APIError.invalidField("types[\(index)]", "unknown type '\(name)'")
            }
            guard type.kind != .characteristic else {
                throw APIError.invalidField("types[\(index)]", "\(name) is a characteristic, not a sample type")
            }
            types.insert(type.id)
        }
        return types.sorted()
    }
}

/// At most `limit` holders at once; `enter` never waits.
final class ResolutionGate: Sendable {
    private let held = Mutex(0)
    let limit: Int

    init(limit: Int) { self.limit = limit }

    func enter() -> Bool {
        held.withLock { held in
            guard held < limit else { return false }
            held += 1
            return true
        }
    }

    func leave() { held.withLock { $0 -= 1 } }
}
