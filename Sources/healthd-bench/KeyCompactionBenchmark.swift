import Foundation
import HealthModel
import HealthStore
import SQLiteStore
import Synchronization

/// `key-compaction`: what deleting half of a large user's samples costs, request by request, in
/// process on SQLiteHealthStore. The uuid key runs keep deleted rows' entries until they are compacted
/// (SampleKeyIndex); this times every delete request around the point where more than half of the
/// user's entries are of deleted rows, and the saves of another user that wait for the writer
/// meanwhile. Each figure is a ratio to the median delete request of the same size in the same run.
enum KeyCompactionBenchmark {
    static func run(_ arguments: [String]) -> Int32 {
        var arguments = arguments
        var sizes = [1_000_000]
        var batch = 10_000
        var workDirectory = NSTemporaryDirectory() + "healthd-bench-keys-\(getpid())"
        var keep = false
        while !arguments.isEmpty {
            let flag = arguments.removeFirst()
            func value() -> String {
                guard !arguments.isEmpty else { benchFail("\(flag) needs a value") }
                return arguments.removeFirst()
            }
            switch flag {
            case "--samples":
                sizes = value().split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
                if sizes.isEmpty { benchFail("--samples takes positive numbers, comma-separated") }
            case "--batch":
                guard let number = Int(value()), number > 0 else { benchFail("--batch takes a positive number") }
                batch = number
            case "--work-dir": workDirectory = value()
            case "--keep": keep = true
            case "--help", "-h":
                print("""
                    usage: healthd-bench key-compaction [--samples N[,N...]] [--batch N] [--work-dir DIR] [--keep]
                      --samples  the user's samples before deleting (default 1000000)
                      --batch    samples per delete-by-query request (default 10000)
                    """)
                return 0
            default: benchFail("unknown option '\(flag)'")
            }
        }
        print("healthd-bench key-compaction: \(machineDescription()), load average \(loadAverage())")
        do {
            for size in sizes {
                try measure(samples: size, batch: batch, directory: workDirectory + "/keys-\(size)")
                if !keep { try? FileManager.default.removeItem(atPath: workDirectory + "/keys-\(size)") }
            }
        } catch {
            benchFail("\(error)")
        }
        return 0
    }

    /// One request's figures.
    struct Request {
        var kind: String
        var deleted: Int
        var began: UInt64
        var nanoseconds: UInt64
        /// Deleted fraction of the user's samples after it.
        var fraction: Double
    }

