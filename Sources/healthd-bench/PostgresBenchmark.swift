import Dispatch
import ClientThreads
import Foundation
import HealthStore
import SQLiteStore
import PostgreSQL
import PostgresStore
import Synchronization
import Primitives

/// `healthd-bench postgres`: the PostgreSQL backend beside SQLite in one run (BENCHMARKS.md,
/// PostgreSQL and several nodes). Every figure is a ratio to a floor or peer measured in the same run:
/// - ingest: the same POST /v1/samples batches (client uuids) to `healthd serve` on SQLite and on
///   PostgreSQL, and two floors that copy the rows that run stored (the same rows, encoded before
///   the clock starts, the same batches) into the same `samples` table by binary `COPY`:
///   - raw COPY: one connection, one COPY statement per batch (autocommit), one after another:
///     what `COPY samples FROM STDIN` alone takes; the target's floor;
///   - parallel COPY: one transaction per batch from as many connections as HTTP clients, each
///     user's batches over that user's connections, side by side.
///   Beside the rates, CPU seconds per 10,000 samples: healthd's own and the PostgreSQL server's
///   (its process tree, when it runs on this machine) for the HTTP ingest, the server's alone for
///   the floors. On a loaded machine the rates follow the share of the cores each phase got; CPU per
///   sample does not.
///   `--users N` spreads the clients over N users (client i writes for user i mod N), the parallel
///   floor's connections likewise: one user's batches commit one at a time (its change numbers
///   follow commit order, see `PostgresHealthStore.reserveChangeNumbers`), different users' in
///   parallel, while the parallel floor copies one user's batches side by side too;
/// - statistics reads: 91 daily buckets of steps over HTTP from concurrent keep-alive clients,
///   against one node, then split over two nodes on the same database, alternated, with each
///   process's CPU per request, and pinned one core per node (`PostgresReadBenchmark.swift`).
enum PostgresBenchmark {
    struct Options {
        var healthdPath = ""
        var database = ProcessInfo.processInfo.environment["HEALTHD_TEST_POSTGRES_URL"] ?? ""
        var clients = 4
        var users = 1
        var batches = 40
        var batchSize = 10_000
        var readClients = 8
        var readSeconds = 10.0
        var readRounds = 3
        var pinnedRounds = 3
        var workDirectory = NSTemporaryDirectory() + "healthd-bench-postgres-\(getpid())"
    }

    static let usage = """
        Usage: healthd-bench postgres [--database URL] [--healthd PATH] [--clients N] [--users N] [--batches N]
                                      [--batch-size N] [--read-clients N] [--read-seconds S] [--read-rounds N]
                                      [--pinned-rounds N]
          --database URL     a PostgreSQL server (default: HEALTHD_TEST_POSTGRES_URL); the benchmark makes
                             fresh databases on it (CREATE DATABASE) and drops them at the end
          --healthd PATH     the healthd binary (default: next to this one)
          --users N          ingest clients spread over N users, client i writing for user i mod N (default 1)
          --read-seconds S   length of each timed run of statistics reads (default 10)
          --read-rounds N    runs of one node, then two nodes, alternated N times (default 3)
          --pinned-rounds N  then N more with each node pinned to a core of its own, an emulation of one machine
                             per node (default 3; 0: none; needs two cores)
        """

