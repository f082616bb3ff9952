import Foundation
import HealthModel
import HealthStore
import SQLiteStore
import PostgreSQL
import PostgresStore
import SQLite
import Primitives

/// `healthd-bench statistics-users [--users N] [--days N] [--budget MIB] [--healthd PATH] [--keep DIR]
/// [--backend sqlite|postgres|both] [--postgres URL] [--no-duckdb] [--year-days N] [--baseline-healthd PATH] [--rounds N]
/// [--reuse DIR] [--drop-page-cache]`:
/// many users' data written through the store's `save` (steps from a phone and a watch whose samples
/// overlap, heart rate), then a real `healthd serve` started on that store (a restart: nothing
/// cached), each user's dashboard asked once (cold) and then again (warm) over HTTP, and the
/// server's RSS read from /proc after each pass. Each pass also times `GET /healthz` on the same
/// server and connection: the HTTP round trip every figure is given as a multiple of. The server's
/// `/metrics` give the statistics cache's hits, misses and evictions after each pass. On SQLite the
/// same dashboards then run as raw SQLite `GROUP BY` over the samples (a fresh connection, then
/// again) and, where DuckDB is installed, in DuckDB (`Benchmarks/statistics_users_duckdb.py`: a
/// database file closed and opened again, then each user once and again): the floors the healthd
/// figures are given as ratios of. One more user holds a year (`--year-days`, 365; 0 for none) of
/// the same data and is asked daily steps and daily heart rate over all of it, once per pass after
/// the dashboards: the year-long cold and warm figures, on each backend. With `--baseline-healthd`, that binary
/// (an older build) is restarted on the same data and asked the same passes first: a before/after
/// comparison under the same load; `--rounds N` alternates the two N times and gives each figure's
/// median over the rounds, for a machine whose load moves single figures. Each pass also gives the CPU the server (and, on PostgreSQL, the
/// database server, when it runs on this machine) spent per request, from /proc.
///
/// `--drop-page-cache` drops the SQLite file's pages from the operating system's page cache
/// (`posix_fadvise(DONTNEED)` on that file only) before the cold pass and before each year-long
/// cold query, so "cold" also means read from the disk, not only a restarted server; the raw
/// SQLite floor's cold pass and cold year queries then start from the disk too. `--reuse DIR`
/// queries a SQLite store an earlier run kept (`--keep`) instead of loading one (same `--users`,
/// `--days`, `--year-days`): the server, whichever build `--healthd` names, opens it as it is, and
/// the tokens are made through its admin API; so two builds whose stores differ (a migration the
/// older one does not know) can be compared on copies of the same data.
///
/// PostgreSQL (`--postgres URL`, default `HEALTHD_TEST_POSTGRES_URL`) gets a database of its own,
/// created for the run and dropped after it (kept with `--keep`); `both` runs SQLite and then PostgreSQL on the same data
/// and prints them side by side.
enum MultiUserStatisticsBenchmark {
    enum Backend: String { case sqlite, postgres, both }

    struct Options {
        var users = 24
        var days = 91
        var budgetMiB: Int?
        var healthdPath = ""
        var baselinePath: String?
        var rounds = 1
        var directory: String?
        var backend = Backend.sqlite
        var postgresURL = ProcessInfo.processInfo.environment["HEALTHD_TEST_POSTGRES_URL"]
        var duckDB = true
        /// Days of data of the one extra user asked the year-long queries (0: none).
        var yearDays = 365
        /// A kept SQLite store to query instead of loading one.
        var reuse: String?
        var dropPageCache = false
    }

    /// One pass's figures of one backend (milliseconds), for the side-by-side table.
    struct Figures {
        var backend: String
        var pass: String
        var floor: LatencySummary
        var queries: [(name: String, latency: LatencySummary)]
    }

