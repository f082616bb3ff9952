import Foundation
import Synchronization
import Testing
import HealthModel
import SQLite
@testable import HealthStore
@testable import SQLiteStore

/// The prepared insert path (work done before the writer lock): in-batch duplicates, devices,
/// correlations, and the per-type bookkeeping rows.
@Suite struct SampleWritingTests {
    static let watch = SampleDevice(name: "Apple Watch", manufacturer: "Apple Inc.", model: "Watch")
    static let phone = SampleDevice(name: "iPhone", manufacturer: "Apple Inc.", model: "iPhone")

    func heartRate(_ bpm: Double, start: Int64, device: SampleDevice?, uuid: HealthUUID = .random()) -> HealthSample {
        HealthSample(uuid: uuid, type: "heartRate", start: start, end: start, content: .quantity(bpm / 60), device: device)
    }

    @Test func repeatsInABatchAreStoredOnceAndDifferingRepeatsConflictAtTheirIndex() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        let uuid = HealthUUID.random()
        let first = steps(5, start: 1_700_000_000_000, uuid: uuid)
        let saved = try t.store.save([first, steps(6, start: 1_700_000_060_000), first], by: app)
        #expect(saved == [uuid, saved[1], uuid], "every request position answers its uuid")
        var query = SampleQuery(type: "stepCount")
        query.limit = 10
        #expect(try t.store.samples(query, for: app, userExternalID: user.id).samples.count == 2)

        let other = HealthUUID.random()
        let differing = [steps(1, start: 1_700_000_200_000, uuid: other), steps(2, start: 1_700_000_200_000, uuid: other)]
        #expect(throws: SampleConflict(index: 1, uuid: other, detail: "uuid \(other.lowercasedString) appears twice in the batch with different content")) {
            try t.store.save(differing, by: app)
        }
        // A stored-data conflict before the in-batch one is the one reported, as before preparation moved out of the lock.
        let stored = saved[1]
        let both = [steps(7, start: 1_700_000_060_000, uuid: stored), steps(1, start: 1_700_000_300_000, uuid: other),
                    steps(2, start: 1_700_000_300_000, uuid: other)]
        let error = try #require(throws: SampleConflict.self) { try t.store.save(both, by: app) }
        #expect(error.index == 0)
        #expect(try t.store.samples(query, for: app, userExternalID: user.id).samples.count == 2, "nothing of a failed batch is kept")
    }

    @Test func devicesSourcesAndExtentsFollowTheInsertedRows() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let types: Set<String> = ["stepCount", "heartRate"]
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: types, share: types)
        let start: Int64 = 1_700_000_000_000
        var batch: [HealthSample] = []
        for minute in 0..<20 {
            let at = start + Int64(minute) * 60_000
            batch.append(heartRate(60, start: at, device: minute % 2 == 0 ? Self.watch : Self.phone))
            batch.append(steps(Double(minute), start: at, seconds: minute == 19 ? 600 : 60))
        }
        // More distinct devices than the linear scan covers.
        for index in 0..<12 {
            batch.append(heartRate(70, start: start + 3_600_000 + Int64(index) * 1000,
                                   device: SampleDevice(name: "strap \(index)", localIdentifier: "\(index)")))
        }
        batch.append(heartRate(71, start: start + 7_200_000, device: SampleDevice(name: "strap 3", localIdentifier: "3")))
        _ = try t.store.save(batch, by: app)

        var query = SampleQuery(type: "heartRate")
        query.limit = 100
        let rates = try t.store.samples(query, for: app, userExternalID: user.id).samples
        #expect(rates.count == 33)
        #expect(rates.map(\.sample.device) == batch.filter { $0.type == "heartRate" }.map(\.device))
        let sources = try t.store.sources(type: "heartRate", for: app)
        #expect(sources.count == 1)
        #expect(sources.first?.devices.count == 14, "watch, phone and twelve straps, each once")
        #expect(try t.store.sources(type: "stepCount", for: app).first?.devices == [])

        // The 10-minute step sample bounds overlap queries: one starting inside it finds it.
        var overlap = SampleQuery(type: "stepCount")
        overlap.start = start + 19 * 60_000 + 300_000
        overlap.end = overlap.start.map { $0 + 1 }
        let found = try t.store.samples(overlap, for: app, userExternalID: user.id).samples
        #expect(found.map(\.sample.start) == [start + 19 * 60_000])
    }

    @Test func correlationObjectsAreInsertedWithTheirParent() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let types: Set<String> = ["bloodPressure", "bloodPressureSystolic", "bloodPressureDiastolic"]
        let (app, _) = try t.store.createAuthorization(user: user, app: "cuff", read: types, share: types)
        let at: Int64 = 1_700_000_000_000
        let pressure = HealthSample(uuid: .random(), type: "bloodPressure", start: at, end: at, content: .correlation([
            HealthSample(uuid: .random(), type: "bloodPressureSystolic", start: at, end: at, content: .quantity(120)),
            HealthSample(uuid: .random(), type: "bloodPressureDiastolic", start: at, end: at, content: .quantity(80)),
        ]), device: Self.phone)
        _ = try t.store.save([pressure, pressure], by: app)
        let stored = try t.store.samples(SampleQuery(type: "bloodPressure"), for: app, userExternalID: user.id).samples
        #expect(stored.map(\.sample) == [pressure])
        #expect(try t.store.samples(SampleQuery(type: "bloodPressureSystolic"), for: app, userExternalID: user.id).samples.count == 1)
        _ = try t.store.save([pressure], by: app)
        #expect(try t.store.samples(SampleQuery(type: "bloodPressure"), for: app, userExternalID: user.id).samples.count == 1,
                "an identical retry stores nothing twice")
    }

    @Test func repeatedRowBodiesReadBackPerRow() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (app, _) = try t.store.createAuthorization(user: user, app: "watch", read: ["heartRate"], share: ["heartRate"])
        let start: Int64 = 1_700_000_000_000
        let batch = (0..<300).map { index in
            var sample = heartRate(60, start: start + Int64(index) * 1000, device: nil)
            sample.metadata = index % 4 == 3 ? [] : [MetadataEntry(key: "HKHeartRateMotionContext", value: .number(Double(index % 3))),
                                                     MetadataEntry(key: "note", value: .string(index < 280 ? "same" : "row \(index)"))]
            return sample
        }
        _ = try t.store.save(batch, by: app)
        var query = SampleQuery(type: "heartRate")
        query.limit = 1000
        let stored = try t.store.samples(query, for: app, userExternalID: user.id).samples
        #expect(stored.map(\.sample.metadata) == batch.map(\.metadata))
    }
}

