import Foundation
import Testing
import HealthModel
import SQLite
@testable import HealthStore
@testable import SQLiteStore

final class TemporaryStore {
    let directory = NSTemporaryDirectory() + "healthd-store-" + UUID().uuidString
    var store: SQLiteHealthStore

    init(writeBacklogLimit: Int = 200_000) throws {
        store = try SQLiteHealthStore(directory: directory, readers: 2, writeBacklogLimit: writeBacklogLimit)
    }

    func reopen() throws {
        store.close()
        store = try SQLiteHealthStore(directory: directory, readers: 2)
    }

    deinit {
        store.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

func steps(_ value: Double, start: Int64, seconds: Int64 = 60, uuid: HealthUUID = .random()) -> HealthSample {
    HealthSample(uuid: uuid, type: "stepCount", start: start, end: start + seconds * 1000, content: .quantity(value))
}

@Suite struct HealthStoreTests {
    @Test func savedSamplesSurviveReopening() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        let saved = try t.store.save((0..<500).map { steps(Double($0), start: 1_700_000_000_000 + Int64($0) * 60_000) }, by: app)
        #expect(saved.count == 500)
        try t.reopen()
        var query = SampleQuery(type: "stepCount")
        query.limit = 1000
        let page = try t.store.samples(query, for: app, userExternalID: user.id)
        #expect(page.samples.count == 500)
        #expect(page.samples.map(\.sample.uuid) == saved)
    }

    @Test func tokensAreStoredOnlyAsHashes() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (_, token) = try t.store.createAuthorization(user: user, app: "phone", read: [], share: [])
        let raw = try #require(FileManager.default.contents(atPath: t.store.databasePath))
        #expect(raw.range(of: Data(token.utf8)) == nil, "the token itself is never written")
        #expect(try t.store.authorization(tokenHash: TokenHashing.hash(token))?.appName == "phone")
        #expect(try t.store.authorization(tokenHash: TokenHashing.hash(token + "x")) == nil)
    }

    @Test func conflictRollsBackTheWholeBatch() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        let taken = HealthUUID.random()
        _ = try t.store.save([steps(10, start: 1_700_000_000_000, uuid: taken)], by: app)
        let batch = [steps(1, start: 1_700_000_100_000), steps(11, start: 1_700_000_000_000, uuid: taken)]
        #expect(throws: SampleConflict.self) { try t.store.save(batch, by: app) }
        let page = try t.store.samples(SampleQuery(type: "stepCount"), for: app, userExternalID: user.id)
        #expect(page.samples.count == 1, "the first sample of the failed batch was rolled back")
    }

    @Test func deletionsLeaveTombstonesInCommitOrder() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        let uuids = try t.store.save([steps(1, start: 1_700_000_000_000), steps(2, start: 1_700_000_060_000)], by: app)
        try t.store.deleteSample(uuids[0], by: app)
        let rows = try t.store.pool.read { db in
            try db.map("SELECT seq, uuid FROM deleted_samples", []) { (try $0.int64(at: 0), try $0.blob(at: 1)) }
        }
        #expect(rows.count == 1)
        #expect(rows.first?.1 == uuids[0].bytes)
        #expect(rows.first?.0 == 3, "seq 1 and 2 were the inserts; the tombstone is the third change")
    }

    @Test func commitObserversSeeEachChange() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: [], share: ["stepCount", "heartRate"])
        final class Box: @unchecked Sendable { var changes: [CommittedChange] = [] }
        let box = Box()
        t.store.addCommitObserver { box.changes.append($0) }
        _ = try t.store.save([steps(1, start: 1_700_000_000_000),
                              HealthSample(uuid: .random(), type: "heartRate", start: 1_700_000_000_000, end: 1_700_000_000_000,
                                           content: .quantity(60))], by: app)
        #expect(box.changes.count == 1)
        #expect(box.changes.first?.typeIDs == ["stepCount", "heartRate"])
        #expect(box.changes.first?.lastSeq == 2)
    }
}

/// A damaged row reads as an error naming its table and column, never as a sample with an
/// all-zero uuid or a value of 0.
@Suite struct CorruptRowTests {
    private func storeWithOneSample() throws -> (TemporaryStore, AppAuthorization, User, HealthUUID) {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        let uuid = HealthUUID.random()
        _ = try t.store.save([steps(12, start: 1_700_000_000_000, uuid: uuid)], by: app)
        return (t, app, user, uuid)
    }

    private func damage(_ t: TemporaryStore, _ sql: String) throws {
        let db = try Database(path: t.directory + "/healthd.sqlite", mode: .readWrite)
        try db.setBusyTimeout(milliseconds: 5_000)
        try db.execute(sql)
        db.close()
    }

    @Test func quantityWithoutValueIsAnError() throws {
        let (t, app, user, uuid) = try storeWithOneSample()
        try damage(t, "UPDATE samples SET value = NULL")
        do {
            _ = try t.store.sample(uuid, for: app, userExternalID: user.id)
            Issue.record("a quantity row without a value must not read as 0")
        } catch let error as RowDecodingError {
            #expect(error.table == "samples" && error.column == "value")
        }
    }

