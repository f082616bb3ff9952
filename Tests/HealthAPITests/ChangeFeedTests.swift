import Dispatch
import Foundation
import Testing
import HTTP
import JSON
import Synchronization
import Identity
import PostgresTestSupport
@testable import HealthAPI
@testable import HealthStore
@testable import SQLiteStore

/// An `HTTPBodyStream` that keeps what it is given, never drains (a client that stopped reading)
/// and, like the server's, refuses and closes once the unsent backlog passes `cap`.
final class RecordingBodyStream: HTTPBodyStream {
    private struct State {
        var bytes: [UInt8] = []
        var unsent = 0
        var closed = false
        var finished = false
        var overflowed = false
        var handlers: [@Sendable () -> Void] = []
    }
    private let state = Mutex(State())
    private let condition = NSCondition()
    let cap: Int

    init(cap: Int = 1 << 30) { self.cap = cap }

    func write(_ bytes: [UInt8]) -> Bool {
        let (accepted, handlers) = state.withLock { state -> (Bool, [@Sendable () -> Void]) in
            guard !state.closed else { return (false, []) }
            state.unsent += bytes.count
            if state.unsent > cap {
                state.overflowed = true
                state.closed = true
                defer { state.handlers = [] }
                return (false, state.handlers)
            }
            state.bytes += bytes
            return (true, [])
        }
        for handler in handlers { handler() }
        signal()
        return accepted
    }

    func finish() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.closed else { return [] }
            state.closed = true
            state.finished = true
            defer { state.handlers = [] }
            return state.handlers
        }
        for handler in handlers { handler() }
        signal()
    }

    var isClosed: Bool { state.withLock { $0.closed } }
    var bufferedByteCount: Int { state.withLock { $0.unsent } }
    var isFinished: Bool { state.withLock { $0.finished } }
    var overflowed: Bool { state.withLock { $0.overflowed } }
    var text: String { String(decoding: state.withLock { $0.bytes }, as: UTF8.self) }

    /// The peer reads everything sent so far.
    func drain() { state.withLock { $0.unsent = 0 } }

    func onClose(_ handler: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.closed { return true }
            state.handlers.append(handler)
            return false
        }
        if now { handler() }
    }

    private func signal() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until `predicate` holds; the time limit only keeps a broken build from hanging.
    @discardableResult
    func waitUntil(_ predicate: (RecordingBodyStream) -> Bool) -> Bool {
        let limit = Date().addingTimeInterval(20)
        condition.lock()
        defer { condition.unlock() }
        while !predicate(self) {
            if !condition.wait(until: limit) { return predicate(self) }
        }
        return true
    }

    /// The events written so far: (id, event, data) for each `event:` block.
    var events: [(id: String?, event: String, data: String)] {
        text.components(separatedBy: "\n\n").compactMap { block in
            var id: String?, event: String?, data: String?
            for line in block.split(separator: "\n", omittingEmptySubsequences: true) {
                if line.hasPrefix("id: ") { id = String(line.dropFirst(4)) }
                if line.hasPrefix("event: ") { event = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
            }
            guard let event, let data else { return nil }
            return (id, event, data)
        }
    }
}

/// A request answered later (long-poll).
final class PendingReply: Sendable {
    private let response = Mutex<HTTPResponse?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ server: TestServer, _ target: String, token: String, headers: [(String, String)] = []) {
        var fields = HTTPHeaders()
        fields.add("Host", "test")
        fields.add("Authorization", "Bearer \(token)")
        for (name, value) in headers { fields.add(name, value) }
        server.application.respond(to: HTTPRequest(method: .get, target: target, headers: fields),
                                   connection: ConnectionInfo(id: 7, remoteAddress: "127.0.0.1")) { [self] reply in
            self.response.withLock { $0 = reply }
            self.done.signal()
        }
    }

    var isAnswered: Bool { response.withLock { $0 != nil } }

    /// The response; the time limit only keeps a broken build from hanging.
    func wait() -> HTTPResponse? {
        guard done.wait(timeout: .now() + 20) == .success else { return nil }
        done.signal()
        return response.withLock { $0 }
    }

    var json: JSONObject? {
        guard let response = wait(), case .bytes(let bytes) = response.body else { return nil }
        return (try? JSONParser.parse(bytes))?.objectValue
    }
}

