import Foundation

// healthd-bench SUBCOMMAND [options]: in-process benchmarks; build with -c release.
let benchmarkArguments = Array(CommandLine.arguments.dropFirst())
do {
    switch benchmarkArguments.first {
    case "statistics":
        try StatisticsBenchmark.run(Array(benchmarkArguments.dropFirst()))
    default:
        print("usage: healthd-bench statistics [--days N] [--repeats N] [--keep DIR] [--no-duckdb]")
        exit(benchmarkArguments.isEmpty ? 0 : 2)
    }
} catch {
    FileHandle.standardError.write(Data("healthd-bench: \(error)\n".utf8))
    exit(1)
}
