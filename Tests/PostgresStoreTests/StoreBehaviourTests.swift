import Foundation
import HealthModel
import HealthStore
import PostgresTestSupport
import Testing

/// What every `HealthDataStore` must do, written once against the interface and run on both
/// backends (`SQLiteStoreBehaviourTests`, `PostgresStoreBehaviourTests`), so the PostgreSQL store
/// is held to the SQLite store's answers.
enum StoreBehaviour {
    static let t0: Int64 = 1_700_000_000_000

    static func app(_ t: TestStore, read: Set<String> = ["stepCount", "heartRate", "bloodPressure"],
                    share: Set<String> = ["stepCount", "heartRate", "bloodPressure", "bloodPressureSystolic", "bloodPressureDiastolic"],
                    name: String = "phone", user: String = "alice") throws -> (User, AppAuthorization, String) {
        let owner = try t.store.userCreatingIfNeeded(name: user)
        let (authorization, token) = try t.store.createAuthorization(user: owner, app: name, read: read, share: share)
        return (owner, authorization, token)
    }

    static func allSteps(_ t: TestStore, _ app: AppAuthorization, _ user: User) throws -> [StoredSample] {
        var query = SampleQuery(type: "stepCount")
        query.limit = 10_000
        return try t.store.samples(query, for: app, userExternalID: user.id).samples
    }

    static func usersAndTokens(_ t: TestStore) throws {
        let alice = try t.store.createUser(name: "alice")
        #expect(throws: StoreError.self) { try t.store.createUser(name: "alice") }
        #expect(try t.store.user(named: "alice") == alice)
        #expect(try t.store.user(idOrName: alice.id) == alice)
        #expect(try t.store.user(idOrName: "alice") == alice)
        #expect(try t.store.userCreatingIfNeeded(name: "alice") == alice)
        #expect(try t.store.user(named: "bob") == nil)
        let (authorization, token) = try t.store.createAuthorization(user: alice, app: "phone", read: ["stepCount"], share: [],
                                                                     disclosesRead: true)
        let found = try #require(try t.store.authorization(tokenHash: TokenHashing.hash(token)))
        #expect(found == authorization)
        #expect(found.disclosesRead && found.read == ["stepCount"] && found.share.isEmpty && found.userID == alice.id)
        #expect(t.store.cachedAuthorization(tokenHash: TokenHashing.hash(token)) == authorization)
        #expect(try t.store.authorization(tokenHash: TokenHashing.hash(token + "x")) == nil)
        // Reused: asking for more turns the app's switches on, and every token of the app follows them.
        #expect(try t.store.appAuthorizationCreatingIfNeeded(user: alice, app: "phone", read: ["stepCount"], share: []).id == authorization.id)
        let wider = try t.store.appAuthorizationCreatingIfNeeded(user: alice, app: "phone", read: [], share: ["heartRate"])
        #expect(wider.id == authorization.id && wider.share == ["heartRate"] && wider.read == ["stepCount"])
        #expect(try t.store.authorization(tokenHash: TokenHashing.hash(token))?.share == ["heartRate"])
        #expect(try t.store.revokeAuthorization(id: authorization.id))
        #expect(try !t.store.revokeAuthorization(id: authorization.id))
        #expect(t.store.cachedAuthorization(tokenHash: TokenHashing.hash(token)) == nil)
        #expect(try t.store.authorization(tokenHash: TokenHashing.hash(token)) == nil)
    }

