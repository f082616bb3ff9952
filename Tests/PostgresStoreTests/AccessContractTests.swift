import Foundation
import HealthModel
import HealthStore
import PostgresTestSupport
import Statistics
import Synchronization
import Testing

/// The access policy's cases, run through the façade (`HealthData`) on both backends: what a
/// token may see (its own data only, for a type it may not read; never another user's) and what
/// it may write (nothing of a type it may not share, by any write path: samples, deletes,
/// imports, IMU batches).
enum AccessContract {
    static let t0: Int64 = 1_700_000_000_000

    struct World {
        let data: HealthData
        let alice: User
        /// May read and share steps: saves the "other app" data.
        let watch: AppAuthorization
        /// May share steps but read nothing.
        let phone: AppAuthorization
        /// Bob's app, reading everything.
        let bobApp: AppAuthorization
        let watchSample: HealthUUID
        let phoneSample: HealthUUID

        init(_ t: TestStore) throws {
            data = HealthData(t.store)
            alice = try t.store.createUser(name: "alice")
            let bob = try t.store.createUser(name: "bob")
            watch = try t.store.createAuthorization(user: alice, app: "watch", read: ["stepCount", "dateOfBirth"],
                                                    share: ["stepCount", "flightsClimbed"]).authorization
            phone = try t.store.createAuthorization(user: alice, app: "phone", read: [], share: ["stepCount", "distanceWalkingRunning"]).authorization
            bobApp = try t.store.createAuthorization(user: bob, app: "bobapp", read: ["stepCount"], share: ["stepCount"]).authorization
            watchSample = .random()
            phoneSample = .random()
            _ = try data.app(watch).save([steps(500, start: t0, uuid: watchSample)])
            _ = try data.app(phone).save([steps(7, start: t0 + 3_600_000, uuid: phoneSample)])
            _ = try data.app(bobApp).save([steps(9_999, start: t0)])
            try data.person(alice).replaceCharacteristics([("dateOfBirth", "1961-07-04"), ("biologicalSex", "female")])
        }
    }

    static func stepsQuery() -> SampleQuery {
        var query = SampleQuery(type: "stepCount")
        query.limit = 1_000
        return query
    }

    static func readsShowOnlyWhatTheTokenMayRead(_ t: TestStore) throws {
        let world = try World(t)
        let phone = world.data.app(world.phone)
        let watch = world.data.app(world.watch)
        // Without read permission: its own samples only, everywhere.
        #expect(try phone.samples(stepsQuery()).samples.map(\.sample.uuid) == [world.phoneSample])
        #expect(try phone.sample(world.watchSample) == nil)
        #expect(try phone.sample(world.phoneSample) != nil)
        #expect(try phone.sources(type: "stepCount").map(\.app) == ["phone"])
        #expect(try phone.sourcePriority(type: try #require(HealthTypeCatalog.type("stepCount"))) == ["phone"])
        #expect(try phone.characteristics().isEmpty)
        let changes = try phone.changes(ChangeRequest(types: nil, after: nil, limit: 100))
        #expect(changes.added.map(\.sample.uuid) == [world.phoneSample])
        let day = CalendarBucket(start: t0 - 86_400_000, end: t0 + 86_400_000, startOffsetSeconds: 0, endOffsetSeconds: 0)
        let stepType = try #require(HealthTypeCatalog.type("stepCount"))
        #expect(try phone.statistics(stepType, buckets: [day], options: .cumulativeSum).first?.figures.sum == 7)
        #expect(try phone.exportPage(type: "stepCount", after: nil, limit: 100).map(\.sample.sample.uuid) == [world.phoneSample])
        // With read permission: every app of the user, and no other user.
        #expect(Set(try watch.samples(stepsQuery()).samples.map(\.sample.uuid)) == [world.watchSample, world.phoneSample])
        #expect(try watch.statistics(stepType, buckets: [day], options: .cumulativeSum).first?.figures.sum == 507)
        #expect(try watch.characteristics().map(\.0) == ["dateOfBirth"])
        // The person sees all of their own data, and nobody else's.
        let whole = try world.data.person(world.alice).exportPage(type: "stepCount", after: nil, limit: 100)
        #expect(Set(whole.map(\.sample.sample.uuid)) == [world.watchSample, world.phoneSample])
    }