extension TestServer.Reply {
    var anchor: String { self["anchor"]?.stringValue ?? "" }
    var more: Bool { self["more"] == .bool(true) }
    var addedUUIDs: [String] { self["added"]?.arrayValue?.compactMap { $0.objectValue?["uuid"]?.stringValue } ?? [] }
    var deletedUUIDs: [String] { self["deleted"]?.arrayValue?.compactMap { $0.objectValue?["uuid"]?.stringValue } ?? [] }
}

private func uuid(_ n: Int) -> String { String(format: "00000000-0000-4000-8000-%012d", n) }

/// A one-minute-apart step sample with a uuid made from `n`.
private func steps(_ n: Int) -> String {
    let m = n % 1440
    let minute = String(format: "%02d", m % 60), hour = String(format: "%02d", m / 60)
    return Fixture.steps(Double(n + 1), "2026-03-01T\(hour):\(minute):00Z", "2026-03-01T\(hour):\(minute):30Z", uuid: uuid(n))
}

/// Reads every page from `anchor` (nil = initial sync) until `more` is false.
private func follow(_ f: Fixture, token: String, types: String = "stepCount", from anchor: String?, limit: Int,
                    mirror: inout Set<String>) -> (anchor: String, repeats: Int, pages: Int) {
    var anchor = anchor
    var repeats = 0, pages = 0
    while true {
        let query = "/v1/changes?types=\(types)&limit=\(limit)" + (anchor.map { "&anchor=\($0)" } ?? "")
        let reply = f.server.request(.get, query, token: token)
        guard reply.status == 200 else { Issue.record("status \(reply.status): \(reply.text)"); return (anchor ?? "", repeats, pages) }
        pages += 1
        for deleted in reply.deletedUUIDs { mirror.remove(deleted) }
        for added in reply.addedUUIDs where !mirror.insert(added).inserted { repeats += 1 }
        anchor = reply.anchor
        if !reply.more { return (reply.anchor, repeats, pages) }
    }
}

@Suite struct ChangeFeedAnchorTests {
    @Test func initialSyncPagesEveryPresentSampleThenNothingNew() throws {
        let f = try Fixture()
        #expect(f.save(f.phone, (0..<25).map { steps($0) }.joined(separator: ",")).status == 201)
        let first = f.server.request(.get, "/v1/changes?types=stepCount&limit=10", token: f.phone)
        #expect(first.status == 200)
        #expect(first.addedUUIDs.count == 10)
        #expect(first.more)
        #expect(first["deleted"] == .array([]))
        var mirror = Set(first.addedUUIDs)
        let rest = follow(f, token: f.phone, from: first.anchor, limit: 10, mirror: &mirror)
        #expect(rest.pages == 2)
        #expect(rest.repeats == 0)
        #expect(mirror == Set((0..<25).map { uuid($0) }))
        let idle = f.server.request(.get, "/v1/changes?types=stepCount&anchor=\(rest.anchor)", token: f.phone)
        #expect(idle.addedUUIDs.isEmpty && idle.deletedUUIDs.isEmpty && !idle.more)
        // Samples carry the same fields as /v1/samples.
        let sample = first["added"]?.arrayValue?.first?.objectValue
        #expect(sample?["type"]?.stringValue == "stepCount")
        #expect(sample?["source"]?.objectValue?["app"]?.stringValue == "phone")
    }

    @Test func deletionsAreReportedOnceAndAddedThenDeletedOnlyAsDeleted() throws {
        let f = try Fixture()
        #expect(f.save(f.phone, [steps(0), steps(1)].joined(separator: ",")).status == 201)
        let start = f.server.request(.get, "/v1/changes?types=stepCount", token: f.phone)
        #expect(f.server.request(.delete, "/v1/samples/\(uuid(0))", token: f.phone).status == 204)
        #expect(f.save(f.phone, steps(2)).status == 201)
        #expect(f.server.request(.delete, "/v1/samples/\(uuid(2))", token: f.phone).status == 204)
        #expect(f.save(f.phone, steps(3)).status == 201)
        let changes = f.server.request(.get, "/v1/changes?types=stepCount&anchor=\(start.anchor)", token: f.phone)
        #expect(changes.addedUUIDs == [uuid(3)])
        #expect(changes.deletedUUIDs == [uuid(0), uuid(2)])
        #expect(changes["deleted"]?.arrayValue?.first?.objectValue?["type"]?.stringValue == "stepCount")
        let again = f.server.request(.get, "/v1/changes?types=stepCount&anchor=\(changes.anchor)", token: f.phone)
        #expect(again.addedUUIDs.isEmpty && again.deletedUUIDs.isEmpty)
    }

