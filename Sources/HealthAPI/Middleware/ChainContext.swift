import HTTP

/// What the chain in `HealthApplication.respond` adds to a request, shared by its pieces beside
/// the request itself (as Hummingbird's middleware receive a request and a typed context): who
/// sent it, its id, when it started, and where its answer goes. A route's handler receives the
/// narrower `RequestContext`, made after authentication. The request and its connection are
/// passed beside this rather than copied into it: a copy costs a retain and a release per field
/// on every request.
struct ChainContext: Sendable {
    /// Behind a trusted reverse proxy, the client it names; otherwise the TCP peer.
    let client: String
    /// The id in `X-Request-Id` and in the log lines about this request.
    let requestID: String
    let startedAt: UInt64
    /// The server's callback; the recorder calls it exactly once.
    let completion: @Sendable (HTTPResponse) -> Void
}