    static func savesAreWholeAndIdempotent(_ t: TestStore) throws {
        let (user, app, _) = try Self.app(t)
        let batch = (0..<300).map { steps(Double($0), start: t0 + Int64($0) * 60_000) }
        #expect(try t.store.save(batch, by: app) == batch.map(\.uuid))
        let position = try t.store.currentChangePosition(userRowID: user.rowID)
        // The same batch again (a lost answer): the same answer, nothing stored twice, no change.
        #expect(try t.store.save(batch, by: app) == batch.map(\.uuid))
        #expect(try allSteps(t, app, user).count == 300)
        let after = try t.store.changes(ChangeRequest(types: nil, after: position, limit: 100), for: app, userExternalID: user.id)
        #expect(after.isEmpty)
        // A re-send mixed with new samples stores the new ones.
        let fresh = steps(7, start: t0 - 60_000)
        _ = try t.store.save([batch[3], fresh, batch[4]], by: app)
        #expect(try allSteps(t, app, user).count == 301)
        // A taken uuid with other content rolls the whole batch back.
        var changed = batch[5]
        changed.content = .quantity(999)
        let newOne = steps(1, start: t0 - 120_000)
        #expect(throws: SampleConflict.self) { try t.store.save([newOne, changed], by: app) }
        #expect(try allSteps(t, app, user).count == 301)
        // So does the same uuid saved by another app.
        let (_, other, _) = try Self.app(t, name: "watch")
        #expect(throws: SampleConflict.self) { try t.store.save([batch[0]], by: other) }
        // A repeat inside one batch is stored once; a differing repeat is a conflict at its index.
        let twice = steps(3, start: t0 - 180_000)
        _ = try t.store.save([twice, twice], by: app)
        #expect(try allSteps(t, app, user).count == 302)
        var differing = twice
        differing.content = .quantity(4)
        #expect(throws: SampleConflict.self) { try t.store.save([steps(1, start: t0 - 240_000), twice, differing], by: app) }
        // Another user's uuid is neither visible nor blocked.
        let (bob, bobApp, _) = try Self.app(t, user: "bob")
        _ = try t.store.save([batch[0]], by: bobApp)
        #expect(try allSteps(t, bobApp, bob).count == 1)
        #expect(try t.store.sampleCount(userRowID: user.rowID, type: "stepCount", app: "phone") == 302)
    }

    static func asynchronousSavesComplete(_ t: TestStore) throws {
        let (user, app, _) = try Self.app(t)
        let group = DispatchGroup()
        final class Results: @unchecked Sendable {
            let lock = NSLock()
            var values: [Result<[HealthUUID], any Error>] = []
        }
        let results = Results()
        for batchIndex in 0..<8 {
            group.enter()
            let batch = (0..<50).map { steps(1, start: t0 + Int64(batchIndex * 50 + $0) * 60_000) }
            t.store.save(batch, by: app) { result in
                results.lock.withLock { results.values.append(result) }
                group.leave()
            }
        }
        #expect(group.wait(timeout: .now() + 30) == .success)
        #expect(results.values.count == 8)
        #expect(results.values.allSatisfy { (try? $0.get())?.count == 50 })
        #expect(try allSteps(t, app, user).count == 400)
    }

