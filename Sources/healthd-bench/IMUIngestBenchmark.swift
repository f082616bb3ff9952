import Dispatch
import ClientThreads
import Foundation
import HTTPServer
import HealthAPI
import HealthStore
import Synchronization

/// `healthd-bench imu-ingest [--batches N] [--batch-size N] [--sessions N]`: real HTTP into an
/// in-process healthd (HTTPServer + HealthApplication on a temporary store), each session on
/// its own keep-alive connection posting JSON batches of a walking signal in sequence.
enum IMUIngestBenchmark {
    static func run(_ arguments: [String]) -> Int32 {
        var batches = 40, batchSize = 10_000, sessions = 2
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst().flatMap(Int.init), value > 0 else {
                print("healthd-bench imu-ingest: \(flag) needs a positive number"); return 2
            }
            switch flag {
            case "--batches": batches = value
            case "--batch-size": batchSize = value
            case "--sessions": sessions = value
            default: print("healthd-bench imu-ingest: unknown option \(flag)"); return 2
            }
        }
        do {
            let harness = try InProcessServer(name: "imu", connections: sessions)
            defer { harness.stop() }
            let (store, server) = (harness.store, harness.server)
            let user = try store.createUser(name: "bench")
            let (_, token) = try store.createAuthorization(user: user, app: "phone", read: [],
                                                           share: ["stepCount", "distanceWalkingRunning", "flightsClimbed"])
            // Pre-serialize every batch: the benchmark measures the server, not the client's JSON.
            let bodies = (0..<batches).map { seq in walkingBatch(seq: seq, size: batchSize) }
            let totalBytes = bodies.reduce(0) { $0 + $1.count } * sessions
            let failures = Mutex(0)
            let started = DispatchTime.now().uptimeNanoseconds
            onThreads(sessions) { index in
                do {
                    let client = try BenchHTTPClient(port: server.boundPort)
                    for body in bodies {
                        let session = Array("\"session\":\"s\(index)\"".utf8)
                        let reply = try client.request("POST", "/v1/ingest/imu", token: token, body: replaceSession(body, with: session))
                        if reply.status != 200 { failures.withLock { $0 += 1 } }
                    }
                } catch {
                    failures.withLock { $0 += 1 }
                }
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            let samples = Double(batches * batchSize * sessions)
            print("imu-ingest: \(sessions) sessions x \(batches) batches x \(batchSize) samples over HTTP, JSON, durable commits")
            print(String(format: "  %.0f samples/s (%.1f MB/s of JSON), %.2f s, failures: %d, RSS %.0f MiB",
                         samples / seconds, Double(totalBytes) / seconds / 1e6, seconds, failures.withLock { $0 }, residentMegabytes()))
            print("  machine: \(machineDescription())")
            return failures.withLock { $0 } == 0 ? 0 : 1
        } catch {
            print("healthd-bench imu-ingest: \(error)")
            return 1
        }
    }

    /// A JSON batch of a phone walking at 1.8 steps/s, 50 Hz; `"session":"S"` is replaced per connection.
    static func walkingBatch(seq: Int, size: Int) -> [UInt8] {
        var t = "", x = "", y = "", z = ""
        t.reserveCapacity(size * 8); x.reserveCapacity(size * 8); y.reserveCapacity(size * 8); z.reserveCapacity(size * 8)
        for i in 0..<size {
            let time = Double(seq * size + i) / 50
            let bounce = 3 * sin(2 * .pi * 1.8 * time)
            let separator = i == 0 ? "" : ","
            t += separator + String(format: "%.2f", Double(i) / 50)
            x += separator + String(format: "%.3f", 0.9 * bounce)
            y += separator + String(format: "%.3f", 6.9 + 0.7 * bounce)
            z += separator + String(format: "%.3f", 6.9 + 0.7 * bounce)
        }
        let t0 = "2026-03-08T09:00:00Z"
        // Each batch's t0 advances by its own length, so the timeline is continuous.
        let start = Double(seq * size) / 50
        let json = #"{"session":"S","seq":\#(seq),"unit":"m/s2","t0":"\#(t0)","samples":{"t":[\#(t)],"x":[\#(x)],"y":[\#(y)],"z":[\#(z)]}}"#
        return Array(json.replacingOccurrences(of: "\"t0\":\"\(t0)\"", with: "\"t0\":\"\(offsetInstant(t0, seconds: start))\"").utf8)
    }

    static func offsetInstant(_ base: String, seconds: Double) -> String {
        let formatter = ISO8601DateFormatter()
        guard let date = formatter.date(from: base) else { return base }
        return formatter.string(from: date.addingTimeInterval(seconds))
    }

    static func replaceSession(_ body: [UInt8], with session: [UInt8]) -> [UInt8] {
        let marker = Array("\"session\":\"S\"".utf8)
        guard let range = body.firstRange(of: marker) else { return body }
        var copy = body
        copy.replaceSubrange(range, with: session)
        return copy
    }
}
