import Dispatch
import ClientThreads
import Foundation
import Glibc
import Synchronization

// `healthd-bench postgres`, its read phase: warm statistics reads from one healthd node, then from
// two nodes on the same database, alternated so that a change in the machine's load lands on both
// sides, each run printed with where the CPU went. On one machine the nodes, PostgreSQL and the
// clients share the same cores, so "two nodes" cannot be given twice the hardware; the pinned
// rounds emulate one machine per node instead (each node held to a core of its own, the same one
// core whether it runs alone or beside the other), and are labelled as such.

extension PostgresBenchmark {
    /// The figures of one timed run of reads.
    struct ReadRun {
        var requests: Int
        var seconds: Double
        var latency: LatencySummary
        /// CPU seconds over the run: each node, the PostgreSQL server (its process tree), this
        /// process (the load-generating clients).
        var nodeCPU: [Double]
        var postgresCPU: Double
        var clientCPU: Double
        /// Cores busy over the run on the whole machine (/proc/stat), other sessions' work included.
        var machineBusyCores: Double

        var rate: Double { Double(requests) / seconds }
        var ownCPU: Double { nodeCPU.reduce(0, +) + postgresCPU + clientCPU }
    }

    /// Runs the read phase and prints it: `rounds` alternations of one node (A) and two (A and B,
    /// clients split evenly), then, with two or more cores, `pinnedRounds` more with A held to
    /// core 0 and B to core 1. Every run is printed, then the medians.
    static func readPhase(nodeA: ServerProcess, nodeB: ServerProcess, server: PostgresServerCPU?, token: String, target: String,
                          clients: Int, seconds: Double, rounds: Int, pinnedRounds: Int) throws {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        print("statistics reads: 91 daily buckets of steps, warm, \(clients) keep-alive clients, \(format(seconds, decimals: 1)) s per run, "
              + "one node / two nodes alternated \(rounds) times")
        print("  (\(cores) cores shared by the nodes, PostgreSQL and the clients; CPU per request from /proc, 10 ms ticks; "
              + "\"machine\" = cores busy on the whole machine, other sessions included)")
        try alternate(label: "shared cores", nodeA: nodeA, nodeB: nodeB, server: server, token: token, target: target,
                   clients: clients, seconds: seconds, count: rounds)
        guard pinnedRounds > 0 else { return }
        guard cores >= 2 else {
            print("  pinned rounds: skipped (\(cores) core; they need two)")
            return
        }
        try pin(nodeA, core: 0)
        try pin(nodeB, core: 1)
        print("emulation of one machine per node: node A pinned to core 0, node B to core 1 (taskset, every thread); "
              + "PostgreSQL and the clients are not pinned")
        print("  one node = A alone on core 0; two nodes = A on core 0 beside B on core 1: each node has one core in both cases, "
              + "but PostgreSQL and the clients lose the core B takes")
        try alternate(label: "one core per node", nodeA: nodeA, nodeB: nodeB, server: server, token: token, target: target,
                        clients: clients, seconds: seconds, count: pinnedRounds)
    }

    private static func alternate(label: String, nodeA: ServerProcess, nodeB: ServerProcess, server: PostgresServerCPU?, token: String,
                               target: String, clients: Int, seconds: Double, count: Int) throws {
        var ones: [ReadRun] = []
        var twos: [ReadRun] = []
        for round in 1...max(1, count) {
            let one = try readRun(nodes: [nodeA], server: server, token: token, target: target, clients: clients, seconds: seconds)
            print("  \(label), round \(round), one node:  \(describe(one))")
            let two = try readRun(nodes: [nodeA, nodeB], server: server, token: token, target: target, clients: clients, seconds: seconds)
            print("  \(label), round \(round), two nodes: \(describe(two))")
            print("  \(label), round \(round): two nodes / one node = \(format(two.rate / one.rate))x (load average \(loadAverage()))")
            ones.append(one)
            twos.append(two)
        }
        let median = MultiUserStatisticsBenchmark.median
        let ratios = zip(ones, twos).map { $1.rate / $0.rate }
        print("  \(label), medians of \(ones.count): one node \(Int(median(ones.map(\.rate)))) requests/s, "
              + "two nodes \(Int(median(twos.map(\.rate)))) requests/s; two nodes / one node = \(format(median(ratios)))x "
              + "(each round's: \(ratios.map { format($0) }.joined(separator: ", ")); target >= 1.6)")
        // What the CPU figures say about separate machines: each node's throughput is its core's
        // worth of requests at its CPU per request, so two nodes give 2 x (one node's healthd CPU
        // per request) / (two nodes' together) of one node, if PostgreSQL keeps up (its own CPU per
        // request bounds it: one core of it serves 1 / that many requests per second).
        let healthdOne = median(ones.map { $0.nodeCPU.reduce(0, +) / Double(max(1, $0.requests)) })
        let healthdTwo = median(twos.map { $0.nodeCPU.reduce(0, +) / Double(max(1, $0.requests)) })
        let postgres = median((ones + twos).map { $0.postgresCPU / Double(max(1, $0.requests)) })
        print("  \(label), from CPU per request (a projection for one machine per node and PostgreSQL on its own, not a measurement): "
              + "healthd \(Int((healthdOne * 1e6).rounded())) µs alone, \(Int((healthdTwo * 1e6).rounded())) µs with two nodes; "
              + "two nodes / one node = \(format(2 * healthdOne / max(1e-9, healthdTwo)))x while PostgreSQL, at "
              + "\(Int((postgres * 1e6).rounded())) µs per request, serves \(Int(1 / max(1e-9, postgres))) requests/s per core")
    }

