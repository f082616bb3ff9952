import Glibc
import HealthStore
import Synchronization

/// Request counters and a latency histogram, rendered in the Prometheus text format (version 0.0.4).
public final class Metrics: Sendable {
    private struct Key: Hashable {
        var route: String
        var method: String
        var status: Int

        /// Compared field by field in place: building a key to compare copied (and retained) its strings.
        func matches(route: String, method: String, status: Int) -> Bool {
            self.status == status && self.route == route && self.method == method
        }
    }
    private struct State {
        var requests: [Key: UInt64] = [:]
        /// The key of the last request counted here and its requests not yet in `requests`: runs
        /// of one route (health probes, a client polling, a load test) are counted without hashing
        /// the key, which cost more than the rest of counting a request.
        var lastKey: Key?
        var lastKeyPending: UInt64 = 0
        var bucketCounts: [UInt64]
        var latencySum = 0.0
        var latencyCount: UInt64 = 0
    }

    /// One lock and table per shard. Every request is counted here, from every connection queue's
    /// thread at once: one shared lock made those threads take turns and pass its cache line (and
    /// the table's) between cores on every request. A thread keeps to its shard, so the two
    /// connection queues of a two-core machine rarely meet; `render` adds the shards up.
    private final class Shard: Sendable {
        let state: Mutex<State>
        /// Keeps two shards' locks off one cache line (each shard is its own allocation).
        private let padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
        init(bucketCount: Int) { state = Mutex(State(bucketCounts: Array(repeating: 0, count: bucketCount))) }
    }

    /// Upper bounds in seconds: fine at the low end, where healthd's requests live.
    public static let latencyBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    private static let shardCount = 16
    private let shards: [Shard]

    public init() { shards = (0 ..< Self.shardCount).map { _ in Shard(bucketCount: Self.latencyBuckets.count) } }

    /// The calling thread's shard: its thread id, mixed so neighbouring ids spread out.
    private var currentShard: Shard {
        let mixed = (UInt64(pthread_self()) >> 12) &* 0x9E37_79B9_7F4A_7C15
        return shards[Int(mixed >> 60)]  // the top 4 bits: one of the 16 shards
    }

    public func recordRequest(route: String, method: String, status: Int, seconds: Double) {
        // Find the bucket outside the lock; the lock only guards a few additions.
        let bucket = Self.bucketIndex(seconds: seconds)
        currentShard.state.withLock { state in
            if state.lastKey?.matches(route: route, method: method, status: status) != true {
                if let previous = state.lastKey { state.requests[previous, default: 0] += state.lastKeyPending }
                state.lastKey = Key(route: route, method: method, status: status)
                state.lastKeyPending = 0
            }
            state.lastKeyPending += 1
            if let bucket { state.bucketCounts[bucket] += 1 }
            state.latencySum += seconds
            state.latencyCount += 1
        }
    }

    /// The first latency bucket whose bound `seconds` does not exceed; nil past the last one.
    static func bucketIndex(seconds: Double) -> Int? {
        latencyBuckets.withUnsafeBufferPointer { bounds in
            for index in bounds.indices where seconds <= bounds[index] { return index }
            return nil
        }
    }

    /// All shards added up.
    private func snapshot() -> State {
        var total = State(bucketCounts: Array(repeating: 0, count: Self.latencyBuckets.count))
        for shard in shards {
            shard.state.withLock { state in
                for (key, count) in state.requests { total.requests[key, default: 0] += count }
                if let key = state.lastKey { total.requests[key, default: 0] += state.lastKeyPending }
                for index in state.bucketCounts.indices { total.bucketCounts[index] += state.bucketCounts[index] }
                total.latencySum += state.latencySum
                total.latencyCount += state.latencyCount
            }
        }
        return total
    }

    /// Gauges the server and the store report at scrape time.
    public struct Gauges: Sendable {
        public var openConnections: Int
        public var acceptedConnections: UInt64
        public var storeBytes: Int64
        public var samples: Int64?
        /// Change-feed long-polls waiting for a commit, and open SSE change streams.
        public var parkedLongPolls = 0
        public var openChangeStreams = 0
        /// The statistics series cache's counters, when the store reports them.
        public var statisticsCache: StatisticsCacheFigures?
        public init(openConnections: Int, acceptedConnections: UInt64, storeBytes: Int64, samples: Int64? = nil) {
            self.openConnections = openConnections
            self.acceptedConnections = acceptedConnections
            self.storeBytes = storeBytes
            self.samples = samples
        }
    }