    static func queriesFilterAndPage(_ t: TestStore) throws {
        let (user, app, _) = try Self.app(t)
        let (_, watch, _) = try Self.app(t, name: "watch")
        let mine = (0..<10).map { steps(Double($0), start: t0 + Int64($0) * 3_600_000, seconds: 600) }
        _ = try t.store.save(mine, by: app)
        _ = try t.store.save([steps(100, start: t0 + 30 * 60_000)], by: watch)
        // Overlap by default: a sample that started before the range but runs into it counts.
        var query = SampleQuery(type: "stepCount")
        query.start = t0 + 5 * 60_000
        query.end = t0 + 2 * 3_600_000
        #expect(try t.store.samples(query, for: app, userExternalID: user.id).samples.map(\.sample.quantity) == [0, 100, 1])
        query.strictStartDate = true
        #expect(try t.store.samples(query, for: app, userExternalID: user.id).samples.map(\.sample.quantity) == [100, 1])
        query = SampleQuery(type: "stepCount")
        query.sourceApp = "watch"
        #expect(try t.store.samples(query, for: app, userExternalID: user.id).samples.map(\.source.app) == ["watch"])
        // Keyset pages, both directions, neither repeating nor skipping.
        for descending in [false, true] {
            var paged: [HealthUUID] = []
            var page = SampleQuery(type: "stepCount")
            page.limit = 3
            page.descending = descending
            while true {
                let result = try t.store.samples(page, for: app, userExternalID: user.id)
                paged += result.samples.map(\.sample.uuid)
                guard let next = result.next else { break }
                page.after = next
            }
            #expect(paged.count == 11 && Set(paged).count == 11)
            let starts = try paged.map { try #require(try t.store.sample($0, for: app, userExternalID: user.id)).sample.start }
            #expect(starts == (descending ? starts.sorted(by: >) : starts.sorted()))
        }
        let one = try #require(try t.store.sample(mine[2].uuid, for: app, userExternalID: user.id))
        #expect(one.sample == mine[2] && one.source == SampleSource(app: "phone", user: user.id))
        #expect(try t.store.coveredDuration(userRowID: user.rowID, type: try #require(HealthTypeCatalog.type("stepCount")),
                                            start: t0, end: t0 + 3_600_000, onlySource: nil) == 60_000,
                "the first hour's 0-step sample covers nothing; the watch's minute does")
    }

    static func samplesKeepTheirShapes(_ t: TestStore) throws {
        let (user, app, _) = try Self.app(t, read: ["bloodPressure", "sleepAnalysis", "heartRate"],
                                          share: ["bloodPressure", "bloodPressureSystolic", "bloodPressureDiastolic", "sleepAnalysis", "heartRate"])
        let device = SampleDevice(name: "Watch", manufacturer: "Apple", model: "Watch7,1")
        let systolic = HealthSample(uuid: .random(), type: "bloodPressureSystolic", start: t0, end: t0, content: .quantity(120))
        let diastolic = HealthSample(uuid: .random(), type: "bloodPressureDiastolic", start: t0, end: t0, content: .quantity(80))
        let pressure = HealthSample(uuid: .random(), type: "bloodPressure", start: t0, end: t0, content: .correlation([systolic, diastolic]))
        let sleep = HealthSample(uuid: .random(), type: "sleepAnalysis", start: t0, end: t0 + 3_600_000, content: .category("asleepCore"),
                                 metadata: [MetadataEntry(key: "HKTimeZone", value: .string("Europe/Paris"))], device: device)
        let pulse = HealthSample(uuid: .random(), type: "heartRate", start: t0, end: t0, content: .quantity(61), device: device)
        _ = try t.store.save([pressure, sleep, pulse], by: app)
        #expect(try t.store.sample(pressure.uuid, for: app, userExternalID: user.id)?.sample == pressure)
        #expect(try t.store.sample(sleep.uuid, for: app, userExternalID: user.id)?.sample == sleep)
        #expect(try t.store.sample(pulse.uuid, for: app, userExternalID: user.id)?.sample == pulse)
        let sources = try t.store.sources(type: "heartRate", for: app)
        #expect(sources.map(\.app) == ["phone"] && sources.first?.devices == [device])
        // A re-sent correlation is idempotent; deleting it deletes its objects, each with a tombstone.
        _ = try t.store.save([pressure], by: app)
        let position = try t.store.currentChangePosition(userRowID: user.rowID)
        try t.store.deleteSample(pressure.uuid, by: app)
        #expect(try t.store.sample(systolic.uuid, for: app, userExternalID: user.id) == nil)
        let page = try t.store.changes(ChangeRequest(types: nil, after: position, limit: 10), for: app, userExternalID: user.id)
        #expect(Set(page.deleted.map(\.uuid)) == [pressure.uuid, systolic.uuid, diastolic.uuid])
    }

    static func deletesFollowAccess(_ t: TestStore) throws {
        let (user, owner, _) = try Self.app(t, read: ["stepCount"], share: ["stepCount"], name: "owner")
        let (_, writer, _) = try Self.app(t, read: [], share: ["stepCount"], name: "writer")
        let (_, reader, _) = try Self.app(t, read: ["stepCount"], share: [], name: "reader")
        let theirs = try t.store.save([steps(100, start: t0)], by: owner)
        let mine = try t.store.save([steps(1, start: t0 + 60_000), steps(2, start: t0 + 120_000), steps(3, start: t0 + 7_200_000)],
                                    by: writer)
        // Read privacy: without read permission only the app's own samples exist.
        #expect(try allSteps(t, writer, user).map(\.sample.uuid) == mine)
        #expect(try t.store.sample(theirs[0], for: writer, userExternalID: user.id) == nil)
        #expect(throws: StoreError.notFound("no sample \(theirs[0].lowercasedString)")) { try t.store.deleteSample(theirs[0], by: writer) }
        #expect(throws: StoreError.self) { try t.store.deleteSample(mine[0], by: owner) }
        #expect(throws: StoreError.forbidden("sample \(theirs[0].lowercasedString) was saved by another app")) {
            try t.store.deleteSample(theirs[0], by: reader)
        }
        #expect(throws: SharingDenied.self) { try t.store.deleteSamples(type: "stepCount", start: t0, end: t0 + 60_000, by: reader) }
        #expect(throws: SharingDenied.self) { try t.store.save([steps(1, start: t0)], by: reader) }
        #expect(try t.store.sources(type: "stepCount", for: writer).map(\.app) == ["writer"])
        #expect(try t.store.sources(type: "stepCount", for: owner).map(\.app) == ["owner", "writer"])
        // A range delete takes the app's own top-level samples only.
        #expect(try t.store.deleteSamples(type: "stepCount", start: t0, end: t0 + 3_600_000, by: writer) == 2)
        #expect(try allSteps(t, owner, user).count == 2)
        try t.store.deleteSample(mine[2], by: writer)
        #expect(throws: StoreError.notFound("no sample \(mine[2].lowercasedString)")) { try t.store.deleteSample(mine[2], by: writer) }
    }

    static func changeFeedFollowsCommitOrder(_ t: TestStore) throws {
        let (user, app, _) = try Self.app(t)
        let (_, narrow, _) = try Self.app(t, read: [], share: ["stepCount"], name: "narrow")
        let first = try t.store.save([steps(1, start: t0), steps(2, start: t0 + 60_000)], by: app)
        // The first page lists what is present; its anchor skips deletions of samples never seen.
        let initial = try t.store.changes(ChangeRequest(types: nil, after: nil, limit: 1), for: app, userExternalID: user.id)
        #expect(initial.added.map(\.sample.uuid) == [first[0]] && initial.more)
        let rest = try t.store.changes(ChangeRequest(types: nil, after: initial.next, limit: 10), for: app, userExternalID: user.id)
        #expect(rest.added.map(\.sample.uuid) == [first[1]] && !rest.more)
        let pulse = heartRate(70, at: t0)
        _ = try t.store.save([pulse], by: app)
        try t.store.deleteSample(first[0], by: app)
        let next = try t.store.changes(ChangeRequest(types: nil, after: rest.next, limit: 10), for: app, userExternalID: user.id)
        #expect(next.added.map(\.sample.uuid) == [pulse.uuid])
        #expect(next.deleted == [DeletedSample(uuid: first[0], type: "stepCount")])
        #expect(next.next.seq > rest.next.seq)
        let typed = try t.store.changes(ChangeRequest(types: ["heartRate"], after: rest.next, limit: 10), for: app, userExternalID: user.id)
        #expect(typed.added.map(\.sample.uuid) == [pulse.uuid] && typed.deleted.isEmpty)
        // Without read permission only the app's own changes appear.
        #expect(try t.store.changes(ChangeRequest(types: nil, after: nil, limit: 10), for: narrow, userExternalID: user.id).isEmpty)
        // "Now" sees only later changes.
        let now = try t.store.currentChangePosition(userRowID: user.rowID)
        #expect(try t.store.changes(ChangeRequest(types: nil, after: now, limit: 10), for: app, userExternalID: user.id).isEmpty)
        // Purged tombstones expire older anchors; newer ones still work.
        #expect(try t.store.purgeTombstones(deletedBefore: Int64.max) == 1)
        #expect(throws: ChangeFeedError.anchorExpired) {
            try t.store.changes(ChangeRequest(types: nil, after: rest.next, limit: 10), for: app, userExternalID: user.id)
        }
        #expect(try t.store.changes(ChangeRequest(types: nil, after: now, limit: 10), for: app, userExternalID: user.id).isEmpty)
    }

    static func profileAndPriority(_ t: TestStore) throws {
        let (user, app, _) = try Self.app(t)
        let (_, watch, _) = try Self.app(t, name: "watch")
        #expect(try t.store.characteristics(userRowID: user.rowID).isEmpty)
        try t.store.replaceCharacteristics(userRowID: user.rowID, [("dateOfBirth", "1990-04-01"), ("biologicalSex", "female")])
        #expect(try t.store.characteristics(userRowID: user.rowID).map { [$0.0, $0.1] } == [["dateOfBirth", "1990-04-01"], ["biologicalSex", "female"]])
        #expect(try t.store.activityGoals(userRowID: user.rowID) == .defaults)
        let goals = ActivityGoals(activeEnergyBurned: 650, appleExerciseTime: 45, appleStandHours: 10)
        try t.store.setActivityGoals(userRowID: user.rowID, goals)
        #expect(try t.store.activityGoals(userRowID: user.rowID) == goals)
        let stepType = try #require(HealthTypeCatalog.type("stepCount"))
        _ = try t.store.save([steps(1, start: t0)], by: watch)
        _ = try t.store.save([steps(1, start: t0 + 60_000)], by: app)
        #expect(try t.store.sourcePriority(userRowID: user.rowID, type: stepType) == ["watch", "phone"])
        #expect(throws: StoreError.self) { try t.store.setSourcePriority(userRowID: user.rowID, type: stepType, apps: ["nobody"]) }
        #expect(throws: StoreError.self) { try t.store.setSourcePriority(userRowID: user.rowID, type: stepType, apps: ["phone", "phone"]) }
        try t.store.setSourcePriority(userRowID: user.rowID, type: stepType, apps: ["phone"])
        #expect(try t.store.sourcePriority(userRowID: user.rowID, type: stepType) == ["phone", "watch"])
        #expect(throws: StoreError.self) {
            try t.store.setSourcePriority(userRowID: user.rowID, type: try #require(HealthTypeCatalog.type("sleepAnalysis")), apps: [])
        }
    }

    static func importsDecideLikeOneByOneSaves(_ t: TestStore) throws {
        let user = try t.store.userCreatingIfNeeded(name: "alice")
        let stepsA = steps(10, start: t0)
        let stepsB = steps(20, start: t0 + 60_000)
        var conflicting = stepsA
        conflicting.content = .quantity(11)
        let outcomes = try t.store.importSamples([SourcedSample(app: "Health", sample: stepsA), SourcedSample(app: "Watch", sample: stepsB),
                                                  SourcedSample(app: "Health", sample: stepsA), SourcedSample(app: "Health", sample: conflicting)],
                                                 userRowID: user.rowID)
        #expect(outcomes.count == 4)
        #expect(outcomes[0] == .inserted && outcomes[1] == .inserted && outcomes[2] == .alreadyStored)
        if case .conflict = outcomes[3] {} else { Issue.record("a taken uuid with other content is a conflict, got \(outcomes[3])") }
        let again = try t.store.importSamples([SourcedSample(app: "Health", sample: stepsA), SourcedSample(app: "Watch", sample: stepsB)],
                                              userRowID: user.rowID)
        #expect(again == [.alreadyStored, .alreadyStored])
        // A correlation adopts an object imported before on its own.
        let systolic = HealthSample(uuid: .random(), type: "bloodPressureSystolic", start: t0, end: t0, content: .quantity(120))
        let diastolic = HealthSample(uuid: .random(), type: "bloodPressureDiastolic", start: t0, end: t0, content: .quantity(80))
        _ = try t.store.importSamples([SourcedSample(app: "Health", sample: systolic)], userRowID: user.rowID)
        let pressure = HealthSample(uuid: .random(), type: "bloodPressure", start: t0, end: t0, content: .correlation([systolic, diastolic]))
        #expect(try t.store.importSamples([SourcedSample(app: "Health", sample: pressure)], userRowID: user.rowID) == [.inserted])
        // Export pages: top-level samples only, oldest first, resumable.
        var exported: [StoredSample] = []
        var cursor: SampleCursor?
        for type in ["stepCount", "bloodPressure", "bloodPressureSystolic"] {
            cursor = nil
            while true {
                let page = try t.store.exportPage(userRowID: user.rowID, userExternalID: user.id, type: type, onlySource: nil,
                                                  after: cursor, limit: 1)
                guard let last = page.last else { break }
                exported += page.map(\.sample)
                cursor = last.cursor
            }
        }
        #expect(exported.map(\.sample) == [stepsA, stepsB, pressure], "the adopted object is exported inside its correlation only")
        #expect(exported.map(\.source.app) == ["Health", "Watch", "Health"])
    }
}

