import Dispatch
import ClientThreads
import Foundation
import HealthModel
import HealthStore
import SQLiteStore
import JSON
import SQLite
import Synchronization
import Primitives

/// Settings shared by the samples benchmarks (see `healthd-bench --help`).
struct SamplesBenchmarkOptions {
    var healthdPath = ""
    var workDirectory = ""
    var workDirectoryGiven = false
    var clients = 4
    var uuidSources = SamplesBenchmark.UUIDSource.allCases
    var batches = 40
    var batchSize = 10_000
    var storeSamples = 5_000_000
    var randomPages = 400
    var walks = 20
    var walkPages = 10
    var keep = false
    var shapes = SamplesBenchmark.TableShape.allCases
    var runFanout = 8
}

func nanosecondsNow() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Latency figures in milliseconds.
struct LatencySummary: CustomStringConvertible {
    var count: Int
    var p50: Double
    var p90: Double
    var p99: Double
    var max: Double
    var mean: Double

    init(_ nanoseconds: [UInt64]) {
        let sorted = nanoseconds.sorted()
        count = sorted.count
        func percentile(_ fraction: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
            return Double(sorted[Swift.max(0, Swift.min(sorted.count - 1, rank))]) / 1e6
        }
        p50 = percentile(0.50)
        p90 = percentile(0.90)
        p99 = percentile(0.99)
        self.max = percentile(1.0)
        mean = sorted.isEmpty ? 0 : Double(sorted.reduce(0, +)) / Double(sorted.count) / 1e6
    }

    var description: String {
        "n=\(count) p50=\(format(p50)) ms p99=\(format(p99)) ms max=\(format(max)) ms"
    }
}

func format(_ value: Double, decimals: Int = 2) -> String { String(format: "%.\(decimals)f", value) }

func mebibytes(_ kibibytes: Int) -> String { format(Double(kibibytes) / 1024, decimals: 1) + " MiB" }

enum SamplesBenchmark {
    // MARK: Raw SQLite baseline

    /// How a raw-SQLite run shapes the samples table and its idempotency by client uuid: the
    /// alternatives measured side by side in one run (BENCHMARKS.md, Samples: ingest).
    enum TableShape: String, CaseIterable {
        /// The floor: no uuid index at all (idempotency would cost nothing).
        case noUUIDIndex = "no uuid index"
        /// The unique (user, uuid) index on 16-byte blobs, `ON CONFLICT DO NOTHING`.
        case uuidIndex = "unique (user, uuid) index"
        /// A 64-bit key hashed from (user, uuid) in a narrow non-unique index; a probe per row
        /// compares the full uuid of any row with the same key before the plain insert.
        case uuidKeyIndex = "64-bit uuid key index, probe then insert"
        /// The 64-bit key as the rowid of a side table (key -> seq), `ON CONFLICT DO NOTHING`,
        /// a collision looked up on conflict only.
        case uuidKeyTable = "64-bit uuid key as a side table's rowid"
        /// The 64-bit key in two side tables, (key, seq) `WITHOUT ROWID`: new keys go to a small
        /// recent table (random inserts stay within a few hundred pages), merged in key order into
        /// the main one when it has grown to a share of it; a probe per row looks in both.
        case tieredKeys = "64-bit uuid key in a recent + main table, merged in bulk"
        /// Rows clustered by (user, type, start, seq) `WITHOUT ROWID`, with (user, seq) and
        /// (user, uuid) as secondary indexes.
        case clustered = "clustered (user, type, start) WITHOUT ROWID + (user, uuid) index"
        /// No uuid index: per user, sorted runs of 32-bit keys hashed from (user, uuid) with their
        /// seq, one run written per batch and merged in tiers, the runs' keys held in memory
        /// (`SampleKeyIndex`, the store's own code): a new key costs no SQLite probe.
        case keyRuns = "32-bit uuid keys in tiered runs, keys in memory (SampleKeyIndex)"

        /// Short names for `--shapes`.
        var short: String {
            switch self {
            case .noUUIDIndex: "floor"
            case .uuidIndex: "index"
            case .uuidKeyIndex: "key-index"
            case .uuidKeyTable: "key-table"
            case .tieredKeys: "recent-main"
            case .clustered: "clustered"
            case .keyRuns: "runs"
            }
        }
    }

