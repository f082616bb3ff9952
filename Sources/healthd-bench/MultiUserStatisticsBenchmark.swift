import Foundation
import HealthModel
import HealthStore

/// `healthd-bench statistics-users [--users N] [--days N] [--budget MIB] [--healthd PATH] [--keep DIR]`:
/// many users' data written through `HealthStore.save` (steps from a phone and a watch whose samples
/// overlap, heart rate), then a real `healthd serve` started on that directory (a restart: nothing
/// cached), each user's dashboard asked once (cold) and then again (warm) over HTTP, and the
/// server's RSS read from /proc after each pass.
enum MultiUserStatisticsBenchmark {
    struct Options {
        var users = 24
        var days = 91
        var budgetMiB: Int?
        var healthdPath = ""
        var directory: String?
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
            case "--keep": options.directory = remaining.popFirst()
            default: benchFail("unknown option \(flag); usage: healthd-bench statistics-users [--users N] [--days N] [--budget MIB] [--healthd PATH] [--keep DIR]")
            }
        }
        guard FileManager.default.isExecutableFile(atPath: options.healthdPath) else {
            benchFail("no healthd binary at \(options.healthdPath) (build it: swift build -c release, or pass --healthd)")
        }
        do {
            try run(options)
            return 0
        } catch {
            FileHandle.standardError.write(Data("healthd-bench statistics-users: \(error)\n".utf8))
            return 1
        }
    }

    /// 2026-01-05T00:00:00-05:00, a Monday in New York.
    static let origin: Int64 = 1_767_589_200_000
    static let zone = "America/New_York"

    static func run(_ options: Options) throws {
        let directory = options.directory ?? NSTemporaryDirectory() + "healthd-bench-users-" + UUID().uuidString
        defer { if options.directory == nil { try? FileManager.default.removeItem(atPath: directory) } }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let slots = options.days * 720
        print("statistics-users: \(options.users) users x \(options.days) days; per user \(slots) phone and \(slots) watch step samples "
              + "(2-minute samples, the watch's shifted by 1 minute so every minute overlaps) and \(slots) heart-rate readings (every 2 minutes)")
        let store = try HealthStore(directory: directory, readers: 1)
        var tokens: [String] = []
        var generator = SplitMix64(seed: 2_026)
        let loadStart = StatisticsBenchmark.now()
        var saved = 0
        for index in 0..<options.users {
            let user = try store.createUser(name: "user\(index)")
            let types: Set<String> = ["stepCount", "heartRate"]
            let (phone, token) = try store.createAuthorization(user: user, app: "phone", read: types, share: types)
            let (watch, _) = try store.createAuthorization(user: user, app: "watch", read: types, share: types)
            tokens.append(token)
            for (app, shift) in [(phone, Int64(0)), (watch, Int64(60_000))] {
                var batch: [HealthSample] = []
                batch.reserveCapacity(10_000)
                for slot in 0..<slots {
                    let start = origin + Int64(slot) * 120_000 + shift
                    batch.append(HealthSample(uuid: .random(using: &generator), type: "stepCount", start: start, end: start + 120_000,
                                              content: .quantity(Double(generator.next() % 240))))
                    if batch.count == 10_000 { saved += try store.save(batch, by: app).count; batch.removeAll(keepingCapacity: true) }
                }
                if !batch.isEmpty { saved += try store.save(batch, by: app).count }
            }
            var batch: [HealthSample] = []
            batch.reserveCapacity(10_000)
            for slot in 0..<slots {
                let start = origin + Int64(slot) * 120_000 + 7_000
                batch.append(HealthSample(uuid: .random(using: &generator), type: "heartRate", start: start, end: start,
                                          content: .quantity(Double(50 + generator.next() % 100))))
                if batch.count == 10_000 { saved += try store.save(batch, by: watch).count; batch.removeAll(keepingCapacity: true) }
            }
            if !batch.isEmpty { saved += try store.save(batch, by: watch).count }
        }
        let loadSeconds = StatisticsBenchmark.seconds(since: loadStart)
        let maintenance = Double(store.rollupMaintenanceNanoseconds) / 1e9
        print(String(format: "loaded %d samples in %.1f s (%.0f samples/s through HealthStore.save); rollup maintenance %.1f s of it (%.1f %%)",
                     saved, loadSeconds, Double(saved) / loadSeconds, maintenance, 100 * maintenance / loadSeconds))
        store.close()
        let size = (try? FileManager.default.attributesOfItem(atPath: directory + "/healthd.sqlite")[.size] as? Int) ?? 0
        print(String(format: "database: %.0f MiB", Double(size) / 1_048_576))

        if let budget = options.budgetMiB { setenv("HEALTHD_STATISTICS_MEMORY_MIB", "\(budget)", 1) }
        let server = try ServerProcess(executable: options.healthdPath, dataDirectory: directory)
        defer { server.stop() }
        let client = try BenchHTTPClient(port: server.port)
        let idle = server.memory()
        print("server restarted (budget \(options.budgetMiB.map { "\($0) MiB" } ?? "default")); RSS idle \(mebibytes(idle.residentKiB))")
        let end = origin + Int64(options.days) * 86_400_000
        let range = "timeZone=\(zone)&start=\(StatisticsBenchmark.utc(origin))&end=\(StatisticsBenchmark.utc(end))"
        let dashboard: [(name: String, target: String)] = [
            ("daily steps, \(options.days) days", "/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=P1D&\(range)"),
            ("daily heart rate avg/min/max, \(options.days) days",
             "/v1/statistics/collection?type=heartRate&options=discreteAverage,discreteMin,discreteMax&interval=P1D&\(range)"),
        ]
        for pass in ["cold (first ask after the restart)", "warm (asked again)"] {
            var timings = dashboard.map { _ in [UInt64]() }
            for token in tokens {
                for (position, query) in dashboard.enumerated() {
                    let start = nanosecondsNow()
                    let response = try client.request("GET", query.target, token: token)
                    timings[position].append(nanosecondsNow() - start)
                    guard response.status == 200 else {
                        throw BenchError("\(query.target): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
                    }
                }
            }
            print("\(pass), each of \(tokens.count) users once, over HTTP:")
            for (position, query) in dashboard.enumerated() {
                print("  \(query.name): \(LatencySummary(timings[position]))")
            }
            let memory = server.memory()
            print("  server RSS \(mebibytes(memory.residentKiB)), VmHWM \(mebibytes(memory.peakKiB))")
        }
    }
}
