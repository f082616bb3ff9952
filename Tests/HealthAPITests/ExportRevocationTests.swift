import Dispatch
import Foundation
import HTTP
import JSON
import Synchronization
import Testing
@testable import HealthAPI

/// A revocation, a narrowing or a sign-out holds for an export under way as for a change stream:
/// no page read under the access that ended goes out (docs/api.md, People and Export).
@Suite struct ExportRevocationTests {
    /// A socket that accepts nothing until it is opened: the export reads a page, then waits for it.
    final class GatedBodyStream: HTTPBodyStream, Sendable {
        private let state = Mutex<(bytes: [UInt8], open: Bool, asked: Bool, closed: Bool)>(([], false, false, false))
        private let done = DispatchSemaphore(value: 0)

        func write(_ bytes: [UInt8]) -> Bool {
            state.withLock { state in
                guard !state.closed else { return false }
                state.bytes += bytes
                return true
            }
        }
        func finish() {
            let first = state.withLock { state -> Bool in
                defer { state.closed = true }
                return !state.closed
            }
            if first { done.signal() }
        }
        var isClosed: Bool { state.withLock { $0.closed } }
        var bufferedByteCount: Int {
            state.withLock { state in
                state.asked = true
                return state.open ? 0 : Int.max
            }
        }
        func onClose(_ handler: @escaping @Sendable () -> Void) {}

        func open() { state.withLock { $0.open = true } }
        /// True once the export has a page read and is waiting to send it.
        func waitUntilWaiting() -> Bool {
            for _ in 0 ..< 2_000 where !state.withLock({ $0.asked }) { usleep(5_000) }
            return state.withLock { $0.asked }
        }
        func lines() -> [JSONObject] {
            guard done.wait(timeout: .now() + 20) == .success else { return [] }
            return state.withLock { $0.bytes }.split(separator: 0x0A).compactMap { (try? JSONParser.parse(Array($0)))?.objectValue }
        }
    }

    static func start(_ server: TestServer, _ target: String, headers: [(String, String)]) throws -> GatedBodyStream {
        var fields = HTTPHeaders()
        fields.add("Host", "test")
        for (name, value) in headers { fields.add(name, value) }
        let reply = Mutex<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        server.application.respond(to: HTTPRequest(method: .get, target: target, headers: fields),
                                   connection: ConnectionInfo(id: 9, remoteAddress: "127.0.0.1")) { response in
            reply.withLock { $0 = response }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 20) == .success)
        let response = try #require(reply.withLock { $0 })
        #expect(response.status.code == 200)
        guard case .stream(let producer) = response.body else { throw ExportError.notAStream }
        let stream = GatedBodyStream()
        producer(stream)
        #expect(stream.waitUntilWaiting())
        return stream
    }

    enum ExportError: Error { case notAStream }

    static func world() throws -> (server: TestServer, user: String, phone: String) {
        let server = try TestServer()
        let user = server.createUser("jane")
        let phone = server.token(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        let samples = (0 ..< 3).map { Fixture.steps(Double($0 + 1), "2026-03-01T10:0\($0):00Z", "2026-03-01T10:0\($0):30Z") }
        #expect(server.request(.post, "/v1/samples", token: phone, json: #"{"samples":[\#(samples.joined(separator: ","))]}"#).status == 201)
        return (server, user, phone)
    }

    @Test func anExportWhoseAccessStaysSendsEverything() throws {
        let (server, _, phone) = try Self.world()
        let stream = try Self.start(server, "/v1/export", headers: [("Authorization", "Bearer \(phone)")])
        stream.open()
        #expect(stream.lines().filter { $0["uuid"] != nil }.count == 3)
    }

    @Test func aRevokedTokensExportUnderWaySendsNothingMore() throws {
        let (server, _, phone) = try Self.world()
        let stream = try Self.start(server, "/v1/export", headers: [("Authorization", "Bearer \(phone)")])
        let id = try #require(server.request(.get, "/v1/authorizations/current", token: phone)["id"]?.stringValue)
        #expect(server.request(.delete, "/v1/authorizations/\(id)", token: TestServer.adminToken).status == 204)
        stream.open()
        let lines = stream.lines()
        #expect(lines.filter { $0["uuid"] != nil }.isEmpty)
        #expect(lines.last?["code"]?.stringValue == "errorAuthenticationRequired")
        #expect(lines.last?["error"]?.stringValue?.contains("revoked") == true)
    }

    @Test func aSignedOutPersonsExportUnderWaySendsNothingMore() throws {
        let (server, _) = try PersonSessionTests.server(.sqlite)
        let jane = try #require(server.request(.get, "/v1/users", token: TestServer.adminToken)["users"]?.arrayValue?.first?
            .objectValue?["id"]?.stringValue)
        let phone = server.token(user: jane, app: "phone", read: [], share: ["stepCount"])
        let sample = Fixture.steps(5, "2026-03-01T10:00:00Z", "2026-03-01T10:00:30Z")
        #expect(server.request(.post, "/v1/samples", token: phone, json: #"{"samples":[\#(sample)]}"#).status == 201)
        let cookie = try #require(PersonSessionTests.cookie(PersonSessionTests.signIn(server)))
        let stream = try Self.start(server, "/v1/me/export", headers: [("Cookie", cookie)])
        #expect(server.request(.delete, "/v1/session", headers: [("Cookie", cookie), ("Content-Type", "application/json")]).status == 204)
        stream.open()
        let lines = stream.lines()
        #expect(!lines.contains { $0["healthdBackup"] != nil || $0["uuid"] != nil })
        #expect(lines.last?["code"]?.stringValue == "errorAuthenticationRequired")
    }
}
