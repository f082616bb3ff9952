import HealthdSettings
import Dispatch
import Foundation
import HTTP
import HealthAPI
import HealthModel
import HealthStore
import SQLiteStore
import SQLite
import Synchronization
import Primitives

/// `healthd-bench statistics [--days N] [--repeats N] [--keep DIR]`: one user with a year of per-minute
/// steps from two overlapping sources and heart rate every 10 s, saved through `SQLiteHealthStore.save`;
/// then statistics queries through the real route handlers (`HealthApplication`), timed cold and warm,
/// against SQLite `GROUP BY` over the raw rows and (when installed) DuckDB over the same rows.
enum StatisticsBenchmark {
    struct Options {
        var days = 366
        var repeats = 200
        var directory: String?
        var duckDB = true
    }

    static func main(_ arguments: [String]) -> Int32 {
        do {
            try run(arguments)
            return 0
        } catch {
            FileHandle.standardError.write(Data("healthd-bench statistics: \(error)\n".utf8))
            return 1
        }
    }

    static func run(_ arguments: [String]) throws {
        var options = Options()
        var remaining = arguments[...]
        while let flag = remaining.popFirst() {
            switch flag {
            case "--days": options.days = Int(remaining.popFirst() ?? "") ?? options.days
            case "--repeats": options.repeats = Int(remaining.popFirst() ?? "") ?? options.repeats
            case "--keep": options.directory = remaining.popFirst()
            case "--no-duckdb": options.duckDB = false
            default: throw StatisticsBenchmarkError("unknown option \(flag); usage: healthd-bench statistics [--days N] [--repeats N] [--keep DIR] [--no-duckdb]")
            }
        }
        let directory = options.directory ?? NSTemporaryDirectory() + "healthd-bench-statistics-" + UUID().uuidString
        defer { if options.directory == nil { try? FileManager.default.removeItem(atPath: directory) } }
        let store = try SQLiteHealthStore(directory: directory, readers: 4)
        defer { store.close() }
        let admin = "bench-admin-token-0123456789abcdef"
        var configuration = HealthdConfiguration()
        configuration.dataDirectory = directory
        configuration.accessLog = false
        let application = HealthApplication(configuration: configuration, store: store, adminToken: admin, accessLog: nil)

        let user = try store.createUser(name: "bench")
        let types: Set<String> = ["stepCount", "heartRate"]
        let (iphone, token) = try store.createAuthorization(user: user, app: "iphone", read: types, share: types)
        let (watch, _) = try store.createAuthorization(user: user, app: "watch", read: types, share: types)

        // 2024-01-01T00:00:00+09:00 (Asia/Seoul).
        let origin: Int64 = 1_704_034_800_000
        let minutes = options.days * 1_440
        print("statistics benchmark: \(options.days) days; \(minutes * 2) step samples (2 overlapping sources), \(minutes * 6) heart-rate samples")
        var generator = SplitMix64(seed: 42)
        let loadStart = now()
        var saved = 0
        // Steps: the iPhone on whole minutes, the Watch on half minutes, so every minute overlaps.
        for (app, shift) in [(iphone, Int64(0)), (watch, Int64(30_000))] {
            var steps = BatchedSave(into: store, by: app)
            for minute in 0..<minutes {
                let start = origin + Int64(minute) * 60_000 + shift
                try steps.append(HealthSample(uuid: .random(using: &generator), type: "stepCount", start: start, end: start + 60_000,
                                              content: .quantity(Double(generator.next() % 120))))
            }
            saved += try steps.finish()
        }
        var heartRate = BatchedSave(into: store, by: watch)
        for tick in 0..<(minutes * 6) {
            let start = origin + Int64(tick) * 10_000
            try heartRate.append(HealthSample(uuid: .random(using: &generator), type: "heartRate", start: start, end: start,
                                              content: .quantity(Double(50 + generator.next() % 100))))
        }
        saved += try heartRate.finish()
        let loadSeconds = seconds(since: loadStart)
        print(String(format: "loaded %d samples in %.1f s (%.0f samples/s)", saved, loadSeconds, Double(saved) / loadSeconds))

        let yearEnd = origin + Int64(options.days) * 86_400_000
        let june: Int64 = 1_717_167_600_000  // 2024-06-01T00:00:00+09:00
        let queries: [(name: String, target: String)] = [
            ("daily step sums, \(options.days) days, Asia/Seoul",
             "/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=P1D&timeZone=Asia/Seoul&start=\(utc(origin))&end=\(utc(yearEnd))"),
            ("hourly step sums, 30 days, Asia/Seoul",
             "/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=PT1H&timeZone=Asia/Seoul&start=\(utc(june))&end=\(utc(june + 30 * 86_400_000))"),
            ("daily heart rate avg/min/max, \(options.days) days, Asia/Seoul",
             "/v1/statistics/collection?type=heartRate&options=discreteAverage,discreteMin,discreteMax&interval=P1D&timeZone=Asia/Seoul&start=\(utc(origin))&end=\(utc(yearEnd))"),
        ]
        print("\nthrough HealthApplication (route handler, auth, JSON), rollup rows per (user, type, day):")
        // The process's first statistics request pays one-time costs (the zone's rules, code paged
        // in): a day before the data takes them, so the cold figures below are the year's rows.
        let before = origin - 30 * 86_400_000
        let firstRequest = try timedRequest(application,
            "/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=P1D&timeZone=Asia/Seoul&start=\(utc(before))&end=\(utc(before + 86_400_000))",
            token: token)
        print(String(format: "  first request of the process (one day before the data, no rows): %.1f ms", firstRequest.milliseconds))
        for query in queries {
            let cold = try timedRequest(application, query.target, token: token)
            var samples: [Double] = []
            var bytes = 0
            for _ in 0..<options.repeats {
                let result = try timedRequest(application, query.target, token: token)
                samples.append(result.milliseconds)
                bytes = result.bytes
            }
            // Cold again: the decoded series dropped before each run, so every run reads and decodes
            // the rows (SQLite's page cache stays as warm as it was for the first).
            var colds: [Double] = []
            for _ in 0..<max(5, options.repeats / 10) {
                store.dropStatisticsIndexes()
                colds.append(try timedRequest(application, query.target, token: token).milliseconds)
            }
            print(String(format: "  %@: cold %.1f ms (cold again, %d runs: p50 %.1f ms); warm p50 %.2f ms, p99 %.2f ms (%d bytes)",
                         query.name, cold.milliseconds, colds.count, percentile(colds, 0.5),
                         percentile(samples, 0.5), percentile(samples, 0.99), bytes))
        }
        print(String(format: "  index memory: %.1f MiB", Double(store.statisticsIndexMemoryBytes) / 1_048_576))

        print("\nbaseline: SQLite GROUP BY over the raw rows (index on user, type, start; no pro-rating, no source merging):")
        let database = try Database(path: store.databasePath, mode: .readOnly)
        defer { database.close() }
        let stepCode = try database.scalarInt64("SELECT id FROM type_codes WHERE name = 'stepCount'") ?? 0
        let heartCode = try database.scalarInt64("SELECT id FROM type_codes WHERE name = 'heartRate'") ?? 0
        let seoul: Int64 = 9 * 3_600_000
        let baselines: [(name: String, sql: String, values: [SQLValue])] = [
            ("daily step sums", "SELECT (start_ms + \(seoul)) / 86400000 AS d, sum(value) FROM samples WHERE user_id = ? AND type_id = ? AND start_ms >= ? AND start_ms < ? GROUP BY d",
             [.integer(user.rowID), .integer(stepCode), .integer(origin), .integer(yearEnd)]),
            ("hourly step sums", "SELECT (start_ms + \(seoul)) / 3600000 AS h, sum(value) FROM samples WHERE user_id = ? AND type_id = ? AND start_ms >= ? AND start_ms < ? GROUP BY h",
             [.integer(user.rowID), .integer(stepCode), .integer(june), .integer(june + 30 * 86_400_000)]),
            ("daily heart rate avg/min/max", "SELECT (start_ms + \(seoul)) / 86400000 AS d, avg(value), min(value), max(value) FROM samples WHERE user_id = ? AND type_id = ? AND start_ms >= ? AND start_ms < ? GROUP BY d",
             [.integer(user.rowID), .integer(heartCode), .integer(origin), .integer(yearEnd)]),
        ]
        let baselineRepeats = max(3, options.repeats / 20)
        for baseline in baselines {
            var samples: [Double] = []
            var rows = 0
            for _ in 0..<baselineRepeats {
                let start = now()
                rows = try database.map(baseline.sql, baseline.values) { try $0.int64(BaselineColumn.bucket) }.count
                samples.append(seconds(since: start) * 1000)
            }
            print(String(format: "  %@: p50 %.1f ms, p99 %.1f ms (%d groups, %d runs)", baseline.name, percentile(samples, 0.5),
                         percentile(samples, 0.99), rows, baselineRepeats))
        }

        if options.duckDB { runDuckDB(databasePath: store.databasePath, userRowID: user.rowID, origin: origin, yearEnd: yearEnd, june: june) }

        print("\nwrite throughput (10,000-sample batches of steps through SQLiteHealthStore.save):")
        var day = yearEnd + 86_400_000
        // Saves rewrite the touched days' rollup rows whether or not a decoded series is cached;
        // alternating the order keeps WAL growth and checkpoints from favouring either side.
        for (round, order) in [(1, [false, true]), (2, [true, false]), (3, [false, true])] {
            for cached in order {
                if cached {
                    _ = try timedRequest(application, queries[0].target, token: token)  // a decoded series is cached
                } else {
                    store.dropStatisticsIndexes()
                }
                let batches = 20
                let start = now()
                for _ in 0..<batches {
                    let samples = (0..<10_000).map { index -> HealthSample in
                        let begin = day + Int64(index) * 60_000
                        return HealthSample(uuid: .random(using: &generator), type: "stepCount", start: begin, end: begin + 60_000,
                                            content: .quantity(Double(generator.next() % 120)))
                    }
                    day += 10_000 * 60_000
                    _ = try store.save(samples, by: iphone)
                }
                let elapsed = seconds(since: start)
                var catchUp = ""
                if cached {
                    let applied = try timedRequest(application, queries[0].target, token: token)
                    catchUp = String(format: "; the next query applied the %d new samples in %.1f ms", batches * 10_000, applied.milliseconds)
                }
                print(String(format: "  round %d, index %@: %.0f samples/s%@", round, cached ? "cached" : "not cached",
                             Double(batches * 10_000) / elapsed, catchUp))
            }
        }
    }

