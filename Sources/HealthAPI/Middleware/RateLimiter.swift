import HealthdSettings
import Dispatch
import HTTP
import Synchronization

/// Token-bucket rate limits, one bucket per key (a remote address or a token's hash).
/// A bucket holds up to `burst` requests and refills at `perSecond`; a request takes `cost`
/// from it or is refused with the seconds until enough has refilled. Never sleeps: a refused
/// request costs the server one dictionary lookup.
public final class TokenBucketLimiter: Sendable {
    public struct Limit: Sendable, Equatable {
        /// Sustained requests per second; 0 disables the limit.
        public var perSecond: Double
        /// Requests allowed at once after a quiet spell.
        public var burst: Double
        public init(perSecond: Double, burst: Double) {
            self.perSecond = perSecond
            self.burst = burst
        }
        public var isEnabled: Bool { perSecond > 0 && burst > 0 }
    }

    private struct Bucket {
        var level: Double
        var updatedNanoseconds: UInt64
    }

    public let limit: Limit
    /// Buckets kept at most; full (idle) buckets are dropped first, so an attacker rotating
    /// addresses or tokens cannot grow memory without bound.
    private let maximumBuckets: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    public init(limit: Limit, maximumBuckets: Int = 100_000) {
        self.limit = limit
        self.maximumBuckets = maximumBuckets
    }

    /// Takes `cost` from `key`'s bucket: nil when allowed, else the seconds to wait (at least 1).
    /// A refused request still drains the bucket down to zero, so hammering keeps it empty.
    public func take(_ key: String, cost: Double = 1, nowNanoseconds: UInt64 = DispatchTime.now().uptimeNanoseconds) -> Int? {
        guard limit.isEnabled else { return nil }
        return buckets.withLock { buckets -> Int? in
            var bucket = buckets[key] ?? Bucket(level: limit.burst, updatedNanoseconds: nowNanoseconds)
            let elapsed = Double(nowNanoseconds &- min(bucket.updatedNanoseconds, nowNanoseconds)) / 1e9
            bucket.level = min(limit.burst, bucket.level + elapsed * limit.perSecond)
            bucket.updatedNanoseconds = nowNanoseconds
            var wait: Int?
            if bucket.level >= cost {
                bucket.level -= cost
            } else {
                let missing = cost - bucket.level
                bucket.level = 0
                wait = max(1, Int((missing / limit.perSecond).rounded(.up)))
            }
            buckets[key] = bucket
            if buckets.count > maximumBuckets { sweep(&buckets, nowNanoseconds: nowNanoseconds) }
            return wait
        }
    }

    /// Like `take`, but takes nothing: nil when `cost` fits in `key`'s bucket now, else the
    /// seconds to wait. Lets a caller refuse before costly work (a token lookup in SQLite) for an
    /// address already out of budget, without charging it for asking.
    public func peek(_ key: String, cost: Double = 1, nowNanoseconds: UInt64 = DispatchTime.now().uptimeNanoseconds) -> Int? {
        guard limit.isEnabled else { return nil }
        return buckets.withLock { buckets -> Int? in
            guard let bucket = buckets[key] else { return nil }
            let elapsed = Double(nowNanoseconds &- min(bucket.updatedNanoseconds, nowNanoseconds)) / 1e9
            let level = min(limit.burst, bucket.level + elapsed * limit.perSecond)
            return level >= cost ? nil : max(1, Int(((cost - level) / limit.perSecond).rounded(.up)))
        }
    }

    /// Drops buckets that have refilled completely (they carry no information); if that is not
    /// enough, drops everything: forgetting limits briefly is better than unbounded memory.
    private func sweep(_ buckets: inout [String: Bucket], nowNanoseconds: UInt64) {
        buckets = buckets.filter { _, bucket in
            let elapsed = Double(nowNanoseconds &- min(bucket.updatedNanoseconds, nowNanoseconds)) / 1e9
            return bucket.level + elapsed * limit.perSecond < limit.burst
        }
        if buckets.count > maximumBuckets * 3 / 4 { buckets.removeAll(keepingCapacity: true) }
    }

    var bucketCount: Int { buckets.withLock { $0.count } }
}

/// The application's two limiters and the price of a failed authentication. A request with a
/// valid token counts against its token only; the address bucket takes everything else: requests
/// without a token, requests to open routes, and failed authentications (at a higher price).
public struct RateLimits: Sendable {
    /// Keyed by `ClientAddressResolver.rateLimitKey` (IPv6 by its /64): reach it through
    /// `takeFromAddress` and `peekAddress`, which apply the key, so no caller can charge a raw
    /// address.
    private let perAddress: TokenBucketLimiter
    public let perToken: TokenBucketLimiter
    /// What a 401 takes from the caller's address bucket on top of the request itself: guessing
    /// tokens runs out of budget fast while honest clients never notice.
    public let authenticationFailureCost: Double

    public init(configuration: HealthdConfiguration) {
        perAddress = TokenBucketLimiter(limit: .init(perSecond: configuration.rateLimitPerAddressPerSecond,
                                                     burst: configuration.rateLimitPerAddressBurst))
        perToken = TokenBucketLimiter(limit: .init(perSecond: configuration.rateLimitPerTokenPerSecond,
                                                   burst: configuration.rateLimitPerTokenBurst))
        authenticationFailureCost = configuration.authenticationFailureCost
    }

    /// Charges the client's address budget; the seconds to wait when it is spent.
    /// The key is made only when the budget is on: it parses an IPv6 address on every request.
    public func takeFromAddress(_ client: String, cost: Double = 1) -> Int? {
        guard perAddress.limit.isEnabled else { return nil }
        return perAddress.take(ClientAddressResolver.rateLimitKey(client), cost: cost)
    }

    /// The seconds to wait if the client's address budget is spent, without charging it.
    public func peekAddress(_ client: String) -> Int? {
        guard perAddress.limit.isEnabled else { return nil }
        return perAddress.peek(ClientAddressResolver.rateLimitKey(client))
    }
}

extension APIError {
    /// 429 with `Retry-After` in whole seconds (RFC 9110).
    public static func rateLimited(retryAfterSeconds: Int, _ detail: String) -> APIError {
        var headers = HTTPHeaders()
        headers.set("Retry-After", String(retryAfterSeconds))
        return APIError(status: .tooManyRequests, code: "errorRateLimited", detail: detail, headers: headers)
    }
}

extension APIError {
    /// 429 for the address bucket: traffic without a valid token from one client address.
    static func rateLimitedAddress(retryAfterSeconds wait: Int) -> APIError {
        rateLimited(retryAfterSeconds: wait, "too many requests without a valid token from this address; retry in \(wait) s")
    }
}

extension Principal {
    /// The per-token bucket's key: the authorization's id (one per token), never the token itself.
    var rateLimitKey: String {
        switch self {
        case .admin: return "admin"
        case .app(let authorization): return "app:" + authorization.id
        case .person(let user, _): return "person:" + user.id
        }
    }
}