@Suite struct SQLiteStoreBehaviourTests {
    @Test func usersAndTokens() throws { try StoreBehaviour.usersAndTokens(TestStore(.sqlite)) }
    @Test func savesAreWholeAndIdempotent() throws { try StoreBehaviour.savesAreWholeAndIdempotent(TestStore(.sqlite)) }
    @Test func asynchronousSavesComplete() throws { try StoreBehaviour.asynchronousSavesComplete(TestStore(.sqlite)) }
    @Test func queriesFilterAndPage() throws { try StoreBehaviour.queriesFilterAndPage(TestStore(.sqlite)) }
    @Test func samplesKeepTheirShapes() throws { try StoreBehaviour.samplesKeepTheirShapes(TestStore(.sqlite)) }
    @Test func deletesFollowAccess() throws { try StoreBehaviour.deletesFollowAccess(TestStore(.sqlite)) }
    @Test func changeFeedFollowsCommitOrder() throws { try StoreBehaviour.changeFeedFollowsCommitOrder(TestStore(.sqlite)) }
    @Test func profileAndPriority() throws { try StoreBehaviour.profileAndPriority(TestStore(.sqlite)) }
    @Test func importsDecideLikeOneByOneSaves() throws { try StoreBehaviour.importsDecideLikeOneByOneSaves(TestStore(.sqlite)) }
}