    static func runDuckDB(databasePath: String, userRowID: Int64, origin: Int64, yearEnd: Int64, june: Int64) {
        let script = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            .appendingPathComponent("Benchmarks/statistics_duckdb.py").path
        print("\nbaseline: DuckDB (\(script)):")
        guard FileManager.default.fileExists(atPath: script) else {
            print("  skipped: run from the repository root")
            return
        }
        fflush(nil)  // the child writes to the same stdout: flush ours first to keep the order
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, databasePath, "\(userRowID)", "\(origin)", "\(yearEnd)", "\(june)"]
        do {
            try process.run()
            process.waitUntilExit()
        } catch {
            print("  skipped: \(error)")
        }
    }

    static func timedRequest(_ application: HealthApplication, _ target: String, token: String) throws -> (milliseconds: Double, bytes: Int) {
        var headers = HTTPHeaders()
        headers.add("Host", "bench")
        headers.add("Authorization", "Bearer \(token)")
        let request = HTTPRequest(method: .get, target: target, headers: headers)
        let result = Mutex<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        let start = now()
        application.respond(to: request, connection: ConnectionInfo(id: 1, remoteAddress: "127.0.0.1")) { response in
            result.withLock { $0 = response }
            done.signal()
        }
        done.wait()
        let elapsed = seconds(since: start) * 1000
        guard let response = result.withLock({ $0 }), response.status.code == 200 else {
            throw StatisticsBenchmarkError("\(target) failed: \(result.withLock { $0 }.map { "\($0.status.code)" } ?? "no response")")
        }
        if case .bytes(let bytes) = response.body { return (elapsed, bytes.count) }
        return (elapsed, 0)
    }

    static func utc(_ instant: Int64) -> String { RFC3339.format(instant) }

    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    static func seconds(since start: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 }

    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))
        return sorted[index]
    }
}

struct StatisticsBenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
