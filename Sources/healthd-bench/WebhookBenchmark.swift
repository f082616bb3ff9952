import Dispatch
import Foundation
import Glibc
import HealthAPI
import HealthModel
import HealthStore
import Synchronization

/// `healthd-bench webhooks [--rounds N] [--backlog N] [--seconds S] [--writers N] [--batch N]`: an
/// in-process healthd (127.0.0.1 in webhookAllowedHosts) and loopback receivers in this process.
/// 1. Commit-to-delivery: the time from sending a one-sample POST until a fast receiver has the
///    delivery carrying it, beside an event stream's write-to-wake for the same writes.
/// 2. Pages per second to one fast receiver: `--backlog` samples in commits of 50 delivered as they
///    are written, then the same held back until all are written (full pages of 500 changes).
/// 3. Ingest with subscriptions: POST /v1/samples from `--writers` clients for `--seconds`, without
///    webhooks, with 10 webhooks to a receiver that answers in 2 s, and with 10 to dead receivers
///    (connections refused); the baseline runs before and after.
enum WebhookBenchmark {
    static func run(_ arguments: [String]) -> Int32 {
        var rounds = 200, backlog = 50_000, seconds = 10, writers = 4, batch = 100
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst().flatMap(Int.init), value > 0 else {
                print("healthd-bench webhooks: \(flag) needs a positive number"); return 2
            }
            switch flag {
            case "--rounds": rounds = value
            case "--backlog": backlog = value
            case "--seconds": seconds = value
            case "--writers": writers = value
            case "--batch": batch = value
            default: print("healthd-bench webhooks: unknown option \(flag)"); return 2
            }
        }
        do {
            print("healthd-bench webhooks: \(machineDescription())")
            let harness = try InProcessServer(name: "webhooks", connections: 64, webhookAllowedHosts: ["127.0.0.1"])
            defer { harness.stop() }
            let store = harness.store
            let port = harness.port
            let user = try store.createUser(name: "bench")
            let (phone, token) = try store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
            let client = try BenchHTTPClient(port: port)
            let fast = try LoopbackReceiver(delay: 0)

            // 1. Commit-to-delivery beside the event stream's wake-up, the same writes.
            let hook = try subscribe(client, token: token, url: "http://127.0.0.1:\(fast.port)/fast")
            let watcher = try BenchHTTPClient(port: port)
            try watcher.sendRequest("GET", "/v1/changes/stream?types=stepCount", token: token)
            try watcher.readUntil(Array("event: change\n".utf8))
            var deliveries: [Double] = [], wakes: [Double] = []
            for round in 0..<rounds {
                let n = 1_000_000 + round
                let marker = Array(ChangeFeedBenchmark.uuid(n).utf8)
                let sent = DispatchTime.now().uptimeNanoseconds
                _ = try client.request("POST", "/v1/samples", token: token, body: ChangeFeedBenchmark.sampleBody(n))
                try watcher.readUntil(marker)
                wakes.append(Double(DispatchTime.now().uptimeNanoseconds - sent) / 1e6)
                guard let arrived = fast.waitFor(marker, seconds: 10) else { throw BenchError("delivery \(round) did not arrive") }
                deliveries.append(Double(arrived - sent) / 1e6)
            }
            report("commit-to-delivery (webhook)", deliveries)
            report("event-stream write-to-wake, same writes", wakes)
            _ = try client.request("DELETE", "/v1/webhooks/\(hook)", token: token)

            // 2. Pages per second to one fast receiver: live (commits of 50 as they are written), then
            // from a backlog held back by the receiver's first answer (full pages).
            let live = try LoopbackReceiver(delay: 0)
            let liveHook = try subscribe(client, token: token, url: "http://127.0.0.1:\(live.port)/live")
            var started = DispatchTime.now().uptimeNanoseconds
            var saved = 0
            while saved < backlog {
                let count = min(50, backlog - saved)
                _ = try store.save((saved..<saved + count).map { ChangeFeedBenchmark.stepSample(2_000_000 + $0) }, by: phone)
                saved += count
            }
            var savedAt = DispatchTime.now().uptimeNanoseconds
            try waitUntil(backlog) { live.changesReceived }
            var total = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            print(String(format: "live: %d samples in %d commits of 50 (written in %.2f s) delivered in %d pages in %.2f s: "
                         + "%.0f pages/s, %.0f changes/s",
                         backlog, (backlog + 49) / 50, Double(savedAt - started) / 1e9, live.requestCount, total,
                         Double(live.requestCount) / total, Double(backlog) / total))
            _ = try client.request("DELETE", "/v1/webhooks/\(liveHook)", token: token)

            let gated = try LoopbackReceiver(delay: 0, holdFirstAnswer: true)
            let gatedHook = try subscribe(client, token: token, url: "http://127.0.0.1:\(gated.port)/backlog")
            _ = try store.save([ChangeFeedBenchmark.stepSample(2_900_000)], by: phone)
            while gated.requestCount == 0 { usleep(1_000) }
            saved = 0
            while saved < backlog {
                let count = min(50, backlog - saved)
                _ = try store.save((saved..<saved + count).map { ChangeFeedBenchmark.stepSample(3_000_000 + $0) }, by: phone)
                saved += count
            }
            started = DispatchTime.now().uptimeNanoseconds
            gated.release()
            try waitUntil(backlog + 1) { gated.changesReceived }
            savedAt = DispatchTime.now().uptimeNanoseconds
            total = Double(savedAt - started) / 1e9
            let pages = gated.requestCount - 1
            print(String(format: "backlog: %d samples waiting, delivered in %d pages of up to %d in %.2f s: %.0f pages/s, %.0f changes/s",
                         backlog, pages, 500, total, Double(pages) / total, Double(backlog) / total))
            _ = try client.request("DELETE", "/v1/webhooks/\(gatedHook)", token: token)

            // 3. Ingest without, with slow and with dead receivers.
            let slow = try LoopbackReceiver(delay: 2)
            var next = 5_000_000
            func ingest(_ label: String) throws -> Double {
                let rate = try measureIngest(port: port, token: token, writers: writers, batch: batch, seconds: seconds, first: next)
                next += 10_000_000
                print(String(format: "ingest %@: %.0f samples/s (%d writers, batches of %d, %d s)", label, rate, writers, batch, seconds))
                return rate
            }
            let before = try ingest("without webhooks")
            var hooks = try (0..<10).map { try subscribe(client, token: token, url: "http://127.0.0.1:\(slow.port)/slow\($0)") }
            let withSlow = try ingest("with 10 webhooks to a receiver answering in 2 s")
            print("  the slow receiver got \(slow.requestCount) requests meanwhile")
            for id in hooks { _ = try client.request("DELETE", "/v1/webhooks/\(id)", token: token) }
            let deadPort = try unusedPort()
            hooks = try (0..<10).map { try subscribe(client, token: token, url: "http://127.0.0.1:\(deadPort)/dead\($0)") }
            let withDead = try ingest("with 10 webhooks to dead receivers (connection refused)")
            for id in hooks { _ = try client.request("DELETE", "/v1/webhooks/\(id)", token: token) }
            let after = try ingest("without webhooks, again")
            let baseline = (before + after) / 2
            print(String(format: "ratio to the mean baseline: slow receivers %.2f x, dead receivers %.2f x (target >= 0.9 x)",
                         withSlow / baseline, withDead / baseline))
            return 0
        } catch {
            print("healthd-bench webhooks: \(error)")
            return 1
        }
    }

    static func waitUntil(_ count: Int, _ received: () -> Int) throws {
        let started = DispatchTime.now().uptimeNanoseconds
        while received() < count {
            guard Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 < 300 else {
                throw BenchError("not delivered in 5 minutes (\(received()) of \(count) changes)")
            }
            usleep(1_000)
        }
    }

    static func subscribe(_ client: BenchHTTPClient, token: String, url: String) throws -> String {
        let reply = try client.request("POST", "/v1/webhooks", token: token,
                                       body: Array(#"{"url":"\#(url)","types":["stepCount"]}"#.utf8))
        guard reply.status == 201, let id = String(decoding: reply.body, as: UTF8.self).split(separator: "\"").dropFirst(3).first else {
            throw BenchError("POST /v1/webhooks answered \(reply.status): \(String(decoding: reply.body, as: UTF8.self))")
        }
        return String(id)
    }

    /// Samples per second acknowledged by `writers` keep-alive clients posting batches for `seconds`.
    static func measureIngest(port: Int, token: String, writers: Int, batch: Int, seconds: Int, first: Int) throws -> Double {
        let acknowledged = Atomic<Int>(0)
        let failure = Mutex<String?>(nil)
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds) * 1_000_000_000
        let group = DispatchGroup()
        let started = DispatchTime.now().uptimeNanoseconds
        for writer in 0..<writers {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    let connection = try BenchHTTPClient(port: port)
                    var n = first + writer * 1_000_000
                    while DispatchTime.now().uptimeNanoseconds < deadline {
                        var body = #"{"samples":["#
                        for index in 0..<batch {
                            let start = Int64(1_767_225_600_000) + Int64(n + index) * 1_000
                            if index > 0 { body += "," }
                            body += #"{"uuid":"\#(ChangeFeedBenchmark.uuid(n + index))","type":"stepCount","value":3,"unit":"count","#
                                + #""start":"\#(RFC3339.format(start))","end":"\#(RFC3339.format(start + 500))"}"#
                        }
                        body += "]}"
                        let reply = try connection.request("POST", "/v1/samples", token: token, body: Array(body.utf8))
                        guard reply.status == 201 || reply.status == 200 else { throw BenchError("ingest answered \(reply.status)") }
                        acknowledged.add(batch, ordering: .relaxed)
                        n += batch
                    }
                } catch {
                    failure.withLock { $0 = String(describing: error) }
                }
            }
        }
        group.wait()
        if let message = failure.withLock({ $0 }) { throw BenchError(message) }
        return Double(acknowledged.load(ordering: .relaxed)) / (Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
    }

    static func report(_ label: String, _ milliseconds: [Double]) {
        let sorted = milliseconds.sorted()
        func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)] }
        print(String(format: "%@, %d writes: p50 %.2f ms, p99 %.2f ms, max %.2f ms", label, sorted.count, percentile(0.5),
                     percentile(0.99), sorted.last ?? 0))
    }

    static func unusedPort() throws -> Int {
        let probe = try LoopbackReceiver(delay: 0)
        let port = probe.port
        probe.close()
        return port
    }
}