    static func measure(samples: Int, batch: Int, directory: String) throws {
        try? FileManager.default.removeItem(atPath: directory)
        let (store, app, _) = try prepareUser(dataDirectory: directory)
        defer { store.close() }
        let seeded = nanosecondsNow()
        var generator = SampleGenerator(seed: 11)
        var pending: [HealthSample] = []
        pending.reserveCapacity(10_000)
        for index in 0..<samples {
            pending.append(generator.sample(index))
            if pending.count == 10_000 || index == samples - 1 {
                _ = try store.save(pending, by: app)
                pending.removeAll(keepingCapacity: true)
            }
        }
        print("\n\(samples) samples of one user (steps and heart rate, 5 s apart), saved in batches of 10,000 in "
              + "\(format(Double(nanosecondsNow() - seeded) / 1e9, decimals: 1)) s; load average \(loadAverage())")
        let runsBefore = try store.uuidKeyRunCounts(userRowID: app.userRowID)
        print("  uuid key runs before deleting: \(runsBefore.runs) runs, \(runsBefore.entries) entries")

        // Another user saving one sample every 10 ms throughout: how long a save waits for the writer.
        let probeUser = try store.userCreatingIfNeeded(name: "probe")
        let (probeApp, _) = try store.createAuthorization(user: probeUser, app: "probe-watch", read: ["heartRate"], share: ["heartRate"])
        let probe = Probe()
        let probeThread = Thread {
            var index = 0
            var random = SampleGenerator(seed: 99)
            while !probe.stopped.load(ordering: .relaxed) {
                let sample = random.sample(index * 2 + 1)
                let began = nanosecondsNow()
                _ = try? store.save([sample], by: probeApp)
                probe.record(began: began, nanoseconds: nanosecondsNow() - began)
                index += 1
                usleep(10_000)
            }
            probe.done.store(true, ordering: .releasing)
        }
        probeThread.start()

        // Deletes by query (both types over the same window) until just below half, then one
        // sample at a time by uuid across the line, then by query again.
        var requests: [Request] = []
        var deleted = 0
        let window = Int64(batch) * 2 * SampleGenerator.spacingMilliseconds
        var windowStart = SampleGenerator.epoch
        // Step samples last a minute: a window also takes those that started just before it.
        func deleteWindow() throws {
            for type in ["heartRate", "stepCount"] {
                let began = nanosecondsNow()
                let count = try store.deleteSamples(type: type, start: windowStart, end: windowStart + window, by: app)
                let elapsed = nanosecondsNow() - began
                deleted += count
                requests.append(Request(kind: "query", deleted: count, began: began, nanoseconds: elapsed,
                                        fraction: Double(deleted) / Double(samples)))
            }
            windowStart += window
        }
        while deleted + 2 * batch < samples / 2 { try deleteWindow() }
        // The next samples in time order, one request each, by uuid.
        var index = Int((windowStart - SampleGenerator.epoch) / SampleGenerator.spacingMilliseconds)
        var replay = SampleGenerator(seed: 11)
        for skipped in 0..<index { _ = replay.sample(skipped) }
        // Step samples overlapping the last window were taken with it; skip what is gone.
        while deleted < samples / 2 + 200, index < samples {
            let uuid = replay.sample(index).uuid
            index += 1
            let began = nanosecondsNow()
            do {
                try store.deleteSample(uuid, by: app)
            } catch StoreError.notFound {
                continue
            }
            let elapsed = nanosecondsNow() - began
            deleted += 1
            requests.append(Request(kind: "uuid", deleted: 1, began: began, nanoseconds: elapsed, fraction: Double(deleted) / Double(samples)))
        }
        windowStart = SampleGenerator.epoch + Int64(index) * SampleGenerator.spacingMilliseconds
        for _ in 0..<10 { try deleteWindow() }
        // A compaction run in the background after the request that called for it: wait for its
        // end with the other user still saving.
        let deletesEnded = nanosecondsNow()
        while try store.uuidKeyCompactionPending() { usleep(20_000) }
        let compactionEnded = nanosecondsNow()
        probe.stopped.store(true, ordering: .relaxed)
        while !probe.done.load(ordering: .acquiring) { usleep(1_000) }

        let runsAfter = try store.uuidKeyRunCounts(userRowID: app.userRowID)
        print("  deleted \(deleted) samples in \(requests.count) requests; uuid key runs after: \(runsAfter.runs) runs, "
              + "\(runsAfter.entries) entries; load average \(loadAverage())")
        for kind in ["query", "uuid"] {
            let ofKind = requests.filter { $0.kind == kind && $0.deleted > 0 }
            guard !ofKind.isEmpty else { continue }
            let summary = LatencySummary(ofKind.map(\.nanoseconds))
            let slowest = ofKind.max { $0.nanoseconds < $1.nanoseconds }
            let median = summary.p50
            print("  delete by \(kind == "query" ? "query (about \(batch) samples)" : "uuid (1 sample)"): \(summary)")
            if let slowest {
                let milliseconds = Double(slowest.nanoseconds) / 1e6
                print("    slowest: \(format(milliseconds)) ms = \(format(milliseconds / median, decimals: 1)) x the median, "
                      + "deleting \(slowest.deleted) at \(format(100 * slowest.fraction, decimals: 2)) % deleted")
            }
        }
        // The request after which more than half of the user's entries were of deleted rows.
        if let crossing = requests.first(where: { $0.fraction > 0.5 }) {
            let median = LatencySummary(requests.filter { $0.kind == crossing.kind && $0.deleted > 0 }.map(\.nanoseconds)).p50
            let milliseconds = Double(crossing.nanoseconds) / 1e6
            print("  the request crossing half (by \(crossing.kind), \(crossing.deleted) deleted): \(format(milliseconds)) ms "
                  + "= \(format(milliseconds / median, decimals: 1)) x the median of its kind")
        }
        let slowest = requests.sorted { $0.nanoseconds > $1.nanoseconds }.prefix(5)
        print("  the 5 slowest requests: " + slowest.map {
            "\(format(Double($0.nanoseconds) / 1e6, decimals: 0)) ms (\($0.kind) at \(format(100 * $0.fraction, decimals: 1)) %)"
        }.joined(separator: ", "))
        // The probe's saves: overall, and those that waited through the slowest delete.
        let probes = probe.samples()
        let overall = LatencySummary(probes.map(\.nanoseconds))
        print("  another user's 1-sample saves meanwhile: \(overall)")
        if let slowest = requests.max(by: { $0.nanoseconds < $1.nanoseconds }) {
            let overlapping = probes.filter { $0.began < slowest.began + slowest.nanoseconds && $0.began + $0.nanoseconds > slowest.began }
            if let worst = overlapping.map(\.nanoseconds).max() {
                print("    the one waiting through the slowest delete: \(format(Double(worst) / 1e6)) ms "
                      + "= \(format(Double(worst) / 1e6 / max(overall.p50, 0.001), decimals: 1)) x its median")
            }
        }
        let figures = store.uuidKeyCompactionFigures
        if figures.steps > 0 {
            let median = LatencySummary(requests.filter { $0.kind == "uuid" }.map(\.nanoseconds)).p50
            let maxStep = Double(figures.maxNanoseconds) / 1e6
            print("  background compaction: \(figures.steps) steps holding the writer \(format(Double(figures.totalNanoseconds) / 1e9, decimals: 2)) s "
                  + "in all, the longest \(format(maxStep)) ms = \(format(maxStep / max(median, 0.001), decimals: 1)) x the median delete by uuid; "
                  + "done \(format(Double(compactionEnded - deletesEnded) / 1e9, decimals: 1)) s after the last delete")
            print("    the longest step's own work, its commit left out: \(format(Double(figures.maxWorkNanoseconds) / 1e6)) ms")
            let during = probes.filter { $0.began >= deletesEnded && $0.began < compactionEnded }.map(\.nanoseconds)
            if !during.isEmpty { print("    another user's saves during the rest of it: \(LatencySummary(during))") }
        }
    }

    final class Probe: Sendable {
        let stopped = Atomic<Bool>(false)
        let done = Atomic<Bool>(false)
        private let recorded = Mutex<[(began: UInt64, nanoseconds: UInt64)]>([])

        func record(began: UInt64, nanoseconds: UInt64) { recorded.withLock { $0.append((began, nanoseconds)) } }
        func samples() -> [(began: UInt64, nanoseconds: UInt64)] { recorded.withLock { $0 } }
    }
}
