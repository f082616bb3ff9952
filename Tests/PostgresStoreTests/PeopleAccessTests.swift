import Dispatch
import Foundation
import HealthModel
import HealthStore
import PostgresStore
import PostgresTestSupport
import SQLiteStore
import Statistics
import Synchronization
import Testing

/// The person's side of their data on both backends, through the façade: the recent-access log,
/// deleting what one app saved, and erasing an account (every table, while others write).
enum PeopleAccessContract {
    static let t0: Int64 = 1_700_000_000_000
    static let everything = (from: Int64(0), to: Int64(4_000_000_000_000))

    /// Counts per type, summed over quarter hours and apps.
    static func totals(_ entries: [AccessLogEntry]) -> [String: AccessCounts] {
        var totals: [String: AccessCounts] = [:]
        for entry in entries { totals[entry.type, default: AccessCounts()].add(entry.counts) }
        for key in totals.keys { totals[key]?.lastAccess = 0 }
        return totals
    }

    static func stepsQuery() -> SampleQuery {
        var query = SampleQuery(type: "stepCount")
        query.limit = 1_000
        return query
    }

    static func recentAccessCountsWhatTheAppReadAndWrote(_ t: TestStore) throws {
        let data = HealthData(t.store, accessFlushInterval: .seconds(3_600))
        let alice = try t.store.createUser(name: "alice")
        let watch = data.app(try t.store.createAuthorization(user: alice, app: "watch", read: ["stepCount", "heartRate"],
                                                             share: ["stepCount", "heartRate"]).authorization)
        _ = try watch.save([steps(10, start: t0), steps(20, start: t0 + 60_000), heartRate(60, at: t0)])
        #expect(try watch.samples(stepsQuery()).samples.count == 2)
        let stepType = try #require(HealthTypeCatalog.type("stepCount"))
        let hour: Int64 = 3_600_000
        let buckets = [CalendarBucket(start: t0, end: t0 + hour, startOffsetSeconds: 0, endOffsetSeconds: 0),
                       CalendarBucket(start: t0 + hour, end: t0 + 2 * hour, startOffsetSeconds: 0, endOffsetSeconds: 0)]
        #expect(try watch.statistics(stepType, buckets: buckets, options: .cumulativeSum).count == 2)
        #expect(try watch.changes(ChangeRequest(types: nil, after: nil, limit: 100)).added.count == 3)
        #expect(try watch.exportPage(type: "heartRate", after: nil, limit: 10).count == 1)
        let expected: [String: AccessCounts] = [
            // One save; reads: the page of samples (2), the statistics (2 buckets), the change feed (2).
            "stepCount": AccessCounts(reads: 3, samplesRead: 6, writes: 1, samplesWritten: 2),
            // One save; reads: the change feed (1) and the export (1).
            "heartRate": AccessCounts(reads: 2, samplesRead: 2, writes: 1, samplesWritten: 1),
        ]
        let person = data.person(alice)
        // Before the flush (in memory) and after it (stored), the same answer.
        #expect(totals(try person.recentAccess(from: everything.from, to: everything.to)) == expected)
        try data.recentAccess.flush()
        #expect(totals(try t.store.accessLog(userRowID: alice.rowID, from: everything.from, to: everything.to)) == expected)
        #expect(totals(try person.recentAccess(from: everything.from, to: everything.to)) == expected)
        // A second flush adds to the stored rows.
        _ = try watch.samples(stepsQuery())
        try data.recentAccess.flush()
        let again = totals(try person.recentAccess(from: everything.from, to: everything.to))
        #expect(again["stepCount"] == AccessCounts(reads: 4, samplesRead: 8, writes: 1, samplesWritten: 2))
        // One row per (app, type, quarter hour), naming the app, stamped now.
        let rows = try t.store.accessLog(userRowID: alice.rowID, from: everything.from, to: everything.to)
        #expect(Set(rows.map(\.app)) == ["watch"])
        let now = StoreClock.nowMilliseconds()
        #expect(rows.allSatisfy { $0.slot % AccessSlot.milliseconds == 0 && $0.slot <= now && now - $0.slot < 2 * AccessSlot.milliseconds })
        #expect(rows.allSatisfy { $0.counts.lastAccess >= $0.slot && $0.counts.lastAccess <= now })
    }