    static func run(_ arguments: [String]) -> Int32 {
        var options = Options()
        let executableDirectory = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                                      ?? CommandLine.arguments[0]).deletingLastPathComponent().path
        options.healthdPath = executableDirectory + "/healthd"
        var remaining = arguments[...]
        while let flag = remaining.popFirst() {
            func number() -> Int {
                guard let text = remaining.popFirst(), let value = Int(text), value > 0 else { benchFail("\(flag) takes a positive number") }
                return value
            }
            switch flag {
            case "--users": options.users = number()
            case "--days": options.days = number()
            case "--budget": options.budgetMiB = number()
            case "--healthd": options.healthdPath = remaining.popFirst() ?? options.healthdPath
            case "--baseline-healthd": options.baselinePath = remaining.popFirst()
            case "--rounds": options.rounds = number()
            case "--keep": options.directory = remaining.popFirst()
            case "--backend":
                guard let text = remaining.popFirst(), let backend = Backend(rawValue: text) else {
                    benchFail("--backend takes sqlite, postgres or both")
                }
                options.backend = backend
            case "--postgres": options.postgresURL = remaining.popFirst()
            case "--no-duckdb": options.duckDB = false
            case "--reuse": options.reuse = remaining.popFirst()
            case "--drop-page-cache": options.dropPageCache = true
            case "--year-days":
                guard let text = remaining.popFirst(), let value = Int(text), value >= 0 else { benchFail("--year-days takes a number (0: no year user)") }
                options.yearDays = value
            default: benchFail("unknown option \(flag); usage: healthd-bench statistics-users [--users N] [--days N] [--budget MIB] [--healthd PATH] [--keep DIR] [--backend sqlite|postgres|both] [--postgres URL] [--no-duckdb] [--year-days N] [--baseline-healthd PATH] [--rounds N] [--reuse DIR] [--drop-page-cache]")
            }
        }
        guard FileManager.default.isExecutableFile(atPath: options.healthdPath) else {
            benchFail("no healthd binary at \(options.healthdPath) (build it: swift build -c release, or pass --healthd)")
        }
        if options.reuse != nil, options.backend != .sqlite { benchFail("--reuse takes a SQLite store: use --backend sqlite") }
        if options.backend != .sqlite, options.postgresURL?.isEmpty ?? true {
            benchFail("PostgreSQL needs --postgres URL (or HEALTHD_TEST_POSTGRES_URL); start one with Tests/postgres/cluster.sh start")
        }
        do {
            var figures: [Figures] = []
            if options.backend != .postgres { figures += try run(options, postgres: nil) }
            if options.backend != .sqlite, let url = options.postgresURL { figures += try run(options, postgres: url) }
            printSideBySide(figures)
            return 0
        } catch {
            FileHandle.standardError.write(Data("healthd-bench statistics-users: \(error)\n".utf8))
            return 1
        }
    }

    /// 2026-01-05T00:00:00-05:00, a Monday in New York.
    static let origin: Int64 = 1_767_589_200_000
    static let zone = "America/New_York"

    static func run(_ options: Options, postgres adminURL: String?) throws -> [Figures] {
        let backend = adminURL == nil ? "SQLite" : "PostgreSQL"
        let directory = options.reuse ?? options.directory ?? NSTemporaryDirectory() + "healthd-bench-users-" + UUID().uuidString
        defer { if options.directory == nil, options.reuse == nil { try? FileManager.default.removeItem(atPath: directory) } }
        var database: BenchDatabase?
        // With --keep the PostgreSQL database stays too, for EXPLAIN and profiling afterwards.
        defer { if options.directory == nil { database?.drop() } else if let database { print("kept database \(database.url)") } }
        var tokens: [String] = []
        var userRowIDs: [Int64] = []
        var yearUser: (token: String, rowID: Int64, saved: Int)?
        if options.reuse == nil {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let store: any HealthDataStore
            if let adminURL {
                let created = try BenchDatabase(adminURL: adminURL)
                database = created
                store = try PostgresHealthStore(url: created.url, listen: false)
            } else {
                store = try SQLiteHealthStore(directory: directory, readers: 1)
            }
            let slots = options.days * 720
            print("statistics-users on \(backend): \(options.users) users x \(options.days) days; per user \(slots) phone and \(slots) watch step samples "
                  + "(2-minute samples, the watch's shifted by 1 minute so every minute overlaps) and \(slots) heart-rate readings (every 2 minutes)")
            var generator = SplitMix64(seed: 2_026)
            let loadStart = StatisticsBenchmark.now()
            var saved = 0
            for index in 0..<options.users {
                let user = try saveUser(store, name: "user\(index)", days: options.days, generator: &generator)
                tokens.append(user.token)
                userRowIDs.append(user.rowID)
                saved += user.saved
            }
            // One more user with a year of the same data, asked only for the year-long queries, so
            // their cold figure is a series nothing else read since the restart.
            if options.yearDays > 0 {
                let user = try saveUser(store, name: "year", days: options.yearDays, generator: &generator)
                saved += user.saved
                yearUser = user
                print("plus one user with \(options.yearDays) days of the same data, for the year-long queries")
            }
            let loadSeconds = StatisticsBenchmark.seconds(since: loadStart)
            if let sqlite = store as? SQLiteHealthStore {
                let maintenance = Double(sqlite.rollupMaintenanceNanoseconds) / 1e9
                print(String(format: "loaded %d samples in %.1f s (%.0f samples/s through SQLiteHealthStore.save); rollup maintenance %.1f s of it (%.1f %%)",
                             saved, loadSeconds, Double(saved) / loadSeconds, maintenance, 100 * maintenance / loadSeconds))
            } else {
                print(String(format: "loaded %d samples in %.1f s (%.0f samples/s through PostgresHealthStore.save, rollups included)",
                             saved, loadSeconds, Double(saved) / loadSeconds))
            }
            print(String(format: "database: %.0f MiB", Double(try store.storedBytes()) / 1_048_576))
            store.close()
            if let database {
                // What autovacuum would soon do after a bulk load, done now so its work does not land in the timed passes.
                let connection = try PostgresConnection(url: database.url)
                try connection.execute("VACUUM (ANALYZE)")
                connection.close()
                print("vacuumed and analyzed after the load")
            }
        } else {
            print("statistics-users on SQLite: the store kept in \(directory), \(options.users) users x \(options.days) days"
                  + (options.yearDays > 0 ? " and the year user (\(options.yearDays) days)" : ""))
        }

        if let budget = options.budgetMiB { setenv("HEALTHD_STATISTICS_MEMORY_MIB", "\(budget)", 1) }
        let end = origin + Int64(options.days) * 86_400_000
        let range = "timeZone=\(zone)&start=\(StatisticsBenchmark.utc(origin))&end=\(StatisticsBenchmark.utc(end))"
        let dashboard: [(name: String, target: String)] = [
            ("daily steps, \(options.days) days", "/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=P1D&\(range)"),
            ("daily heart rate avg/min/max, \(options.days) days",
             "/v1/statistics/collection?type=heartRate&options=discreteAverage,discreteMin,discreteMax&interval=P1D&\(range)"),
        ]
        let yearEnd = origin + Int64(options.yearDays) * 86_400_000
        let yearRange = "timeZone=\(zone)&start=\(StatisticsBenchmark.utc(origin))&end=\(StatisticsBenchmark.utc(yearEnd))"
        let yearQueries: [(name: String, target: String)] = options.yearDays == 0 ? [] : [
            ("daily steps, \(options.yearDays) days (one user)",
             "/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=P1D&\(yearRange)"),
            ("daily heart rate avg/min/max, \(options.yearDays) days (one user)",
             "/v1/statistics/collection?type=heartRate&options=discreteAverage,discreteMin,discreteMax&interval=P1D&\(yearRange)"),
        ]
        var figures: [Figures] = []
        let databaseCPU = database.flatMap { PostgresServerCPU(url: $0.url) }
        let pair = (options.baselinePath.map { [(" (baseline)", $0)] } ?? []) + [("", options.healthdPath)]
        let binaries = (0..<options.rounds).flatMap { _ in pair }
        for (label, executable) in binaries {
            let server = try ServerProcess(executable: executable, dataDirectory: directory,
                                           extraArguments: database.map { ["--database", $0.url] } ?? [])
            defer { server.stop() }
            let client = try BenchHTTPClient(port: server.port)
            if options.reuse != nil, tokens.isEmpty {
                // Tokens for the kept users, made by the server itself (their first tokens were shown once).
                let names = (0..<options.users).map { "user\($0)" } + (options.yearDays > 0 ? ["year"] : [])
                let kept = try Database(path: directory + "/healthd.sqlite", mode: .readOnly)
                defer { kept.close() }
                for name in names {
                    guard let rowID = try kept.firstInt64("SELECT id FROM users WHERE name = ?", [.text(name)]) else {
                        throw BenchError("no user \(name) in \(directory): was it kept with the same --users and --year-days?")
                    }
                    let body = "{\"user\":\"\(name)\",\"app\":\"phone\",\"read\":[\"stepCount\",\"heartRate\"]}"
                    let response = try client.request("POST", "/v1/authorizations", token: ServerProcess.adminToken, body: Array(body.utf8))
                    guard response.status == 201, let token = Self.stringField("token", in: response.body) else {
                        throw BenchError("POST /v1/authorizations: \(response.status) \(String(decoding: response.body, as: UTF8.self))")
                    }
                    if name == "year" { yearUser = (token, rowID, 0) } else {
                        tokens.append(token)
                        userRowIDs.append(rowID)
                    }
                }
            }
            let idle = server.memory()
            print("server\(label) \(executable) restarted (budget \(options.budgetMiB.map { "\($0) MiB" } ?? "default")); RSS idle \(mebibytes(idle.residentKiB))")
            let databasePath = directory + "/healthd.sqlite"
            let dropsPageCache = options.dropPageCache && adminURL == nil
            for pass in ["cold (first ask after the restart\(dropsPageCache ? ", the file's page cache dropped" : ""))", "warm (asked again)"] {
                let cold = pass.hasPrefix("cold")
                if cold, dropsPageCache { dropPageCache(databasePath) }
                let cpuBefore = (server: processCPUSeconds(server.process.processIdentifier), database: databaseCPU?.seconds())
                var timings = dashboard.map { _ in [UInt64]() }
                var floor: [UInt64] = []
                // Which asks of the warm pass read rows (their series not held): from the miss
                // counter, read between the timed requests.
                let warm = pass.hasPrefix("warm")
                var misses = 0.0
                if warm { misses = try cacheCounters(client)["misses_total"] ?? 0 }
                var missed: [String] = []
                for (user, token) in tokens.enumerated() {
                    let started = nanosecondsNow()
                    _ = try client.request("GET", "/healthz", token: nil)
                    floor.append(nanosecondsNow() - started)
                    for (position, query) in dashboard.enumerated() {
                        let start = nanosecondsNow()
                        let response = try client.request("GET", query.target, token: token)
                        timings[position].append(nanosecondsNow() - start)
                        guard response.status == 200 else {
                            throw BenchError("\(query.target): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
                        }
                        if warm, let now = try cacheCounters(client)["misses_total"], now > misses {
                            missed.append("user\(user) \(query.name.prefix { $0 != "," })")
                            misses = now
                        }
                    }
                }
                // The year-long queries after every dashboard: the year user's series, once each.
                var yearTimings: [UInt64] = []
                if let yearUser {
                    for query in yearQueries {
                        if cold, dropsPageCache { dropPageCache(databasePath) }
                        let start = nanosecondsNow()
                        let response = try client.request("GET", query.target, token: yearUser.token)
                        yearTimings.append(nanosecondsNow() - start)
                        guard response.status == 200 else {
                            throw BenchError("\(query.target): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
                        }
                    }
                }
                let requests = tokens.count * (1 + dashboard.count) + yearQueries.count
                let serverCPU = processCPUSeconds(server.process.processIdentifier) - cpuBefore.server
                var cpu = String(format: "healthd %.0f µs", serverCPU * 1e6 / Double(requests))
                if let before = cpuBefore.database, let after = databaseCPU?.seconds() {
                    cpu += String(format: " + PostgreSQL %.0f µs", (after - before) * 1e6 / Double(requests))
                }
                let floorSummary = LatencySummary(floor)
                print("\(pass)\(label), load average \(loadAverage()), CPU per request \(cpu) (\(requests) requests), each of \(tokens.count) users once, over HTTP (floor: GET /healthz \(floorSummary)):")
                for (position, query) in dashboard.enumerated() {
                    let summary = LatencySummary(timings[position])
                    print("  \(query.name): \(summary), p50 \(format(summary.p50 / floorSummary.p50, decimals: 1))x the floor")
                }
                for (position, query) in yearQueries.enumerated() {
                    let milliseconds = Double(yearTimings[position]) / 1e6
                    print("  \(query.name): \(format(milliseconds)) ms, \(format(milliseconds / floorSummary.p50, decimals: 1))x the floor")
                }
                let memory = server.memory()
                print("  server RSS \(mebibytes(memory.residentKiB)), VmHWM \(mebibytes(memory.peakKiB))")
                print("  statistics cache: " + (try cacheFigures(client)))
                if warm { print("  asks that read rows in this pass: " + (missed.isEmpty ? "none" : missed.joined(separator: "; "))) }
                figures.append(Figures(backend: backend + label, pass: pass.components(separatedBy: " ").first ?? pass, floor: floorSummary,
                                       queries: dashboard.enumerated().map { ($0.element.name, LatencySummary(timings[$0.offset])) }
                                           + yearQueries.enumerated().map { ($0.element.name, LatencySummary([yearTimings[$0.offset]])) }))
            }
        }
        if adminURL == nil {
            let year = yearUser.map { (rowID: $0.rowID, end: yearEnd) }
            let floors = try sqliteFloors(databasePath: directory + "/healthd.sqlite", users: userRowIDs, origin: origin, end: end, year: year,
                                          dropsPageCache: options.dropPageCache)
            var compared = floors
            if options.duckDB, let duck = duckDBFloors(databasePath: directory + "/healthd.sqlite", users: userRowIDs, origin: origin, end: end,
                                                        year: year) {
                compared.append(duck)
            }
            printRatios(figures, floors: compared)
        }
        return figures
    }

    /// One user's phone and watch steps (overlapping) and heart rate over `days`, saved through the
    /// store in 10,000-sample batches; returns the phone's token, the user's row id and the samples saved.
    static func saveUser(_ store: any HealthDataStore, name: String, days: Int,
                         generator: inout SplitMix64) throws -> (token: String, rowID: Int64, saved: Int) {
        let slots = days * 720
        var saved = 0
        let user = try store.createUser(name: name)
        let types: Set<String> = ["stepCount", "heartRate"]
        let (phone, token) = try store.createAuthorization(user: user, app: "phone", read: types, share: types)
        let (watch, _) = try store.createAuthorization(user: user, app: "watch", read: types, share: types)
        for (app, shift) in [(phone, Int64(0)), (watch, Int64(60_000))] {
            var steps = BatchedSave(into: store, by: app)
            for slot in 0..<slots {
                let start = origin + Int64(slot) * 120_000 + shift
                try steps.append(HealthSample(uuid: .random(using: &generator), type: "stepCount", start: start, end: start + 120_000,
                                              content: .quantity(Double(generator.next() % 240))))
            }
            saved += try steps.finish()
        }
        var heartRate = BatchedSave(into: store, by: watch)
        for slot in 0..<slots {
            let start = origin + Int64(slot) * 120_000 + 7_000
            try heartRate.append(HealthSample(uuid: .random(using: &generator), type: "heartRate", start: start, end: start,
                                              content: .quantity(Double(50 + generator.next() % 100))))
        }
        saved += try heartRate.finish()
        return (token, user.rowID, saved)
    }

    /// Drops the pages of the SQLite file (and its WAL) from the operating system's page cache, so
    /// the next reads go to the disk; other files' pages stay.
    static func dropPageCache(_ path: String) {
        for file in [path, path + "-wal"] {
            let descriptor = open(file, O_RDONLY)
            guard descriptor >= 0 else { continue }
            _ = posix_fadvise(descriptor, 0, 0, Int32(POSIX_FADV_DONTNEED))
            close(descriptor)
        }
    }

    /// A top-level string member of a JSON object (the bench's own answers only).
    static func stringField(_ name: String, in body: [UInt8]) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?[name] as? String
    }

    /// The server's statistics cache counters, from its `/metrics`.
    static func cacheFigures(_ client: BenchHTTPClient) throws -> String {
        let values = try cacheCounters(client)
        let hits = values["hits_total"] ?? 0
        let misses = values["misses_total"] ?? 0
        return String(format: "%.0f series, %.1f of %.0f MiB; since the start %.0f hits, %.0f misses (hit ratio %.2f), %.0f evictions, %.0f not kept",
                      values["series"] ?? 0, (values["bytes"] ?? 0) / 1_048_576, (values["budget_bytes"] ?? 0) / 1_048_576,
                      hits, misses, hits + misses > 0 ? hits / (hits + misses) : 0, values["evictions_total"] ?? 0,
                      values["rejections_total"] ?? 0)
    }

    /// The server's `healthd_statistics_cache_*` values by the rest of their names, from `/metrics`.
    static func cacheCounters(_ client: BenchHTTPClient) throws -> [String: Double] {
        let response = try client.request("GET", "/metrics", token: nil)
        var values: [String: Double] = [:]
        for line in String(decoding: response.body, as: UTF8.self).split(separator: "\n")
        where line.hasPrefix("healthd_statistics_cache_") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let value = Double(parts[1]) { values[String(parts[0].dropFirst("healthd_statistics_cache_".count))] = value }
        }
        return values
    }

    /// The middle value (the mean of the two middle ones for an even count); 0 for none.
    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    /// The 1-minute load average, from /proc/loadavg ("?" where it cannot be read).
    static func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first).map(String.init) ?? "?"
    }

    /// A floor's p50 per pass ("cold", "warm") and query position (0 steps, 1 heart rate; 2 and 3
    /// the year user's steps and heart rate over the year, one query each), in ms.
    struct Floor {
        var name: String
        var p50: [String: [Double]]
    }

    /// The UTC offset the floors group local days by: New York's standard time (the floors ignore DST).
    static let floorOffset: Int64 = -5 * 3_600_000

    /// Raw SQLite `GROUP BY` over each user's samples (no pro-rating, no source merging, no DST): a
    /// fresh read-only connection asked each user's dashboard once, then again.
    static func sqliteFloors(databasePath: String, users: [Int64], origin: Int64, end: Int64,
                             year: (rowID: Int64, end: Int64)?, dropsPageCache: Bool = false) throws -> [Floor] {
        // With --drop-page-cache the floor's cold pass and cold year queries read from the disk too.
        if dropsPageCache { dropPageCache(databasePath) }
        let database = try Database(path: databasePath, mode: .readOnly)
        defer { database.close() }
        let stepCode = try database.scalarInt64("SELECT id FROM type_codes WHERE name = 'stepCount'") ?? 0
        let heartCode = try database.scalarInt64("SELECT id FROM type_codes WHERE name = 'heartRate'") ?? 0
        let queries = [
            ("SELECT (start_ms + \(floorOffset)) / 86400000 AS d, sum(value) FROM samples WHERE user_id = ? AND type_id = ? AND start_ms >= ? AND start_ms < ? GROUP BY d", stepCode),
            ("SELECT (start_ms + \(floorOffset)) / 86400000 AS d, avg(value), min(value), max(value) FROM samples WHERE user_id = ? AND type_id = ? AND start_ms >= ? AND start_ms < ? GROUP BY d", heartCode),
        ]
        print("raw SQLite GROUP BY over the same samples (fixed offset, no pro-rating, no source merging), each user once, then again"
              + (dropsPageCache ? " (the file's page cache dropped before the cold pass and each cold year query):" : ":"))
        var floor = Floor(name: "SQLite GROUP BY", p50: [:])
        for pass in ["cold", "warm"] {
            var timings = queries.map { _ in [UInt64]() }
            for user in users {
                for (position, query) in queries.enumerated() {
                    let start = nanosecondsNow()
                    _ = try database.map(query.0, [.integer(user), .integer(query.1), .integer(origin), .integer(end)]) { try $0.int64(BaselineColumn.bucket) }
                    timings[position].append(nanosecondsNow() - start)
                }
            }
            let summaries = timings.map(LatencySummary.init)
            print("  \(pass): daily steps \(summaries[0]); daily heart rate \(summaries[1])")
            floor.p50[pass] = summaries.map(\.p50)
            if let year {
                // The year user over the whole year, once per pass.
                var once: [Double] = []
                for query in queries {
                    if pass == "cold", dropsPageCache { dropPageCache(databasePath) }
                    let start = nanosecondsNow()
                    _ = try database.map(query.0, [.integer(year.rowID), .integer(query.1), .integer(origin), .integer(year.end)]) { try $0.int64(BaselineColumn.bucket) }
                    once.append(Double(nanosecondsNow() - start) / 1e6)
                }
                print("  \(pass), the year user over the year: daily steps \(format(once[0])) ms; daily heart rate \(format(once[1])) ms")
                floor.p50[pass, default: []] += once
            }
        }
        return [floor]
    }

    /// DuckDB's cold and warm p50s from `Benchmarks/statistics_users_duckdb.py`, nil where it cannot run.
    static func duckDBFloors(databasePath: String, users: [Int64], origin: Int64, end: Int64, year: (rowID: Int64, end: Int64)?) -> Floor? {
        let script = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("Benchmarks/statistics_users_duckdb.py").path
        print("DuckDB (\(script)):")
        guard FileManager.default.fileExists(atPath: script) else {
            print("  skipped: run from the repository root")
            return nil
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, databasePath, "\(origin)", "\(end)", "\(floorOffset)"]
            + (year.map { ["--year=\($0.rowID):\($0.end)"] } ?? []) + users.map(String.init)
        let output = Pipe()
        process.standardOutput = output
        do {
            try process.run()
        } catch {
            print("  skipped: \(error)")
            return nil
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        var floor: Floor?
        for line in text.split(separator: "\n") {
            guard line.hasPrefix("JSON ") else {
                print(line)
                continue
            }
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.dropFirst(5).utf8)) as? [String: [String: Double]] else { continue }
            var p50: [String: [Double]] = [:]
            for (pass, queries) in object {
                p50[pass] = [queries["daily steps"] ?? .nan, queries["daily heart rate avg/min/max"] ?? .nan]
                if year != nil { p50[pass, default: []] += [queries["year daily steps"] ?? .nan, queries["year daily heart rate avg/min/max"] ?? .nan] }
            }
            floor = Floor(name: "DuckDB", p50: p50)
        }
        return floor
    }

    /// healthd's p50 over HTTP as a ratio of each floor's p50 in the same pass.
    static func printRatios(_ figures: [Figures], floors: [Floor]) {
        print("healthd (HTTP, exact: pro-rated, source-merged, DST-correct) as a ratio of each floor's p50 (below 1: healthd faster):")
        for run in figures {
            for (position, query) in run.queries.enumerated() {
                let cells = floors.compactMap { floor -> String? in
                    guard let p50s = floor.p50[run.pass], position < p50s.count, p50s[position] > 0, p50s[position].isFinite else { return nil }
                    let p50 = p50s[position]
                    return "\(format(query.latency.p50 / p50, decimals: 3))x \(floor.name) (\(format(p50)) ms)"
                }
                guard !cells.isEmpty else { continue }  // the floors time the dashboards only
                print("  \(run.pass) \(query.name): healthd \(format(query.latency.p50)) ms = " + cells.joined(separator: ", "))
            }
        }
    }

    /// Both backends' p50s (ms, and as multiples of that run's /healthz floor), one line per query and pass.
    static func printSideBySide(_ figures: [Figures]) {
        let backends = Array(Set(figures.map(\.backend))).sorted(by: >)
        guard backends.count > 1 || figures.count > 2 else { return }
        print("side by side (p50 ms, and x the same server's GET /healthz p50; with rounds, medians of both):")
        for pass in ["cold", "warm"] {
            guard let names = figures.first(where: { $0.pass == pass })?.queries.map(\.name) else { continue }
            for name in names {
                let cells = backends.compactMap { backend -> String? in
                    // Each round's p50 and its ratio to that pass's floor; the median of each over the rounds.
                    let values = figures.filter { $0.backend == backend && $0.pass == pass }.compactMap { run in
                        run.queries.first(where: { $0.name == name }).map { ($0.latency.p50, $0.latency.p50 / run.floor.p50) }
                    }
                    guard !values.isEmpty else { return nil }
                    var cell = "\(backend) \(format(median(values.map(\.0)))) ms (\(format(median(values.map(\.1)), decimals: 1))x)"
                    if values.count > 1 { cell += " [median of \(values.count): " + values.map { format($0.0) }.joined(separator: ", ") + "]" }
                    return cell
                }
                print("  \(pass) \(name): " + cells.joined(separator: " | "))
            }
        }
    }
}

/// A PostgreSQL database of the benchmark's own on the server `adminURL` names, dropped at the end.
final class BenchDatabase {
    let url: String
    private let adminURL: String
    private let name: String

    init(adminURL: String) throws {
        self.adminURL = adminURL
        name = "healthd_bench_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        guard var components = URLComponents(string: adminURL) else { throw BenchError("not a URL: \(adminURL)") }
        components.path = "/" + name
        guard let url = components.string else { throw BenchError("cannot name a database in \(adminURL)") }
        self.url = url
        let admin = try PostgresConnection(url: adminURL)
        defer { admin.close() }
        try admin.execute("CREATE DATABASE \(name)")
    }

    func drop() {
        guard let admin = try? PostgresConnection(url: adminURL) else { return }
        try? admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        admin.close()
    }
}

/// What the GROUP BY baselines read of each row: its group (the rest is left unread, as a client
/// that only counts the buckets would).
enum BaselineColumn: Int, TableColumns {
    case bucket

    static let table = "baseline"
}