    static func writesOfATypeTheTokenMayNotShareChangeNothing(_ t: TestStore) throws {
        let world = try World(t)
        let phone = world.data.app(world.phone)
        let flights = HealthSample(uuid: .random(), type: "flightsClimbed", start: t0, end: t0 + 60_000, content: .quantity(2))
        #expect(throws: SharingDenied.self) { try phone.save([flights]) }
        #expect(throws: SharingDenied.self) { try phone.save([steps(1, start: t0), flights]) }
        #expect(throws: SharingDenied.self) { try phone.deleteSamples(type: "flightsClimbed", start: t0 - 1, end: t0 + 1) }
        #expect(throws: SharingDenied.self) {
            try phone.importSamples { session in _ = try session.save([SourcedSample(app: "phone", sample: flights)]) }
        }
        // Asynchronous saves are decided the same way.
        let refused = Mutex<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        phone.save([flights]) { result in
            if case .failure(let error) = result { refused.withLock { $0 = error } }
            done.signal()
        }
        done.wait()
        #expect(refused.withLock { $0 } is SharingDenied)
        // An IMU batch carrying a sample the token may not share is refused whole.
        let session = "climb"
        guard case .ready(let basis) = try phone.imuSession(session, seq: 0) else {
            Issue.record("a new session is ready")
            return
        }
        let batch = IMUBatchResult(state: [1], samples: [steps(3, start: t0), flights], start: t0, end: t0 + 60_000, steps: 3,
                                   distance: 0, floorsAscended: 1, floorsDescended: 0, cadence: nil, pace: nil, ended: false,
                                   response: Array("{}".utf8))
        let committed = Mutex<Result<[UInt8], any Error>?>(nil)
        phone.commitIMU(session: session, seq: 0, device: nil, basis: basis, result: batch) { result in
            committed.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        if case .failure(let error) = try #require(committed.withLock { $0 }) { #expect(error is SharingDenied) } else {
            Issue.record("an IMU batch with flights the token may not share was committed")
        }
        // The decision the pedometer's route makes before building its answer.
        let (allowed, refusedTypes) = phone.shareable([steps(3, start: t0), flights])
        #expect(allowed.map(\.type) == ["stepCount"] && refusedTypes == ["flightsClimbed": 1])
        // Nothing of the above reached the store.
        let watch = world.data.app(world.watch)
        var query = SampleQuery(type: "flightsClimbed")
        query.limit = 100
        #expect(try watch.samples(query).samples.isEmpty)
        #expect(try phone.samples(stepsQuery()).samples.map(\.sample.uuid) == [world.phoneSample])
        // Another app's sample cannot be deleted, whatever the type's permission.
        #expect(throws: (any Error).self) { try phone.deleteSample(world.watchSample) }
        #expect(try watch.sample(world.watchSample) != nil)
    }

    /// The decision the façade hands a backend (`ReadVisibility`) gives the same answer on every
    /// read path: per type in one change-feed request, for tombstones, for a delete's refusal, and
    /// for the person's own view, which sees every app's data.
    static func everyReadPathSeesWhatTheDecisionSays(_ t: TestStore) throws {
        let world = try World(t)
        let phone = world.data.app(world.phone)
        let watch = world.data.app(world.watch)
        let person = world.data.person(world.alice)
        // The watch shares flights but may not read them: it sees its own only.
        let flights = HealthSample(uuid: .random(), type: "flightsClimbed", start: t0, end: t0 + 60_000, content: .quantity(2))
        _ = try watch.save([flights])
        let both: Set<String> = ["stepCount", "flightsClimbed"]
        func added(_ page: ChangePage) -> Set<HealthUUID> { Set(page.added.map(\.sample.uuid)) }
        #expect(added(try watch.changes(ChangeRequest(types: both, after: nil, limit: 100)))
                == [world.watchSample, world.phoneSample, flights.uuid])
        #expect(added(try phone.changes(ChangeRequest(types: both, after: nil, limit: 100))) == [world.phoneSample])
        #expect(added(try phone.changes(ChangeRequest(types: ["flightsClimbed"], after: nil, limit: 100))).isEmpty)
        // The person: every app's samples, sources and changes, and nobody else's.
        #expect(Set(try person.samples(stepsQuery()).samples.map(\.sample.uuid)) == [world.watchSample, world.phoneSample])
        #expect(try person.sample(flights.uuid) != nil)
        #expect(try person.sources(type: "stepCount").map(\.app) == ["watch", "phone"])
        #expect(added(try person.changes(ChangeRequest(types: nil, after: nil, limit: 100)))
                == [world.watchSample, world.phoneSample, flights.uuid])
        // Deletes: another app's sample is forbidden to a reader of its type and does not exist
        // for anyone else; the app's own of a type its token may not share is refused.
        #expect(throws: StoreError.forbidden("sample \(world.phoneSample.lowercasedString) was saved by another app")) {
            try watch.deleteSample(world.phoneSample)
        }
        #expect(throws: StoreError.notFound("no sample \(world.watchSample.lowercasedString)")) {
            try phone.deleteSample(world.watchSample)
        }
        #expect(throws: StoreError.notFound("no sample \(flights.uuid.lowercasedString)")) { try phone.deleteSample(flights.uuid) }
        // The person turns the phone's sharing off: its token (read again) may not delete its own sample.
        _ = try t.store.updateAppGrant(userRowID: world.alice.rowID, app: "phone") { try $0.setSwitches(read: [], share: []) }
        let readOnlyPhone = try #require(try t.store.liveAuthorizations(ids: [world.phone.id])[world.phone.id])
        #expect(throws: SharingDenied.self) { try world.data.app(readOnlyPhone).deleteSample(world.phoneSample) }
        #expect(try person.sample(world.phoneSample) != nil)
        // A tombstone is seen as its sample was: by the watch and the person, not by the phone.
        let before = try person.currentChangePosition()
        try watch.deleteSample(flights.uuid)
        let deletion = ChangeRequest(types: nil, after: before, limit: 100)
        #expect(try watch.changes(deletion).deleted.map(\.uuid) == [flights.uuid])
        #expect(try person.changes(deletion).deleted.map(\.uuid) == [flights.uuid])
        #expect(try phone.changes(deletion).deleted.isEmpty)
    }
}

