import HTTP

/// The address budget, the chain's first check: traffic without a valid token is charged here,
/// once, before any work. That is every request without a token, and one with a token that no
/// token route answers (a preflight, an unmatched path, an open route, which ignores tokens). A
/// token route counts the request against its token once authenticated; a failed authentication
/// charges the address then (`context(for:)`).
extension RateLimits {
    /// Whether the request brings a token that its route will check. Only a token route looks
    /// for the header.
    static func presentsToken(_ route: Route, _ request: HTTPRequest) -> Bool {
        route.access != .open && request.headers.contains(route.access == .person ? "Cookie" : "Authorization")
    }

    /// The 429 for a request charged to an address that is out of budget; nil to go on.
    func addressRefusal(client: String, presentsToken: Bool) -> HTTPResponse? {
        guard !presentsToken, let wait = takeFromAddress(client) else { return nil }
        return APIError.rateLimitedAddress(retryAfterSeconds: wait).response
    }
}

extension HealthApplication {
    /// Charges the request to its address when it brings no token its route checks; true when
    /// the budget is spent and the 429 has been sent.
    func refusedAddress(presentsToken: Bool, _ request: HTTPRequest, _ chain: ChainContext) -> Bool {
        guard let refusal = rateLimits.addressRefusal(client: chain.client, presentsToken: presentsToken) else { return false }
        recorder.finish(refusal, route: "rate-limited", request, chain)
        return true
    }
}