    @Test func damagedCategoryBodyIsAnError() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: ["sleepAnalysis"], share: ["sleepAnalysis"])
        let sleep = HealthSample(uuid: .random(), type: "sleepAnalysis", start: 1_700_000_000_000, end: 1_700_003_600_000,
                                 content: .category("asleepCore"))
        _ = try t.store.save([sleep], by: app)
        try damage(t, "UPDATE samples SET body = x'7b2263223a'")
        #expect(throws: RowDecodingError(table: "samples", column: "body", problem: "is not a JSON object")) {
            try t.store.sample(sleep.uuid, for: app, userExternalID: user.id)
        }
        #expect(throws: RowDecodingError.self) { try t.store.samples(SampleQuery(type: "sleepAnalysis"), for: app, userExternalID: user.id) }
    }

    @Test func damagedPriorityListIsAnError() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let stepType = try #require(HealthTypeCatalog.type("stepCount"))
        for name in ["phone", "watch"] {
            let (app, _) = try t.store.createAuthorization(user: user, app: name, read: ["stepCount"], share: ["stepCount"])
            _ = try t.store.save([steps(10, start: 1_700_000_000_000)], by: app)
        }
        try t.store.setSourcePriority(userRowID: user.rowID, type: stepType, apps: ["watch", "phone"])
        let expected = RowDecodingError(table: "source_priorities", column: "apps", problem: "is not a JSON array of app names")
        for damaged in ["not json", "{\"watch\": 1}"] {
            try damage(t, "UPDATE source_priorities SET apps = '\(damaged)'")
            #expect(throws: expected) { try t.store.sourcePriority(userRowID: user.rowID, type: stepType) }
        }
    }

    /// The permission request's decoder is the one both stores share (`StoredRows.swift`):
    /// PostgresDamagedRowTests reads the same damage on the other backend.
    @Test func unknownRequestStateIsAnError() throws {
        let t = try TemporaryStore()
        let record = AuthorizationRequestRecord(id: "r1", userCode: "BCDFGHJK", app: "runner", displayName: "Runner", reason: "",
                                                share: ["stepCount"], read: [], created: 1_700_000_000_000, interval: 5)
        #expect(try t.store.createAuthorizationRequest(record, deviceCodeHash: Array(repeating: 7, count: 32)))
        try damage(t, "UPDATE authorization_requests SET state = 'granted'")
        #expect(throws: RowDecodingError(table: "authorization_requests", column: "state", problem: "is 'granted', not a request state")) {
            try t.store.authorizationRequest(userCode: "BCDFGHJK")
        }
    }

    @Test func truncatedUUIDIsAnError() throws {
        let (t, app, user, _) = try storeWithOneSample()
        try damage(t, "UPDATE samples SET uuid = x'0102'")
        #expect(throws: RowDecodingError(table: "samples", column: "uuid", problem: "is not a 16-byte uuid")) {
            try t.store.samples(SampleQuery(type: "stepCount"), for: app, userExternalID: user.id)
        }
    }
}

/// The store enforces each token's AccessPolicy itself, so no caller can skip it.
@Suite struct AccessPolicyStoreTests {
    @Test func writesAndDeletesOfUnsharedTypesAreRefusedByTheStore() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (reader, _) = try t.store.createAuthorization(user: user, app: "reader", read: ["stepCount", "workout"], share: ["heartRate"])
        let batch = [HealthSample(uuid: .random(), type: "heartRate", start: 1_700_000_000_000, end: 1_700_000_000_000, content: .quantity(60)),
                     steps(5, start: 1_700_000_000_000)]
        #expect(throws: SharingDenied(type: "stepCount", index: 1, detail: "this token may not share stepCount")) {
            try t.store.save(batch, by: reader)
        }
        #expect(throws: SharingDenied.self) { try t.store.deleteSamples(type: "stepCount", start: 0, end: 2_000_000_000_000, by: reader) }
        #expect(throws: SharingDenied.self) {
            try t.store.startWorkoutSession(app: reader, activityType: "running", zone: nil, at: 1_700_000_000_000)
        }
        let page = try t.store.samples(SampleQuery(type: "heartRate"), for: reader, userExternalID: user.id)
        #expect(page.samples.isEmpty, "nothing of the refused batch was stored")
    }

    @Test func readsOfUnreadableTypesSeeOnlyTheTokensOwnSamples() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (owner, _) = try t.store.createAuthorization(user: user, app: "owner", read: ["stepCount"], share: ["stepCount"])
        let (writer, _) = try t.store.createAuthorization(user: user, app: "writer", read: [], share: ["stepCount"])
        let theirs = try t.store.save([steps(100, start: 1_700_000_000_000)], by: owner)
        let mine = try t.store.save([steps(1, start: 1_700_000_060_000)], by: writer)
        #expect(ReadVisibility(app: writer).sources(of: "stepCount") == .onlySource(writer.sourceRowID))
        #expect(ReadVisibility(app: owner).sources(of: "stepCount") == .everySource)
        let page = try t.store.samples(SampleQuery(type: "stepCount"), for: writer, userExternalID: user.id)
        #expect(page.samples.map(\.sample.uuid) == mine)
        #expect(try t.store.sample(theirs[0], for: writer, userExternalID: user.id) == nil)
        #expect(throws: StoreError.notFound("no sample \(theirs[0].lowercasedString)")) { try t.store.deleteSample(theirs[0], by: writer) }
        #expect(try t.store.samples(SampleQuery(type: "stepCount"), for: owner, userExternalID: user.id).samples.count == 2)
    }
}

@Suite struct SystemUUIDTests {
    @Test func systemUUIDsHaveTheirVersionsAndStayDistinctAcrossRefills() {
        #expect(HealthUUID.random().version == 4)
        #expect(HealthUUID.timeOrdered().version == 7)
        // The buffered random source refills every 512 words: uuids across refills stay distinct.
        let many = (0..<3_000).map { _ in HealthUUID.timeOrdered() }
        #expect(Set(many).count == many.count)
        #expect(Set(many.map(\.low)).count == many.count)
    }
}
