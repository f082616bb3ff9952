import Foundation

// healthd-bench: benchmarks and accuracy reports. Each subcommand prints its figures with the
// command and machine, ready for BENCHMARKS.md. Run release builds:
//   swift run -c release healthd-bench <command> [options]

let arguments = Array(CommandLine.arguments.dropFirst())
let commands: [(name: String, summary: String, run: ([String]) -> Int32)] = [
    ("pedometer-accuracy", "step-count error over a folder of traces with ground truth (default: ../shared/datasets/oxford-steps)",
     PedometerAccuracyReport.run),
    ("imu-ingest", "POST /v1/ingest/imu end to end (JSON parse, pedometer, durable save): samples/s", IMUIngestBenchmark.run),
    ("health-auto-export", "a month of Health Auto Export's per-minute export through its route, against POST /v1/samples: samples/s",
     HealthAutoExportBenchmark.run),
    ("samples", "sqlite-baseline, samples-write and samples-read in one run", { SamplesBenchmarkCommand.run("samples", $0) }),
    ("ingest", "random-uuid ingest: samples-write beside both raw SQLite floors (with and without the uuid index) and the other table shapes",
     { SamplesBenchmarkCommand.run("ingest", $0) }),
    ("sqlite-baseline", "raw SQLite inserts into a samples-shaped table (WAL, synchronous=FULL), one run per uuid table shape", { SamplesBenchmarkCommand.run("sqlite-baseline", $0) }),
    ("samples-write", "POST /v1/samples batches from concurrent keep-alive clients", { SamplesBenchmarkCommand.run("samples-write", $0) }),
    ("samples-decode", "CPU per sample of a POST /v1/samples body: general path and byte-level decoder, one thread", SampleDecodeBenchmark.run),
    ("samples-read", "GET /v1/samples pages of 1,000 from a large store", { SamplesBenchmarkCommand.run("samples-read", $0) }),
    ("http-serve", "healthd's server and application in this process without dispatchMain, for valgrind (Benchmarks/http-instructions.sh)",
     InProcessServer.serve),
    ("seed-store", "fill --work-dir with --store-samples samples and print an app token (for Benchmarks/http.sh)",
     { SamplesBenchmarkCommand.run("seed-store", $0) }),
    ("changes", "change feed: catch-up changes/s over HTTP, long-poll and SSE write-to-wake latency with idle subscribers",
     ChangeFeedBenchmark.run),
    ("statistics", "statistics through the route handlers over a year of steps (2 sources) and heart rate, cold and warm, "
     + "vs SQLite GROUP BY and DuckDB; write throughput with and without cached indexes", StatisticsBenchmark.main),
    ("statistics-users", "many users' dashboards after a restart: daily steps (2 overlapping sources) and heart rate, cold and warm "
     + "over HTTP, server RSS; rollup maintenance share of the load", MultiUserStatisticsBenchmark.run),
    ("postgres", "PostgreSQL beside SQLite: HTTP ingest vs raw binary COPY, statistics reads on two nodes vs one (--database URL)",
     PostgresBenchmark.run),
    ("key-compaction", "deleting half of one large user's samples: each delete request's latency, and another user's saves meanwhile",
     KeyCompactionBenchmark.run),
    ("workouts", "workout sessions: heart-rate POST with and without a zone session, POST-to-zone-event latency, end totals",
     WorkoutSessionBenchmark.run),
    ("webhooks", "webhooks: commit-to-delivery beside the event stream's wake-up, pages/s to one receiver, ingest with 10 slow or "
     + "dead receivers against none", WebhookBenchmark.run),
    ("password-hash", "one Argon2id password hash at the configured parameters beside OWASP's minimum, then sign-ins over HTTP",
     PasswordHashBenchmark.run),
]

@MainActor func usage() -> String {
    "Usage: healthd-bench COMMAND [OPTIONS]\n\nCommands:\n"
        + commands.map { "  \($0.name.padding(toLength: 20, withPad: " ", startingAt: 0)) \($0.summary)" }.joined(separator: "\n")
}

guard let name = arguments.first, let command = commands.first(where: { $0.name == name }) else {
    print(usage())
    exit(arguments.first == nil || arguments.first == "--help" ? 0 : 2)
}
exit(command.run(Array(arguments.dropFirst())))