    /// The floor under the API's insert rate: the same rows bound straight into a table shaped like
    /// `samples` (same indexes, WAL, synchronous=FULL), prepared statements, one transaction per batch.
    static func sqliteBaseline(_ options: SamplesBenchmarkOptions, shape: TableShape) throws -> Double {
        let directory = options.workDirectory + "/baseline"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let db = try Database(path: directory + "/baseline.sqlite")
        _ = try db.setPragma("journal_mode", "WAL")
        try db.execute("PRAGMA synchronous = FULL")
        try db.execute("PRAGMA cache_size = -32768")
        let columns = """
            seq INTEGER NOT NULL, user_id INTEGER NOT NULL, uuid BLOB NOT NULL, type_id INTEGER NOT NULL,
            source_id INTEGER NOT NULL, device_id INTEGER, start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL,
            value REAL, parent_seq INTEGER, created_ms INTEGER NOT NULL, body BLOB
            """
        let secondary = """
            CREATE INDEX samples_by_parent ON samples(parent_seq) WHERE parent_seq IS NOT NULL;
            CREATE INDEX samples_by_user_seq ON samples(user_id, seq);
            """
        switch shape {
        case .clustered:
            try db.execute("""
                CREATE TABLE samples (\(columns), PRIMARY KEY (user_id, type_id, start_ms, seq)) WITHOUT ROWID;
                CREATE UNIQUE INDEX samples_by_uuid ON samples(user_id, uuid);
                \(secondary)
                """)
        case .uuidKeyIndex:
            try db.execute("""
                CREATE TABLE samples (\(columns.replacingOccurrences(of: "seq INTEGER NOT NULL", with: "seq INTEGER PRIMARY KEY")), uuid_key INTEGER NOT NULL);
                CREATE INDEX samples_by_type_start ON samples(user_id, type_id, start_ms);
                CREATE INDEX samples_by_uuid_key ON samples(uuid_key);
                \(secondary)
                """)
        default:
            try db.execute("""
                CREATE TABLE samples (\(columns.replacingOccurrences(of: "seq INTEGER NOT NULL", with: "seq INTEGER PRIMARY KEY")));
                CREATE INDEX samples_by_type_start ON samples(user_id, type_id, start_ms);
                \(secondary)
                """)
            if shape == .uuidIndex { try db.execute("CREATE UNIQUE INDEX samples_by_uuid ON samples(user_id, uuid)") }
            if shape == .tieredKeys {
                try db.execute("""
                    CREATE TABLE sample_keys (key INTEGER NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (key, seq)) WITHOUT ROWID;
                    CREATE TABLE sample_keys_recent (key INTEGER NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (key, seq)) WITHOUT ROWID;
                    """)
            }
            if shape == .uuidKeyTable {
                try db.execute("CREATE TABLE sample_keys (key INTEGER PRIMARY KEY, seq INTEGER NOT NULL)")
            }
            if shape == .keyRuns { try db.execute(SampleKeyIndex.schema) }
        }
        let keyRuns = shape == .keyRuns ? SampleKeyIndex(fanout: options.runFanout) : nil
        var stored = 0
        let conflictClause = shape == .uuidIndex || shape == .clustered ? " ON CONFLICT(user_id, uuid) DO NOTHING" : ""
        let keyColumn = shape == .uuidKeyIndex ? ", uuid_key" : ""
        let insert = try db.prepare("""
            INSERT INTO samples (seq, user_id, uuid, type_id, source_id, device_id, start_ms, end_ms, value, parent_seq, created_ms, body\(keyColumn))
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?\(shape == .uuidKeyIndex ? ", ?" : ""))\(conflictClause)
            """)
        let probe = switch shape {
        case .uuidKeyIndex: try db.prepare("SELECT user_id, uuid FROM samples WHERE uuid_key = ?")
        case .tieredKeys: try db.prepare("""
            SELECT user_id, uuid FROM samples WHERE seq IN
              (SELECT seq FROM sample_keys WHERE key = ?1 UNION ALL SELECT seq FROM sample_keys_recent WHERE key = ?1)
            """)
        default: Statement?.none
        }
        let keyInsert = switch shape {
        case .uuidKeyTable: try db.prepare("INSERT INTO sample_keys (key, seq) VALUES (?, ?) ON CONFLICT DO NOTHING")
        case .tieredKeys: try db.prepare("INSERT INTO sample_keys_recent (key, seq) VALUES (?, ?)")
        default: Statement?.none
        }
        var recentKeys = 0
        // Rows are generated before timing, as the API benchmark's bodies are.
        var generator = SampleGenerator(seed: 7)
        let total = options.batches * options.batchSize
        let samples = (0..<total).map { generator.sample($0) }
        let bodies: [[UInt8]?] = samples.map { sample in
            sample.metadata.isEmpty ? nil : Array("{\"m\":{\"\(sample.metadata[0].key)\":1}}".utf8)
        }
        let cpuBefore = processCPUSeconds(getpid())
        let began = nanosecondsNow()
        var seq: Int64 = 0
        for batch in stride(from: 0, to: total, by: options.batchSize) {
            try db.transaction(.immediate) {
                let batchEnd = min(total, batch + options.batchSize)
                // The runs shape checks the whole batch first (memory, then the database for keys
                // some run holds), and writes the batch's run after its rows.
                var runs: [SampleKeyIndex.RunInfo] = []
                var runKeys: [UInt32] = []
                var storedRows: [Int: SampleRow] = [:]
                var runEntries: [(key: UInt32, seq: Int64)] = []
                if let keyRuns {
                    runs = try keyRuns.runs(userRowID: 1, db: db)
                    let uuids = samples[batch..<batchEnd].map(\.uuid)
                    runKeys = uuids.map { keyRuns.key(userRowID: 1, uuid: $0) }
                    storedRows = try keyRuns.find(uuids, keys: runKeys, userRowID: 1, runs: runs, db: db)
                    runEntries.reserveCapacity(uuids.count)
                }
                for index in batch..<batchEnd {
                    let sample = samples[index]
                    if keyRuns != nil, storedRows[index - batch] != nil {
                        stored += 1
                        continue
                    }
                    let key = SampleUUIDKey.key(userRowID: 1, uuid: sample.uuid)
                    if let probe {
                        // The store compares the uuid of any row with this key (a collision or a retry).
                        probe.reset()
                        try probe.bind(key, at: 1)
                        var taken = false
                        while try probe.step() { taken = true }
                        if taken { continue }
                    }
                    seq += 1
                    if let keyInsert {
                        keyInsert.reset()
                        try keyInsert.bind(key, at: 1)
                        try keyInsert.bind(seq, at: 2)
                        _ = try keyInsert.step()
                        if db.changes == 0 { continue }
                    }
                    insert.reset()
                    try insert.bind(seq, at: 1)
                    try insert.bind(Int64(1), at: 2)
                    try insert.bind(sample.uuid.bytes, at: 3)
                    try insert.bind(Int64(sample.type == "stepCount" ? 1 : 2), at: 4)
                    try insert.bind(Int64(1), at: 5)
                    try insert.bind(Int64(sample.type == "stepCount" ? 1 : 2), at: 6)
                    try insert.bind(sample.start, at: 7)
                    try insert.bind(sample.end, at: 8)
                    try insert.bind(sample.quantity ?? 0, at: 9)
                    try insert.bind(Int64(1_767_225_600_000), at: 10)
                    try insert.bindIfPresent(bodies[index], at: 11)
                    if shape == .uuidKeyIndex { try insert.bind(key, at: 12) }
                    _ = try insert.step()
                    if keyRuns != nil { runEntries.append((runKeys[index - batch], seq)) }
                }
                try keyRuns?.append(runEntries, userRowID: 1, runs: runs, db: db)
                if shape == .tieredKeys {
                    recentKeys += options.batchSize
                    if recentKeys >= max(65_536, Int(seq) / 8) {
                        try db.execute("INSERT INTO sample_keys SELECT key, seq FROM sample_keys_recent ORDER BY key, seq; DELETE FROM sample_keys_recent")
                        recentKeys = 0
                    }
                }
            }
        }
        let seconds = Double(nanosecondsNow() - began) / 1e9
        let cpu = processCPUSeconds(getpid()) - cpuBefore
        if let keyRuns {
            let runs = try keyRuns.runs(userRowID: 1, db: db)
            guard stored == 0, runs.reduce(0, { $0 + $1.count }) == total else {
                throw BenchError("uuid key runs: \(stored) of \(total) random uuids found stored, runs hold \(runs.reduce(0, { $0 + $1.count }))")
            }
            print("  runs at the end: \(runs.count) (levels \(runs.map(\.level))), \(keyRuns.heldBytes / 1024) KiB of keys in memory, fanout \(keyRuns.fanout)")
        }
        db.close()
        if !options.keep { try? FileManager.default.removeItem(atPath: directory) }
        let rate = Double(total) / seconds
        print("sqlite-baseline, \(shape.rawValue): \(total) rows in \(options.batchSize)-row transactions: \(format(seconds, decimals: 3)) s, \(Int(rate)) rows/s")
        print("  CPU: \(format(cpu, decimals: 2)) s = \(format(1e6 * cpu / Double(total), decimals: 2)) µs per row (\(Int(Double(total) / max(cpu, 1e-9))) rows per CPU-second)")
        return rate
    }