    @Test func deletionDuringAnInitialSyncReachesTheClientThatSawTheSample() throws {
        let f = try Fixture()
        #expect(f.save(f.phone, (0..<7).map { steps($0) }.joined(separator: ",")).status == 201)
        // Deleted before the sync began: never listed, neither as added nor as deleted.
        #expect(f.server.request(.delete, "/v1/samples/\(uuid(6))", token: f.phone).status == 204)
        let first = f.server.request(.get, "/v1/changes?types=stepCount&limit=3", token: f.phone)
        #expect(first.addedUUIDs == [uuid(0), uuid(1), uuid(2)])
        #expect(first.deletedUUIDs.isEmpty)
        #expect(f.server.request(.delete, "/v1/samples/\(uuid(1))", token: f.phone).status == 204)
        #expect(f.server.request(.delete, "/v1/samples/\(uuid(4))", token: f.phone).status == 204)
        var mirror = Set(first.addedUUIDs)
        var deleted: [String] = []
        var anchor = first.anchor
        while true {
            let page = f.server.request(.get, "/v1/changes?types=stepCount&limit=3&anchor=\(anchor)", token: f.phone)
            #expect(page.status == 200)
            deleted += page.deletedUUIDs
            for uuid in page.deletedUUIDs { mirror.remove(uuid) }
            mirror.formUnion(page.addedUUIDs)
            anchor = page.anchor
            if !page.more { break }
        }
        #expect(mirror == Set([0, 2, 3, 5].map { uuid($0) }))
        #expect(Set(deleted) == Set([uuid(1), uuid(4)]))
    }

    @Test func aFollowerMirrorsTheStoreWhileOthersWrite() throws {
        // The follower polls as fast as it can until the writers finish; on a loaded machine that
        // is more than the per-token budget allows, which is not what this test is about.
        let f = try Fixture { $0.rateLimitPerTokenPerSecond = 0 }
        let writers = 4, batches = 30
        let finished = Mutex(0)
        let group = DispatchGroup()
        for writer in 0..<writers {
            DispatchQueue.global().async(group: group) {
                for batch in 0..<batches {
                    let first = writer * 1_000 + batch * 3
                    let token = writer % 2 == 0 ? f.phone : f.watch
                    _ = f.save(token, (first..<first + 3).map { steps($0) }.joined(separator: ","))
                    if batch % 4 == 3 {
                        _ = f.server.request(.delete, "/v1/samples/\(uuid(first))", token: token)
                    }
                }
                finished.withLock { $0 += 1 }
            }
        }
        var mirror = Set<String>()
        var anchor: String?
        var repeats = 0
        while finished.withLock({ $0 }) < writers {
            let step = follow(f, token: f.phone, from: anchor, limit: 7, mirror: &mirror)
            anchor = step.anchor
            repeats += step.repeats
        }
        group.wait()
        let last = follow(f, token: f.phone, from: anchor, limit: 7, mirror: &mirror)
        repeats += last.repeats
        #expect(repeats == 0)
        let stored = f.server.request(.get, "/v1/samples?type=stepCount&limit=10000", token: f.phone)
        let storedUUIDs = Set(stored["samples"]?.arrayValue?.compactMap { $0.objectValue?["uuid"]?.stringValue } ?? [])
        #expect(storedUUIDs.count == writers * batches * 3 - writers * (batches / 4))
        #expect(mirror == storedUUIDs)
    }

    @Test func limitsAndParametersAreChecked() throws {
        let f = try Fixture()
        for query in ["limit=0", "limit=10001", "wait=61", "wait=-1", "types=stepz", "types=dateOfBirth", "types=stepCount,",
                      "bogus=1", "anchor=abc", "limit=ten"] {
            let reply = f.server.request(.get, "/v1/changes?\(query)", token: f.phone)
            #expect(reply.status == 400, "\(query)")
            #expect(reply.code == "errorInvalidArgument", "\(query)")
        }
        #expect(f.server.request(.get, "/v1/changes").status == 401)
        #expect(f.server.request(.get, "/v1/changes", token: TestServer.adminToken).status == 403)
        #expect(f.save(f.phone, (0..<3).map { steps($0) }.joined(separator: ",")).status == 201)
        let all = f.server.request(.get, "/v1/changes?limit=10000", token: f.phone)
        #expect(all.addedUUIDs.count == 3 && !all.more)
        // Order of the types list does not matter; the anchor is bound to the set.
        let ab = f.server.request(.get, "/v1/changes?types=stepCount,heartRate", token: f.phone)
        #expect(f.server.request(.get, "/v1/changes?types=heartRate,stepCount&anchor=\(ab.anchor)", token: f.phone).status == 200)
    }