    static func run(_ arguments: [String]) -> Int32 {
        var options = Options()
        options.healthdPath = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                                  ?? CommandLine.arguments[0]).deletingLastPathComponent().path + "/healthd"
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { benchFail("\(flag) needs a value\n\(usage)") }
            switch flag {
            case "--database": options.database = value
            case "--healthd": options.healthdPath = value
            case "--clients": options.clients = Int(value) ?? options.clients
            case "--users": options.users = max(1, Int(value) ?? options.users)
            case "--batches": options.batches = Int(value) ?? options.batches
            case "--batch-size": options.batchSize = Int(value) ?? options.batchSize
            case "--read-clients": options.readClients = Int(value) ?? options.readClients
            case "--read-seconds": options.readSeconds = Double(value) ?? options.readSeconds
            case "--read-rounds": options.readRounds = max(1, Int(value) ?? options.readRounds)
            case "--pinned-rounds": options.pinnedRounds = max(0, Int(value) ?? options.pinnedRounds)
            default: benchFail("unknown option \(flag)\n\(usage)")
            }
        }
        guard PostgresConfiguration.isPostgresURL(options.database) else { benchFail("needs --database postgres://…\n\(usage)") }
        guard FileManager.default.isExecutableFile(atPath: options.healthdPath) else {
            benchFail("no healthd binary at \(options.healthdPath) (swift build -c release, or pass --healthd)")
        }
        let databases = Databases(base: options.database)
        defer {
            databases.dropAll()
            try? FileManager.default.removeItem(atPath: options.workDirectory)
        }
        do {
            print("healthd-bench postgres — \(machineDescription()), \(Date())")
            print("command: healthd-bench \(( ["postgres"] + arguments).joined(separator: " "))")
            print("server: \(try databases.serverVersion())")
            var generator = SampleGenerator(seed: 11)
            let bodies = (0..<options.batches).map { generator.batchJSON(firstIndex: $0 * options.batchSize, count: options.batchSize) }
            let total = options.batches * options.batchSize

            let sqliteDirectory = options.workDirectory + "/sqlite"
            let sqliteStore = try SQLiteHealthStore(directory: sqliteDirectory, readers: 1)
            let sqliteTokens = try tokens(sqliteStore, users: options.users)
            sqliteStore.close()
            let sqliteServer = try ServerProcess(executable: options.healthdPath, dataDirectory: sqliteDirectory)
            let sqlite = try ingest(port: sqliteServer.port, tokens: sqliteTokens, bodies: bodies, clients: options.clients)
            sqliteServer.stop()

            let url = try databases.fresh()
            let postgresStore = try PostgresHealthStoreFactory.open(url: url)
            let postgresTokens = try tokens(postgresStore, users: options.users)
            PostgresHealthStoreFactory.close(postgresStore)
            let token = postgresTokens[0]
            // Every benchmark client is one loopback address and one token: the abuse limits would measure themselves.
            let config = options.workDirectory + "/no-rate-limits.json"
            try Data(#"{"rateLimitPerAddressPerSecond": 0, "rateLimitPerTokenPerSecond": 0}"#.utf8).write(to: URL(fileURLWithPath: config))
            let nodeA = try ServerProcess(executable: options.healthdPath, dataDirectory: options.workDirectory + "/node-a",
                                          extraArguments: ["--database", url, "--config", config])
            defer { nodeA.stop() }
            let server = PostgresServerCPU(url: url)
            let loadBefore = loadAverage()
            let httpDatabase = PostgresServerCPU.databaseName(of: url)
            let cpuBefore = (healthd: processCPUSeconds(nodeA.process.processIdentifier),
                             postgres: server?.seconds(database: httpDatabase) ?? PostgresServerCPU.CPUSeconds())
            let postgres = try ingest(port: nodeA.port, tokens: postgresTokens, bodies: bodies, clients: options.clients)
            let ingestCPU = (healthd: processCPUSeconds(nodeA.process.processIdentifier) - cpuBefore.healthd,
                             postgres: (server?.seconds(database: httpDatabase) ?? PostgresServerCPU.CPUSeconds()) - cpuBefore.postgres)

            let floorRows = try FloorRows(from: url, batchSize: options.batchSize, users: options.users)
            let (raw, rawCPU) = try rawCopy(databases, rows: floorRows, server: server)
            let (parallel, parallelCPU) = try parallelCopy(databases, rows: floorRows, clients: options.clients, users: options.users,
                                                           server: server)
            let load = loadAverage()

            print("ingest: \(options.batches) batches x \(options.batchSize) samples (client uuids), \(options.clients) clients, keep-alive, "
                  + "\(options.users) user\(options.users == 1 ? "" : "s")")
            print("  SQLite over HTTP:      \(Int(sqlite.rate)) samples/s (batch p50 \(format(sqlite.p50Milliseconds)) ms)")
            print("  PostgreSQL over HTTP:  \(Int(postgres.rate)) samples/s (batch p50 \(format(postgres.p50Milliseconds)) ms)")
            print("  raw COPY floor:        \(Int(raw)) samples/s (the rows the HTTP run stored, same table: one connection, "
                  + "one COPY per batch, no transaction around it)")
            print("  parallel COPY floor:   \(Int(parallel)) samples/s (the same rows over \(options.clients) connections, "
                  + "each user's batches over that user's connections, one transaction per batch)")
            print("  ratios: PostgreSQL HTTP / raw COPY = \(format(postgres.rate / raw))x (target >= 0.7), "
                  + "PostgreSQL HTTP / parallel COPY = \(format(postgres.rate / parallel))x, "
                  + "PostgreSQL / SQLite over HTTP = \(format(postgres.rate / sqlite.rate))x, "
                  + "PostgreSQL HTTP = \(format(postgres.rate / 100_000))x of 100k samples/s")
            if options.users == 1 {
                print("  (one user: healthd commits that user's batches one at a time, so anchors follow commit order; "
                      + "the parallel floor copies them side by side)")
            }
            print("  (\(total) samples per run; load average before / after: \(loadBefore) / \(load))")
            if server != nil {
                let per = 10_000 / Double(total)
                // Three decimals: /proc counts in 10 ms ticks, a few hundred of them per phase.
                func cpu(_ seconds: Double) -> String { format(seconds * per, decimals: 3) }
                let http = ingestCPU.healthd + ingestCPU.postgres.server
                print("  CPU s per 10k samples: PostgreSQL HTTP ingest \(cpu(http)) (healthd \(cpu(ingestCPU.healthd)) "
                      + "+ PostgreSQL \(cpu(ingestCPU.postgres.server))), raw COPY \(cpu(rawCPU.server)), "
                      + "parallel COPY \(cpu(parallelCPU.server)) (PostgreSQL); raw COPY / HTTP ingest = \(format(rawCPU.server / max(1e-9, http)))x")
                print("  of which the phase's own backends (no autovacuum, checkpointer, WAL writer): HTTP ingest "
                      + "\(cpu(ingestCPU.postgres.backends)), raw COPY \(cpu(rawCPU.backends)), parallel COPY \(cpu(parallelCPU.backends))")
            }

            // Statistics reads: one node, then two on the same database.
            let target = "/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=P1D&timeZone=UTC"
                + "&start=2026-01-01T00:00:00Z&end=2026-04-02T00:00:00Z"
            let probe = try BenchHTTPClient(port: nodeA.port).request("GET", target, token: token)
            guard probe.status == 200 else {
                print("statistics reads: not measured: GET returned \(probe.status): \(String(decoding: probe.body.prefix(300), as: UTF8.self))")
                return 0
            }
            let nodeB = try ServerProcess(executable: options.healthdPath, dataDirectory: options.workDirectory + "/node-b",
                                          extraArguments: ["--database", url, "--config", config])
            defer { nodeB.stop() }
            _ = try BenchHTTPClient(port: nodeB.port).request("GET", target, token: token)
            try readPhase(nodeA: nodeA, nodeB: nodeB, server: server, token: token, target: target, clients: options.readClients,
                          seconds: options.readSeconds, rounds: options.readRounds, pinnedRounds: options.pinnedRounds)
            return 0
        } catch {
            benchFail("\(error)")
        }
    }

    struct Throughput {
        var rate: Double
        var p50Milliseconds: Double
    }

    /// Samples each token POSTs before the clock starts.
    static let warmUpSamples = 100

    /// POSTs every body once, spread over `clients` keep-alive connections; client i uses token i mod tokens.count.
    static func ingest(port: Int, tokens: [String], bodies: [[UInt8]], clients: Int) throws -> Throughput {
        var warmUpGenerator = SampleGenerator(seed: 99)
        for (index, token) in tokens.enumerated() {
            let warmUp = try BenchHTTPClient(port: port).request("POST", "/v1/samples", token: token,
                                                                 body: warmUpGenerator.batchJSON(firstIndex: 100_000_000 + index * warmUpSamples,
                                                                                                count: warmUpSamples))
            guard warmUp.status == 201 else { throw BenchError("warm-up POST returned \(warmUp.status)") }
        }
        let latencies = Mutex<[UInt64]>([])
        let failures = Mutex<[String]>([])
        let samples = bodies.count
        let began = nanosecondsNow()
        onThreads(clients) { client in
            do {
                let connection = try BenchHTTPClient(port: port)
                let token = tokens[client % tokens.count]
                for batch in stride(from: client, to: samples, by: clients) {
                    let sent = nanosecondsNow()
                    let response = try connection.request("POST", "/v1/samples", token: token, body: bodies[batch])
                    guard response.status == 201 else {
                        throw BenchError("POST returned \(response.status): \(String(decoding: response.body.prefix(300), as: UTF8.self))")
                    }
                    latencies.withLock { $0.append(nanosecondsNow() - sent) }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        let seconds = Double(nanosecondsNow() - began) / 1e9
        if let failure = failures.withLock({ $0.first }) { throw BenchError(failure) }
        let perBatch = bodies.isEmpty ? 0 : (try? sampleCount(bodies[0])) ?? 0
        return Throughput(rate: Double(bodies.count * perBatch) / seconds, p50Milliseconds: LatencySummary(latencies.withLock { $0 }).p50)
    }

    private static func sampleCount(_ body: [UInt8]) throws -> Int {
        // Each sample object carries exactly one "type" key.
        let needle = Array("\"type\":".utf8)
        var count = 0
        var index = 0
        while index + needle.count <= body.count {
            if body[index] == needle[0], Array(body[index..<(index + needle.count)]) == needle { count += 1; index += needle.count } else { index += 1 }
        }
        return count
    }

    /// The rows the HTTP run stored (`source`: its database), in binary COPY form, for the COPY
    /// floors: byte for byte the same uuids, change numbers, types, devices, bodies (NULL where
    /// healthd stored none) and timeline, encoded before any clock starts, as the HTTP clients'
    /// JSON is. Per user (in user order): its warm-up rows, then its batches, each a run of
    /// `batchSize` change numbers, as one HTTP batch was.
    struct FloorRows {
        var warmUps: [PostgresCopyRows] = []
        var batchesOfUser: [[PostgresCopyRows]] = []

        init(from source: String, batchSize: Int, users: Int) throws {
            let stored = try PostgresConnection(url: source).query("""
                SELECT \(CopyColumn.selectList) FROM samples ORDER BY user_id, seq
                """)
            var byUser: [Int64: [Int]] = [:]
            var order: [Int64] = []
            for index in 0..<stored.rowCount {
                let user = try stored[index].int64(CopyColumn.userID)
                if byUser[user] == nil { order.append(user) }
                byUser[user, default: []].append(index)
            }
            guard order.count == users else { throw BenchError("the HTTP run stored samples of \(order.count) users, not \(users)") }
            for user in order {
                let indices = byUser[user] ?? []
                let warmUp = min(indices.count, PostgresBenchmark.warmUpSamples)
                warmUps.append(try PostgresBenchmark.encodedRows(stored, indices[..<warmUp]))
                batchesOfUser.append(try stride(from: warmUp, to: indices.count, by: batchSize).map { start in
                    try PostgresBenchmark.encodedRows(stored, indices[start..<min(indices.count, start + batchSize)])
                })
            }
        }

        /// Samples in the batches (the warm-up rows not counted).
        var total: Int { batchesOfUser.reduce(0) { $0 + $1.reduce(0) { $0 + $1.rowCount } } }
    }

    static let copySamples = """
        COPY samples (user_id, uuid, seq, type_id, source_id, device_id, start_ms, end_ms, value, parent_seq, created_ms, body)
        FROM STDIN (FORMAT binary)
        """

    /// A fresh database for a floor: the schema made by the store's migrations, exactly as healthd
    /// makes it, and each user's warm-up rows copied in (untimed, as the HTTP run's warm-up POSTs were).
    private static func floorDatabase(_ databases: Databases, rows: FloorRows) throws -> String {
        let url = try databases.fresh()
        PostgresHealthStoreFactory.close(try PostgresHealthStoreFactory.open(url: url))
        let setUp = try PostgresConnection(url: url)
        defer { setUp.close() }
        for warmUp in rows.warmUps where warmUp.rowCount > 0 { try setUp.copyIn(copySamples, rows: warmUp) }
        return url
    }

    /// The raw COPY floor, the plainest one: every batch of the HTTP run as one
    /// `COPY samples FROM STDIN (FORMAT binary)` statement of its own (autocommit: the COPY is its
    /// transaction), one after another over ONE connection, users' batches taking turns as the
    /// HTTP clients sent them. What PostgreSQL alone takes into the same table with no HTTP, JSON,
    /// validation, change numbering, bookkeeping or rollups, and no parallelism. Returns the rate
    /// and the server's CPU seconds over the timed copies (`server` nil: 0).
    static func rawCopy(_ databases: Databases, rows: FloorRows,
                        server: PostgresServerCPU?) throws -> (rate: Double, cpu: PostgresServerCPU.CPUSeconds) {
        let url = try floorDatabase(databases, rows: rows)
        let database = PostgresServerCPU.databaseName(of: url)
        let connection = try PostgresConnection(url: url)
        defer { connection.close() }
        _ = try connection.scalarInt64("SELECT 1")  // connected before the clock starts
        let rounds = rows.batchesOfUser.map(\.count).max() ?? 0
        let cpuBefore = server?.seconds(database: database) ?? PostgresServerCPU.CPUSeconds()
        let began = nanosecondsNow()
        for round in 0..<rounds {
            for batches in rows.batchesOfUser where round < batches.count {
                try connection.copyIn(copySamples, rows: batches[round])
            }
        }
        let seconds = Double(nanosecondsNow() - began) / 1e9
        return (Double(rows.total) / seconds, (server?.seconds(database: database) ?? PostgresServerCPU.CPUSeconds()) - cpuBefore)
    }

    /// The parallel COPY floor: the same batches, each one COPY in one transaction, over as many
    /// connections as the HTTP run had clients, the batches of user u spread over the connections
    /// writing for u (connection i copies for user i mod users, as HTTP client i wrote). Unlike
    /// healthd, it copies one user's batches in parallel: nothing orders them, while healthd
    /// commits one user's batches one at a time (`PostgresHealthStore.reserveChangeNumbers`).
    static func parallelCopy(_ databases: Databases, rows: FloorRows, clients: Int, users: Int,
                             server: PostgresServerCPU?) throws -> (rate: Double, cpu: PostgresServerCPU.CPUSeconds) {
        let url = try floorDatabase(databases, rows: rows)
        let database = PostgresServerCPU.databaseName(of: url)
        // Client i copies for user i mod users: the batches of that user at its turn among the user's clients.
        let work: [[PostgresCopyRows]] = (0..<clients).map { client in
            let user = client % users
            let peers = stride(from: user, to: clients, by: users).map { $0 }
            let turn = peers.firstIndex(of: client) ?? 0
            return stride(from: turn, to: rows.batchesOfUser[user].count, by: peers.count).map { rows.batchesOfUser[user][$0] }
        }
        let total = work.reduce(0) { $0 + $1.reduce(0) { $0 + $1.rowCount } }
        // Connected before the clock starts, as the HTTP clients' keep-alive connections were warmed up.
        let connections = ClientConnections(try (0..<clients).map { _ in try PostgresConnection(url: url) })
        defer { connections.all.forEach { $0.close() } }
        let failures = Mutex<[String]>([])
        let cpuBefore = server?.seconds(database: database) ?? PostgresServerCPU.CPUSeconds()
        let began = nanosecondsNow()
        onThreads(clients) { client in
            do {
                for batch in work[client] {
                    _ = try connections.all[client].transaction { try $0.copyIn(copySamples, rows: batch) }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        let seconds = Double(nanosecondsNow() - began) / 1e9
        let cpu = (server?.seconds(database: database) ?? PostgresServerCPU.CPUSeconds()) - cpuBefore
        if let failure = failures.withLock({ $0.first }) { throw BenchError(failure) }
        return (Double(total) / seconds, cpu)
    }

    /// One connection per client, each used by its own client's thread only.
    final class ClientConnections<Connection>: @unchecked Sendable {
        let all: [Connection]
        init(_ all: [Connection]) { self.all = all }
    }

    /// The columns of `samples` in its COPY order, as the recorded rows are read and sent back.
    enum CopyColumn: Int, TableColumns {
        case userID, uuid, seq, typeID, sourceID, deviceID, start, end, value, parentSeq, created, body

        static let table = "samples"

        var name: String {
            switch self {
            case .userID: "user_id"
            case .uuid: "uuid"
            case .seq: "seq"
            case .typeID: "type_id"
            case .sourceID: "source_id"
            case .deviceID: "device_id"
            case .start: "start_ms"
            case .end: "end_ms"
            case .value: "value"
            case .parentSeq: "parent_seq"
            case .created: "created_ms"
            case .body: "body"
            }
        }
    }

    /// Rows of a `samples` result (`CopyColumn`) in binary COPY form.
    private static func encodedRows(_ result: PostgresResult, _ indices: ArraySlice<Int>) throws -> PostgresCopyRows {
        var rows = PostgresCopyRows(reservingCapacity: indices.count * 128)
        for index in indices {
            let row = result[index]
            try rows.beginRow(fieldCount: CopyColumn.allCases.count)
            try rows.append(int64: try row.int64(CopyColumn.userID))
            try rows.append(uuid: try row.bytes(CopyColumn.uuid))
            try rows.append(int64: try row.int64(CopyColumn.seq))
            try rows.append(int32: Int32(truncatingIfNeeded: try row.int64(CopyColumn.typeID)))
            try rows.append(int32: Int32(truncatingIfNeeded: try row.int64(CopyColumn.sourceID)))
            if let device = try row.int64IfPresent(CopyColumn.deviceID) { try rows.append(int64: device) } else { try rows.appendNull() }
            try rows.append(int64: try row.int64(CopyColumn.start))
            try rows.append(int64: try row.int64(CopyColumn.end))
            if let value = try row.doubleIfPresent(CopyColumn.value) { try rows.append(double: value) } else { try rows.appendNull() }
            if let parent = try row.int64IfPresent(CopyColumn.parentSeq) { try rows.append(int64: parent) } else { try rows.appendNull() }
            try rows.append(int64: try row.int64(CopyColumn.created))
            if let body = try row.bytesIfPresent(CopyColumn.body) { try rows.append(bytes: body) } else { try rows.appendNull() }
        }
        return rows
    }

    /// The benchmark users and an app token each, made in the store before the server starts.
    static func tokens(_ store: some HealthDataStore, users: Int) throws -> [String] {
        let types: Set<String> = ["stepCount", "heartRate"]
        return try (0..<users).map { index in
            let user = try store.userCreatingIfNeeded(name: index == 0 ? "bench" : "bench-\(index + 1)")
            return try store.createAuthorization(user: user, app: "bench-phone", read: types, share: types).token
        }
    }

    /// Fresh databases on one server, dropped at the end.
    final class Databases {
        let base: String
        private var created: [String] = []

        init(base: String) { self.base = base }

        func serverVersion() throws -> String {
            try PostgresConnection(url: base).firstString("SELECT current_setting('server_version')") ?? "?"
        }

        func fresh() throws -> String {
            let name = "healthd_bench_\(getpid())_\(created.count)"
            try PostgresConnection(url: base).execute("CREATE DATABASE \(name)")
            created.append(name)
            let (head, query) = base.firstIndex(of: "?").map { (String(base[..<$0]), String(base[$0...])) } ?? (base, "")
            guard let slash = head.lastIndex(of: "/"), head[..<slash].hasSuffix(":") == false else {
                throw BenchError("--database needs a path naming a database: postgres://user@host:port/postgres")
            }
            return head[..<slash] + "/" + name + query
        }

        func dropAll() {
            guard let admin = try? PostgresConnection(url: base) else { return }
            for name in created { try? admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
        }
    }
}

/// Opens the PostgreSQL store the way `healthd serve --database` does, without its listener.
enum PostgresHealthStoreFactory {
    static func open(url: String) throws -> PostgresHealthStore { try PostgresHealthStore(url: url, maxConnections: 2, listen: false) }
    static func close(_ store: PostgresHealthStore) { store.close() }
}

/// CPU seconds used by a PostgreSQL server running on this machine: its postmaster's own, its
/// children's that have exited (cutime, cstime) and its live children's (backends, background
/// workers), from /proc. Nil when the server is not local (its backend's process is not ours to see).
struct PostgresServerCPU {
    let postmaster: Int32

    init?(url: String) {
        guard let connection = try? PostgresConnection(url: url),
              let backend = try? connection.scalarInt64("SELECT pg_backend_pid()") else { return nil }
        defer { connection.close() }
        guard let fields = Self.stat(Int32(truncatingIfNeeded: backend)), fields.count > 1, let parent = Int32(fields[1]),
              Self.stat(parent) != nil else { return nil }
        postmaster = parent
    }

    /// The fields of /proc/PID/stat after the command name (state is the first).
    static func stat(_ process: Int32) -> [Substring]? {
        guard let text = try? String(contentsOfFile: "/proc/\(process)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }

    /// The server's CPU seconds (`seconds()`) and those of its live backends connected to
    /// `database` alone (their process titles name it): the second leaves out the background
    /// processes (autovacuum, checkpointer, WAL writer), whose work lands in whichever phase
    /// happens to be running.
    func seconds(database: String) -> CPUSeconds {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var backends = 0.0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let process = Int32(name), let fields = Self.stat(process), fields.count > 12, Int32(fields[1]) == postmaster,
                  let title = try? String(contentsOfFile: "/proc/\(process)/cmdline", encoding: .utf8),
                  title.split(whereSeparator: { $0 == " " || $0 == "\0" }).contains(Substring(database)) else { continue }
            backends += (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        }
        return CPUSeconds(server: seconds(), backends: backends / ticks)
    }

    /// CPU seconds of the whole server and of one database's backends; subtracting two readings
    /// gives a phase's.
    struct CPUSeconds {
        var server = 0.0
        var backends = 0.0

        static func - (after: CPUSeconds, before: CPUSeconds) -> CPUSeconds {
            CPUSeconds(server: after.server - before.server, backends: after.backends - before.backends)
        }
    }

    /// The database a postgres:// URL names (its path).
    static func databaseName(of url: String) -> String {
        let head = url.firstIndex(of: "?").map { String(url[..<$0]) } ?? url
        return head.lastIndex(of: "/").map { String(head[head.index(after: $0)...]) } ?? head
    }

    func seconds() -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var total = 0.0
        // Fields after the name: ppid is the 2nd, utime the 12th, stime 13th, cutime 14th, cstime 15th.
        if let own = Self.stat(postmaster), own.count > 14 {
            total += [11, 12, 13, 14].reduce(0) { $0 + (Double(own[$1]) ?? 0) }
        }
        let children = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for name in children {
            guard let process = Int32(name), let fields = Self.stat(process), fields.count > 12,
                  Int32(fields[1]) == postmaster else { continue }
            total += (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        }
        return total / ticks
    }
}

/// The 1-minute load average (/proc/loadavg), written beside the figures.
func loadAverage() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init) ?? "?"
}