    // MARK: SQLiteHealthStore.save and the cost of rollup maintenance

    /// The same client-uuid batches saved in process through `SQLiteHealthStore.save`, with the statistics
    /// rollups maintained as the store does (saves folded into the day rows), with every touched day
    /// rewritten from all its samples instead, and with no maintenance at all (the modes exist for
    /// these figures only): what maintenance adds to a write, apart from HTTP and JSON. CPU per sample
    /// is the figure to read on a shared machine. Returns samples per CPU-second, by mode.
    static func storeSaves(_ options: SamplesBenchmarkOptions) throws -> [RollupMaintenanceMode: Double] {
        var generator = SampleGenerator(seed: 11)
        let total = options.batches * options.batchSize
        let samples = (0..<total).map { generator.sample($0) }
        var rates: [RollupMaintenanceMode: Double] = [:]
        let modes: [(RollupMaintenanceMode, String)] = [(.incremental, "incremental (the store's)"),
                                                        (.rereadDays, "touched days re-read"), (.off, "off")]
        for (mode, name) in modes {
            let directory = options.workDirectory + "/store-save-\(mode.rawValue)"
            try? FileManager.default.removeItem(atPath: directory)
            let (store, app, _) = try prepareUser(dataDirectory: directory)
            store.rollupMaintenance.store(mode.rawValue, ordering: .relaxed)
            let cpuBefore = processCPUSeconds(getpid())
            let began = nanosecondsNow()
            for batch in stride(from: 0, to: total, by: options.batchSize) {
                _ = try store.save(Array(samples[batch..<min(total, batch + options.batchSize)]), by: app)
            }
            let seconds = Double(nanosecondsNow() - began) / 1e9
            let cpu = processCPUSeconds(getpid()) - cpuBefore
            let maintenance = Double(store.rollupMaintenanceNanoseconds) / 1e9
            store.close()
            if !options.keep { try? FileManager.default.removeItem(atPath: directory) }
            rates[mode] = Double(total) / max(cpu, 1e-9)
            print("SQLiteHealthStore.save, rollup maintenance \(name): \(total) samples in \(options.batchSize)-sample batches: "
                  + "\(format(seconds, decimals: 3)) s, \(Int(Double(total) / seconds)) samples/s; "
                  + "CPU \(format(1e6 * cpu / Double(total), decimals: 2)) µs per sample"
                  + (mode == .off ? "" : "; inside maintenance \(format(1e6 * maintenance / Double(total), decimals: 2)) µs per sample"))
        }
        let off = rates[.off] ?? 0
        print("  samples per CPU-second / maintenance off: incremental \(format((rates[.incremental] ?? 0) / max(off, 1e-9))) x, "
              + "touched days re-read \(format((rates[.rereadDays] ?? 0) / max(off, 1e-9))) x")
        return rates
    }