    @Test func forgedAndForeignAnchorsAre400() throws {
        let f = try Fixture()
        #expect(f.save(f.phone, steps(0)).status == 201)
        let mine = f.server.request(.get, "/v1/changes?types=stepCount", token: f.phone).anchor
        #expect(f.server.request(.get, "/v1/changes?types=stepCount&anchor=\(mine)", token: f.phone).status == 200)
        // Same user, other app: allowed (anchors are bound to the user and types, not the app).
        #expect(f.server.request(.get, "/v1/changes?types=stepCount&anchor=\(mine)", token: f.watch).status == 200)
        let foreign = f.server.request(.get, "/v1/changes?types=stepCount&anchor=\(mine)", token: f.bobApp)
        #expect(foreign.status == 400)
        #expect(foreign.text.contains("anchor"))
        #expect(f.server.request(.get, "/v1/changes?types=heartRate&anchor=\(mine)", token: f.phone).status == 400)
        #expect(f.server.request(.get, "/v1/changes?anchor=\(mine)", token: f.phone).status == 400)
        var bytes = Array(mine.utf8)
        bytes[3] = bytes[3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let altered = String(decoding: bytes, as: UTF8.self)
        #expect(f.server.request(.get, "/v1/changes?types=stepCount&anchor=\(altered)", token: f.phone).status == 400)
        // A paging cursor of /v1/samples is not an anchor.
        #expect(f.save(f.phone, steps(1)).status == 201)
        let cursor = f.server.request(.get, "/v1/samples?type=stepCount&limit=1", token: f.phone)["next"]?.stringValue ?? ""
        #expect(!cursor.isEmpty)
        #expect(f.server.request(.get, "/v1/changes?types=stepCount&anchor=\(cursor)", token: f.phone).status == 400)
    }

    @Test func anAnchorOlderThanThePurgedTombstonesIs410() throws {
        let f = try Fixture()
        #expect(f.save(f.phone, [steps(0), steps(1)].joined(separator: ",")).status == 201)
        let old = f.server.request(.get, "/v1/changes?types=stepCount", token: f.phone).anchor
        // Bob's anchor predates Alice's purged deletion, but horizons are per user.
        let bobStart = f.server.request(.get, "/v1/changes?types=stepCount", token: f.bobApp).anchor
        #expect(f.server.request(.delete, "/v1/samples/\(uuid(0))", token: f.phone).status == 204)
        let recent = f.server.request(.get, "/v1/changes?types=stepCount&anchor=\(old)", token: f.phone)
        #expect(recent.deletedUUIDs == [uuid(0)])
        #expect(try f.server.store.purgeTombstones(deletedBefore: Int64(Date().timeIntervalSince1970 * 1000) + 60_000) == 1)
        let expired = f.server.request(.get, "/v1/changes?types=stepCount&anchor=\(old)", token: f.phone)
        #expect(expired.status == 410)
        #expect(expired.code == "errorAnchorExpired")
        #expect(f.server.request(.get, "/v1/changes/stream?types=stepCount&anchor=\(old)", token: f.phone).status == 410)
        // An anchor taken after the deletion, a fresh start, and other users are unaffected.
        #expect(f.server.request(.get, "/v1/changes?types=stepCount&anchor=\(recent.anchor)", token: f.phone).status == 200)
        let fresh = f.server.request(.get, "/v1/changes?types=stepCount", token: f.phone)
        #expect(fresh.status == 200 && fresh.addedUUIDs == [uuid(1)])
        #expect(f.server.request(.get, "/v1/changes?types=stepCount&anchor=\(fresh.anchor)", token: f.phone).status == 200)
        #expect(f.server.request(.get, "/v1/changes?types=stepCount&anchor=\(bobStart)", token: f.bobApp).status == 200)
    }

    @Test func withoutReadPermissionOnlyTheAppsOwnChangesAppear() throws {
        let f = try Fixture()
        let start = f.server.request(.get, "/v1/changes?types=stepCount", token: f.watch).anchor
        #expect(f.save(f.phone, [steps(0), steps(1)].joined(separator: ",")).status == 201)
        #expect(f.save(f.watch, steps(2)).status == 201)
        #expect(f.save(f.bobApp, steps(3)).status == 201)
        #expect(f.server.request(.delete, "/v1/samples/\(uuid(0))", token: f.phone).status == 204)
        let watchView = f.server.request(.get, "/v1/changes?types=stepCount&anchor=\(start)", token: f.watch)
        #expect(watchView.addedUUIDs == [uuid(2)])
        #expect(watchView.deletedUUIDs.isEmpty)
        let watchAll = f.server.request(.get, "/v1/changes", token: f.watch)
        #expect(watchAll.addedUUIDs == [uuid(2)])
        let phoneAll = f.server.request(.get, "/v1/changes", token: f.phone)
        #expect(Set(phoneAll.addedUUIDs) == Set([uuid(1), uuid(2)]))
        let bobAll = f.server.request(.get, "/v1/changes", token: f.bobApp)
        #expect(bobAll.addedUUIDs == [uuid(3)])
    }
}

@Suite struct ChangeFeedLongPollTests {
    @Test func aParkedLongPollWakesOnARelevantCommit() throws {
        let f = try Fixture()
        let anchor = f.server.request(.get, "/v1/changes?types=stepCount", token: f.phone).anchor
        let poll = PendingReply(f.server, "/v1/changes?types=stepCount&wait=60&anchor=\(anchor)", token: f.phone)
        let feed = f.server.application.changeFeed
        while feed.parkedCount == 0 && !poll.isAnswered { usleep(1000) }
        #expect(!poll.isAnswered)
        // A commit of another type or another user does not wake it.
        #expect(f.save(f.phone, #"{"type":"heartRate","value":60,"unit":"count/min","start":"2026-03-01T10:00:00Z","end":"2026-03-01T10:00:00Z"}"#).status == 201)
        #expect(f.save(f.bobApp, steps(9)).status == 201)
        #expect(feed.parkedCount == 1)
        #expect(f.server.request(.get, "/metrics").text.contains("\nhealthd_change_long_polls 1\n"))
        #expect(f.save(f.phone, steps(0)).status == 201)
        let body = poll.json
        #expect(body?["added"]?.arrayValue?.count == 1)
        #expect(feed.parkedCount == 0)
    }