    public func render(gauges: Gauges) -> String {
        let snapshot = snapshot()
        var out = ""
        out += "# HELP healthd_http_requests_total HTTP requests answered, by route pattern, method and status.\n"
        out += "# TYPE healthd_http_requests_total counter\n"
        for (key, count) in snapshot.requests.sorted(by: { ($0.key.route, $0.key.method, $0.key.status) < ($1.key.route, $1.key.method, $1.key.status) }) {
            out += "healthd_http_requests_total{route=\"\(escape(key.route))\",method=\"\(escape(key.method))\",status=\"\(key.status)\"} \(count)\n"
        }
        out += "# HELP healthd_http_request_duration_seconds Time from a complete request to its response.\n"
        out += "# TYPE healthd_http_request_duration_seconds histogram\n"
        var cumulative: UInt64 = 0
        for (bound, count) in zip(Self.latencyBuckets, snapshot.bucketCounts) {
            cumulative += count
            out += "healthd_http_request_duration_seconds_bucket{le=\"\(bound)\"} \(cumulative)\n"
        }
        out += "healthd_http_request_duration_seconds_bucket{le=\"+Inf\"} \(snapshot.latencyCount)\n"
        out += "healthd_http_request_duration_seconds_sum \(snapshot.latencySum)\n"
        out += "healthd_http_request_duration_seconds_count \(snapshot.latencyCount)\n"
        out += "# HELP healthd_open_connections Client connections open now.\n"
        out += "# TYPE healthd_open_connections gauge\n"
        out += "healthd_open_connections \(gauges.openConnections)\n"
        out += "# HELP healthd_accepted_connections_total Client connections accepted since start.\n"
        out += "# TYPE healthd_accepted_connections_total counter\n"
        out += "healthd_accepted_connections_total \(gauges.acceptedConnections)\n"
        out += "# HELP healthd_store_bytes Size of the SQLite database and its write-ahead log.\n"
        out += "# TYPE healthd_store_bytes gauge\n"
        out += "healthd_store_bytes \(gauges.storeBytes)\n"
        out += "# HELP healthd_change_long_polls Change-feed long-polls parked until a relevant commit or their wait ends.\n"
        out += "# TYPE healthd_change_long_polls gauge\n"
        out += "healthd_change_long_polls \(gauges.parkedLongPolls)\n"
        out += "# HELP healthd_change_streams Open server-sent-event change streams.\n"
        out += "# TYPE healthd_change_streams gauge\n"
        out += "healthd_change_streams \(gauges.openChangeStreams)\n"
        if let samples = gauges.samples {
            out += "# HELP healthd_samples Samples stored, all users.\n"
            out += "# TYPE healthd_samples gauge\n"
            out += "healthd_samples \(samples)\n"
        }
        if let cache = gauges.statisticsCache {
            out += "# HELP healthd_statistics_cache_bytes Bytes of decoded statistics series held in memory.\n"
            out += "# TYPE healthd_statistics_cache_bytes gauge\n"
            out += "healthd_statistics_cache_bytes \(cache.residentBytes)\n"
            out += "# HELP healthd_statistics_cache_budget_bytes The memory budget of the statistics series cache.\n"
            out += "# TYPE healthd_statistics_cache_budget_bytes gauge\n"
            out += "healthd_statistics_cache_budget_bytes \(cache.budgetBytes)\n"
            out += "# HELP healthd_statistics_cache_series Decoded statistics series held in memory.\n"
            out += "# TYPE healthd_statistics_cache_series gauge\n"
            out += "healthd_statistics_cache_series \(cache.residentSeries)\n"
            for (name, help, value) in [
                ("hits", "Statistics queries answered from a decoded series in memory.", cache.hits),
                ("misses", "Statistics queries that read and decoded rollup rows.", cache.misses),
                ("evictions", "Decoded series dropped to make room for another.", cache.evictions),
                ("rejections", "Decoded series not kept: asked less often than what they would displace.", cache.rejections),
            ] {
                out += "# HELP healthd_statistics_cache_\(name)_total \(help)\n"
                out += "# TYPE healthd_statistics_cache_\(name)_total counter\n"
                out += "healthd_statistics_cache_\(name)_total \(value)\n"
            }
        }
        return out
    }

    private func escape(_ label: String) -> String {
        label.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