    /// One run's line: rate, latency, and CPU per request of each process and of the machine.
    private static func describe(_ run: ReadRun) -> String {
        let perRequest = 1e6 / Double(max(1, run.requests))
        let nodes = run.nodeCPU.enumerated().map { index, cpu in
            "node \(index == 0 ? "A" : "B") \(Int((cpu * perRequest).rounded()))"
        }.joined(separator: " + ")
        return "\(Int(run.rate)) requests/s, latency p50 \(format(run.latency.p50)) / mean \(format(run.latency.mean)) / "
            + "p90 \(format(run.latency.p90)) / p99 \(format(run.latency.p99)) / max \(format(run.latency.max)) ms; "
            + "CPU µs per request: \(nodes) + PostgreSQL \(Int((run.postgresCPU * perRequest).rounded())) + clients "
            + "\(Int((run.clientCPU * perRequest).rounded())); cores busy: these processes \(format(run.ownCPU / run.seconds)), "
            + "machine \(format(run.machineBusyCores))"
    }

    /// GETs `target` for `seconds` from `clients` keep-alive connections spread over the nodes.
    static func readRun(nodes: [ServerProcess], server: PostgresServerCPU?, token: String, target: String,
                        clients: Int, seconds: Double) throws -> ReadRun {
        let ports = nodes.map(\.port)
        let latencies = Mutex<[UInt64]>([])
        let failures = Mutex<[String]>([])
        // Connected before the clock and the CPU counters start, as a warm client is.
        let connections = try (0..<clients).map { try BenchHTTPClient(port: ports[$0 % ports.count]) }
        let shared = ClientConnections(connections)
        let nodeBefore = nodes.map { processCPUSeconds($0.process.processIdentifier) }
        let postgresBefore = server?.seconds() ?? 0
        let clientBefore = processCPUSeconds(getpid())
        let machineBefore = MachineCPU()
        let began = nanosecondsNow()
        let deadline = began + UInt64(seconds * 1e9)
        // A thread per client (`onThreads`): all 8 clients run for the whole phase.
        onThreads(clients) { client in
            do {
                let connection = shared.all[client]
                var mine: [UInt64] = []
                mine.reserveCapacity(Int(seconds * 20_000))
                while nanosecondsNow() < deadline {
                    let sent = nanosecondsNow()
                    let response = try connection.request("GET", target, token: token)
                    guard response.status == 200 else { throw BenchError("GET returned \(response.status)") }
                    mine.append(nanosecondsNow() - sent)
                }
                latencies.withLock { $0.append(contentsOf: mine) }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        let elapsed = Double(nanosecondsNow() - began) / 1e9
        let machine = MachineCPU().busyCores(since: machineBefore)
        let clientCPU = processCPUSeconds(getpid()) - clientBefore
        let postgresCPU = (server?.seconds() ?? 0) - postgresBefore
        let nodeCPU = zip(nodes, nodeBefore).map { processCPUSeconds($0.process.processIdentifier) - $1 }
        if let failure = failures.withLock({ $0.first }) { throw BenchError(failure) }
        let all = latencies.withLock { $0 }
        return ReadRun(requests: all.count, seconds: elapsed, latency: LatencySummary(all), nodeCPU: nodeCPU,
                       postgresCPU: postgresCPU, clientCPU: clientCPU, machineBusyCores: machine)
    }

    /// Holds every thread of a node (and the threads it starts later) to one core.
    static func pin(_ node: ServerProcess, core: Int) throws {
        let taskset = Process()
        taskset.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        taskset.arguments = ["taskset", "--all-tasks", "--cpu-list", "--pid", "\(core)", "\(node.process.processIdentifier)"]
        taskset.standardOutput = FileHandle.nullDevice
        try taskset.run()
        taskset.waitUntilExit()
        guard taskset.terminationStatus == 0 else { throw BenchError("taskset could not pin node \(node.process.processIdentifier) to core \(core)") }
    }
}

/// The machine's CPU time counters (/proc/stat, first line), for how many cores were busy.
struct MachineCPU {
    var busy = 0.0
    var total = 0.0

    init() {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first else { return }
        // cpu user nice system idle iowait irq softirq steal ...: idle and iowait are not busy.
        let fields = line.split(separator: " ").dropFirst().prefix(8).map { Double($0) ?? 0 }
        guard fields.count == 8 else { return }
        total = fields.reduce(0, +)
        busy = total - fields[3] - fields[4]
    }

    /// Cores busy on average since `earlier`.
    func busyCores(since earlier: MachineCPU) -> Double {
        let elapsed = total - earlier.total
        guard elapsed > 0 else { return 0 }
        return (busy - earlier.busy) / elapsed * Double(ProcessInfo.processInfo.activeProcessorCount)
    }
}