/// The same behaviour on PostgreSQL; skipped (and reported skipped) without HEALTHD_TEST_POSTGRES_URL.
@Suite(.enabled(if: TestPostgres.isAvailable, "set HEALTHD_TEST_POSTGRES_URL to run the PostgreSQL store's tests"))
struct PostgresStoreBehaviourTests {
    @Test func usersAndTokens() throws { try StoreBehaviour.usersAndTokens(TestStore(.postgres)) }
    @Test func savesAreWholeAndIdempotent() throws { try StoreBehaviour.savesAreWholeAndIdempotent(TestStore(.postgres)) }
    @Test func asynchronousSavesComplete() throws { try StoreBehaviour.asynchronousSavesComplete(TestStore(.postgres)) }
    @Test func queriesFilterAndPage() throws { try StoreBehaviour.queriesFilterAndPage(TestStore(.postgres)) }
    @Test func samplesKeepTheirShapes() throws { try StoreBehaviour.samplesKeepTheirShapes(TestStore(.postgres)) }
    @Test func deletesFollowAccess() throws { try StoreBehaviour.deletesFollowAccess(TestStore(.postgres)) }
    @Test func changeFeedFollowsCommitOrder() throws { try StoreBehaviour.changeFeedFollowsCommitOrder(TestStore(.postgres)) }
    @Test func profileAndPriority() throws { try StoreBehaviour.profileAndPriority(TestStore(.postgres)) }
    @Test func importsDecideLikeOneByOneSaves() throws { try StoreBehaviour.importsDecideLikeOneByOneSaves(TestStore(.postgres)) }
}
