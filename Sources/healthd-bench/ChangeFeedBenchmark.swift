import Dispatch
import Foundation
import HTTPServer
import HealthAPI
import HealthModel
import HealthStore
import JSON

/// `healthd-bench changes [--changes N] [--page N] [--subscribers N] [--rounds N]`: real HTTP into
/// an in-process healthd on a temporary store.
/// 1. Catch-up: N changes saved after an anchor, read back by following `anchor` in pages.
/// 2. Write-to-wake: with `--subscribers` idle long-polls (then idle event streams) parked on a
///    type nobody writes, the time from sending a POST of one sample on one connection until a
///    long-poll (or stream) on another has received it; p50/p99 over `--rounds` writes.
enum ChangeFeedBenchmark {
    static func run(_ arguments: [String]) -> Int32 {
        var changes = 100_000, page = 1_000, subscribers = 1_000, rounds = 200
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst().flatMap(Int.init), value > 0 else {
                print("healthd-bench changes: \(flag) needs a positive number"); return 2
            }
            switch flag {
            case "--changes": changes = value
            case "--page": page = min(value, 10_000)
            case "--subscribers": subscribers = value
            case "--rounds": rounds = value
            default: print("healthd-bench changes: unknown option \(flag)"); return 2
            }
        }
        do {
            let harness = try InProcessServer(name: "changes", connections: subscribers)
            defer { harness.stop() }
            let (store, application, server) = (harness.store, harness.application, harness.server)
            let user = try store.createUser(name: "bench")
            let (phone, token) = try store.createAuthorization(user: user, app: "phone", read: ["stepCount", "heartRate"],
                                                               share: ["stepCount", "heartRate"])
            let port = server.boundPort
            let client = try BenchHTTPClient(port: port)

            print("healthd-bench changes: \(machineDescription())")

            // 1. Catch-up.
            let start = try anchor(of: client.request("GET", "/v1/changes?types=stepCount", token: token))
            var saved = 0
            while saved < changes {
                let count = min(1_000, changes - saved)
                _ = try store.save((saved..<saved + count).map { stepSample($0) }, by: phone)
                saved += count
            }
            // The store alone: rows to StoredSample values.
            var position: ChangePosition? = ChangePosition(seq: 0, tombstoneFloor: 0)
            var storeReceived = 0
            var storeMore = true
            let storeStarted = DispatchTime.now().uptimeNanoseconds
            while storeMore {
                let changePage = try store.changes(ChangeRequest(types: ["stepCount"], after: position, limit: page),
                                                   for: phone, userExternalID: user.id)
                storeReceived += changePage.added.count + changePage.deleted.count
                position = changePage.next
                storeMore = changePage.more
            }
            let storeSeconds = Double(DispatchTime.now().uptimeNanoseconds - storeStarted) / 1e9
            print(String(format: "catch-up, store only: %d changes in %.2f s = %.0f changes/s",
                         storeReceived, storeSeconds, Double(storeReceived) / storeSeconds))

            // Over HTTP: the client only counts uuids and takes the anchor, so the figure is the server's.
            var next = start, received = 0, pages = 0, more = true
            let catchUpStarted = DispatchTime.now().uptimeNanoseconds
            while more {
                let reply = try client.request("GET", "/v1/changes?types=stepCount&limit=\(page)&anchor=\(next)", token: token)
                guard reply.status == 200, let tail = pageTail(reply.body) else { throw BenchError("catch-up page failed: \(reply.status)") }
                received += occurrences(of: Array(#""uuid":""#.utf8), in: reply.body)
                next = tail.anchor
                more = tail.more
                pages += 1
            }
            let catchUpSeconds = Double(DispatchTime.now().uptimeNanoseconds - catchUpStarted) / 1e9
            guard received == changes else { throw BenchError("caught up \(received) of \(changes) changes") }
            print(String(format: "catch-up: %d changes in %d pages of %d over HTTP in %.2f s = %.0f changes/s",
                         received, pages, page, catchUpSeconds, Double(received) / catchUpSeconds))

            // 2a. Long-poll wake latency.
            let idleAnchor = try anchor(of: client.request("GET", "/v1/changes?types=heartRate", token: token))
            let rssBefore = residentMegabytes()
            var idle: [BenchHTTPClient] = []
            for _ in 0..<subscribers {
                let connection = try BenchHTTPClient(port: port)
                try connection.sendRequest("GET", "/v1/changes?types=heartRate&wait=60&anchor=\(idleAnchor)", token: token)
                idle.append(connection)
            }
            while application.changeFeed.parkedCount < subscribers { usleep(1_000) }
            let rssParked = residentMegabytes()
            let poller = try BenchHTTPClient(port: port)
            var latencies: [Double] = []
            var pollAnchor = next
            for round in 0..<rounds {
                try poller.sendRequest("GET", "/v1/changes?types=stepCount&wait=60&anchor=\(pollAnchor)", token: token)
                while application.changeFeed.parkedCount < subscribers + 1 { usleep(200) }
                let sent = DispatchTime.now().uptimeNanoseconds
                _ = try client.request("POST", "/v1/samples", token: token, body: sampleBody(changes + round))
                let reply = try poller.readResponse()
                latencies.append(Double(DispatchTime.now().uptimeNanoseconds - sent) / 1e6)
                pollAnchor = try anchor(of: reply)
            }
            report("long-poll", latencies, subscribers: subscribers)
            print(String(format: "memory: %.1f MiB resident before, %.1f MiB with %d parked long-polls (client sockets included)",
                         rssBefore, rssParked, subscribers))
            idle.removeAll()

            // 2c. The herd: every subscriber waits on the type written; one write wakes them all.
            var herd: [BenchHTTPClient] = []
            let parkedBefore = application.changeFeed.parkedCount
            for _ in 0..<subscribers {
                let connection = try BenchHTTPClient(port: port)
                try connection.sendRequest("GET", "/v1/changes?types=stepCount&wait=60&anchor=\(pollAnchor)", token: token)
                herd.append(connection)
            }
            while application.changeFeed.parkedCount < parkedBefore + subscribers { usleep(1_000) }
            let herdSent = DispatchTime.now().uptimeNanoseconds
            _ = try client.request("POST", "/v1/samples", token: token, body: sampleBody(changes + 2 * rounds + 1))
            for connection in herd {
                let reply = try connection.readResponse()
                guard reply.status == 200 else { throw BenchError("herd long-poll answered \(reply.status)") }
            }
            let herdMilliseconds = Double(DispatchTime.now().uptimeNanoseconds - herdSent) / 1e6
            print(String(format: "herd: one write woke %d long-polls on its type; the last answer arrived after %.1f ms",
                         subscribers, herdMilliseconds))
            herd.removeAll()

            // 2b. Event-stream wake latency.
            var idleStreams: [BenchHTTPClient] = []
            for _ in 0..<subscribers {
                let connection = try BenchHTTPClient(port: port)
                try connection.sendRequest("GET", "/v1/changes/stream?types=heartRate", token: token)
                idleStreams.append(connection)
            }
            while application.changeFeed.streamCount < subscribers { usleep(1_000) }
            let watcher = try BenchHTTPClient(port: port)
            try watcher.sendRequest("GET", "/v1/changes/stream?types=stepCount", token: token)
            try watcher.readUntil(Array("event: change\n".utf8))
            latencies = []
            for round in 0..<rounds {
                let n = changes + rounds + round
                let sent = DispatchTime.now().uptimeNanoseconds
                _ = try client.request("POST", "/v1/samples", token: token, body: sampleBody(n))
                try watcher.readUntil(Array(uuid(n).utf8))
                latencies.append(Double(DispatchTime.now().uptimeNanoseconds - sent) / 1e6)
            }
            report("event stream", latencies, subscribers: subscribers)
            idleStreams.removeAll()
            return 0
        } catch {
            print("healthd-bench changes: \(error)")
            return 1
        }
    }

    static func report(_ kind: String, _ latencies: [Double], subscribers: Int) {
        let sorted = latencies.sorted()
        func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)] }
        print(String(format: "%@ write-to-wake with %d idle subscribers, %d writes: p50 %.2f ms, p99 %.2f ms, max %.2f ms",
                     kind, subscribers, sorted.count, percentile(0.5), percentile(0.99), sorted.last ?? 0))
    }

    /// The anchor and `more` of a change page, read from its end (they are its last two fields).
    static func pageTail(_ body: [UInt8]) -> (anchor: String, more: Bool)? {
        let key = Array(#""anchor":""#.utf8)
        // The tail is short: search only the last 512 bytes.
        let from = max(0, body.count - 512)
        let tail = Array(body[from...])
        guard tail.count >= key.count,
              let tailStart = stride(from: tail.count - key.count, through: 0, by: -1).first(where: { tail[$0..<$0 + key.count].elementsEqual(key) }),
              case let keyStart = from + tailStart,
              let close = body[(keyStart + key.count)...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        let anchor = String(decoding: body[(keyStart + key.count)..<close], as: UTF8.self)
        return (anchor, body[close...].starts(with: Array(#"","more":true"#.utf8)))
    }

    static func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
        guard let first = needle.first, haystack.count >= needle.count else { return 0 }
        var count = 0
        haystack.withUnsafeBufferPointer { bytes in
            needle.withUnsafeBufferPointer { pattern in
                var index = 0
                let last = bytes.count - pattern.count
                while index <= last {
                    if bytes[index] == first {
                        var matched = true
                        for offset in 1..<pattern.count where bytes[index + offset] != pattern[offset] { matched = false; break }
                        if matched { count += 1; index += pattern.count; continue }
                    }
                    index += 1
                }
            }
        }
        return count
    }

    static func anchor(of reply: (status: Int, body: [UInt8])) throws -> String {
        guard reply.status == 200, case .object(let body)? = try? JSONParser.parse(reply.body),
              let anchor = body["anchor"]?.stringValue else { throw BenchError("no anchor (status \(reply.status))") }
        return anchor
    }

    static func uuid(_ n: Int) -> String { String(format: "00000000-0000-4000-8000-%012d", n) }

    static func stepSample(_ n: Int) -> HealthSample {
        let start = Int64(1_767_225_600_000) + Int64(n) * 60_000
        return HealthSample(uuid: HealthUUID(uuid(n)) ?? HealthUUID.random(), type: "stepCount", start: start,
                            end: start + 30_000, content: .quantity(Double(n % 100 + 1)), metadata: [], device: nil)
    }

    static func sampleBody(_ n: Int) -> [UInt8] {
        let start = RFC3339.format(Int64(1_767_225_600_000) + Int64(n) * 60_000)
        let end = RFC3339.format(Int64(1_767_225_600_000) + Int64(n) * 60_000 + 30_000)
        return Array(#"{"samples":[{"uuid":"\#(uuid(n))","type":"stepCount","value":12,"unit":"count","start":"\#(start)","end":"\#(end)"}]}"#.utf8)
    }
}