@Suite struct SQLiteAccessContractTests {
    @Test func readsShowOnlyWhatTheTokenMayRead() throws { try AccessContract.readsShowOnlyWhatTheTokenMayRead(TestStore(.sqlite)) }
    @Test func writesOfATypeTheTokenMayNotShareChangeNothing() throws {
        try AccessContract.writesOfATypeTheTokenMayNotShareChangeNothing(TestStore(.sqlite))
    }
    @Test func everyReadPathSeesWhatTheDecisionSays() throws { try AccessContract.everyReadPathSeesWhatTheDecisionSays(TestStore(.sqlite)) }
}

@Suite(.enabled(if: TestPostgres.isAvailable, "set HEALTHD_TEST_POSTGRES_URL to run the access contract on the PostgreSQL store"))
struct PostgresAccessContractTests {
    @Test func readsShowOnlyWhatTheTokenMayRead() throws { try AccessContract.readsShowOnlyWhatTheTokenMayRead(TestStore(.postgres)) }
    @Test func writesOfATypeTheTokenMayNotShareChangeNothing() throws {
        try AccessContract.writesOfATypeTheTokenMayNotShareChangeNothing(TestStore(.postgres))
    }
    @Test func everyReadPathSeesWhatTheDecisionSays() throws {
        try AccessContract.everyReadPathSeesWhatTheDecisionSays(TestStore(.postgres))
    }
}