    @Test func aLongPollAnswersAtOnceWhenThereIsSomething() throws {
        let f = try Fixture()
        #expect(f.save(f.phone, steps(0)).status == 201)
        let reply = f.server.request(.get, "/v1/changes?types=stepCount&wait=60", token: f.phone)
        #expect(reply.addedUUIDs == [uuid(0)])
    }

    @Test func aLongPollTimesOutWithAnEmptyPageAndACurrentAnchor() throws {
        let f = try Fixture()
        let anchor = f.server.request(.get, "/v1/changes?types=stepCount", token: f.watch).anchor
        // The phone's steps wake the watch's poll, but the watch may not read them: it waits on.
        let poll = PendingReply(f.server, "/v1/changes?types=stepCount&wait=1&anchor=\(anchor)", token: f.watch)
        #expect(f.save(f.phone, steps(0)).status == 201)
        let body = poll.json
        #expect(body?["added"] == .array([]))
        #expect(body?["deleted"] == .array([]))
        #expect(body?["more"] == .bool(false))
        let next = body?["anchor"]?.stringValue ?? ""
        #expect(!next.isEmpty)
        #expect(f.server.request(.get, "/v1/changes?types=stepCount&anchor=\(next)", token: f.phone).status == 200)
    }

    @Test func shutdownAnswersParkedPollsAndEndsStreams() throws {
        let f = try Fixture()
        let poll = PendingReply(f.server, "/v1/changes?types=stepCount&wait=60", token: f.phone)
        let feed = f.server.application.changeFeed
        while feed.parkedCount == 0 && !poll.isAnswered { usleep(1000) }
        let stream = try openStream(f, token: f.phone)
        #expect(feed.streamCount == 1)
        f.server.application.beginShutdown()
        #expect(poll.wait()?.status.code == 200)
        #expect(stream.waitUntil { $0.isFinished })
        #expect(feed.streamCount == 0)
        // Later long-polls answer without waiting.
        #expect(f.server.request(.get, "/v1/changes?types=stepCount&wait=60", token: f.phone).status == 200)
    }
}

/// Opens `/v1/changes/stream` and connects its producer to a recording stream.
private func openStream(_ f: Fixture, token: String, query: String = "types=stepCount", lastEventID: String? = nil,
                        cap: Int = 1 << 30) throws -> RecordingBodyStream {
    let headers = lastEventID.map { [("Last-Event-ID", $0)] } ?? []
    let pending = PendingReply(f.server, "/v1/changes/stream?\(query)", token: token, headers: headers)
    let response = try #require(pending.wait())
    #expect(response.status.code == 200)
    #expect(response.headers["Content-Type"] == "text/event-stream; charset=utf-8")
    guard case .stream(let producer) = response.body else {
        Issue.record("not a stream")
        return RecordingBodyStream()
    }
    let output = RecordingBodyStream(cap: cap)
    producer(output)
    return output
}

@Suite struct ChangeFeedStreamTests {
    @Test func eventsCarryAnchorsAndResumeWithLastEventID() throws {
        let f = try Fixture()
        let stream = try openStream(f, token: f.phone)
        // Without an anchor: one empty event carrying the present anchor.
        #expect(stream.waitUntil { $0.events.count == 1 })
        let announce = try #require(stream.events.first)
        #expect(announce.event == "change")
        let announced = try #require((try? JSONParser.parse(Array(announce.data.utf8)))?.objectValue)
        #expect(announced["added"] == .array([]))
        #expect(announced["anchor"]?.stringValue == announce.id)
        #expect(stream.text.hasPrefix("id: \(announce.id ?? "")\nevent: change\ndata: {"))

        #expect(f.save(f.phone, steps(0)).status == 201)
        #expect(stream.waitUntil { $0.events.count == 2 })
        #expect(f.server.request(.delete, "/v1/samples/\(uuid(0))", token: f.phone).status == 204)
        #expect(stream.waitUntil { $0.events.count == 3 })
        let events = stream.events
        #expect(events[1].data.contains(uuid(0)) && events[1].data.contains(#""deleted":[]"#))
        #expect(events[2].data.contains(#""added":[]"#) && events[2].data.contains(uuid(0)))

        // Resuming from the first event's id replays exactly what followed it.
        #expect(f.save(f.phone, steps(1)).status == 201)
        #expect(stream.waitUntil { $0.events.count == 4 })
        let resumed = try openStream(f, token: f.phone, lastEventID: announce.id)
        #expect(resumed.waitUntil { $0.events.count >= 1 })
        let replay = resumed.events.map(\.data).joined()
        #expect(replay.contains(uuid(1)))
        #expect(replay.contains(uuid(0)))
        #expect(!replay.contains(#""anchor":"\#(announce.id ?? "")""#))
        // The keep-alive comment.
        f.server.application.changeFeed.sendKeepAlives()
        #expect(stream.waitUntil { $0.text.hasSuffix(": keep-alive\n\n") })
        // An unrelated or invisible commit sends nothing.
        let before = stream.events.count
        #expect(f.save(f.bobApp, steps(5)).status == 201)
        #expect(f.save(f.phone, steps(6)).status == 201)
        #expect(stream.waitUntil { $0.events.count == before + 1 })
        #expect(!stream.events.map(\.data).joined().contains(uuid(5)))
    }