    static func accessLogPurgesPastRetentionAndDropsErasedUsers(_ t: TestStore) throws {
        let clock = Mutex<Int64>(t0)
        let recorder = AccessRecorder(store: t.store, flushInterval: .seconds(3_600), clock: { clock.withLock { $0 } })
        let alice = try t.store.createUser(name: "alice")
        recorder.record(userRowID: alice.rowID, app: "watch", type: "stepCount", AccessCounts(reads: 1, samplesRead: 5))
        clock.withLock { $0 += 10 * 86_400_000 }
        recorder.record(userRowID: alice.rowID, app: "watch", type: "stepCount", AccessCounts(reads: 1, samplesRead: 7))
        // A user who does not exist (erased meanwhile) leaves no row.
        recorder.record(userRowID: alice.rowID + 1_000, app: "ghost", type: "stepCount", AccessCounts(reads: 1))
        try recorder.flush()
        #expect(try t.store.accessLog(userRowID: alice.rowID, from: everything.from, to: everything.to).count == 2)
        #expect(try t.store.accessLog(userRowID: alice.rowID + 1_000, from: everything.from, to: everything.to).isEmpty)
        // Kept 5 days: the older quarter hour goes, the recent one stays.
        #expect(try recorder.purge(retentionDays: 5) == 1)
        #expect(try t.store.accessLog(userRowID: alice.rowID, from: everything.from, to: everything.to).map(\.counts.samplesRead) == [7])
        // Counts of a user being erased are dropped, also those arriving before the next flush.
        recorder.forget(userRowID: alice.rowID)
        recorder.record(userRowID: alice.rowID, app: "watch", type: "stepCount", AccessCounts(reads: 1, samplesRead: 9))
        try recorder.flush()
        #expect(try t.store.accessLog(userRowID: alice.rowID, from: everything.from, to: everything.to).map(\.counts.samplesRead) == [7])
    }

    static func deletingAnAppsDataLeavesTombstonesAndStatistics(_ t: TestStore) throws {
        let data = HealthData(t.store, accessFlushInterval: .seconds(3_600))
        let alice = try t.store.createUser(name: "alice")
        let watch = data.app(try t.store.createAuthorization(user: alice, app: "watch", read: ["stepCount", "bloodPressure"],
                                                             share: ["stepCount", "bloodPressure", "bloodPressureSystolic",
                                                                     "bloodPressureDiastolic"]).authorization)
        let phone = data.app(try t.store.createAuthorization(user: alice, app: "phone", read: ["stepCount"], share: ["stepCount"]).authorization)
        let pressure = HealthSample(uuid: .random(), type: "bloodPressure", start: t0, end: t0, content: .correlation([
            HealthSample(uuid: .random(), type: "bloodPressureSystolic", start: t0, end: t0, content: .quantity(120)),
            HealthSample(uuid: .random(), type: "bloodPressureDiastolic", start: t0, end: t0, content: .quantity(80)),
        ]))
        _ = try watch.save([steps(100, start: t0), steps(200, start: t0 + 120_000), pressure])
        _ = try phone.save([steps(7, start: t0 + 3_600_000)])
        let anchor = try watch.changes(ChangeRequest(types: nil, after: nil, limit: 100)).next
        let stepType = try #require(HealthTypeCatalog.type("stepCount"))
        let day = [CalendarBucket(start: t0 - 86_400_000, end: t0 + 86_400_000, startOffsetSeconds: 0, endOffsetSeconds: 0)]
        #expect(try phone.statistics(stepType, buckets: day, options: .cumulativeSum).first?.figures.sum == 307)

        #expect(try data.person(alice).deleteSamples(savedBy: "watch") == 3)
        #expect(try data.person(alice).deleteSamples(savedBy: "nobody") == 0)
        // The statistics follow at once, the change feed lists the deletions, the other app's data stays.
        #expect(try phone.statistics(stepType, buckets: day, options: .cumulativeSum).first?.figures.sum == 7)
        let changes = try watch.changes(ChangeRequest(types: nil, after: anchor, limit: 100))
        #expect(changes.added.isEmpty)
        #expect(Set(changes.deleted.map(\.type)) == ["stepCount", "bloodPressure", "bloodPressureSystolic", "bloodPressureDiastolic"])
        #expect(changes.deleted.count == 5)
        #expect(try phone.samples(stepsQuery()).samples.map(\.sample.quantity) == [7])
        var pressureQuery = SampleQuery(type: "bloodPressureSystolic")
        pressureQuery.limit = 10
        #expect(try watch.samples(pressureQuery).samples.isEmpty)
    }