/// Group commit: concurrent saves share transactions, yet each stays all-or-nothing on its own.
@Suite struct ConcurrentSaveTests {
    @Test func concurrentBatchesLandWholeOrNotAtAll() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        let taken = HealthUUID.random()
        _ = try t.store.save([steps(1, start: 1_600_000_000_000, uuid: taken)], by: app)
        // 24 batches of 50 from 8 threads; every third batch reuses a stored uuid with other content.
        let batches: [[HealthSample]] = (0..<24).map { batch in
            (0..<50).map { index in
                let start = 1_700_000_000_000 + Int64(batch * 50 + index) * 60_000
                return index == 25 && batch % 3 == 0 ? steps(9, start: start, uuid: taken) : steps(Double(index), start: start)
            }
        }
        let outcomes = Mutex<[Int: Bool]>([:])
        let finished = DispatchSemaphore(value: 0)
        let store = t.store
        for thread in 0..<8 {
            Thread.detachNewThread {
                for batch in stride(from: thread, to: batches.count, by: 8) {
                    let saved = (try? store.save(batches[batch], by: app)) != nil
                    outcomes.withLock { $0[batch] = saved }
                }
                finished.signal()
            }
        }
        for _ in 0..<8 { finished.wait() }
        var query = SampleQuery(type: "stepCount")
        query.limit = 10_000
        let stored = Set(try t.store.samples(query, for: app, userExternalID: user.id).samples.map(\.sample.uuid))
        for (batch, samples) in batches.enumerated() {
            let expected = batch % 3 != 0
            #expect(outcomes.withLock { $0[batch] } == expected, "batch \(batch) answered")
            let present = samples.filter { $0.uuid != taken && stored.contains($0.uuid) }.count
            #expect(present == (expected ? 50 : 0), "batch \(batch) is whole or absent")
        }
        #expect(stored.count == 1 + 16 * 50)
        // The change feed holds exactly the stored samples, in one gap-free sequence.
        let page = try t.store.changes(ChangeRequest(types: ["stepCount"], after: nil, limit: 10_000), for: app, userExternalID: user.id)
        #expect(Set(page.added.map(\.sample.uuid)) == stored)
        #expect(page.added.count == stored.count && !page.more)
    }
}