    @Test func badStreamRequestsAre4xx() throws {
        let f = try Fixture()
        #expect(f.server.request(.get, "/v1/changes/stream?types=nope", token: f.phone).status == 400)
        #expect(f.server.request(.get, "/v1/changes/stream?limit=3", token: f.phone).status == 400)
        #expect(f.server.request(.get, "/v1/changes/stream", token: f.phone, headers: [("Last-Event-ID", "forged")]).status == 400)
        let bobs = f.server.request(.get, "/v1/changes?types=stepCount", token: f.bobApp).anchor
        #expect(f.server.request(.get, "/v1/changes/stream?types=stepCount", token: f.phone,
                                 headers: [("Last-Event-ID", bobs)]).status == 400)
        #expect(f.server.request(.get, "/v1/changes/stream").status == 401)
    }

    @Test func aSlowConsumerIsCutOffAfterAnErrorEvent() throws {
        let f = try Fixture(configure: { $0.maxStreamBacklogBytes = 4096 })
        let stream = try openStream(f, token: f.phone)
        var n = 0
        while !stream.isClosed && n < 100 {
            let count = stream.events.count
            #expect(f.save(f.phone, steps(n)).status == 201)
            n += 1
            stream.waitUntil { $0.events.count > count || $0.isClosed }
        }
        #expect(stream.isFinished)
        #expect(!stream.overflowed)
        #expect(stream.events.last?.event == "error")
        #expect(stream.events.last?.data.contains("errorSlowConsumer") == true)
        #expect(f.server.application.changeFeed.streamCount == 0)
    }

    @Test func aDrainingConsumerIsNotCutOff() throws {
        let f = try Fixture(configure: { $0.maxStreamBacklogBytes = 4096 })
        let stream = try openStream(f, token: f.phone)
        for n in 0..<30 {
            let count = stream.events.count
            #expect(f.save(f.phone, steps(n)).status == 201)
            stream.waitUntil { $0.events.count > count }
            stream.drain()
        }
        #expect(!stream.isClosed)
        #expect(stream.events.count == 31)
    }
}

