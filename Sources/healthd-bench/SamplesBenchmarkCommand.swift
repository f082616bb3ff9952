import SQLiteStore
import Foundation

/// `samples`, `sqlite-baseline`, `samples-write`, `samples-read`: the samples API's numbers (BENCHMARKS.md, Samples: ingest and Samples: reads).
enum SamplesBenchmarkCommand {
    static func run(_ command: String, _ arguments: [String]) -> Int32 {
        var arguments = arguments
        var options = SamplesBenchmarkOptions()
        let executableDirectory = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                                      ?? CommandLine.arguments[0]).deletingLastPathComponent().path
        options.healthdPath = executableDirectory + "/healthd"
        while !arguments.isEmpty {
            let flag = arguments.removeFirst()
            func value() -> String {
                guard !arguments.isEmpty else { benchFail("\(flag) needs a value") }
                return arguments.removeFirst()
            }
            func number() -> Int {
                let text = value()
                guard let number = Int(text), number > 0 else { benchFail("\(flag) takes a positive number, not '\(text)'") }
                return number
            }
            switch flag {
            case "--healthd": options.healthdPath = value()
            case "--work-dir": options.workDirectory = value(); options.workDirectoryGiven = true
            case "--clients": options.clients = number()
            case "--batches": options.batches = number()
            case "--batch-size": options.batchSize = number()
            case "--store-samples": options.storeSamples = number()
            case "--random-pages": options.randomPages = number()
            case "--walks": options.walks = number()
            case "--walk-pages": options.walkPages = number()
            case "--uuids":
                let text = value()
                if text == "both" {
                    options.uuidSources = SamplesBenchmark.UUIDSource.allCases
                } else if let source = SamplesBenchmark.UUIDSource(rawValue: text) {
                    options.uuidSources = [source]
                } else {
                    benchFail("--uuids takes client, server or both, not '\(text)'")
                }
            case "--shapes":
                let names = value().split(separator: ",").map(String.init)
                options.shapes = names.map { name in
                    guard let shape = SamplesBenchmark.TableShape.allCases.first(where: { $0.short == name }) else {
                        benchFail("--shapes takes \(SamplesBenchmark.TableShape.allCases.map(\.short).joined(separator: ",")), not '\(name)'")
                    }
                    return shape
                }
            case "--run-fanout": options.runFanout = number()
            case "--keep": options.keep = true
            case "--help", "-h":
                print(samplesUsage)
                exit(0)
            default: benchFail("unknown option '\(flag)'\n\(samplesUsage)")
            }
        }
        if options.workDirectory.isEmpty {
            options.workDirectory = NSTemporaryDirectory() + "healthd-bench-\(getpid())"
        }
        guard FileManager.default.isExecutableFile(atPath: options.healthdPath) || command == "sqlite-baseline" || command == "seed-store" else {
            benchFail("no healthd binary at \(options.healthdPath) (build it: swift build -c release, or pass --healthd)")
        }
        print("healthd-bench \(command): \(ProcessInfo.processInfo.activeProcessorCount) cores, work dir \(options.workDirectory)")

        do {
            switch command {
            case "samples", "ingest":
                // Both floors: the samples table as it is, and the same table without its uuid index.
                let baseline = try SamplesBenchmark.sqliteBaseline(options, shape: .uuidIndex)
                let withoutUUIDIndex = try SamplesBenchmark.sqliteBaseline(options, shape: .noUUIDIndex)
                if command == "ingest" {
                    // The other table shapes for uuid idempotency, beside both floors in the same run.
                    for shape in options.shapes where shape != .uuidIndex && shape != .noUUIDIndex {
                        let rate = try SamplesBenchmark.sqliteBaseline(options, shape: shape)
                        print("  / unique (user, uuid) index: \(format(rate / baseline)) x; / no uuid index: \(format(rate / withoutUUIDIndex)) x")
                    }
                }
                for source in options.uuidSources {
                    let api = try SamplesBenchmark.write(options, uuids: source)
                    print("  API (\(source.rawValue) uuids) / raw SQLite: \(format(100 * api / baseline, decimals: 0)) %; "
                          + "/ raw SQLite without a uuid index: \(format(100 * api / withoutUUIDIndex, decimals: 0)) %")
                }
                if command == "ingest" { _ = try SamplesBenchmark.storeSaves(options) }
                if command == "samples" { try SamplesBenchmark.read(options) }
            case "sqlite-baseline":
                // Both floors first, each other shape as a ratio to them.
                let baseline = try SamplesBenchmark.sqliteBaseline(options, shape: .uuidIndex)
                let withoutUUIDIndex = try SamplesBenchmark.sqliteBaseline(options, shape: .noUUIDIndex)
                for shape in options.shapes where shape != .uuidIndex && shape != .noUUIDIndex {
                    let rate = try SamplesBenchmark.sqliteBaseline(options, shape: shape)
                    print("  / unique (user, uuid) index: \(format(rate / baseline)) x; / no uuid index: \(format(rate / withoutUUIDIndex)) x")
                }
            case "samples-write":
                for source in options.uuidSources { _ = try SamplesBenchmark.write(options, uuids: source) }
            case "samples-read": try SamplesBenchmark.read(options)
            case "seed-store":
                guard !options.workDirectory.isEmpty, options.workDirectoryGiven else { benchFail("seed-store needs --work-dir") }
                let token = try SamplesBenchmark.seedStore(directory: options.workDirectory, samples: options.storeSamples,
                                                           batchSize: options.batchSize, log: "seed-store")
                print("token: \(token)")
            default: benchFail("unknown command '\(command)'\n\(samplesUsage)")
            }
        } catch {
            benchFail("\(error)")
        }
        return 0
    }
}

let samplesUsage = """
    usage: healthd-bench COMMAND [options]

    commands:
      samples           sqlite-baseline, samples-write and samples-read in one run
      sqlite-baseline   raw SQLite inserts into a samples-shaped table (WAL, synchronous=FULL), one run per
                        table shape for uuid idempotency (none, today's index, 64-bit keys, clustered)
      ingest            both raw floors, the other table shapes, samples-write, then SQLiteHealthStore.save in
                        process with statistics rollup maintenance incremental, re-reading days, and off
      samples-write     POST /v1/samples batches from concurrent keep-alive clients
      samples-read      GET /v1/samples pages of 1,000 from a large store
      seed-store        fill --work-dir with --store-samples samples (kept if already there) and print
                        an app token that reads them (Benchmarks/http.sh serves it)

    options:
      --healthd PATH      the healthd binary (default: next to this one)
      --work-dir DIR      where data directories go (default: a new temporary directory)
      --clients N         concurrent client connections for writes (default 4)
      --batches N         batches to POST (default 40)
      --batch-size N      samples per batch (default 10000)
      --store-samples N   samples in the read benchmark's store (default 5000000; kept and reused)
      --random-pages N    random-start pages to time (default 400)
      --walks N           cursor walks to time (default 20), each --walk-pages pages (default 10)
      --uuids MODE        samples-write: client (random v4 uuid on every sample, as a syncing app),
                          server (no uuid; the server assigns time-ordered v7 ones) or both (default)
      --shapes LIST       sqlite-baseline, ingest: the uuid table shapes besides both floors, comma-separated
                          (floor, index, key-index, key-table, recent-main, clustered, runs; default all)
      --run-fanout N      the runs shape: runs of a level merged into one at the next (default 8)
      --keep              keep the write and baseline data directories
    """


func benchFail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("healthd-bench: \(message)\n".utf8))
    exit(1)
}