/// A webhook receiver on loopback: a thread per connection, answering each request with a 204
/// after `delay` seconds; it keeps when each delivery arrived and counts the changes in them.
final class LoopbackReceiver: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let delay: Double
    /// The first request waits for `release()` (a backlog builds meanwhile).
    private let gate = DispatchSemaphore(value: 0)
    private let holdFirstAnswer: Bool
    private let state = Mutex<(bodies: [(time: UInt64, body: [UInt8])], requests: Int, changes: Int)>(([], 0, 0))

    init(delay: Double, holdFirstAnswer: Bool = false) throws {
        self.delay = delay
        self.holdFirstAnswer = holdFirstAnswer
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(listening, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listening, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listening, 128) == 0 else { throw BenchError("receiver: cannot listen") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listening, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        listener = listening
        Thread.detachNewThread { [self] in
            while true {
                let connection = accept(listening, nil, nil)
                guard connection >= 0 else { return }
                Thread.detachNewThread { [self] in serve(connection) }
            }
        }
    }

    func close() { Glibc.shutdown(listener, Int32(SHUT_RDWR)); Glibc.close(listener) }

    func release() { gate.signal() }

    var requestCount: Int { state.withLock { $0.requests } }
    var changesReceived: Int { state.withLock { $0.changes } }

    /// When the first delivery holding `marker` arrived (uptime nanoseconds), waiting up to `seconds`.
    func waitFor(_ marker: [UInt8], seconds: Double) -> UInt64? {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
        while DispatchTime.now().uptimeNanoseconds < deadline {
            let found = state.withLock { state -> UInt64? in
                guard let index = state.bodies.firstIndex(where: { ChangeFeedBenchmark.occurrences(of: marker, in: $0.body) > 0 }) else {
                    return nil
                }
                let time = state.bodies[index].time
                state.bodies.removeSubrange(...index)
                return time
            }
            if let found { return found }
            usleep(100)
        }
        return nil
    }

    private func serve(_ connection: Int32) {
        defer { Glibc.close(connection) }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let separator = Array("\r\n\r\n".utf8)
        while true {
            // Head, then Content-Length bytes of body.
            var headEnd: Int?
            while headEnd == nil {
                if let end = Self.find(separator, in: buffer) { headEnd = end; break }
                let count = read(connection, &chunk, chunk.count)
                guard count > 0 else { return }
                buffer += chunk[0..<count]
            }
            guard let end = headEnd else { return }
            let head = String(decoding: buffer[0..<end], as: UTF8.self).lowercased()
            let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            while buffer.count < end + 4 + length {
                let count = read(connection, &chunk, chunk.count)
                guard count > 0 else { return }
                buffer += chunk[0..<count]
            }
            let body = Array(buffer[(end + 4)..<(end + 4 + length)])
            buffer.removeSubrange(0..<(end + 4 + length))
            let arrived = DispatchTime.now().uptimeNanoseconds
            let changes = ChangeFeedBenchmark.occurrences(of: Array(#""uuid":""#.utf8), in: body)
            let first = state.withLock { state in
                state.requests += 1
                state.changes += changes
                if delay == 0 { state.bodies.append((arrived, body)) }
                if state.bodies.count > 10_000 { state.bodies.removeFirst(5_000) }
                return state.requests == 1
            }
            if first && holdFirstAnswer { gate.wait() }
            if delay > 0 { usleep(useconds_t(delay * 1_000_000)) }
            let answer = Array("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n".utf8)
            guard write(connection, answer, answer.count) == answer.count else { return }
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for index in 0...(haystack.count - needle.count) where haystack[index..<index + needle.count].elementsEqual(needle) { return index }
        return nil
    }
}
