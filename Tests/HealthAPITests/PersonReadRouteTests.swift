import Foundation
import Testing
@testable import HTTP
@testable import HealthAPI
@testable import HealthStore
import Identity
import PostgresTestSupport

/// The signed-in person's reads (`/v1/me/summary` and the others): the app routes' answers over
/// all of the person's own data, with the cookie; nothing of anyone else's, and no writes.
@Suite struct PersonReadRouteTests {
    static let day = "2026-03-02"

    @Test("the person reads every app's data of every type; another person's stays out", arguments: PersonSessionTests.backends)
    func personReadsAllOwnData(backend: TestServer.Backend) throws {
        let (server, user) = try PersonSessionTests.server(backend)
        let bob = server.createUser("bob")
        // An app that may write steps but read nothing, and another person's app.
        let watch = server.token(user: user.id, app: "watch", read: [], share: ["stepCount", "heartRate"])
        let bobs = server.token(user: bob, app: "bobs", read: [], share: ["stepCount"])
        let steps = SampleFixture.steps(1234, "\(Self.day)T10:00:00Z", "\(Self.day)T10:30:00Z")
        #expect(server.request(.post, "/v1/samples", token: watch, json: #"{"samples":[\#(steps)]}"#).status == 201)
        let bobsSteps = SampleFixture.steps(999, "\(Self.day)T11:00:00Z", "\(Self.day)T11:30:00Z")
        #expect(server.request(.post, "/v1/samples", token: bobs, json: #"{"samples":[\#(bobsSteps)]}"#).status == 201)
        let cookie = try #require(PersonSessionTests.cookie(PersonSessionTests.signIn(server)))
        let headers = [("Cookie", cookie)]
        let samples = server.request(.get, "/v1/me/samples?type=stepCount", headers: headers)
        #expect(samples.status == 200)
        // Exactly her one sample, by value (uuids and ids are random text, so the body is not searched).
        let values = samples["samples"]?.arrayValue?.compactMap { $0.objectValue?["value"]?.numberValue } ?? []
        #expect(values == [1234] && samples.text.contains("watch"))
        let collection = server.request(.get, "/v1/me/statistics/collection?type=stepCount&options=cumulativeSum"
                                        + "&start=\(Self.day)T00:00:00Z&end=\(Self.day)T23:59:59Z&anchor=\(Self.day)T00:00:00Z&interval=P1D",
                                        headers: headers)
        #expect(collection.status == 200)
        #expect(collection.text.contains("1234"))
        #expect(server.request(.get, "/v1/me/summary?date=\(Self.day)", headers: headers).status == 200)
        #expect(server.request(.get, "/v1/me/activity-summaries?start=\(Self.day)&end=\(Self.day)", headers: headers).status == 200)
        #expect(server.request(.get, "/v1/me/workouts?start=\(Self.day)T00:00:00Z&end=\(Self.day)T23:59:59Z", headers: headers).status == 200)
        #expect(server.request(.get, "/v1/me/heart-rate/zones", headers: headers).status < 500)
        // Read-only: no write route exists under /v1/me for samples, and the app routes ignore the cookie.
        #expect(server.request(.post, "/v1/me/samples", json: #"{"samples":[\#(steps)]}"#, headers: headers).status == 405)
        #expect(server.request(.get, "/v1/samples?type=stepCount", headers: headers).status == 401)
        // A token on the person's mirror is refused.
        #expect(server.request(.get, "/v1/me/samples?type=stepCount", token: watch).status == 401)
    }

    @Test("the person's own reads are not app accesses: recent access counts the app's read only", arguments: PersonSessionTests.backends)
    func personsReadsAreNotAppAccesses(backend: TestServer.Backend) throws {
        let (server, user) = try PersonSessionTests.server(backend)
        let phone = server.token(user: user.id, app: "phone", read: ["stepCount"], share: ["stepCount"])
        let steps = SampleFixture.steps(1234, "\(Self.day)T10:00:00Z", "\(Self.day)T10:30:00Z")
        #expect(server.request(.post, "/v1/samples", token: phone, json: #"{"samples":[\#(steps)]}"#).status == 201)
        let cookie = try #require(PersonSessionTests.cookie(PersonSessionTests.signIn(server)))
        #expect(server.request(.get, "/v1/me/samples?type=stepCount", headers: [("Cookie", cookie)]).status == 200)
        #expect(server.request(.get, "/v1/samples?type=stepCount", token: phone).status == 200)
        let entries = try server.application.data.recentAccess.counts(userRowID: user.rowID, from: 0, to: Int64.max)
        #expect(Set(entries.map(\.app)) == ["phone"])
        #expect(entries.map(\.counts.reads).reduce(0, +) == 1)
    }

    @Test("a person's open reads end with the session: liveAuthorizations drops them at sign-out", arguments: PersonSessionTests.backends)
    func personsReadsAreLiveWhileTheSessionIs(backend: TestServer.Backend) throws {
        let (server, user) = try PersonSessionTests.server(backend)
        let cookie = try #require(PersonSessionTests.cookie(PersonSessionTests.signIn(server)))
        let data = HealthData(server.backend)
        let token = try #require(SessionToken(presented: cookie.dropFirst("healthd_session=".count)))
        let reads = AppAuthorization.personsOwnReads(user: user, sessionTokenHash: token.hash)
        #expect(reads.isPersonsOwnReads)
        #expect(reads.share.isEmpty && reads.mayRead("heartRate") && reads.mayRead("dateOfBirth"))
        #expect(try data.liveAuthorizations(ids: [reads.id]) == [reads.id: reads])
        #expect(server.request(.delete, "/v1/session", headers: [("Cookie", cookie), ("Content-Type", "application/json")]).status == 204)
        #expect(try data.liveAuthorizations(ids: [reads.id]).isEmpty)
    }
}

/// Sample bodies for the person's read tests.
enum SampleFixture {
    static func steps(_ value: Double, _ start: String, _ end: String) -> String {
        #"{"type":"stepCount","value":\#(value),"unit":"count","start":"\#(start)","end":"\#(end)"}"#
    }
}
