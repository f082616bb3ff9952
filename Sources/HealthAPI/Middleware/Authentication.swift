import HTTP
import HealthStore

/// Authentication, the first piece on a token route's queue: the bearer token names the admin or
/// an app's authorization (from the cache, or one store read for a token not seen lately), and
/// the request is counted against that token's rate limit.
extension HealthApplication {
    /// The caller of a token route, counted against its token's bucket.
    func authenticate(_ request: HTTPRequest, access: RouteAccess, client: String) throws(APIError) -> Principal {
        guard let header = request.headers["Authorization"] else {
            throw APIError.authenticationRequired("send Authorization: Bearer <token>")
        }
        let prefix = "Bearer "
        guard Self.hasBearerPrefix(header) else {
            throw APIError.authenticationRequired("the Authorization header must be 'Bearer <token>'")
        }
        let token = Self.trimmedToken(header.dropFirst(prefix.count))
        let hash = TokenHashing.hash(token)
        let principal: Principal
        if TokenHashing.equals(hash, adminTokenHash) {
            principal = .admin
        } else if let cached = data.cachedAuthorization(tokenHash: hash) {
            principal = .app(cached)
        } else {
            // Only a token not seen lately costs a read: an address out of budget (guessing
            // tokens) is refused before it can make the server read SQLite.
            if let wait = rateLimits.peekAddress(client) { throw APIError.rateLimitedAddress(retryAfterSeconds: wait) }
            // Unknown and revoked tokens look the same: nothing tells an attacker which tokens once existed.
            guard let authorization = try storeCall({ try data.authorization(tokenHash: hash) }) else {
                throw APIError.authenticationRequired("the token is not valid (unknown or revoked)")
            }
            principal = .app(authorization)
        }
        if let wait = rateLimits.perToken.take(principal.rateLimitKey) {
            throw APIError.rateLimited(retryAfterSeconds: wait, "too many requests with this token; retry in \(wait) s")
        }
        if access == .admin, case .app = principal {
            throw APIError.authorizationDenied("this endpoint needs the admin token")
        }
        return principal
    }

    /// True when `header` is `Bearer ` (any case) and more. Compared as bytes: a generic
    /// comparison of UTF-8 views cost more than hashing the token.
    static func hasBearerPrefix(_ header: String) -> Bool {
        var header = header
        return header.withUTF8 { bytes in
            let bearer: StaticString = "bearer "
            guard bytes.count > bearer.utf8CodeUnitCount else { return false }
            for index in 0..<bearer.utf8CodeUnitCount {
                let byte = bytes[index]
                if (byte >= 65 && byte <= 90 ? byte + 32 : byte) != bearer.utf8Start[index] { return false }
            }
            return true
        }
    }

    /// The token after `Bearer `, without surrounding whitespace. ASCII tokens (all real ones) are
    /// trimmed as bytes; Foundation's Unicode-aware trim, which costs more than the rest of
    /// authentication, only runs for the odd header with other characters.
    static func trimmedToken(_ text: Substring) -> String {
        guard text.utf8.allSatisfy({ $0 < 0x80 }) else { return String(text).trimmingCharacters(in: .whitespaces) }
        let utf8 = text.utf8
        let isBlank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        guard let first = utf8.firstIndex(where: { !isBlank($0) }), let last = utf8.lastIndex(where: { !isBlank($0) }) else { return "" }
        return String(text[first...last])
    }
}
