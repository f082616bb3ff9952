import Synchronization
import Testing
import HealthModel
@testable import HealthStore
@testable import SQLiteStore

/// `importSamples`: batched lookups and inserts with the outcomes of a save one sample at a time.
@Suite struct ImportingTests {
    private let start: Int64 = 1_700_000_000_000

    private func pressure(_ type: String, _ value: Double, uuid: HealthUUID = .random()) -> HealthSample {
        HealthSample(uuid: uuid, type: type, start: start, end: start, content: .quantity(value))
    }

    @Test func outcomesMatchOneByOneSavesAndReimportsStoreNothing() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let published = Mutex<[CommittedChange]>([])
        t.store.addCommitObserver { change in published.withLock { $0.append(change) } }

        let phoneSteps = steps(10, start: start)
        let watchSteps = steps(20, start: start)
        let differing = HealthSample(uuid: phoneSteps.uuid, type: "stepCount", start: start, end: start + 60_000, content: .quantity(11))
        let systolic = pressure("bloodPressureSystolic", 120)
        let diastolic = pressure("bloodPressureDiastolic", 80)
        let correlation = HealthSample(uuid: .random(), type: "bloodPressure", start: start, end: start,
                                       content: .correlation([systolic, diastolic]))
        let batch = [
            SourcedSample(app: "iPhone", sample: phoneSteps),
            SourcedSample(app: "Watch", sample: watchSteps),
            SourcedSample(app: "iPhone", sample: phoneSteps),   // exact repeat
            SourcedSample(app: "iPhone", sample: differing),    // same uuid, other content
            SourcedSample(app: "Watch", sample: phoneSteps),    // same uuid and content, other app
            SourcedSample(app: "Cuff", sample: systolic),        // stored on its own first, then adopted
            SourcedSample(app: "Cuff", sample: correlation),
            SourcedSample(app: "Cuff", sample: diastolic),       // repeated at top level after the correlation
        ]
        let taken = "uuid \(phoneSteps.uuid.lowercasedString) exists with different content"
        let outcomes = try t.store.importSamples(batch, userRowID: user.rowID)
        #expect(outcomes == [.inserted, .inserted, .alreadyStored, .conflict(taken), .conflict(taken), .inserted, .inserted, .alreadyStored])
        #expect(published.withLock { $0.count } == 1)
        #expect(published.withLock { $0.first?.typeIDs } == ["stepCount", "bloodPressure", "bloodPressureSystolic", "bloodPressureDiastolic"])

        let types: Set<String> = ["stepCount", "bloodPressure", "bloodPressureSystolic", "bloodPressureDiastolic"]
        let (reader, _) = try t.store.createAuthorization(user: user, app: "reader", read: types, share: [])
        let systolicRows = try t.store.samples(SampleQuery(type: "bloodPressureSystolic"), for: reader, userExternalID: user.id).samples
        #expect(systolicRows.map(\.sample.uuid) == [systolic.uuid], "the correlation adopted the stored sample: kept once")
        let stored = try t.store.samples(SampleQuery(type: "bloodPressure"), for: reader, userExternalID: user.id).samples
        #expect(stored.map(\.sample) == [correlation])
        let page = try t.store.changes(ChangeRequest(types: types, after: nil, limit: 100), for: reader, userExternalID: user.id)
        let added = page.added.map(\.sample.uuid)
        #expect(Set(added).count == added.count, "nothing twice in the change feed")
        #expect(Set(added).isSuperset(of: [phoneSteps.uuid, watchSteps.uuid, correlation.uuid]))

