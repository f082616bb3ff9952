import HealthdSettings
import Foundation
import Testing
import HTTP
import JSON
@testable import HealthAPI

/// Two users; alice has a phone app (steps+heart rate, read and share) and a watch app that may
/// share steps but read nothing; bob has one app.
struct Fixture {
    let server: TestServer
    let alice: String
    let phone: String
    let watch: String
    let bob: String
    let bobApp: String

    init(backend: TestServer.Backend = .sqlite, configure: (inout HealthdConfiguration) -> Void = { _ in }) throws {
        server = try TestServer(backend: backend, configure: configure)
        alice = server.createUser("alice")
        bob = server.createUser("bob")
        let everything = ["stepCount", "heartRate", "distanceWalkingRunning", "bloodPressure", "bloodPressureSystolic",
                          "bloodPressureDiastolic", "sleepAnalysis", "workout", "bodyMass"]
        phone = server.token(user: alice, app: "phone", read: everything, share: everything)
        watch = server.token(user: alice, app: "watch", read: [], share: ["stepCount"])
        bobApp = server.token(user: bob, app: "bobs", read: everything, share: everything)
    }

    func save(_ token: String, _ samples: String) -> TestServer.Reply {
        server.request(.post, "/v1/samples", token: token, json: #"{"samples":[\#(samples)]}"#)
    }

    static func steps(_ value: Double, _ start: String, _ end: String, uuid: String? = nil) -> String {
        let id = uuid.map { #""uuid":"\#($0)","# } ?? ""
        return #"{\#(id)"type":"stepCount","value":\#(value),"unit":"count","start":"\#(start)","end":"\#(end)"}"#
    }
}

@Suite struct AuthorizationAPITests {
    @Test func usersAndAuthorizationsNeedTheAdminToken() throws {
        let f = try Fixture()
        #expect(f.server.request(.post, "/v1/users", token: f.phone, json: #"{"name":"eve"}"#).status == 403)
        let created = f.server.request(.post, "/v1/authorizations", token: TestServer.adminToken,
                                       json: #"{"user":"\#(f.alice)","app":"scale","read":["bodyMass"],"share":["bodyMass"]}"#)
        #expect(created.status == 201)
        #expect(created["token"]?.stringValue?.count ?? 0 >= 43)
        #expect(created["read"] == .array([.string("bodyMass")]))
        #expect(f.server.request(.post, "/v1/users", token: TestServer.adminToken, json: #"{"name":"alice"}"#).status == 409)
    }

    @Test func unknownTypesAndFieldsInAuthorizationsAre400() throws {
        let f = try Fixture()
        let unknownType = f.server.request(.post, "/v1/authorizations", token: TestServer.adminToken,
                                           json: #"{"user":"\#(f.alice)","app":"x","read":["stepz"]}"#)
        #expect(unknownType.status == 400)
        #expect(unknownType.text.contains("read[0]"))
        let unknownField = f.server.request(.post, "/v1/authorizations", token: TestServer.adminToken,
                                            json: #"{"user":"\#(f.alice)","app":"x","reed":[]}"#)
        #expect(unknownField.status == 400)
        #expect(unknownField.text.contains("reed"))
    }

    @Test func statusDisclosesShareOnly() throws {
        let f = try Fixture()
        let reply = f.server.request(.get, "/v1/authorizations/status?types=stepCount,heartRate", token: f.watch)
        #expect(reply.status == 200)
        #expect(reply["stepCount"]?.stringValue == "sharingAuthorized")
        #expect(reply["heartRate"]?.stringValue == "sharingDenied")
        #expect(f.server.request(.get, "/v1/authorizations/status?types=bogus", token: f.watch).status == 400)
    }

    @Test func revocationIsImmediate() throws {
        let f = try Fixture()
        let created = f.server.request(.post, "/v1/authorizations", token: TestServer.adminToken,
                                       json: #"{"user":"\#(f.alice)","app":"temp","read":["stepCount"],"share":[]}"#)
        let token = try #require(created["token"]?.stringValue)
        let id = try #require(created["id"]?.stringValue)
        #expect(f.server.request(.get, "/v1/samples?type=stepCount", token: token).status == 200)
        #expect(f.server.request(.delete, "/v1/authorizations/\(id)", token: TestServer.adminToken).status == 204)
        #expect(f.server.request(.get, "/v1/samples?type=stepCount", token: token).status == 401)
        #expect(f.server.request(.delete, "/v1/authorizations/\(id)", token: TestServer.adminToken).status == 404)
    }
}

@Suite struct SamplesAPITests {
    @Test func saveReturnsUUIDsInOrderAndReadsBack() throws {
        let f = try Fixture()
        let reply = f.save(f.phone, [
            Fixture.steps(120, "2026-03-08T09:00:00-05:00", "2026-03-08T09:10:00-05:00", uuid: "6F1C2A3B-0000-4000-8000-000000000001"),
            Fixture.steps(80, "2026-03-08T10:00:00Z", "2026-03-08T10:05:00Z"),
        ].joined(separator: ","))
        #expect(reply.status == 201)
        let saved = try #require(reply["saved"]?.arrayValue)
        #expect(saved.count == 2)
        #expect(saved[0].stringValue == "6f1c2a3b-0000-4000-8000-000000000001")
        let one = f.server.request(.get, "/v1/samples/6f1c2a3b-0000-4000-8000-000000000001", token: f.phone)
        #expect(one.status == 200)
        #expect(one["start"]?.stringValue == "2026-03-08T14:00:00.000Z")
        #expect(one["value"]?.numberValue == 120)
        #expect(one["source"]?.objectValue?["app"]?.stringValue == "phone")
        #expect(one["source"]?.objectValue?["user"]?.stringValue == f.alice)
    }

    @Test func batchIsAllOrNothingWithPerIndexErrors() throws {
        let f = try Fixture()
        let reply = f.save(f.phone, [
            Fixture.steps(10, "2026-03-08T09:00:00Z", "2026-03-08T09:01:00Z"),
            #"{"type":"stepCount","value":-5,"unit":"count","start":"2026-03-08T09:00:00Z","end":"2026-03-08T09:01:00Z"}"#,
            #"{"type":"heartRate","value":70,"unit":"kg","start":"2026-03-08T09:00:00Z"}"#,
        ].joined(separator: ","))
        #expect(reply.status == 400)
        let errors = try #require(reply["errors"]?.arrayValue)
        #expect(errors.count == 2)
        #expect(errors[0].objectValue?["index"]?.numberValue == 1)
        #expect(errors[0].objectValue?["field"]?.stringValue == "value")
        #expect(errors[1].objectValue?["index"]?.numberValue == 2)
        #expect(errors[1].objectValue?["field"]?.stringValue == "unit")
        let listed = f.server.request(.get, "/v1/samples?type=stepCount", token: f.phone)
        #expect(listed["samples"]?.arrayValue?.isEmpty == true, "nothing of a rejected batch is stored")
    }

    @Test(arguments: [
        (#"{"type":"stepz","value":1,"start":"2026-03-08T09:00:00Z"}"#, "type"),
        (#"{"type":"stepCount","value":"12","start":"2026-03-08T09:00:00Z"}"#, "value"),
        (#"{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","colour":"red"}"#, "colour"),
        (#"{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T10:00:00Z","end":"2026-03-08T09:00:00Z"}"#, "end"),
        (#"{"type":"stepCount","value":1,"unit":"count","start":"2026-03-01T00:00:00Z","end":"2026-03-08T00:00:00Z"}"#, "end"),
        (#"{"type":"stepCount","value":1,"unit":"count","start":"1850-03-01T00:00:00Z"}"#, "start"),
        (#"{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08 09:00"}"#, "start"),
        (#"{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","uuid":"nope"}"#, "uuid"),
        (#"{"type":"heartRate","value":900,"unit":"count/min","start":"2026-03-08T09:00:00Z"}"#, "value"),
        (#"{"type":"sleepAnalysis","value":"dozing","start":"2026-03-08T01:00:00Z","end":"2026-03-08T02:00:00Z"}"#, "value"),
        (#"{"type":"sleepAnalysis","value":"awake","unit":"count","start":"2026-03-08T01:00:00Z"}"#, "unit"),
        (#"{"type":"bloodPressure","start":"2026-03-08T09:00:00Z","objects":[{"type":"heartRate","value":60,"unit":"count/min","start":"2026-03-08T09:00:00Z"}]}"#, "objects[0].type"),
        (#"{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","source":{"app":"x"}}"#, "source"),
        (#"{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","metadata":{"a":[1]}}"#, "metadata.a"),
        (#"{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","device":{"colour":"x"}}"#, "device.colour"),
        (#"{"type":"stepCount","value":1,"start":"2026-03-08T09:00:00Z"}"#, "unit"),
        (#"{"type":"bloodPressure","start":"2026-03-08T09:00:00Z","objects":[{"type":"bloodPressureSystolic","value":120,"unit":"mmHg","start":"2026-03-08T09:00:00Z"},{"type":"bloodPressureDiastolic","value":80,"start":"2026-03-08T09:00:00Z"}]}"#, "objects[1].unit"),
        (#"{"type":"workout","activityType":"running","start":"2026-03-08T07:00:00Z","end":"2026-03-08T07:30:00Z","totalDistance":{"value":5}}"#, "totalDistance.unit"),
    ])
    func invalidSamplesNameTheirField(sample: String, field: String) throws {
        let f = try Fixture()
        let reply = f.save(f.phone, sample)
        #expect(reply.status == 400, "\(sample)")
        #expect(reply["errors"]?.arrayValue?.first?.objectValue?["field"]?.stringValue == field, "\(reply.text)")
    }

    @Test func metadataOver128KeysIsRejected() throws {
        let f = try Fixture()
        let keys = (0..<129).map { #""k\#($0)":1"# }.joined(separator: ",")
        let reply = f.save(f.phone, #"{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","metadata":{\#(keys)}}"#)
        #expect(reply.status == 400)
        #expect(reply.text.contains("128"))
    }

    @Test func idempotentRetryAndConflict() throws {
        let f = try Fixture()
        let uuid = "11111111-2222-4333-8444-555555555555"
        let sample = Fixture.steps(50, "2026-03-08T09:00:00Z", "2026-03-08T09:05:00Z", uuid: uuid)
        #expect(f.save(f.phone, sample).status == 201)
        #expect(f.save(f.phone, sample).status == 201, "an identical retry is accepted")
        let listed = f.server.request(.get, "/v1/samples?type=stepCount", token: f.phone)
        #expect(listed["samples"]?.arrayValue?.count == 1, "without a second copy")
        let changed = f.save(f.phone, Fixture.steps(51, "2026-03-08T09:00:00Z", "2026-03-08T09:05:00Z", uuid: uuid))
        #expect(changed.status == 409)
        #expect(changed.code == "errorConflict")
    }

    @Test func sharingWithoutPermissionIs403() throws {
        let f = try Fixture()
        let reply = f.save(f.watch, #"{"type":"heartRate","value":60,"unit":"count/min","start":"2026-03-08T09:00:00Z"}"#)
        #expect(reply.status == 403)
        #expect(reply.code == "errorAuthorizationDenied")
    }

    @Test func readPrivacyShowsOnlyOwnSamples() throws {
        let f = try Fixture()
        #expect(f.save(f.phone, Fixture.steps(100, "2026-03-08T09:00:00Z", "2026-03-08T09:05:00Z")).status == 201)
        #expect(f.save(f.watch, Fixture.steps(7, "2026-03-08T09:00:00Z", "2026-03-08T09:05:00Z")).status == 201)
        let watchView = f.server.request(.get, "/v1/samples?type=stepCount", token: f.watch)
        #expect(watchView.status == 200, "no error: it looks as if only its own data existed")
        #expect(watchView["samples"]?.arrayValue?.map { $0.objectValue?["value"]?.numberValue } == [7])
        let phoneView = f.server.request(.get, "/v1/samples?type=stepCount", token: f.phone)
        #expect(phoneView["samples"]?.arrayValue?.count == 2)
        let sources = f.server.request(.get, "/v1/sources?type=stepCount", token: f.watch)
        #expect(sources["sources"]?.arrayValue?.map { $0.objectValue?["app"]?.stringValue } == ["watch"])
    }

    @Test func usersNeverSeeEachOther() throws {
        let f = try Fixture()
        let saved = f.save(f.phone, Fixture.steps(100, "2026-03-08T09:00:00Z", "2026-03-08T09:05:00Z"))
        let uuid = try #require(saved["saved"]?.arrayValue?.first?.stringValue)
        #expect(f.server.request(.get, "/v1/samples/\(uuid)", token: f.bobApp).status == 404)
        #expect(f.server.request(.delete, "/v1/samples/\(uuid)", token: f.bobApp).status == 404)
        #expect(f.server.request(.get, "/v1/samples?type=stepCount", token: f.bobApp)["samples"]?.arrayValue?.isEmpty == true)
        // The same uuid is free for another user: uuids are per user.
        #expect(f.save(f.bobApp, Fixture.steps(5, "2026-03-08T09:00:00Z", "2026-03-08T09:05:00Z", uuid: uuid)).status == 201)
    }

    @Test func overlapAndStrictPredicates() throws {
        let f = try Fixture()
        // a: 09:00-10:00, b: 10:00-11:00, c: zero-length at 10:00, d: 08:30-09:30
        #expect(f.save(f.phone, [
            Fixture.steps(1, "2026-03-08T09:00:00Z", "2026-03-08T10:00:00Z"),
            Fixture.steps(2, "2026-03-08T10:00:00Z", "2026-03-08T11:00:00Z"),
            Fixture.steps(3, "2026-03-08T10:00:00Z", "2026-03-08T10:00:00Z"),
            Fixture.steps(4, "2026-03-08T08:30:00Z", "2026-03-08T09:30:00Z"),
        ].joined(separator: ",")).status == 201)
        func values(_ query: String) -> [Double] {
            let reply = f.server.request(.get, "/v1/samples?type=stepCount&" + query, token: f.phone)
            return reply["samples"]?.arrayValue?.compactMap { $0.objectValue?["value"]?.numberValue } ?? [-1]
        }
        #expect(values("start=2026-03-08T09:15:00Z&end=2026-03-08T10:00:00Z") == [4, 1])
        #expect(values("start=2026-03-08T10:00:00Z&end=2026-03-08T10:30:00Z") == [2, 3])
        #expect(values("start=2026-03-08T09:00:00Z&end=2026-03-08T11:00:00Z&strictStartDate=true") == [1, 2, 3])
        #expect(values("start=2026-03-08T08:00:00Z&end=2026-03-08T10:00:00Z&strictEndDate=true") == [4, 1])
        #expect(values("order=desc") == [3, 2, 1, 4] || values("order=desc") == [2, 3, 1, 4])
        #expect(f.server.request(.get, "/v1/samples?type=stepCount&order=sideways", token: f.phone).status == 400)
        #expect(f.server.request(.get, "/v1/samples?type=stepCount&limit=0", token: f.phone).status == 400)
        #expect(f.server.request(.get, "/v1/samples?type=stepCount&limit=10001", token: f.phone).status == 400)
        #expect(f.server.request(.get, "/v1/samples", token: f.phone).status == 400)
    }

    @Test func unitConversionInAndOut() throws {
        let f = try Fixture()
        let reply = f.save(f.phone, #"{"type":"bodyMass","value":154.3236,"unit":"lb","start":"2026-03-08T07:00:00Z"}"#)
        let uuid = try #require(reply["saved"]?.arrayValue?.first?.stringValue)
        let canonical = f.server.request(.get, "/v1/samples/\(uuid)", token: f.phone)
        #expect(canonical["unit"]?.stringValue == "kg")
        #expect(abs((canonical["value"]?.numberValue ?? 0) - 70.0) < 1e-3)
        let pounds = f.server.request(.get, "/v1/samples?type=bodyMass&unit=lb", token: f.phone)
        let first = pounds["samples"]?.arrayValue?.first?.objectValue
        #expect(first?["unit"]?.stringValue == "lb")
        #expect(abs((first?["value"]?.numberValue ?? 0) - 154.3236) < 1e-9)
        #expect(f.server.request(.get, "/v1/samples?type=bodyMass&unit=km", token: f.phone).status == 400)
    }

    @Test func pagingNeitherSkipsNorRepeatsWhileWritesContinue() throws {
        let f = try Fixture()
        let batch = (0..<25).map { i in
            Fixture.steps(Double(i), String(format: "2026-03-08T09:%02d:00Z", i), String(format: "2026-03-08T09:%02d:30Z", i))
        }
        #expect(f.save(f.phone, batch.joined(separator: ",")).status == 201)
        var seen: [Double] = []
        var cursor: String?
        var round = 0
        repeat {
            let target = "/v1/samples?type=stepCount&limit=7" + (cursor.map { "&cursor=\($0)" } ?? "")
            let page = f.server.request(.get, target, token: f.phone)
            #expect(page.status == 200)
            seen += page["samples"]?.arrayValue?.compactMap { $0.objectValue?["value"]?.numberValue } ?? []
            cursor = page["next"]?.stringValue
            // A write between pages, both before and after the cursor's position.
            round += 1
            _ = f.save(f.phone, Fixture.steps(Double(1000 + round), "2026-03-08T08:00:00Z", "2026-03-08T08:00:10Z"))
        } while cursor != nil
        let original = seen.filter { $0 < 1000 }
        #expect(original == (0..<25).map(Double.init), "every original sample exactly once, in order")
    }

    @Test func forgedOrForeignCursorIs400() throws {
        let f = try Fixture()
        _ = f.save(f.phone, (0..<3).map { Fixture.steps(Double($0), "2026-03-08T09:0\($0):00Z", "2026-03-08T09:0\($0):30Z") }
            .joined(separator: ","))
        let page = f.server.request(.get, "/v1/samples?type=stepCount&limit=1", token: f.phone)
        let cursor = try #require(page["next"]?.stringValue)
        #expect(f.server.request(.get, "/v1/samples?type=stepCount&limit=1&cursor=\(cursor)", token: f.phone).status == 200)
        #expect(f.server.request(.get, "/v1/samples?type=heartRate&limit=1&cursor=\(cursor)", token: f.phone).status == 400)
        var tampered = Array(cursor.utf8)
        tampered[5] = tampered[5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let forged = String(decoding: tampered, as: UTF8.self)
        #expect(f.server.request(.get, "/v1/samples?type=stepCount&cursor=\(forged)", token: f.phone).status == 400)
    }

    @Test func deleteOwnOnlyAndByPredicate() throws {
        let f = try Fixture()
        let mine = f.save(f.watch, Fixture.steps(7, "2026-03-08T09:00:00Z", "2026-03-08T09:05:00Z"))
        let phones = f.save(f.phone, [
            Fixture.steps(1, "2026-03-08T09:00:00Z", "2026-03-08T09:05:00Z"),
            Fixture.steps(2, "2026-03-08T12:00:00Z", "2026-03-08T12:05:00Z"),
        ].joined(separator: ","))
        let watchUUID = try #require(mine["saved"]?.arrayValue?.first?.stringValue)
        let phoneUUID = try #require(phones["saved"]?.arrayValue?.first?.stringValue)
        #expect(f.server.request(.delete, "/v1/samples/\(watchUUID)", token: f.phone).status == 403, "another app's sample")
        #expect(f.server.request(.delete, "/v1/samples/\(phoneUUID)", token: f.watch).status == 404,
                "an app that cannot read the type learns nothing")
        #expect(f.server.request(.delete, "/v1/samples/\(phoneUUID)", token: f.phone).status == 204)
        #expect(f.server.request(.get, "/v1/samples/\(phoneUUID)", token: f.phone).status == 404)
        let byPredicate = f.server.request(.delete, "/v1/samples?type=stepCount&start=2026-03-08T00:00:00Z&end=2026-03-09T00:00:00Z",
                                           token: f.phone)
        #expect(byPredicate.status == 200)
        #expect(byPredicate["deleted"]?.numberValue == 1, "only the phone's remaining sample; the watch's stays")
        #expect(f.server.request(.delete, "/v1/samples?type=stepCount&start=2026-03-08T00:00:00Z", token: f.phone).status == 400)
    }

    @Test func correlationsAndWorkoutsRoundTrip() throws {
        let f = try Fixture()
        let bp = #"{"type":"bloodPressure","start":"2026-03-08T08:00:00Z","objects":[{"type":"bloodPressureSystolic","value":120,"unit":"mmHg","start":"2026-03-08T08:00:00Z"},{"type":"bloodPressureDiastolic","value":80,"unit":"mmHg","start":"2026-03-08T08:00:00Z"}]}"#
        let workout = #"{"type":"workout","activityType":"running","start":"2026-03-08T07:00:00Z","end":"2026-03-08T07:30:00Z","totalEnergyBurned":{"value":1255.2,"unit":"kJ"},"totalDistance":{"value":5,"unit":"km"},"events":[{"type":"pause","date":"2026-03-08T07:10:00Z"},{"type":"resume","date":"2026-03-08T07:12:00Z"}]}"#
        let reply = f.save(f.phone, bp + "," + workout)
        #expect(reply.status == 201, "\(reply.text)")
        let corr = f.server.request(.get, "/v1/samples?type=bloodPressure", token: f.phone)["samples"]?.arrayValue?.first?.objectValue
        #expect(corr?["objects"]?.arrayValue?.count == 2)
        #expect(corr?["value"] == nil)
        let systolic = f.server.request(.get, "/v1/samples?type=bloodPressureSystolic", token: f.phone)
        #expect(systolic["samples"]?.arrayValue?.first?.objectValue?["value"]?.numberValue == 120, "objects are ordinary samples too")
        let w = f.server.request(.get, "/v1/samples?type=workout", token: f.phone)["samples"]?.arrayValue?.first?.objectValue
        #expect(w?["activityType"]?.stringValue == "running")
        #expect(w?["totalEnergyBurned"]?.objectValue?["unit"]?.stringValue == "kcal")
        #expect(abs((w?["totalEnergyBurned"]?.objectValue?["value"]?.numberValue ?? 0) - 300) < 1e-9)
        #expect(w?["totalDistance"]?.objectValue?["value"]?.numberValue == 5000)
        #expect(w?["events"]?.arrayValue?.count == 2)
    }

    @Test func typesCatalogAndCharacteristics() throws {
        let f = try Fixture()
        let types = f.server.request(.get, "/v1/types", token: f.phone)
        let steps = types["types"]?.arrayValue?.first { $0.objectValue?["id"]?.stringValue == "stepCount" }?.objectValue
        #expect(steps?["aggregation"]?.stringValue == "cumulative")
        #expect(steps?["maximumDuration"]?.numberValue == 345_600)
        #expect(f.server.request(.get, "/v1/types/HKQuantityTypeIdentifierHeartRate", token: f.phone)["id"]?.stringValue == "heartRate")
        #expect(f.server.request(.get, "/v1/types/nope", token: f.phone).status == 404)
        #expect(f.server.request(.put, "/v1/characteristics", token: f.phone, json: #"{"user":"\#(f.alice)"}"#).status == 403)
        let put = f.server.request(.put, "/v1/characteristics", token: TestServer.adminToken,
                                   json: #"{"user":"\#(f.alice)","dateOfBirth":"1990-04-01","biologicalSex":"female","bloodType":"oNegative"}"#)
        #expect(put.status == 200, "\(put.text)")
        #expect(f.server.request(.put, "/v1/characteristics", token: TestServer.adminToken,
                                 json: #"{"user":"\#(f.alice)","bloodType":"purple"}"#).status == 400)
        let reader = f.server.token(user: f.alice, app: "cardio", read: ["dateOfBirth"], share: [])
        let visible = f.server.request(.get, "/v1/characteristics", token: reader)
        #expect(visible.object?.keys == ["dateOfBirth"], "only what the token may read")
    }

    @Test func wrongContentTypeIs415() throws {
        let f = try Fixture()
        let reply = f.server.request(.post, "/v1/samples", token: f.phone, json: #"{"samples":[]}"#,
                                     headers: [("Content-Type", "text/plain")])
        #expect(reply.status == 415)
        #expect(reply.code == "errorUnsupportedMediaType")
    }

    @Test func deeplyNestedJSONIs400() throws {
        let f = try Fixture()
        let deep = String(repeating: "[", count: 100_000)
        let reply = f.server.request(.post, "/v1/samples", token: f.phone, json: deep)
        #expect(reply.status == 400)
    }
}
