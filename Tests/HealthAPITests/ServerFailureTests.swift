import Foundation
import HTTP
import HealthModel
import JSON
import Synchronization
import Testing
@testable import HealthAPI
@testable import HealthStore
@testable import SQLiteStore

/// Lines a server writes to its log, captured in a temporary file. The log owns its descriptor:
/// it may outlive this object (a server's background work holds it and can still log a failure
/// after the test), and a descriptor closed here while it could still write would let those
/// lines land in whatever file another test opened next under the same number.
final class CapturedLog: Sendable {
    let log: AccessLog
    let path = NSTemporaryDirectory() + "healthd-log-" + UUID().uuidString

    init() {
        do { log = try AccessLog(appendingTo: path) } catch { fatalError("\(error)") }
    }

    deinit { unlink(path) }

    /// Everything written so far (event lines are flushed when written).
    func lines() -> [String] {
        log.flush()
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// The first line containing `text`, waiting up to 10 s for background work to write it.
    func line(containing text: String) -> String? {
        for _ in 0 ..< 1_000 {
            if let line = lines().first(where: { $0.contains(text) }) { return line }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return nil
    }
}

@Suite struct ServerFailureTests {
    /// An event line is in the file when `event` returns, even while another flush (the
    /// periodic timer's, here a thread flushing without pause) took it from the buffer and is
    /// still writing it: readers of the log right after an event must see it.
    @Test func anEventIsWrittenWhenEventReturnsDespiteAConcurrentFlush() {
        let captured = CapturedLog()
        let stop = Atomic<Bool>(false)
        let flusherDone = DispatchSemaphore(value: 0)
        let log = captured.log
        DispatchQueue.global().async {
            while !stop.load(ordering: .relaxed) { log.flush() }
            flusherDone.signal()
        }
        var missing = 0
        for index in 0 ..< 300 {
            log.event("event \(index)")
            let path = captured.path
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            if !text.contains("\"event \(index)\"") { missing += 1 }
        }
        stop.store(true, ordering: .relaxed)
        flusherDone.wait()
        #expect(missing == 0, "\(missing) of 300 events were not yet in the file when event() returned")
    }

    /// A reader that stops reading the log (a full pipe nobody drains) stalls neither requests
    /// nor event lines: requests keep logging into a bounded buffer, then drop and count; an event
    /// waits only its patience. Once the reader is back, the lines and the count of those dropped
    /// arrive.
    @Test func aLogNobodyReadsNeitherBlocksRequestsNorEvents() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let readEnd = ends[0], writeEnd = ends[1]
        defer { close(readEnd); close(writeEnd) }
        let log = AccessLog(fileDescriptor: writeEnd, bufferLimit: 256 * 1024)
        let logged = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            // About 3 MiB of lines: the pipe (64 KiB) and the buffer fill long before the end.
            for index in 0 ..< 30_000 {
                log.record(requestID: "r-\(index)", method: "GET", route: "/healthz", path: "/healthz", status: 200,
                           seconds: 0.001, remote: "127.0.0.1")
            }
            log.event("still answering", patience: .milliseconds(100))
            logged.signal()
        }
        #expect(logged.wait(timeout: .now() + 20) == .success, "logging blocked on a reader that stopped reading")
        // The reader comes back: everything the buffer kept arrives, with the count of the rest.
        let reader = DispatchQueue(label: "reader")
        let received = Mutex<[UInt8]>([])
        let finished = DispatchSemaphore(value: 0)
        reader.async {
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = read(readEnd, &chunk, chunk.count)
                if count <= 0 { break }
                let text = received.withLock { bytes -> Bool in
                    bytes.append(contentsOf: chunk[0 ..< count])
                    return String(decoding: bytes, as: UTF8.self).contains("after the reader came back")
                }
                if text { break }
            }
            finished.signal()
        }
        log.event("after the reader came back", patience: .seconds(10))
        #expect(finished.wait(timeout: .now() + 20) == .success)
        let text = received.withLock { String(decoding: $0, as: UTF8.self) }
        #expect(text.contains(#""msg":"still answering""#))
        #expect(text.contains(#""level":"warning""#) && text.contains(#""dropped":"#), "no count of the dropped lines")
        #expect(text.contains(#""id":"r-0""#), "the first lines were kept")
    }

    /// A log that opened its own file keeps it open for as long as anything holds the log, and
    /// writes what it buffered before closing it: lines logged late (after the test that made
    /// the log let go of it) reach that file and no other.
    @Test func aLogWithItsOwnFileWritesItsLastLinesThereWhenReleased() throws {
        let path = NSTemporaryDirectory() + "healthd-log-" + UUID().uuidString
        defer { unlink(path) }
        var log: AccessLog? = try AccessLog(appendingTo: path)
        log?.record(requestID: "1-1", method: "GET", route: "/healthz", path: "/healthz", status: 200, seconds: 0.001, remote: "127.0.0.1")
        log?.event("a late line")
        log = nil
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains(#""id":"1-1""#) && text.contains(#""msg":"a late line""#), "\(text)")
        #expect(throws: AccessLogError.self) { try AccessLog(appendingTo: NSTemporaryDirectory() + "no-such-dir-\(UUID())/log") }
    }

    /// A store that fails underneath the API (here a table gone) answers 500 with a generic
    /// detail and the request id; the log line with that id holds SQLite's message and the SQL.
    @Test func aStoreFailureReachesTheLogNotTheClient() throws {
        let captured = CapturedLog()
        let server = try TestServer(log: captured.log)
        let user = server.createUser("ada")
        let token = server.token(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        #expect(server.request(.get, "/v1/characteristics", token: token).status == 200)
        try server.store.pool.writeWithoutTransaction { db in try db.execute("DROP TABLE characteristics") }

        let reply = server.request(.get, "/v1/characteristics", token: token)
        #expect(reply.status == 500)
        #expect(reply.code == "errorInternal")
        let requestID = try #require(reply.headers["X-Request-Id"])
        #expect(reply["requestId"]?.stringValue == requestID)
        for leak in ["SELECT", "characteristics", "SQLite", "no such table", "while running"] {
            #expect(!reply.text.contains(leak), "the response shows '\(leak)': \(reply.text)")
        }

        let line = captured.lines().first { $0.contains("\"id\":\"\(requestID)\"") && $0.contains("internal error") }
        #expect(line?.contains("no such table: characteristics") == true, "\(line ?? "no log line")")
        #expect(line?.contains("SELECT") == true, "the log line keeps the statement")
    }

    /// A damaged row body (a category sample's JSON) is the server's failure: 500 with the
    /// request id, and the log line with that id names the table and column; never a sample
    /// without its value.
    @Test func aDamagedRowBodyIsA500WithTheRequestID() throws {
        let captured = CapturedLog()
        let server = try TestServer(log: captured.log)
        let user = server.createUser("ada")
        let token = server.token(user: user, app: "phone", read: ["sleepAnalysis"], share: ["sleepAnalysis"])
        let saved = server.request(.post, "/v1/samples", token: token, json: """
            {"samples":[{"type":"sleepAnalysis","value":"asleepCore","start":"2026-03-08T01:00:00Z","end":"2026-03-08T02:00:00Z"}]}
            """)
        #expect(saved.status < 300, "\(saved.text)")
        try server.store.pool.writeWithoutTransaction { db in try db.execute("UPDATE samples SET body = x'7b2263223a'") }

        let reply = server.request(.get, "/v1/samples?type=sleepAnalysis", token: token)
        #expect(reply.status == 500)
        #expect(reply.code == "errorInternal")
        let requestID = try #require(reply.headers["X-Request-Id"])
        #expect(reply["requestId"]?.stringValue == requestID)
        #expect(!reply.text.contains("body") && !reply.text.contains("JSON"), "\(reply.text)")
        let line = captured.line(containing: "\"id\":\"\(requestID)\"")
        #expect(line?.contains("samples.body is not a JSON object") == true, "\(line ?? "no log line")")
    }

    /// An export that fails after its 200 went out ends with a line that says so in a problem's words:
    /// the cause goes to the log with the request id, never to the client.
    @Test func anExportStoppedByADamagedRowShowsNoInternals() throws {
        let captured = CapturedLog()
        let server = try TestServer(log: captured.log)
        let user = server.createUser("ada")
        let token = server.token(user: user, app: "phone", read: ["sleepAnalysis"], share: ["sleepAnalysis"])
        #expect(server.request(.post, "/v1/samples", token: token, json: """
            {"samples":[{"type":"sleepAnalysis","value":"asleepCore","start":"2026-03-08T01:00:00Z","end":"2026-03-08T02:00:00Z"}]}
            """).status < 300)
        try server.store.pool.writeWithoutTransaction { db in try db.execute("UPDATE samples SET body = x'7b2263223a'") }

        var headers = HTTPHeaders()
        headers.add("Host", "test")
        headers.add("Authorization", "Bearer \(token)")
        let answered = Mutex<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        server.application.respond(to: HTTPRequest(method: .get, target: "/v1/export", headers: headers),
                                   connection: ConnectionInfo(id: 1, remoteAddress: "127.0.0.1")) { response in
            answered.withLock { $0 = response }
            done.signal()
        }
        done.wait()
        let response = try #require(answered.withLock { $0 })
        #expect(response.status.code == 200)
        guard case .stream(let producer) = response.body else {
            Issue.record("not a stream")
            return
        }
        let collector = CollectingBodyStream()
        producer(collector)
        let text = String(decoding: collector.waitForBody(), as: UTF8.self)
        let last = try #require(text.split(separator: "\n").last.flatMap { try? JSONParser.parse(Array($0.utf8)) }?.objectValue)
        #expect(last["code"]?.stringValue == "errorInternal")
        #expect(!text.contains("body") && !text.contains("JSON") && !text.contains("SQL"), "\(text)")
        let requestID = try #require(response.headers["X-Request-Id"])
        #expect(last["requestId"]?.stringValue == requestID)
        #expect(captured.line(containing: "\"id\":\"\(requestID)\"")?.contains("samples.body is not a JSON object") == true)
    }

    /// The asynchronous write path (POST /v1/samples answers from the commit's completion) goes
    /// through the same responder.
    @Test func aFailedGroupCommitShowsNoInternals() throws {
        let captured = CapturedLog()
        let server = try TestServer(log: captured.log)
        let user = server.createUser("ada")
        let token = server.token(user: user, app: "phone", read: [], share: ["stepCount"])
        try server.store.pool.writeWithoutTransaction { db in try db.execute("DROP TABLE type_extents") }
        let reply = server.request(.post, "/v1/samples", token: token, json: """
            {"samples":[{"type":"stepCount","value":5,"unit":"count","start":"2026-03-08T09:00:00Z","end":"2026-03-08T09:01:00Z"}]}
            """)
        #expect(reply.status == 500)
        let requestID = try #require(reply.headers["X-Request-Id"])
        #expect(reply["requestId"]?.stringValue == requestID)
        #expect(!reply.text.contains("type_extents") && !reply.text.contains("INSERT"), "\(reply.text)")
        #expect(captured.lines().contains { $0.contains(requestID) && $0.contains("type_extents") })
    }

    /// A database error while looking a token up is the server's failure (500), not the
    /// client's (401 would tell the app its token is gone and send the user to sign in again).
    @Test func aTokenLookupFailureIsNotA401() throws {
        let captured = CapturedLog()
        let server = try TestServer(log: captured.log)
        let user = server.createUser("ada")
        let token = server.token(user: user, app: "phone", read: ["stepCount"], share: [])
        try server.store.pool.writeWithoutTransaction { db in try db.execute("DROP TABLE authorizations") }
        let reply = server.request(.get, "/v1/samples?type=stepCount", token: token)
        #expect(reply.status == 500, "\(reply.text)")
        #expect(reply.headers["WWW-Authenticate"] == nil)
        let requestID = try #require(reply.headers["X-Request-Id"])
        #expect(captured.lines().contains { $0.contains(requestID) && $0.contains("no such table: authorizations") })
    }

    /// Client errors carry no request id in the body (the header has it); nothing is logged.
    @Test func clientErrorsStayAsTheyWere() throws {
        let captured = CapturedLog()
        let server = try TestServer(log: captured.log)
        let reply = server.request(.get, "/v1/samples?type=stepCount")
        #expect(reply.status == 401)
        #expect(reply["requestId"] == nil)
        #expect(reply.headers["X-Request-Id"] != nil)
        #expect(!captured.lines().contains { $0.contains("internal error") })
    }

    @Test func theMapperSortsStoreErrors() {
        #expect(APIError(storeError: StoreError.notFound("x")).status == .notFound)
        #expect(APIError(storeError: StoreError.conflict("x")).status == .conflict)
        // A write in flight when its account was erased: the token is gone, as on a revocation.
        let erased = APIError(storeError: AccountErased())
        #expect(erased.status == .unauthorized && erased.code == "errorAuthenticationRequired" && erased.cause == nil)
        let failure = APIError(storeError: CocoaError(.fileReadUnknown))
        #expect(failure.status == .internalServerError)
        #expect(failure.cause != nil)
        #expect(!failure.detail.contains("Cocoa"))
        // The contract's codes: 503 is errorUnavailable, 507 errorInsufficientStorage, both with Retry-After.
        let unavailable = APIError(storeError: FaultError(storeFault: .unavailable))
        #expect(unavailable.status.code == 503 && unavailable.code == "errorUnavailable")
        #expect(unavailable.headers["Retry-After"] != nil)
        let full = APIError(storeError: FaultError(storeFault: .outOfSpace))
        #expect(full.status.code == 507 && full.code == "errorInsufficientStorage")
    }

    struct FaultError: StoreFaultReporting {
        var storeFault: StoreFault?
    }
}

/// Background work has no request to answer: its failures are logged, and each has a stated
/// way of recovering.
@Suite struct BackgroundFailureTests {
    @Test func aFailedTombstonePurgeIsLogged() throws {
        let captured = CapturedLog()
        let server = try TestServer(log: captured.log)
        try server.store.pool.writeWithoutTransaction { db in try db.execute("DROP TABLE deleted_samples") }
        server.application.changeFeed.purgeExpiredTombstones()
        let line = captured.lines().first { $0.contains("tombstone purge failed") }
        #expect(line?.contains("deleted_samples") == true, "\(line ?? "no log line")")
    }

    @Test func aFailedZoneJudgementIsLogged() throws {
        let captured = CapturedLog()
        let server = try TestServer(log: captured.log)
        let user = server.createUser("runner")
        let coach = server.token(user: user, app: "coach", read: ["heartRate"], share: ["workout", "heartRate"])
        let started = server.request(.post, "/v1/workout-sessions", token: coach,
                                     json: #"{"activityType":"running","zone":{"low":120,"high":150}}"#)
        #expect(started.status == 201)
        try server.store.pool.writeWithoutTransaction { db in
            try db.execute("ALTER TABLE workout_sessions RENAME COLUMN zone_seq TO zone_seq_gone")
        }
        let now = RFC3339.format(Int64(Date().timeIntervalSince1970 * 1000))
        let saved = server.request(.post, "/v1/samples", token: coach, json: """
            {"samples":[{"type":"heartRate","value":130,"unit":"count/min","start":"\(now)"}]}
            """)
        #expect(saved.status == 201, "the reading is saved; only its judgement fails")
        let line = captured.line(containing: "workout zone judgement failed")
        #expect(line?.contains("zone_seq") == true, "\(line ?? "no log line")")
    }

    @Test func activeSessionsThatCannotBeReadAtStartupAreLoggedAndJudgedAnyway() throws {
        let directory = NSTemporaryDirectory() + "healthd-test-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let first = try TestServer(directory: directory)
            try first.store.pool.writeWithoutTransaction { db in
                try db.execute("ALTER TABLE workout_sessions RENAME TO workout_sessions_gone")
            }
        }
        let captured = CapturedLog()
        _ = try TestServer(directory: directory, log: captured.log)
        #expect(captured.lines().contains { $0.contains("cannot read the active workout sessions") })
    }
}