        // Again: everything is stored, the conflicts stay conflicts, no change is published.
        let again = try t.store.importSamples(batch, userRowID: user.rowID)
        #expect(again == [.alreadyStored, .alreadyStored, .alreadyStored, .conflict(taken), .conflict(taken), .alreadyStored,
                          .alreadyStored, .alreadyStored])
        #expect(published.withLock { $0.count } == 1)
        let pageAgain = try t.store.changes(ChangeRequest(types: types, after: nil, limit: 100), for: reader, userExternalID: user.id)
        #expect(pageAgain.added.map(\.sample.uuid) == added)
    }

    @Test func aCorrelationWhoseObjectBelongsToAnotherAppConflictsAndSavesNothing() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let systolic = pressure("bloodPressureSystolic", 120)
        let diastolic = pressure("bloodPressureDiastolic", 80)
        let correlation = HealthSample(uuid: .random(), type: "bloodPressure", start: start, end: start,
                                       content: .correlation([systolic, diastolic]))
        let outcomes = try t.store.importSamples([SourcedSample(app: "Cuff", sample: systolic),
                                                  SourcedSample(app: "Other", sample: correlation),
                                                  SourcedSample(app: "Other", sample: diastolic)], userRowID: user.rowID)
        #expect(outcomes == [.inserted, .conflict("object \(systolic.uuid.lowercasedString) exists with different content"), .inserted])
        let types: Set<String> = ["bloodPressure", "bloodPressureDiastolic"]
        let (reader, _) = try t.store.createAuthorization(user: user, app: "reader", read: types, share: [])
        #expect(try t.store.samples(SampleQuery(type: "bloodPressure"), for: reader, userExternalID: user.id).samples.isEmpty)
        #expect(try t.store.samples(SampleQuery(type: "bloodPressureDiastolic"), for: reader, userExternalID: user.id).samples.count == 1)
    }

    @Test func largeBatchesSpanSeveralLookupQueries() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let batch = (0..<1_234).map { SourcedSample(app: $0 % 3 == 0 ? "Watch" : "iPhone", sample: steps(Double($0), start: start + Int64($0) * 60_000)) }
        #expect(try t.store.importSamples(batch, userRowID: user.rowID).allSatisfy { $0 == .inserted })
        #expect(try t.store.importSamples(batch, userRowID: user.rowID).allSatisfy { $0 == .alreadyStored })
    }

    @Test func storedUUIDsAreFoundAlsoAmongManyOthersInTheSameRange() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        // 1,500 stored uuids packed together, so a range scan between two of them hits its row limit.
        let packed = (0..<1_500).map { HealthUUID(high: 0x0190_0000_0000_8000, low: 0x8000_0000_0000_0000 | UInt64($0)) }
        let stored = packed.enumerated().map { SourcedSample(app: "iPhone", sample: steps(1, start: start + Int64($0.offset) * 60_000, uuid: $0.element)) }
        #expect(try t.store.importSamples(stored, userRowID: user.rowID).allSatisfy { $0 == .inserted })
        let fresh = HealthUUID(high: 0x0190_0000_0000_8000, low: 0x8000_0000_0000_0000 | 700_000)
        let probe = [stored[0], stored[1_499], SourcedSample(app: "iPhone", sample: steps(2, start: start, uuid: fresh)),
                     SourcedSample(app: "Watch", sample: stored[750].sample)]
        let taken = "uuid \(stored[750].sample.uuid.lowercasedString) exists with different content"
        #expect(try t.store.importSamples(probe, userRowID: user.rowID) == [.alreadyStored, .alreadyStored, .inserted, .conflict(taken)])
    }
}

extension ImportingTests {
    /// The importer looks a batch's uuids up once: the per-app writers insert what it decided
    /// without a second look, correlations with adopted objects included.
    @Test func aBatchIsLookedUpOnceWhateverItsApps() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let systolic = pressure("bloodPressureSystolic", 120)
        let correlation = HealthSample(uuid: .random(), type: "bloodPressure", start: start, end: start,
                                       content: .correlation([systolic, pressure("bloodPressureDiastolic", 80)]))
        let batch = [SourcedSample(app: "Cuff", sample: systolic), SourcedSample(app: "Cuff", sample: correlation)]
            + (0..<30).map { SourcedSample(app: ["iPhone", "Watch", "Scale"][$0 % 3], sample: steps(1, start: start + Int64($0) * 60_000)) }
        let before = t.store.sampleKeys.batchLookups
        #expect(try t.store.importSamples(batch, userRowID: user.rowID).allSatisfy { $0 == .inserted })
        #expect(t.store.sampleKeys.batchLookups == before + 1, "one lookup for four apps' writers")
        #expect(try t.store.importSamples(batch, userRowID: user.rowID).allSatisfy { $0 == .alreadyStored })
        let (reader, _) = try t.store.createAuthorization(user: user, app: "reader", read: ["bloodPressureSystolic"], share: [])
        #expect(try t.store.samples(SampleQuery(type: "bloodPressureSystolic"), for: reader, userExternalID: user.id).samples.count == 1)
    }
}
