// healthd's settings: defaults, then the config file, then command-line flags (each overrides the last).

public struct HealthdConfiguration: Sendable, Equatable {
    public var host = "127.0.0.1"
    public var port = 8080
    public var dataDirectory = "./healthd-data"
    /// A `postgres://` URL selecting the PostgreSQL store; nil: SQLite in `dataDirectory`.
    public var database: String?
    /// Where the dashboard's static files live. Relative paths are resolved against the working directory.
    public var publicDirectory = "./Public"

    // HTTP limits (docs/api.md, HTTP: framing and limits; docs/operations.md, Configuration).
    public var maxHeaderBytes = 16 * 1024
    public var maxHeaderCount = 100
    public var maxRequestLineBytes = 8 * 1024
    public var maxBodyBytes = 16 * 1024 * 1024
    /// Body limit of `POST /v1/ingest/health-auto-export` only: a month of the app's per-minute
    /// export is tens of MB (docs/guide.md, Health Auto Export).
    public var maxHealthAutoExportBodyBytes = 128 * 1024 * 1024
    public var idleTimeoutSeconds = 60.0
    public var headerTimeoutSeconds = 10.0
    public var bodyTimeoutSeconds = 30.0
    /// A request body slower than this many bytes a second, averaged over `minBodyRateSeconds`, is a 408 (0: off).
    public var minBodyBytesPerSecond = 1024
    public var minBodyRateSeconds = 10.0
    /// Bytes all request bodies being received may hold at once; past it a request waits, then gets a 503.
    public var maxBodyBytesInFlight = 256 * 1024 * 1024
    public var maxConnections = 4096
    /// Serial queues connections are spread over; 0 means one per processor.
    public var eventLoops = 0
    /// A streamed response (SSE, export) whose client falls this far behind is cut off.
    public var maxStreamBacklogBytes = 1024 * 1024

    // API.
    public var maxBatchSize = 10_000
    public var tombstoneRetentionDays = 90
    /// Days the recent-access log (`GET /v1/me/access`) keeps its counts.
    public var accessLogRetentionDays = 90
    public var readerConnections = 4
    /// MiB of decoded statistics rollups kept in memory; past it the least recently asked series are
    /// dropped (their next query reads their rollup rows again). 64 MiB holds years of data of
    /// dozens of users (BENCHMARKS.md).
    public var statisticsMemoryMiB = 64
    /// MiB of uuid keys (4 bytes a sample) the SQLite store keeps in memory so a new uuid costs no
    /// read of the database; past it the least recently used users' runs are read back when next
    /// saved to. 32 MiB holds the keys of about 8 million samples.
    public var uuidKeyMemoryMiB = 32
    public var accessLog = true

    // Abuse limits (docs/operations.md, Abuse and privacy): token buckets; a rate of 0 disables one.
    /// Requests without a valid token (no token, open routes, failed authentication), per client address.
    public var rateLimitPerAddressPerSecond = 1_000.0
    public var rateLimitPerAddressBurst = 5_000.0
    /// Requests with a valid token, per token: the limit a legitimate client meets first.
    public var rateLimitPerTokenPerSecond = 1_000.0
    public var rateLimitPerTokenBurst = 5_000.0
    /// Extra requests a 401 takes from the caller's address bucket.
    public var authenticationFailureCost = 100.0
    /// Open connections one client address may hold (behind `trustedProxies`, the forwarded
    /// client's); more get a 503 and are closed. Well below `maxConnections`, so one client
    /// cannot hold them all.
    public var maxConnectionsPerAddress: Int?
    /// Reverse proxies whose forwarded-client header is believed (docs/operations.md, Abuse and privacy: behind a reverse proxy).
    public var trustedProxies: [CIDRBlock] = []
    /// The header those proxies write the client's address into.
    public var trustedProxyHeader: ForwardedHeader = .xForwardedFor
    /// Origins (e.g. "https://dash.example.com") whose pages may call the API; empty: same origin only.
    public var corsOrigins: [String] = []
    /// Webhook receiver hosts, exactly as written in their URLs, that may resolve to loopback,
    /// private, link-local or metadata addresses (an on-premises receiver); every other host must
    /// resolve to public addresses only.
    public var webhookAllowedHosts: [String] = []

    public init() {}

    /// The per-address connection cap in effect.
    public var effectiveMaxConnectionsPerAddress: Int { maxConnectionsPerAddress ?? min(256, maxConnections) }

    /// Every key `config.example.json` may hold, with what it sets. Unknown keys are an error,
    /// so a typo never silently falls back to a default.
    public static let fileKeys: [String] = [
        "host", "port", "dataDir", "database", "publicDir", "maxHeaderBytes", "maxHeaderCount", "maxRequestLineBytes",
        "maxBodyBytes", "maxHealthAutoExportBodyBytes", "idleTimeoutSeconds", "headerTimeoutSeconds", "bodyTimeoutSeconds",
        "minBodyBytesPerSecond", "minBodyRateSeconds", "maxBodyBytesInFlight", "maxConnections",
        "eventLoops", "maxStreamBacklogBytes", "maxBatchSize", "tombstoneRetentionDays", "accessLogRetentionDays", "readerConnections", "statisticsMemoryMiB", "uuidKeyMemoryMiB",
        "accessLog",
        "rateLimitPerAddressPerSecond", "rateLimitPerAddressBurst", "rateLimitPerTokenPerSecond", "rateLimitPerTokenBurst",
        "authenticationFailureCost", "maxConnectionsPerAddress", "corsOrigins", "trustedProxies", "trustedProxyHeader",
        "webhookAllowedHosts",
    ]
}

public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