    // MARK: POST /v1/samples

    /// Who picks the uuids of the posted samples.
    enum UUIDSource: String, CaseIterable {
        /// Random (v4) uuids on every sample, as a syncing HealthKit app sends them.
        case client
        /// No uuid in the JSON: the server assigns time-ordered (v7) ones, as for a script.
        case server
    }

    static func write(_ options: SamplesBenchmarkOptions, uuids: UUIDSource) throws -> Double {
        let directory = options.workDirectory + "/write-\(uuids.rawValue)"
        try? FileManager.default.removeItem(atPath: directory)
        let (store, _, token) = try prepareUser(dataDirectory: directory)
        store.close()

        var generator = SampleGenerator(seed: 11)
        var bodies: [[UInt8]] = []
        for batch in 0..<options.batches {
            bodies.append(generator.batchJSON(firstIndex: batch * options.batchSize, count: options.batchSize,
                                              withUUIDs: uuids == .client))
        }
        let averageBytes = bodies.reduce(0) { $0 + $1.count } / max(1, bodies.count)
        let server = try ServerProcess(executable: options.healthdPath, dataDirectory: directory)
        defer { server.stop() }
        let idle = server.memory()

        // One small warm-up batch (not timed, not counted) pages in code and the connection path.
        let warmUp = try BenchHTTPClient(port: server.port)
        var warmUpGenerator = SampleGenerator(seed: 99)
        let warmUpResponse = try warmUp.request("POST", "/v1/samples", token: token,
                                                body: warmUpGenerator.batchJSON(firstIndex: 100_000_000, count: 100))
        guard warmUpResponse.status == 201 else {
            throw BenchError("warm-up POST returned \(warmUpResponse.status): \(String(decoding: warmUpResponse.body, as: UTF8.self))")
        }

        let latencies = Mutex<[UInt64]>([])
        let failures = Mutex<[String]>([])
        let peakResident = Mutex(0)
        let running = Atomic(true)
        let port = server.port
        let sharedBodies = bodies
        let clients = options.clients
        let serverProcessIdentifier = server.process.processIdentifier
        let monitor = Thread {
            while running.load(ordering: .relaxed) {
                let resident = processMemory(serverProcessIdentifier).residentKiB
                peakResident.withLock { $0 = max($0, resident) }
                usleep(50_000)
            }
        }
        monitor.start()
        let cpuBefore = processCPUSeconds(serverProcessIdentifier)
        let began = nanosecondsNow()
        onThreads(clients) { client in
            do {
                let connection = try BenchHTTPClient(port: port)
                for batch in stride(from: client, to: sharedBodies.count, by: clients) {
                    let sent = nanosecondsNow()
                    let response = try connection.request("POST", "/v1/samples", token: token, body: sharedBodies[batch])
                    let elapsed = nanosecondsNow() - sent
                    guard response.status == 201 else {
                        throw BenchError("POST returned \(response.status): \(String(decoding: response.body.prefix(400), as: UTF8.self))")
                    }
                    latencies.withLock { $0.append(elapsed) }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        let seconds = Double(nanosecondsNow() - began) / 1e9
        let serverCPU = processCPUSeconds(serverProcessIdentifier) - cpuBefore
        running.store(false, ordering: .relaxed)
        if let failure = failures.withLock({ $0.first }) { throw BenchError(failure) }
        let memory = server.memory()
        let total = options.batches * options.batchSize
        let rate = Double(total) / seconds
        print("samples-write (\(uuids.rawValue) uuids): \(options.batches) batches x \(options.batchSize) samples (\(averageBytes / 1024) KiB JSON each), \(clients) clients, keep-alive")
        print("  \(total) samples in \(format(seconds, decimals: 3)) s: \(Int(rate)) samples/s over HTTP")
        print("  per batch: \(LatencySummary(latencies.withLock { $0 }))")
        print("  server CPU: \(format(serverCPU, decimals: 2)) s = \(format(1e6 * serverCPU / Double(total), decimals: 2)) µs per sample (\(Int(Double(total) / max(serverCPU, 1e-9))) samples per CPU-second)")
        print("  server RSS: idle \(mebibytes(idle.residentKiB)), sampled peak \(mebibytes(peakResident.withLock { $0 })), end \(mebibytes(memory.residentKiB)), VmHWM \(mebibytes(memory.peakKiB))")
        if !options.keep { try? FileManager.default.removeItem(atPath: directory) }
        return rate
    }

    // MARK: GET /v1/samples

    /// Fills `directory` with `samples` generated samples (alternating stepCount and heartRate) for
    /// the bench user, unless it already holds them, and returns a fresh app token that may read them.
    static func seedStore(directory: String, samples: Int, batchSize: Int, log: String) throws -> String {
        let (store, app, token) = try prepareUser(dataDirectory: directory)
        defer { store.close() }
        let existing = try store.samples(SampleQuery(type: "heartRate"), for: app, userExternalID: app.userID).samples.isEmpty
        guard existing else {
            print("\(log): reusing the store in \(directory)")
            return token
        }
        var generator = SampleGenerator(seed: 5)
        let began = nanosecondsNow()
        var batch: [HealthSample] = []
        batch.reserveCapacity(batchSize)
        for index in 0..<samples {
            batch.append(generator.sample(index))
            if batch.count == batchSize || index == samples - 1 {
                _ = try store.save(batch, by: app)
                batch.removeAll(keepingCapacity: true)
            }
        }
        let seconds = Double(nanosecondsNow() - began) / 1e9
        print("\(log): built a store of \(samples) samples with SQLiteHealthStore.save in \(format(seconds, decimals: 1)) s (\(Int(Double(samples) / seconds)) samples/s in-process)")
        return token
    }

    /// Builds (or reuses) a store of `storeSamples` samples, serves it, and times pages of 1,000.
    static func read(_ options: SamplesBenchmarkOptions) throws {
        let directory = options.workDirectory + "/read-\(options.storeSamples)"
        let token = try seedStore(directory: directory, samples: options.storeSamples, batchSize: options.batchSize,
                                  log: "samples-read")
        if let size = try? FileManager.default.attributesOfItem(atPath: directory + "/healthd.sqlite")[.size] as? Int {
            print("  database file: \(mebibytes(size / 1024))")
        }

        let server = try ServerProcess(executable: options.healthdPath, dataDirectory: directory)
        defer { server.stop() }
        let client = try BenchHTTPClient(port: server.port)
        // Heart-rate samples are 10 s apart; random starts leave room for a full walk.
        let span = Int64(options.storeSamples) * SampleGenerator.spacingMilliseconds
        let walkRoom = Int64(options.walkPages + 1) * 1_000 * 2 * SampleGenerator.spacingMilliseconds
        var random = SplitMix64(seed: 3)
        func randomStart() -> String {
            let offset = Int64(random.next() % UInt64(max(1, span - walkRoom)))
            return RFC3339.format(SampleGenerator.epoch + offset)
        }
        func page(_ target: String) throws -> (nanoseconds: UInt64, next: String?, count: Int) {
            let sent = nanosecondsNow()
            let response = try client.request("GET", target, token: token)
            let elapsed = nanosecondsNow() - sent
            guard response.status == 200 else {
                throw BenchError("GET \(target) returned \(response.status): \(String(decoding: response.body.prefix(400), as: UTF8.self))")
            }
            guard case .object(let object)? = try? JSONParser.parse(response.body),
                  case .array(let samples)? = object["samples"] else { throw BenchError("GET \(target): unreadable body") }
            return (elapsed, object["next"]?.stringValue, samples.count)
        }
        // Warm-up: a few pages, not counted.
        for _ in 0..<5 { _ = try page("/v1/samples?type=heartRate&limit=1000&start=\(randomStart())") }

        let serverProcessIdentifier = server.process.processIdentifier
        let cpuBefore = processCPUSeconds(serverProcessIdentifier)
        var randomLatencies: [UInt64] = []
        var bytesChecked = 0
        for _ in 0..<options.randomPages {
            let result = try page("/v1/samples?type=heartRate&limit=1000&start=\(randomStart())")
            guard result.count == 1_000 else { throw BenchError("a random page held \(result.count) samples, not 1000") }
            randomLatencies.append(result.nanoseconds)
            bytesChecked += result.count
        }
        var walkLatencies: [UInt64] = []
        for walk in 0..<options.walks {
            let type = walk % 2 == 0 ? "heartRate" : "stepCount"
            // A cursor belongs to its query: every page repeats the first page's parameters.
            let query = "/v1/samples?type=\(type)&limit=1000&start=\(randomStart())"
            var target = query
            for _ in 0..<options.walkPages {
                let result = try page(target)
                walkLatencies.append(result.nanoseconds)
                guard let next = result.next else { break }
                target = query + "&cursor=" + next
            }
        }
        let serverCPU = processCPUSeconds(serverProcessIdentifier) - cpuBefore
        let pages = randomLatencies.count + walkLatencies.count
        let memory = server.memory()
        print("samples-read: GET /v1/samples limit=1000 from a store of \(options.storeSamples) samples (one client, keep-alive)")
        print("  random start pages: \(LatencySummary(randomLatencies))")
        print("  cursor walks (\(options.walks) x \(options.walkPages) pages): \(LatencySummary(walkLatencies))")
        print("  server CPU: \(format(1000 * serverCPU / Double(max(1, pages)), decimals: 2)) ms per page (\(pages) pages)")
        print("  server RSS: end \(mebibytes(memory.residentKiB)), VmHWM \(mebibytes(memory.peakKiB))")
    }
}

/// The 64-bit key the key-based table shapes find a (user, uuid) by. Different uuids may share a
/// key, so a store using it would always compare the full uuid of the rows it finds.
enum SampleUUIDKey {
    static func key(userRowID: Int64, uuid: HealthUUID) -> Int64 {
        // A SplitMix64 finalizer over both halves and the user: v7 (time-ordered) and import
        // uuids share their leading bytes, so no single half can serve as the key.
        let user = UInt64(bitPattern: userRowID) &* 0xD6E8_FEB8_6659_FD93
        return Int64(bitPattern: SplitMix64.mix(uuid.high ^ (uuid.low &* 0x9E37_79B9_7F4A_7C15) ^ user))
    }
}
