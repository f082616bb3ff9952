import Dispatch
import Foundation
import HTTPServer
import HealthAPI
import HealthModel
import HealthStore
import JSON

/// `healthd-bench workouts [--rounds N] [--readers N] [--minutes N]`: real HTTP into an in-process
/// healthd on a temporary store.
/// 1. A one-reading heart-rate POST with no session, then with a running zone session and
///    `--readers` idle change streams of heart-rate readers: POST p50/p99, and the time from
///    sending the POST until a watching stream has the `event: zone` (each reading changes state).
/// 2. `end` of a `--minutes` session holding per-second energy and distance from two sources (the
///    totals: fetch, merge, pro-rate, save the workout), store call.
enum WorkoutSessionBenchmark {
    static func report(_ label: String, _ milliseconds: [Double]) {
        let sorted = milliseconds.sorted()
        func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)] }
        print(String(format: "%@, %d rounds: p50 %.2f ms, p99 %.2f ms, max %.2f ms",
                     label, sorted.count, percentile(0.5), percentile(0.99), sorted.last ?? 0))
    }

    static func run(_ arguments: [String]) -> Int32 {
        var rounds = 300, readers = 100, minutes = 60
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst().flatMap(Int.init), value > 0 else {
                print("healthd-bench workouts: \(flag) needs a positive number"); return 2
            }
            switch flag {
            case "--rounds": rounds = value
            case "--readers": readers = value
            case "--minutes": minutes = value
            default: print("healthd-bench workouts: unknown option \(flag)"); return 2
            }
        }
        do {
            let harness = try InProcessServer(name: "workouts", connections: readers)
            defer { harness.stop() }
            let (store, application, server) = (harness.store, harness.application, harness.server)
            let port = server.boundPort
            let user = try store.createUser(name: "bench")
            let (_, watchToken) = try store.createAuthorization(user: user, app: "watch", read: [],
                                                                share: ["heartRate", "activeEnergyBurned", "distanceWalkingRunning"])
            let (coach, coachToken) = try store.createAuthorization(user: user, app: "coach",
                                                                    read: ["heartRate", "activeEnergyBurned", "distanceWalkingRunning"],
                                                                    share: ["workout", "activeEnergyBurned", "distanceWalkingRunning"])
            let client = try BenchHTTPClient(port: port)
            print("healthd-bench workouts: \(machineDescription())")

            let base = StoreClock.nowMilliseconds() + 60_000
            func reading(_ n: Int, _ bpm: Int) -> [UInt8] {
                let time = RFC3339.format(base + Int64(n) * 1000)
                return Array(#"{"samples":[{"type":"heartRate","value":\#(bpm),"unit":"count/min","start":"\#(time)"}]}"#.utf8)
            }

            // 1a. No session: the plain save.
            var plain: [Double] = []
            for round in 0..<rounds {
                let sent = DispatchTime.now().uptimeNanoseconds
                let reply = try client.request("POST", "/v1/samples", token: watchToken, body: reading(round, 100))
                guard reply.status == 201 else { throw BenchError("save answered \(reply.status)") }
                plain.append(Double(DispatchTime.now().uptimeNanoseconds - sent) / 1e6)
            }
            report("heart-rate POST (1 reading), no session", plain)

            // 1b. A running session, idle readers, one watching stream.
            let started = try client.request("POST", "/v1/workout-sessions", token: coachToken,
                                             body: Array(#"{"activityType":"running","zone":{"low":120,"high":150}}"#.utf8))
            guard started.status == 201 else { throw BenchError("start answered \(started.status)") }
            var idle: [BenchHTTPClient] = []
            for _ in 0..<readers {
                let connection = try BenchHTTPClient(port: port)
                try connection.sendRequest("GET", "/v1/changes/stream?types=heartRate", token: coachToken)
                idle.append(connection)
            }
            let watcher = try BenchHTTPClient(port: port)
            try watcher.sendRequest("GET", "/v1/changes/stream?types=heartRate", token: coachToken)
            while application.changeFeed.streamCount < readers + 1 { usleep(1_000) }
            try watcher.readUntil(Array("event: change\n".utf8))
            var saves: [Double] = [], zones: [Double] = []
            for round in 0..<rounds {
                let above = round % 2 == 1
                let sent = DispatchTime.now().uptimeNanoseconds
                let reply = try client.request("POST", "/v1/samples", token: watchToken,
                                               body: reading(rounds + round, above ? 170 : 100))
                guard reply.status == 201 else { throw BenchError("save answered \(reply.status)") }
                saves.append(Double(DispatchTime.now().uptimeNanoseconds - sent) / 1e6)
                try watcher.readUntil(Array(#""state":"\#(above ? "above" : "below")""#.utf8))
                zones.append(Double(DispatchTime.now().uptimeNanoseconds - sent) / 1e6)
            }
            report("heart-rate POST (1 reading), running zone session, \(readers + 1) streams", saves)
            report("POST sent to event: zone received, \(readers + 1) streams", zones)
            idle.removeAll()
            guard let firstID = (try? JSONParser.parse(started.body))?.objectValue?["id"]?.stringValue,
                  try client.request("POST", "/v1/workout-sessions/\(firstID)/end", token: coachToken).status == 200 else {
                throw BenchError("the first session did not end")
            }

            // 2. The end of a long session: its totals over per-second samples of two sources.
            let sessionStart = base + 86_400_000
            let session = try store.startWorkoutSession(app: coach, activityType: "running", zone: nil, at: sessionStart)
            guard let watch = try store.authorization(tokenHash: TokenHashing.hash(watchToken)) else { throw BenchError("no watch") }
            let seconds = minutes * 60
            // The watch saves first, so it ranks first by default; the coach's lower figures are shadowed.
            for (app, share) in [(watch, 1.0), (coach, 0.95)] {
                var samples: [HealthSample] = []
                for second in 0..<seconds {
                    let start = sessionStart + Int64(second) * 1000
                    for (type, value) in [("activeEnergyBurned", 0.2 * share), ("distanceWalkingRunning", 3.0 * share)] {
                        samples.append(HealthSample(uuid: .random(), type: type, start: start, end: start + 1000, content: .quantity(value)))
                    }
                }
                for chunk in stride(from: 0, to: samples.count, by: 10_000) {
                    _ = try store.save(Array(samples[chunk..<min(chunk + 10_000, samples.count)]), by: app)
                }
            }
            _ = try store.changeWorkoutSession(id: session.id, app: coach, action: .pause, now: sessionStart + Int64(seconds) * 500)
            _ = try store.changeWorkoutSession(id: session.id, app: coach, action: .resume, now: sessionStart + Int64(seconds) * 600)
            let endStarted = DispatchTime.now().uptimeNanoseconds
            let ended = try store.endWorkoutSession(id: session.id, app: coach, now: sessionStart + Int64(seconds) * 1000)
            let endMilliseconds = Double(DispatchTime.now().uptimeNanoseconds - endStarted) / 1e6
            guard let uuid = ended.workoutUUID,
                  case .workout(let workout)? = try store.sample(uuid, for: coach, userExternalID: user.id)?.sample.content else {
                throw BenchError("no workout saved")
            }
            print(String(format: "end of a %d-minute session (%d samples of 2 types from 2 sources, one pause): %.1f ms; "
                         + "totals %.1f kcal, %.0f m (expected %.1f kcal, %.0f m: the watch ranks first, paused tenth excluded)",
                         minutes, seconds * 4, endMilliseconds, workout.totalEnergyBurned ?? -1, workout.totalDistance ?? -1,
                         0.2 * Double(seconds) * 0.9, 3.0 * Double(seconds) * 0.9))
            return 0
        } catch {
            print("healthd-bench workouts: \(error)")
            return 1
        }
    }
}