@Suite struct WriteBacklogTests {
    final class Started: Sendable {
        let order = Mutex<[Int]>([])
        func record(_ id: Int) { order.withLock { $0.append(id) } }
        var ids: [Int] { order.withLock { $0 } }
    }

    @Test func workOverTheBudgetQueuesInOrderAndAnOversizeBatchGoesAlone() {
        let backlog = WriteBacklog(limit: 100)
        let started = Started()
        backlog.acquire(60) { started.record(1) }
        backlog.acquire(40) { started.record(2) }
        // Over budget: queued, and acquire returns at once (no thread waits).
        backlog.acquire(10) { started.record(3) }
        backlog.acquire(5) { started.record(4) }
        #expect(started.ids == [1, 2])
        #expect(backlog.waitingCount == 2)
        backlog.release(60)
        #expect(started.ids == [1, 2, 3, 4], "started in arrival order once budget is back")
        #expect(backlog.waitingCount == 0)
        backlog.release(40)
        backlog.release(10)
        backlog.release(5)
        // Nothing in flight: a batch above the whole budget is admitted rather than waiting forever,
        // and what comes after it waits for it.
        backlog.acquire(500) { started.record(5) }
        backlog.acquire(1) { started.record(6) }
        #expect(started.ids.last == 5)
        backlog.release(500)
        #expect(started.ids.last == 6)
        backlog.release(1)
    }

    /// The writer is held, the backlog is full, 64 saves wait: none of them holds a thread, so
    /// the caller (and any worker) goes on answering reads, and every save commits afterwards.
    @Test func readsAreAnsweredWhile64WritersWait() throws {
        let t = try TemporaryStore(writeBacklogLimit: 10)
        let user = try t.store.createUser(name: "busy")
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        let seeded = try t.store.save([steps(1, start: 1_700_000_000_000)], by: app)

        let writerHeld = DispatchSemaphore(value: 0)
        let releaseWriter = DispatchSemaphore(value: 0)
        t.store.pool.groupedWrite({ _ in
            writerHeld.signal()
            releaseWriter.wait()
        }, completion: { _ in })
        writerHeld.wait()

        let committed = DispatchGroup()
        let failures = Mutex(0)
        func save(_ samples: [HealthSample]) {
            committed.enter()
            t.store.save(samples, by: app) { result in
                if case .failure = result { failures.withLock { $0 += 1 } }
                committed.leave()
            }
        }
        // Fills the budget (it waits for the held writer), then 64 more queue behind it.
        save((0..<10).map { steps(1, start: 1_700_000_100_000 + Int64($0) * 60_000) })
        for index in 0..<64 { save([steps(1, start: 1_700_100_000_000 + Int64(index) * 60_000)]) }
        #expect(t.store.writeBacklog.waitingCount == 64)

        // Reads from this thread and from 32 concurrent workers are answered meanwhile.
        var query = SampleQuery(type: "stepCount")
        query.limit = 1_000
        #expect(try t.store.samples(query, for: app, userExternalID: user.id).samples.map(\.sample.uuid) == seeded)
        let reads = DispatchGroup()
        let answered = Mutex(0)
        let store = t.store, readQuery = query, userID = user.id
        for _ in 0..<32 {
            DispatchQueue.global().async(group: reads) {
                if (try? store.samples(readQuery, for: app, userExternalID: userID))?.samples.count == 1 {
                    answered.withLock { $0 += 1 }
                }
            }
        }
        #expect(reads.wait(timeout: .now() + 30) == .success)
        #expect(answered.withLock { $0 } == 32)
        #expect(t.store.writeBacklog.waitingCount == 64, "the writers are still waiting")

        releaseWriter.signal()
        #expect(committed.wait(timeout: .now() + 30) == .success)
        #expect(failures.withLock { $0 } == 0)
        #expect(try t.store.samples(query, for: app, userExternalID: user.id).samples.count == 1 + 10 + 64)
    }
}