    /// Fills every table for `user`: samples (with a device and a correlation), a deletion before
    /// and after a tombstone purge, source order, characteristics, goals, summaries, an IMU batch,
    /// a workout session, statistics, and the access log.
    @discardableResult
    static func fill(_ data: HealthData, _ t: TestStore, user: User, app name: String) throws -> AppHealthData {
        let app = data.app(try t.store.createAuthorization(user: user, app: name, read: ["stepCount", "heartRate"],
                                                           share: ["stepCount", "heartRate", "workout", "bloodPressure",
                                                                   "bloodPressureSystolic", "bloodPressureDiastolic"]).authorization)
        let device = SampleDevice(name: "\(user.name)'s watch", manufacturer: "Apple")
        let doomed = HealthUUID.random()
        let later = HealthUUID.random()
        _ = try app.save([steps(100, start: t0, device: device), steps(5, start: t0 + 60_000, uuid: doomed), heartRate(70, at: t0),
                          steps(6, start: t0 + 120_000, uuid: later),
                          HealthSample(uuid: .random(), type: "bloodPressure", start: t0, end: t0, content: .correlation([
                              HealthSample(uuid: .random(), type: "bloodPressureSystolic", start: t0, end: t0, content: .quantity(120)),
                              HealthSample(uuid: .random(), type: "bloodPressureDiastolic", start: t0, end: t0, content: .quantity(80)),
                          ]))])
        try app.deleteSample(doomed)
        try t.store.purgeTombstones(deletedBefore: StoreClock.nowMilliseconds() + 1)
        try app.deleteSample(later)
        let person = data.person(user)
        let stepType = try #require(HealthTypeCatalog.type("stepCount"))
        try person.setSourcePriority(type: stepType, apps: [name])
        try person.replaceCharacteristics([("dateOfBirth", "1980-01-01")])
        try person.setActivityGoals(ActivityGoals(activeEnergyBurned: 400, appleExerciseTime: 20, appleStandHours: 10))
        let summaryDay = try #require(HealthDay(year: 2024, month: 3, day: 1))
        try t.store.saveActivitySummaries([ActivitySummary(day: summaryDay, activeEnergyBurned: 300)], userRowID: user.rowID)
        let day = [CalendarBucket(start: t0 - 86_400_000, end: t0 + 86_400_000, startOffsetSeconds: 0, endOffsetSeconds: 0)]
        _ = try app.statistics(stepType, buckets: day, options: .cumulativeSum)
        guard case .ready(let basis) = try app.imuSession("walk", seq: 0) else {
            throw StoreError.invalid("a new IMU session is ready")
        }
        let batch = IMUBatchResult(state: [1], samples: [steps(3, start: t0 + 600_000)], start: t0 + 600_000, end: t0 + 660_000,
                                   steps: 3, distance: 0, floorsAscended: 0, floorsDescended: 0, cadence: nil, pace: nil,
                                   ended: false, response: Array("{}".utf8))
        let committed = Mutex<Result<[UInt8], any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        app.commitIMU(session: "walk", seq: 0, device: device, basis: basis, result: batch) { result in
            committed.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        if case .failure(let error) = try #require(committed.withLock { $0 }) { throw error }
        _ = try app.startWorkoutSession(activityType: "running", zone: nil, at: t0 + 900_000)
        try data.recentAccess.flush()
        // The people tables: an invitation, a session, failed sign-ins under the name (and an address).
        let now = StoreClock.nowMilliseconds()
        // A webhook with an attempt in its deliveries list.
        let lease = WebhookLease(owner: "test", duration: 600_000)
        let hook = try app.createWebhook(id: "wh_\(user.rowID)", url: "http://203.0.113.1/", types: ["stepCount"], secretKey: [1], lease: lease).get()
        _ = try t.store.recordWebhookAttempt(id: hook.id, userRowID: user.rowID, attempt: WebhookDeliveryAttempt(
            messageID: "msg_test", timeMs: now, status: 500, durationMs: 1, error: "x"), nextAttemptMs: nil, lease: lease)
        try t.store.createInvitation(userRowID: user.rowID, codeHash: Array(repeating: UInt8(user.rowID & 0xff), count: 32), expiresMs: now + 60_000)
        try t.store.createSession(userRowID: user.rowID, tokenHash: Array(repeating: UInt8(user.rowID & 0xff) ^ 0x55, count: 32), nowMs: now)
        try t.store.recordSignInFailure(keys: [(.account, user.name.uppercased().lowercased()), (.address, "192.0.2.\(user.rowID & 0xff)")],
                                        atMs: now, forgetBeforeMs: now - 60_000)
        // A permission request the person answered (it names them).
        let code = "REQ" + user.name.uppercased()
        _ = try t.store.createAuthorizationRequest(AuthorizationRequestRecord(id: UUID().uuidString, userCode: code, app: name,
                                                                              displayName: name, reason: "r", share: ["stepCount"], read: [],
                                                                              created: now, interval: 5),
                                                   deviceCodeHash: Array(repeating: UInt8(user.rowID & 0xff) ^ 0x33, count: 32))
        _ = try t.store.answerAuthorizationRequest(userCode: code, user: user) { record, _ in
            record.state = .denied
            record.userRowID = user.rowID
        }
        return app
    }

    static func erasureLeavesNoRowThatNamesTheUser(_ t: TestStore, plan: [String], shared: Set<String>) throws {
        // Every table of the schema is erased or holds no user's rows: a table added later must
        // join the erasure (or say why it names nobody) before this passes.
        let tables = try t.rowCounts()
        let planned = Set(plan)
        #expect(Set(tables.keys).subtracting(planned).subtracting(shared).sorted() == [])
        #expect(planned.subtracting(tables.keys).sorted() == [])

        let data = HealthData(t.store, accessFlushInterval: .seconds(3_600))
        let alice = try t.store.createUser(name: "alice")
        let bob = try t.store.createUser(name: "bob")
        let aliceApp = try fill(data, t, user: alice, app: "watch")
        try fill(data, t, user: bob, app: "phone")
        let bobBefore = try data.person(bob).exportPage(type: "stepCount", after: nil, limit: 100).map(\.sample)
        let filled = try t.rowCounts()

        let report = try data.person(alice).erase()
        #expect(report.rows["samples", default: 0] > 0 && report.rows["accessLog", default: 0] > 0 && report.rows["user"] == 1)
        #expect(try t.store.user(idOrName: alice.id) == nil)
        #expect(throws: StoreError.self) { try data.person(alice).erase() }
        // A write of hers still in flight stores nothing, and says her account is gone (a 401, as for
        // a revoked token).
        #expect(throws: AccountErased.self) { try aliceApp.save([steps(1, start: t0 + 86_400_000)]) }
        // An import (Health Auto Export) of hers too, though the erasure took her app's source row,
        // and one naming a source she never had (Health Auto Export's path, which makes it first).
        for app in [aliceApp.app.appName, "watch"] {
            #expect(throws: AccountErased.self) {
                try aliceApp.importSamples { session in
                    _ = try session.save([SourcedSample(app: app, sample: steps(2, start: t0 + 86_400_000))])
                }
            }
        }
        // An admin's authorization for her, looked up before the erasure, finds no one and leaves no row.
        #expect(throws: StoreError.notFound("no user \(alice.id)")) {
            try t.store.createAuthorization(user: alice, app: "late", read: ["stepCount"], share: [])
        }
        // So do her writes that save no sample: a workout session, a webhook, a stationary IMU batch.
        #expect(throws: AccountErased.self) {
            try aliceApp.startWorkoutSession(activityType: "walking", zone: nil, at: t0 + 86_400_000)
        }
        #expect(throws: AccountErased.self) {
            try aliceApp.createWebhook(id: "wh_late", url: "http://203.0.113.1/", types: ["stepCount"], secretKey: [2],
                                       lease: WebhookLease(owner: "test", duration: 600_000))
        }
        if case .ready(let basis) = try aliceApp.imuSession("still", seq: 0) {
            let still = IMUBatchResult(state: [1], samples: [], start: t0, end: t0 + 60_000, steps: 0, distance: 0, floorsAscended: 0,
                                       floorsDescended: 0, cadence: nil, pace: nil, ended: false, response: Array("{}".utf8))
            let committed = Mutex<Result<[UInt8], any Error>?>(nil)
            let done = DispatchSemaphore(value: 0)
            aliceApp.commitIMU(session: "still", seq: 0, device: nil, basis: basis, result: still) { result in
                committed.withLock { $0 = result }
                done.signal()
            }
            done.wait()
            #expect(throws: AccountErased.self) { try committed.withLock { $0 }?.get() }
        } else {
            Issue.record("a new IMU session of the erased user's app is ready")
        }
        #expect(try t.store.user(idOrName: alice.id) == nil)
        // Bob's data is whole.
        #expect(try data.person(bob).exportPage(type: "stepCount", after: nil, limit: 100).map(\.sample) == bobBefore)
        let afterAlice = try t.rowCounts()
        // Erasing bob as well empties every table a user's data lives in.
        _ = try data.person(bob).erase()
        let empty = try t.rowCounts()
        // Failed sign-ins from an address name no one: they stay for the limiter's window.
        #expect(empty["sign_in_failures"] == 2)
        for table in planned.sorted() where table != "sign_in_failures" {
            #expect(empty[table] == 0, "table \(table) keeps \(empty[table] ?? -1) rows after every user was erased")
        }
        // The erasure report counted every row that went (but the uuid key runs, which compactions
        // in the background may rewrite meanwhile).
        var deleted = 0
        for table in planned where !table.hasPrefix("sample_key_") { deleted += (filled[table] ?? 0) - (afterAlice[table] ?? 0) }
        #expect(report.total - report.rows["sampleKeyRuns", default: 0] == deleted)
        // Every table the fill reached held rows: the check above is not vacuous.
        let unfilled = planned.filter { (filled[$0] ?? 0) == 0 }.sorted()
        #expect(unfilled.allSatisfy { ["sample_key_compactions"].contains($0) }, "tables the test did not fill: \(unfilled)")
    }

    /// After an erasure, nothing cached about the erased rows answers for a user who comes next (on
    /// SQLite she may get the same row ids): her statistics, sources and samples are her own.
    static func nothingCachedOutlivesAnErasure(_ t: TestStore) throws {
        let data = HealthData(t.store, accessFlushInterval: .seconds(3_600))
        let stepType = try #require(HealthTypeCatalog.type("stepCount"))
        let day = [CalendarBucket(start: t0 - 86_400_000, end: t0 + 86_400_000, startOffsetSeconds: 0, endOffsetSeconds: 0)]
        let alice = try t.store.createUser(name: "alice")
        let watch = data.app(try t.store.createAuthorization(user: alice, app: "watch", read: ["stepCount"], share: ["stepCount"]).authorization)
        _ = try watch.save([steps(500, start: t0, device: SampleDevice(name: "Alice's watch"))])
        #expect(try watch.statistics(stepType, buckets: day, options: .cumulativeSum).first?.figures.sum == 500)
        #expect(try watch.samples(stepsQuery()).samples.first?.source.app == "watch")
        _ = try data.person(alice).erase()

        let carol = try t.store.createUser(name: "carol")
        let phone = data.app(try t.store.createAuthorization(user: carol, app: "phone", read: ["stepCount"], share: ["stepCount"]).authorization)
        #expect(try phone.statistics(stepType, buckets: day, options: .cumulativeSum).first?.figures.sum ?? 0 == 0)
        #expect(try phone.samples(stepsQuery()).samples.isEmpty)
        _ = try phone.save([steps(7, start: t0, device: SampleDevice(name: "Carol's phone"))])
        #expect(try phone.statistics(stepType, buckets: day, options: .cumulativeSum).first?.figures.sum == 7)
        let mine = try #require(try phone.samples(stepsQuery()).samples.first)
        #expect(mine.source.app == "phone" && mine.sample.device?.name == "Carol's phone")
        #expect(try phone.sources(type: "stepCount").map(\.app) == ["phone"])
    }

    /// Another user writing in a loop while one is erased: every write succeeds and is kept.
    static func erasingOneUserWhileAnotherWrites(_ t: TestStore) throws {
        let data = HealthData(t.store, accessFlushInterval: .milliseconds(20))
        let alice = try t.store.createUser(name: "alice")
        let bob = try t.store.createUser(name: "bob")
        let aliceApp = data.app(try t.store.createAuthorization(user: alice, app: "watch", read: ["stepCount"], share: ["stepCount"]).authorization)
        let bobApp = data.app(try t.store.createAuthorization(user: bob, app: "phone", read: ["stepCount"], share: ["stepCount"]).authorization)
        for batch in 0..<20 {
            _ = try aliceApp.save((0..<50).map { steps(1, start: t0 + Int64(batch * 50 + $0) * 60_000) })
        }
        let saved = Mutex<[HealthUUID]>([])
        let failures = Mutex<[String]>([])
        let stop = Atomic<Bool>(false)
        let writer = Thread {
            var index: Int64 = 0
            while !stop.load(ordering: .relaxed) {
                let sample = steps(1, start: t0 + index * 60_000)
                index += 1
                do {
                    let uuids = try bobApp.save([sample])
                    _ = try bobApp.samples(stepsQuery())
                    saved.withLock { $0 += uuids }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        writer.start()
        while saved.withLock({ $0.count }) < 5 { usleep(1_000) }
        _ = try data.person(alice).erase()
        let atErasure = saved.withLock { $0.count }
        while saved.withLock({ $0.count }) < atErasure + 5 { usleep(1_000) }
        stop.store(true, ordering: .relaxed)
        while !writer.isFinished { usleep(1_000) }
        #expect(failures.withLock { $0 } == [])
        var query = stepsQuery()
        query.limit = 100_000
        let stored = Set(try bobApp.samples(query).samples.map(\.sample.uuid))
        #expect(stored == Set(saved.withLock { $0 }))
        try data.recentAccess.flush()
        #expect(try t.store.accessLog(userRowID: alice.rowID, from: everything.from, to: everything.to).isEmpty)
    }
}

extension TestStore {
    /// Every table of the schema with its row count.
    func rowCounts() throws -> [String: Int] {
        switch backend {
        case .sqlite: try #require(store as? SQLiteHealthStore).tableRowCounts()
        case .postgres: try #require(store as? PostgresHealthStore).tableRowCounts()
        }
    }
}

@Suite struct SQLitePeopleAccessTests {
    @Test func recentAccessCountsWhatTheAppReadAndWrote() throws {
        try PeopleAccessContract.recentAccessCountsWhatTheAppReadAndWrote(TestStore(.sqlite))
    }
    @Test func accessLogPurgesPastRetentionAndDropsErasedUsers() throws {
        try PeopleAccessContract.accessLogPurgesPastRetentionAndDropsErasedUsers(TestStore(.sqlite))
    }
    @Test func deletingAnAppsDataLeavesTombstonesAndStatistics() throws {
        try PeopleAccessContract.deletingAnAppsDataLeavesTombstonesAndStatistics(TestStore(.sqlite))
    }
    @Test func erasureLeavesNoRowThatNamesTheUser() throws {
        try PeopleAccessContract.erasureLeavesNoRowThatNamesTheUser(TestStore(.sqlite), plan: SQLiteHealthStore.erasurePlan.map(\.table),
                                                                    shared: SQLiteHealthStore.tablesWithoutUsers)
    }
    @Test func erasingOneUserWhileAnotherWrites() throws {
        try PeopleAccessContract.erasingOneUserWhileAnotherWrites(TestStore(.sqlite))
    }
    @Test func nothingCachedOutlivesAnErasure() throws {
        try PeopleAccessContract.nothingCachedOutlivesAnErasure(TestStore(.sqlite))
    }
}

@Suite(.enabled(if: TestPostgres.isAvailable, "set HEALTHD_TEST_POSTGRES_URL to run the PostgreSQL store's tests"))
struct PostgresPeopleAccessTests {
    @Test func recentAccessCountsWhatTheAppReadAndWrote() throws {
        try PeopleAccessContract.recentAccessCountsWhatTheAppReadAndWrote(TestStore(.postgres))
    }
    @Test func accessLogPurgesPastRetentionAndDropsErasedUsers() throws {
        try PeopleAccessContract.accessLogPurgesPastRetentionAndDropsErasedUsers(TestStore(.postgres))
    }
    @Test func deletingAnAppsDataLeavesTombstonesAndStatistics() throws {
        try PeopleAccessContract.deletingAnAppsDataLeavesTombstonesAndStatistics(TestStore(.postgres))
    }
    @Test func erasureLeavesNoRowThatNamesTheUser() throws {
        try PeopleAccessContract.erasureLeavesNoRowThatNamesTheUser(TestStore(.postgres), plan: PostgresHealthStore.erasurePlan.map(\.table),
                                                                    shared: PostgresHealthStore.tablesWithoutUsers)
    }
    @Test func erasingOneUserWhileAnotherWrites() throws {
        try PeopleAccessContract.erasingOneUserWhileAnotherWrites(TestStore(.postgres))
    }
    @Test func nothingCachedOutlivesAnErasure() throws {
        try PeopleAccessContract.nothingCachedOutlivesAnErasure(TestStore(.postgres))
    }
    /// Two nodes count the same app's accesses in memory; their flushes add up in one row.
    @Test func twoNodesAddTheirCounts() throws {
        let t = try TestStore(.postgres)
        let node = try t.secondNode()
        let alice = try t.store.createUser(name: "alice")
        let first = AccessRecorder(store: t.store, flushInterval: .seconds(3_600))
        let second = AccessRecorder(store: node, flushInterval: .seconds(3_600))
        first.record(userRowID: alice.rowID, app: "watch", type: "stepCount", AccessCounts(reads: 1, samplesRead: 3))
        second.record(userRowID: alice.rowID, app: "watch", type: "stepCount", AccessCounts(reads: 2, samplesRead: 4, writes: 1))
        try first.flush()
        try second.flush()
        let totals = PeopleAccessContract.totals(try node.accessLog(userRowID: alice.rowID, from: 0, to: 4_000_000_000_000))
        #expect(totals["stepCount"] == AccessCounts(reads: 3, samplesRead: 7, writes: 1))
    }
}
