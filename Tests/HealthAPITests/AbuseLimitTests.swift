import HTTP
import JSON
import Testing
@testable import HealthAPI

@Suite("Token-bucket limiter")
struct TokenBucketLimiterTests {
    let second: UInt64 = 1_000_000_000

    @Test func burstThenRefusalWithRetryAfterThenRefill() {
        let limiter = TokenBucketLimiter(limit: .init(perSecond: 2, burst: 3))
        let start: UInt64 = 10 * second
        for _ in 0 ..< 3 { #expect(limiter.take("a", nowNanoseconds: start) == nil) }
        // Empty: one request needs half a second of refill, rounded up to whole seconds.
        #expect(limiter.take("a", nowNanoseconds: start) == 1)
        // Another key has its own bucket.
        #expect(limiter.take("b", nowNanoseconds: start) == nil)
        // After 1 s at 2/s, two requests fit again, not three.
        #expect(limiter.take("a", nowNanoseconds: start + second) == nil)
        #expect(limiter.take("a", nowNanoseconds: start + second) == nil)
        #expect(limiter.take("a", nowNanoseconds: start + second) != nil)
    }

    @Test func aLargeCostWaitsLongerAndDrainsTheBucket() {
        let limiter = TokenBucketLimiter(limit: .init(perSecond: 10, burst: 100))
        #expect(limiter.take("a", cost: 250, nowNanoseconds: 0) == 15)
        // The refused request emptied the bucket: the next one waits too.
        #expect(limiter.take("a", nowNanoseconds: 0) == 1)
    }

    @Test func disabledLimitNeverRefuses() {
        let limiter = TokenBucketLimiter(limit: .init(perSecond: 0, burst: 0))
        for _ in 0 ..< 10_000 { #expect(limiter.take("a", nowNanoseconds: 0) == nil) }
        #expect(limiter.bucketCount == 0)
    }

    @Test func memoryIsBoundedWhenKeysRotate() {
        let limiter = TokenBucketLimiter(limit: .init(perSecond: 1, burst: 5), maximumBuckets: 50)
        for index in 0 ..< 1_000 {
            _ = limiter.take("address-\(index)", nowNanoseconds: UInt64(index) * 10 * second)
            #expect(limiter.bucketCount <= 51)
        }
    }
}

@Suite("Rate limits, authentication failures and CORS through the application")
struct AbuseLimitTests {
    @Test func perAddressLimitIs429ProblemWithRetryAfter() throws {
        let server = try TestServer { $0.rateLimitPerAddressPerSecond = 0.01; $0.rateLimitPerAddressBurst = 3 }
        for _ in 0 ..< 3 { #expect(server.request(.get, "/healthz").status == 200) }
        let refused = server.request(.get, "/healthz")
        #expect(refused.status == 429)
        #expect(refused.code == "errorRateLimited")
        #expect(refused.headers["Content-Type"] == "application/problem+json")
        #expect(Int(refused.headers["Retry-After"] ?? "") ?? 0 >= 1)
    }

    @Test func perTokenLimitRefusesOneTokenNotAnother() throws {
        // The admin token has its own bucket too: three admin calls set this test up.
        let server = try TestServer { $0.rateLimitPerTokenPerSecond = 0.01; $0.rateLimitPerTokenBurst = 4 }
        let user = server.createUser("abuse-user")
        let first = server.token(user: user, app: "first", read: ["stepCount"], share: [])
        let second = server.token(user: user, app: "second", read: ["stepCount"], share: [])
        for _ in 0 ..< 4 { #expect(server.request(.get, "/v1/samples?type=stepCount", token: first).status == 200) }
        let refused = server.request(.get, "/v1/samples?type=stepCount", token: first)
        #expect(refused.status == 429 && refused.code == "errorRateLimited" && refused.headers["Retry-After"] != nil)
        #expect(server.request(.get, "/v1/samples?type=stepCount", token: second).status == 200)
    }

    @Test func authenticationFailuresDrainTheAddressBudget() throws {
        let server = try TestServer {
            $0.rateLimitPerAddressPerSecond = 0.01
            $0.rateLimitPerAddressBurst = 100
            $0.authenticationFailureCost = 60
        }
        // Each guess costs 61 of 100: the second leaves the bucket empty, and the next request
        // from the address, of any kind, is refused.
        #expect(server.request(.get, "/v1/samples?type=stepCount", token: "guess-1").status == 401)
        #expect(server.request(.get, "/v1/samples?type=stepCount", token: "guess-2").status == 401)
        #expect(server.request(.get, "/healthz").status == 429)
    }

    @Test func aTokenOnlySparesTheAddressOnTokenRoutes() throws {
        // Admin calls set the test up before the budget is small enough to matter.
        let server = try TestServer { $0.rateLimitPerAddressPerSecond = 0.01; $0.rateLimitPerAddressBurst = 4 }
        let user = server.createUser("abuse-user")
        let token = server.token(user: user, app: "phone", read: ["stepCount"], share: [])
        for _ in 0 ..< 10 { #expect(server.request(.get, "/v1/samples?type=stepCount", token: token).status == 200) }
        // With a token, an open route, an unmatched path and a wrong method still cost the address.
        #expect(server.request(.get, "/healthz", token: token).status == 200)
        #expect(server.request(.get, "/v1/nothing-here", token: token).status == 404)
        #expect(server.request(.put, "/v1/samples", token: token).status == 405)
        #expect(server.request(.get, "/metrics", token: token).status == 200)
        #expect(server.request(.get, "/healthz", token: token).status == 429)
        // The token route is still answered: its request counts against the token.
        #expect(server.request(.get, "/v1/samples?type=stepCount", token: token).status == 200)
    }

    @Test func defaultsLetNormalTrafficThrough() throws {
        let server = try TestServer()
        let user = server.createUser("abuse-user")
        let token = server.token(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        for _ in 0 ..< 1_000 { #expect(server.request(.get, "/v1/samples?type=stepCount&limit=1", token: token).status == 200) }
        for index in 0 ..< 20 { #expect(server.request(.get, "/healthz", token: "typo-\(index)").status == 200) }
    }

    @Test func corsPreflightAndResponsesForListedOriginsOnly() throws {
        let server = try TestServer { $0.corsOrigins = ["https://dash.example.com"] }
        let preflight = server.request(.options, "/v1/samples", headers: [
            ("Origin", "https://dash.example.com"), ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "authorization, content-type")])
        #expect(preflight.status == 204)
        #expect(preflight.headers["Access-Control-Allow-Origin"] == "https://dash.example.com")
        #expect(preflight.headers["Access-Control-Allow-Methods"]?.contains("POST") == true)
        #expect(preflight.headers["Access-Control-Allow-Headers"]?.contains("Authorization") == true)
        #expect(preflight.headers["Access-Control-Allow-Credentials"] == nil)

        let other = server.request(.options, "/v1/samples", headers: [
            ("Origin", "https://evil.example.net"), ("Access-Control-Request-Method", "POST")])
        #expect(other.status == 204)
        #expect(other.headers["Access-Control-Allow-Origin"] == nil && other.headers["Access-Control-Allow-Methods"] == nil)

        let allowed = server.request(.get, "/healthz", headers: [("Origin", "https://dash.example.com")])
        #expect(allowed.headers["Access-Control-Allow-Origin"] == "https://dash.example.com")
        #expect(allowed.headers["Vary"] == "Origin")
        let refused = server.request(.get, "/healthz", headers: [("Origin", "https://evil.example.net")])
        #expect(refused.status == 200 && refused.headers["Access-Control-Allow-Origin"] == nil)
    }

    @Test func noCORSHeadersWhenNoOriginIsConfigured() throws {
        let server = try TestServer()
        let reply = server.request(.get, "/healthz", headers: [("Origin", "https://dash.example.com")])
        #expect(reply.headers["Access-Control-Allow-Origin"] == nil)
        let preflight = server.request(.options, "/v1/samples", headers: [
            ("Origin", "https://dash.example.com"), ("Access-Control-Request-Method", "POST")])
        #expect(preflight.headers["Access-Control-Allow-Origin"] == nil)
    }

}
