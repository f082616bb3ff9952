import HTTP
import HealthStore

/// Authentication at the head: the server asks before it reads a request's body, so a caller
/// without a valid token is answered at once (401, and no `100 Continue`) and can make the server
/// buffer no more than the unauthenticated body limit (64 KiB). `respond` authenticates the
/// admitted request again in full (token budget, admin-only routes); this only decides whether
/// its body is worth reading.
extension HealthApplication {
    public func admit(_ head: HTTPRequestHead, connection: ConnectionInfo,
                      completion: @escaping @Sendable (HTTPAdmission) -> Void) {
        let client = clientAddresses.clientAddress(peer: connection.remoteAddress, headers: head.headers)
        let path = HTTPRequest.pathOf(target: head.target)
        let method = head.method == .head ? HTTPMethod.get : head.method
        let needsToken: Bool
        if case .found(let route, _, _) = router.match(method: method, path: path), route.access != .open {
            if route.access == .person { return admitPerson(head, connection: connection, client: client, completion: completion) }
            needsToken = true
        } else {
            needsToken = false
        }
        @Sendable func refuse(_ error: APIError) {
            completion(.refuse(headRefusal(error, head: head, connection: connection, client: client)))
        }
        @Sendable func failedAuthentication(_ error: APIError) {
            guard needsToken else { return completion(.admit(authenticated: false)) }
            // As a failed authentication in `respond`: the caller's address pays for the guess.
            if error.status == .unauthorized {
                _ = rateLimits.takeFromAddress(client, cost: rateLimits.authenticationFailureCost + 1)
            }
            refuse(error)
        }
        guard let header = head.headers["Authorization"] else {
            return failedAuthentication(APIError.authenticationRequired("send Authorization: Bearer <token>"))
        }
        guard Self.hasBearerPrefix(header) else {
            return failedAuthentication(APIError.authenticationRequired("the Authorization header must be 'Bearer <token>'"))
        }
        let hash = TokenHashing.hash(Self.trimmedToken(header.dropFirst("Bearer ".count)))
        if TokenHashing.equals(hash, adminTokenHash) || data.cachedAuthorization(tokenHash: hash) != nil {
            return completion(.admit(authenticated: true))
        }
        // A token not seen lately costs a read: never on the server's queue, and never for an
        // address that is out of budget (guessing tokens).
        if let wait = rateLimits.peekAddress(client) {
            return failedAuthentication(APIError.rateLimitedAddress(retryAfterSeconds: wait))
        }
        workers.async { [data] in
            do throws(APIError) {
                guard try storeCall({ try data.authorization(tokenHash: hash) }) != nil else {
                    return failedAuthentication(APIError.authenticationRequired("the token is not valid (unknown or revoked)"))
                }
                completion(.admit(authenticated: true))
            } catch {
                // The store cannot say (a 503): read the body and let `respond` answer in full.
                completion(.admit(authenticated: needsToken))
            }
        }
    }

    /// A refusal at the head, with what `respond` gives every answer: a request id, CORS, the
    /// `nosniff` header, a metrics count and an access-log line.
    func headRefusal(_ error: APIError, head: HTTPRequestHead, connection: ConnectionInfo, client: String) -> HTTPResponse {
        let requestID = requestCounter.next(connection: connection.id)
        var response = error.response(requestID: nil)
        response.headers.set("X-Request-Id", requestID)
        let request = HTTPRequest(method: head.method, target: head.target, version: head.version, headers: head.headers)
        if cors.isEnabled { cors.decorate(&response, for: request) }
        metrics.recordRequest(route: "refused-at-head", method: head.method.rawValue, status: response.status.code, seconds: 0)
        accessLog?.record(requestID: requestID, method: head.method.rawValue, route: "refused-at-head", path: String(request.path),
                          status: response.status.code, seconds: 0, remote: client)
        return response
    }
}

extension HTTPRequest {
    /// The raw path of a request-target (before `?`).
    static func pathOf(target: String) -> Substring {
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return target[...] }
        return target[..<mark]
    }
}