/// Revocation and narrowed permissions reach what is in flight (docs/api.md, Authorization): an
/// open stream and a parked long-poll of the token end within a second, and nothing saved after
/// the revocation reaches them. On both stores.
enum ChangeFeedRevocation {
    /// A server with Alice, a writer app and a follower that reads steps (its token and authorization id).
    struct World {
        let f: Fixture
        let token: String
        let id: String

        init(_ backend: TestServer.Backend) throws {
            f = try Fixture(backend: backend)
            let reply = f.server.request(.post, "/v1/authorizations", token: TestServer.adminToken,
                                         json: #"{"user":"\#(f.alice)","app":"follower","read":["stepCount"],"share":["stepCount"]}"#)
            token = reply["token"]?.stringValue ?? ""
            id = reply["id"]?.stringValue ?? ""
        }

        /// The follower's open stream (its first event read) and a long-poll parked at the present.
        func openStreamAndPoll() throws -> (RecordingBodyStream, PendingReply) {
            let stream = try openStream(f, token: token)
            #expect(stream.waitUntil { $0.events.count == 1 })
            let anchor = f.server.request(.get, "/v1/changes?types=stepCount", token: token).anchor
            let poll = PendingReply(f.server, "/v1/changes?types=stepCount&wait=60&anchor=\(anchor)", token: token)
            let feed = f.server.application.changeFeed
            while feed.parkedCount == 0 && !poll.isAnswered { usleep(1000) }
            return (stream, poll)
        }
    }

    static func revokingATokenEndsItsStreamAndParkedPollAtOnce(_ backend: TestServer.Backend) throws {
        let w = try World(backend)
        let f = w.f
        let (stream, poll) = try w.openStreamAndPoll()
        #expect(f.save(f.phone, steps(0)).status == 201)
        #expect(stream.waitUntil { $0.events.count == 2 })
        #expect(poll.wait()?.status.code == 200)
        let current = f.server.request(.get, "/v1/changes?types=stepCount", token: w.token).anchor
        let nextPoll = PendingReply(f.server, "/v1/changes?types=stepCount&wait=60&anchor=\(current)", token: w.token)
        let feed = f.server.application.changeFeed
        while feed.parkedCount == 0 && !nextPoll.isAnswered { usleep(1000) }

        #expect(f.server.request(.delete, "/v1/authorizations/\(w.id)", token: TestServer.adminToken).status == 204)
        // The revocation returns after its streams ended and its polls were answered.
        #expect(stream.isFinished)
        #expect(nextPoll.wait()?.status.code == 401)
        let last = try #require(stream.events.last)
        #expect(last.event == "error" && last.data.contains("errorAuthenticationRequired"), "\(stream.text)")
        #expect(feed.streamCount == 0 && feed.parkedCount == 0)
        // Saved after the revocation: reaches nothing of the token, and the token opens nothing.
        #expect(f.save(f.phone, steps(1)).status == 201)
        #expect(!stream.text.contains(uuid(1)))
        #expect(f.server.request(.get, "/v1/changes/stream?types=stepCount", token: w.token).status == 401)
        #expect(f.server.request(.get, "/v1/changes?types=stepCount&wait=5", token: w.token).status == 401)
    }

    /// A revocation or narrowing no notification announced (another node's, with its NOTIFY lost;
    /// here written straight to the database) still ends the stream and the poll within a second.
    static func anUnannouncedChangeEndsTheStreamWithinASecond(_ backend: TestServer.Backend, narrowing: Bool) throws {
        let w = try World(backend)
        let (stream, poll) = try w.openStreamAndPoll()
        let changedAt = Date()
        if narrowing {
            // The app's switches: every token of the app reads its access from them.
            try w.f.server.executeBehindTheServersBack(
                sqlite: "UPDATE app_grants SET read_types = '' WHERE app = (SELECT app FROM authorizations WHERE id = ?)",
                postgres: "UPDATE app_grants SET read_types = '' WHERE app = (SELECT app FROM authorizations WHERE id = $1)", w.id)
        } else {
            try w.f.server.executeBehindTheServersBack(sqlite: "UPDATE authorizations SET revoked_ms = 1 WHERE id = ?",
                                                       postgres: "UPDATE authorizations SET revoked_ms = 1 WHERE id = $1", w.id)
        }
        #expect(stream.waitUntil { $0.isFinished })
        #expect(poll.wait()?.status.code == 401)
        // The 400 ms access check on a quiet machine; the bound is loose so a loaded one passes
        // too, and tight enough that only that check (not the keep-alive or a timeout) can meet it.
        #expect(Date().timeIntervalSince(changedAt) < 8, "ended after \(Date().timeIntervalSince(changedAt)) s")
        #expect(stream.events.last?.event == "error")
    }
}

extension ChangeFeedRevocation {
    /// The person narrows the follower's switches (`PUT /v1/me/apps/{app}`) or revokes it
    /// (`DELETE /v1/me/apps/{app}`): the follower's open stream and parked poll end at once, and
    /// nothing saved afterwards reaches them.
    static func theAppsPageEndsWhatIsInFlight(_ backend: TestServer.Backend, revoke: Bool) throws {
        let w = try World(backend)
        let f = w.f
        let people = HealthData(f.server.backend).people
        let alice = try #require(try people.signInAccount(name: "alice")?.user)
        try people.setPassword(userRowID: alice.rowID, hash: try PasswordHashing.hash(PersonSessionTests.password).phc)
        let cookie = try #require(PersonSessionTests.cookie(PersonSessionTests.signIn(f.server, name: "alice")))
        let (stream, poll) = try w.openStreamAndPoll()
        let changedAt = Date()
        let headers = [("Cookie", cookie), ("Content-Type", "application/json")]
        let reply = revoke ? f.server.request(.delete, "/v1/me/apps/follower", headers: headers)
            : f.server.request(.put, "/v1/me/apps/follower", json: #"{"share":["stepCount"],"read":[]}"#, headers: headers)
        #expect(reply.status == (revoke ? 204 : 200), "\(reply.text)")
        #expect(stream.waitUntil { $0.isFinished })
        #expect(poll.wait()?.status.code == 401)
        // At once on a quiet machine (the route ends them before it answers); the bound is loose so a
        // loaded machine passes too.
        #expect(Date().timeIntervalSince(changedAt) < 8, "ended after \(Date().timeIntervalSince(changedAt)) s")
        #expect(stream.events.last?.event == "error")
        #expect(f.save(f.phone, steps(7)).status == 201)
        #expect(!stream.text.contains(uuid(7)))
        // Narrowed, the token still works with less; revoked, it is gone.
        let after = f.server.request(.get, "/v1/changes?types=stepCount", token: w.token)
        #expect(after.status == (revoke ? 401 : 200))
        if !revoke { #expect(!after.text.contains(uuid(7)), "the phone's steps are not the follower's to read any more") }
    }
}

@Suite struct ChangeFeedRevocationTests {
    @Test(arguments: [false, true])
    func theAppsPageEndsWhatIsInFlight(revoke: Bool) throws {
        try ChangeFeedRevocation.theAppsPageEndsWhatIsInFlight(.sqlite, revoke: revoke)
    }

    @Test func revokingATokenEndsItsStreamAndParkedPollAtOnce() throws {
        try ChangeFeedRevocation.revokingATokenEndsItsStreamAndParkedPollAtOnce(.sqlite)
    }

    @Test(arguments: [false, true])
    func anUnannouncedChangeEndsTheStreamWithinASecond(narrowing: Bool) throws {
        try ChangeFeedRevocation.anUnannouncedChangeEndsTheStreamWithinASecond(.sqlite, narrowing: narrowing)
    }
}

@Suite(.enabled(if: TestPostgres.isAvailable, "set HEALTHD_TEST_POSTGRES_URL to check revocation on the PostgreSQL store"))
struct PostgresChangeFeedRevocationTests {
    @Test(arguments: [false, true])
    func theAppsPageEndsWhatIsInFlight(revoke: Bool) throws {
        try ChangeFeedRevocation.theAppsPageEndsWhatIsInFlight(.postgres, revoke: revoke)
    }

    @Test func revokingATokenEndsItsStreamAndParkedPollAtOnce() throws {
        try ChangeFeedRevocation.revokingATokenEndsItsStreamAndParkedPollAtOnce(.postgres)
    }

    @Test(arguments: [false, true])
    func anUnannouncedChangeEndsTheStreamWithinASecond(narrowing: Bool) throws {
        try ChangeFeedRevocation.anUnannouncedChangeEndsTheStreamWithinASecond(.postgres, narrowing: narrowing)
    }
}
