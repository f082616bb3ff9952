import Foundation
import Testing
import HealthModel
import Primitives
import SQLite
@testable import HealthStore
@testable import SQLiteStore

/// The uuid key runs: the pure run operations, and the store's idempotency through them against a
/// model, with keys narrowed so that different uuids share keys all the time.
@Suite struct SampleKeyIndexTests {
    // MARK: Runs

    @Test func runsSortMergeAndRoundTripThroughChunks() throws {
        var random = SplitMix64(seed: 1)
        for round in 0..<20 {
            let count = Int(random.next() % 3_000)
            // Few distinct keys in some rounds: long stretches of one key must stay in one chunk.
            let keyRange: UInt64 = round % 3 == 0 ? 7 : 1 << 32
            // Seqs spanning more than 32 bits in some rounds: the wide chunk format.
            let seqRange: UInt64 = round % 4 == 1 ? 1 << 40 : 1 << 20
            var entries: [(key: UInt32, seq: Int64)] = []
            var seqs = Set<Int64>()
            while entries.count < count {
                let seq = Int64(random.next() % seqRange)
                guard seqs.insert(seq).inserted else { continue }
                entries.append((UInt32(random.next() % keyRange), seq))
            }
            let run = SampleKeyRun(unsorted: entries)
            let expected = entries.sorted { ($0.key, $0.seq) < ($1.key, $1.seq) }
            #expect(run.keys == expected.map(\.key) && run.seqs == expected.map(\.seq))

            let cut = count / 3
            let parts = [SampleKeyRun(unsorted: Array(entries[..<cut])), SampleKeyRun(unsorted: Array(entries[cut..<(2 * cut)])),
                         SampleKeyRun(unsorted: Array(entries[(2 * cut)...])), SampleKeyRun()]
            #expect(SampleKeyRun.merged(parts) == run)

            let chunks = run.chunks(entriesPerChunk: 50)
            var keys: [UInt32] = []
            var decodedSeqs: [Int64]? = []
            for (index, chunk) in chunks.enumerated() {
                #expect(chunk.entries.withUnsafeBytes { SampleKeyRun.decode($0, keys: &keys, seqs: &decodedSeqs) })
                if index > 0 { #expect(chunk.firstKey > chunks[index - 1].firstKey, "one key never straddles two chunks") }
            }
            #expect(keys == run.keys && decodedSeqs == run.seqs)
            // A read by uuid searches one chunk in place: the chunk that would hold the key.
            for key in Array(Set(run.keys).prefix(20)) + [0, UInt32.max, UInt32(random.next() % keyRange)] {
                guard let chunk = chunks.last(where: { $0.firstKey <= key }) else { continue }
                let found = chunk.entries.withUnsafeBytes { SampleKeyRun.seqs(for: key, inChunk: $0) }
                #expect(found == expected.filter { $0.key == key }.map(\.seq))
            }
            for key in Set(run.keys).prefix(20) {
                #expect(Array(run.seqs(for: key)) == expected.filter { $0.key == key }.map(\.seq))
            }
        }
        var keys: [UInt32] = []
        var seqs: [Int64]? = []
        #expect(![UInt8](repeating: 7, count: 30).withUnsafeBytes { SampleKeyRun.decode($0, keys: &keys, seqs: &seqs) },
                "bytes that are not a chunk are refused")
        #expect([UInt8](repeating: 7, count: 30).withUnsafeBytes { SampleKeyRun.seqs(for: 7, inChunk: $0) } == nil)
    }

    @Test func presenceMatchesABruteForceLookup() {
        var random = SplitMix64(seed: 2)
        for round in 0..<50 {
            let held = (0..<Int(random.next() % 2_000)).map { _ in UInt32(random.next() % (round % 2 == 0 ? 500 : 1 << 32)) }.sorted()
            let query = (0..<Int(random.next() % 300)).map { _ in
                random.next() % 2 == 0 && !held.isEmpty ? held[Int(random.next() % UInt64(held.count))] : UInt32(random.next() % 600)
            }.sorted()
            var found: [Int] = []
            SampleKeyFilter.forEachPresent(query, in: held) { found.append($0) }
            let heldSet = Set(held)
            #expect(found == query.indices.filter { heldSet.contains(query[$0]) })
        }
    }

    @Test func levelsGrowByTheFanout() {
        let index = SampleKeyIndex(fanout: 8)
        #expect(index.level(forCount: 1) == 0 && index.level(forCount: 8_191) == 0)
        #expect(index.level(forCount: 8_192) == 1 && index.level(forCount: 65_535) == 1 && index.level(forCount: 65_536) == 2)
    }

    // MARK: The store against a model

    struct Census: Equatable {
        var entries: Int
        var rows: Int
        var deleted: Int
    }

    /// A store whose uuid key compactions run only when a test steps them (`compactUUIDKeysStep`).
    final class KeyedStore {
        var directory = NSTemporaryDirectory() + "healthd-keys-" + UUID().uuidString
        let derivation: SampleKeyDerivation
        let stepChunks: Int
        var store: SQLiteHealthStore

        init(bits: Int, memoryBudget: Int = SampleKeyIndex.defaultMemoryBudget, stepChunks: Int = 8, directory: String? = nil) throws {
            if let directory { self.directory = directory }
            derivation = .narrowed(to: bits)
            self.stepChunks = stepChunks
            store = try SQLiteHealthStore(directory: self.directory, readers: 2, sampleKeys: Self.keys(derivation, memoryBudget, stepChunks))
        }

        static func keys(_ derivation: SampleKeyDerivation, _ memoryBudget: Int, _ stepChunks: Int) -> SampleKeyIndex {
            SampleKeyIndex(derivation: derivation, fanout: 2, memoryBudget: memoryBudget, compactionStepChunks: stepChunks,
                           compactsInBackground: false)
        }

        /// A new store object on the same file: nothing held in memory.
        func reopen(memoryBudget: Int = SampleKeyIndex.defaultMemoryBudget) throws {
            store.close()
            store = try SQLiteHealthStore(directory: directory, readers: 2, sampleKeys: Self.keys(derivation, memoryBudget, stepChunks))
        }

        /// A new store object on the same file without closing the old one, as after `kill -9`:
        /// what was committed is in the write-ahead log, nothing else survives.
        func abandonAndReopen() throws {
            store = try SQLiteHealthStore(directory: directory, readers: 2,
                                    sampleKeys: Self.keys(derivation, SampleKeyIndex.defaultMemoryBudget, stepChunks))
        }

        deinit {
            store.close()
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// The user's entries in the runs, rows, and deleted rows whose entries remain; checks that
        /// the runs hold exactly one entry per row plus one per deleted row whose entry remains,
        /// each listed, and (with no compaction under way) that the list holds those only.
        func census(_ userRowID: Int64) throws -> Census {
            try store.pool.read { db in
                let entries = Int(try db.scalarInt64("SELECT coalesce(sum(count), 0) FROM sample_key_runs WHERE user_id = ?",
                                                     [.integer(userRowID)]) ?? -1)
                let deleted = try store.sampleKeys.deletedEntries(userRowID: userRowID, db: db)
                var seqs: [Int64] = []
                for run in try store.sampleKeys.runs(userRowID: userRowID, db: db) {
                    let stored = try store.sampleKeys.readRun(run.id, db: db, withSeqs: true)
                    #expect(stored.count == run.count, "a run's count is its entries'")
                    seqs += stored.seqs
                }
                var rows = Set<Int64>()
                try db.cachedStatement("SELECT seq FROM samples WHERE user_id = \(userRowID)").forEachRow { rows.insert(try $0.int64(at: 0)) }
                var listed = Set<Int64>()
                try db.cachedStatement("SELECT seq FROM sample_key_deletions WHERE user_id = \(userRowID)")
                    .forEachRow { listed.insert(try $0.int64(at: 0)) }
                let inRuns = Set(seqs)
                #expect(inRuns.count == seqs.count, "one entry per row")
                #expect(rows.isSubset(of: inRuns), "every row has its entry")
                let ofDeletedRows = inRuns.subtracting(rows)
                #expect(ofDeletedRows.isSubset(of: listed), "every other entry is of a listed deleted row")
                #expect(ofDeletedRows.count == deleted && entries == rows.count + deleted)
                let compacting = try store.sampleKeys.compaction(userRowID: userRowID, db: db) != nil
                if !compacting { #expect(listed.count == deleted, "with no compaction under way the list holds only rows with entries") }
                return Census(entries: entries, rows: rows.count, deleted: deleted)
            }
        }
    }

    /// Random batches of new samples, identical re-sends, conflicting re-sends, in-batch repeats,
    /// deletes and re-saves of deleted uuids, for two users sharing uuids, with 0 to 6-bit keys (every
    /// lookup meets other uuids under its key) and a fanout of 2 (merges all the time): every save
    /// and read by uuid answers as the model does.
    @Test(arguments: [0, 3, 6, 32])
    func savesReadsAndDeletesByUUIDAgreeWithAModel(bits: Int) throws {
        let t = try KeyedStore(bits: bits, memoryBudget: bits == 3 ? 64 : SampleKeyIndex.defaultMemoryBudget)
        var random = SplitMix64(seed: UInt64(bits) + 10)
        let alice = try t.store.createUser(name: "alice")
        let bob = try t.store.createUser(name: "bob")
        var apps: [AppAuthorization] = []
        for user in [alice, bob] {
            apps.append(try t.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"]).0)
        }
        // Per user: uuid -> the sample stored under it; and uuids deleted.
        var stored: [[HealthUUID: HealthSample]] = [[:], [:]]
        var deleted: [[HealthUUID]] = [[], []]
        var start: Int64 = 1_700_000_000_000
        func fresh() -> HealthSample {
            start += 60_000
            return steps(Double(random.next() % 100), start: start, uuid: .random(using: &random))
        }
        for round in 0..<40 {
            let user = Int(random.next() % 2)
            let app = apps[user]
            let kind = random.next() % 6
            if round % 15 == 14 { try t.reopen(memoryBudget: bits == 3 ? 64 : SampleKeyIndex.defaultMemoryBudget) }
            switch kind {
            case 0, 1, 2:
                // New samples, some of the other user's uuids, some re-sent, some re-saved after deletion, one repeated.
                var batch = (0..<Int(1 + random.next() % 40)).map { _ in fresh() }
                // Dictionaries' order differs between runs: pick from sorted keys, so a seed is one run.
                if let other = stored[1 - user].keys.sorted().first, stored[user][other] == nil {
                    batch.append(steps(1, start: start + 1, uuid: other))
                }
                for uuid in stored[user].keys.sorted().prefix(Int(random.next() % 5)) { batch.append(stored[user][uuid] ?? fresh()) }
                if let again = deleted[user].last, !batch.contains(where: { $0.uuid == again }) {
                    deleted[user].removeLast()
                    batch.append(steps(2, start: start + 2, uuid: again))
                }
                batch.append(batch[0])
                batch.shuffle(using: &random)
                let saved = try t.store.save(batch, by: app)
                #expect(saved == batch.map(\.uuid))
                for sample in batch where stored[user][sample.uuid] == nil { stored[user][sample.uuid] = sample }
            case 3:
                // A re-send with other content: a conflict at its index, nothing of the batch kept.
                guard let uuid = stored[user].keys.sorted().first, let sample = stored[user][uuid] else { continue }
                let newOne = fresh()
                var changed = sample
                changed.content = .quantity((sample.quantity ?? 0) + 1)
                #expect(changed.uuid == uuid)
                let error = try #require(throws: SampleConflict.self) { try t.store.save([newOne, changed], by: app) }
                #expect(error.index == 1 && error.uuid == uuid)
                #expect(try t.store.sample(newOne.uuid, for: app, userExternalID: "") == nil)
            case 4:
                // Delete one stored sample; deleting it again is not found.
                let uuids = stored[user].keys.sorted()
                guard !uuids.isEmpty else { continue }
                let uuid = uuids[Int(random.next() % UInt64(uuids.count))]
                try t.store.deleteSample(uuid, by: app)
                stored[user][uuid] = nil
                deleted[user].append(uuid)
                #expect(throws: StoreError.self) { try t.store.deleteSample(uuid, by: app) }
            default:
                // Unknown uuids are not found; nothing is found under another user.
                let unknown = HealthUUID.random(using: &random)
                #expect(try t.store.sample(unknown, for: app, userExternalID: "") == nil)
            }
            // A compaction under way advances a step or two between requests, as in the background.
            for _ in 0..<2 { try t.store.compactUUIDKeysStep() }
            // Uuids either user ever used read back as the model says: a sample of them after each
            // round, all of them after the last.
            let known = Set(stored[0].keys).union(stored[1].keys).union(deleted[0]).union(deleted[1]).sorted()
            let checked = round == 39 ? known : (0..<min(30, known.count)).map { _ in known[Int(random.next() % UInt64(known.count))] }
            for (index, app) in apps.enumerated() {
                for uuid in checked {
                    let read = try t.store.sample(uuid, for: app, userExternalID: "")?.sample
                    #expect(read == stored[index][uuid], "user \(index), uuid \(uuid.lowercasedString), round \(round)")
                }
                var query = SampleQuery(type: "stepCount")
                query.limit = 10_000
                #expect(try t.store.samples(query, for: app, userExternalID: "").samples.count == stored[index].count)
                let census = try t.census(app.userRowID)
                #expect(census.rows == stored[index].count)
                if try !t.store.uuidKeyCompactionPending() { #expect(census.entries <= 2 * census.rows) }
            }
        }
        // The runs hold one entry per row ever inserted, merged into few runs.
        let runs = try t.store.pool.read { db in try t.store.sampleKeys.runs(userRowID: apps[0].userRowID, db: db) }
        #expect(runs.count <= 2 * 8, "a fanout of 2 keeps at most one run per level")
    }

    /// Deletes leave the runs: merges drop the entries of deleted rows, and once most of a user's
    /// entries are of deleted rows a compaction drops them all, after the delete. Through saves,
    /// deletes by uuid and by range, the runs hold the rows plus the listed deletions, at most twice
    /// the rows; deleted uuids read as absent and save again; a re-send of a live one stores nothing.
    @Test func deletedSamplesLeaveTheRuns() throws {
        let t = try KeyedStore(bits: 32)
        var random = SplitMix64(seed: 21)
        let alice = try t.store.createUser(name: "alice")
        let app = try t.store.createAuthorization(user: alice, app: "phone", read: ["stepCount"], share: ["stepCount"]).0
        var live: [HealthUUID: HealthSample] = [:]
        var deleted: [HealthSample] = []
        var start: Int64 = 1_700_000_000_000
        func batch(_ count: Int) throws {
            let samples = (0..<count).map { _ in
                start += 60_000
                return steps(Double(random.next() % 100), start: start, uuid: .random(using: &random))
            }
            #expect(try t.store.save(samples, by: app) == samples.map(\.uuid))
            for sample in samples { live[sample.uuid] = sample }
        }
        // 800 samples, then 40 % of them deleted (under the half that compacts at once), two
        // neighbours at a time by range.
        for _ in 0..<16 { try batch(50) }
        let ordered = live.values.sorted { $0.start < $1.start }
        for index in stride(from: 0, to: ordered.count, by: 5) {
            #expect(try t.store.deleteSamples(type: "stepCount", start: ordered[index].start, end: ordered[index].start + 120_000, by: app) == 2)
            for sample in ordered[index...(index + 1)] {
                live[sample.uuid] = nil
                deleted.append(sample)
            }
        }
        let afterDeletes = try t.census(app.userRowID)
        #expect(afterDeletes == Census(entries: 800, rows: 480, deleted: 320), "a delete alone rewrites no run")
        // Saves merge runs, and the merges leave the deleted rows' entries out.
        for _ in 0..<16 { try batch(50) }
        let afterSaves = try t.census(app.userRowID)
        #expect(afterSaves.rows == 1_280 && afterSaves.deleted < 320 && afterSaves.entries < 1_600)
        // A range delete of most of what is left: past half, a compaction of the live rows begins,
        // and the delete itself rewrites nothing.
        let cut = ordered[ordered.count - 1].start + 60_000 * 750
        let rewritten = t.store.sampleKeys.entriesRewritten
        #expect(try !t.store.uuidKeyCompactionPending())
        let removed = try t.store.deleteSamples(type: "stepCount", start: 0, end: cut, by: app)
        #expect(t.store.sampleKeys.entriesRewritten == rewritten)
        #expect(try t.store.uuidKeyCompactionPending())
        #expect(try t.store.compactUUIDKeys() > 1)
        let before = live.count
        for (uuid, sample) in live where sample.start < cut {
            live[uuid] = nil
            deleted.append(sample)
        }
        #expect(removed == before - live.count && removed > 640)
        let compacted = try t.census(app.userRowID)
        #expect(compacted == Census(entries: live.count, rows: live.count, deleted: 0))

        // A delete-heavy user: every round saves 10 and deletes 9 of the oldest by uuid; the runs
        // stay within twice the rows.
        for round in 0..<20 {
            try batch(10)
            for sample in live.values.sorted(by: { $0.start < $1.start }).prefix(9) {
                try t.store.deleteSample(sample.uuid, by: app)
                live[sample.uuid] = nil
                deleted.append(sample)
            }
            try t.store.compactUUIDKeys()
            let census = try t.census(app.userRowID)
            #expect(census.rows == live.count && census.entries <= 2 * census.rows, "round \(round)")
        }
        // Deleted uuids are absent, can be deleted no more, and save again; live ones re-send idempotently.
        for sample in deleted.prefix(20) + deleted.suffix(20) {
            #expect(try t.store.sample(sample.uuid, for: app, userExternalID: "") == nil)
            #expect(throws: StoreError.self) { try t.store.deleteSample(sample.uuid, by: app) }
        }
        try t.reopen()
        let again = Array(deleted.suffix(30)) + Array(deleted.prefix(30))
        #expect(try t.store.save(again, by: app) == again.map(\.uuid))
        for sample in again {
            #expect(try t.store.sample(sample.uuid, for: app, userExternalID: "")?.sample == sample)
            live[sample.uuid] = sample
        }
        let resend = live.values.sorted { $0.start < $1.start }
        #expect(try t.store.save(resend, by: app) == resend.map(\.uuid))
        #expect(try t.census(app.userRowID).rows == live.count)
        var changed = again[0]
        changed.content = .quantity(1_000)
        #expect(throws: SampleConflict.self) { try t.store.save([changed], by: app) }
    }

    /// A user with 3,000 samples in a few runs of several chunks each deletes past half of them.
    /// Returns the app, the live samples and the deleted ones.
    static func halfDeletedUser(_ t: KeyedStore, seed: UInt64) throws -> (AppAuthorization, [HealthUUID: HealthSample], [HealthSample]) {
        var random = SplitMix64(seed: seed)
        let user = try t.store.createUser(name: "alice")
        let app = try t.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"]).0
        var live: [HealthUUID: HealthSample] = [:]
        for batch in 0..<30 {
            let samples = (0..<100).map {
                steps(1, start: 1_700_000_000_000 + Int64(batch * 100 + $0) * 60_000, uuid: .random(using: &random))
            }
            _ = try t.store.save(samples, by: app)
            for sample in samples { live[sample.uuid] = sample }
        }
        // 1,400 by range (under half: no compaction), then one at a time by uuid across the line.
        let ordered = live.values.sorted { $0.start < $1.start }
        #expect(try t.store.deleteSamples(type: "stepCount", start: 0, end: ordered[1_400].start, by: app) == 1_400)
        var deleted = Array(ordered[..<1_400])
        #expect(try !t.store.uuidKeyCompactionPending())
        let rewritten = t.store.sampleKeys.entriesRewritten
        for sample in ordered[1_400..<1_510] {
            try t.store.deleteSample(sample.uuid, by: app)
            deleted.append(sample)
        }
        for sample in deleted { live[sample.uuid] = nil }
        #expect(t.store.sampleKeys.entriesRewritten == rewritten, "no delete request rewrote an entry, the one crossing half included")
        #expect(try t.store.uuidKeyCompactionPending())
        return (app, live, deleted)
    }

    /// Every uuid the test knows reads as the model says.
    static func expectLookups(_ t: KeyedStore, _ app: AppAuthorization, live: [HealthUUID: HealthSample], deleted: [HealthSample],
                              _ comment: Comment) throws {
        for sample in live.values { #expect(try t.store.sample(sample.uuid, for: app, userExternalID: "")?.sample == sample, comment) }
        for sample in deleted { #expect(try t.store.sample(sample.uuid, for: app, userExternalID: "") == nil, comment) }
    }

    /// The compaction that past half deleted runs after the deletes, in steps of at most
    /// `compactionStepChunks` chunks each. Between any two steps every uuid reads as the model says,
    /// and saves and deletes go on: re-sends of live samples store nothing, deleted uuids save again,
    /// new deletions stay listed for later; at the end the runs hold one entry per row and the list
    /// only the deletions noted during the compaction. With 10-bit keys, runs hold long stretches of
    /// one key, which never straddle two chunks.
    @Test(arguments: [10, 32])
    func aCompactionRunsInBoundedStepsWhileLookupsStayExact(bits: Int) throws {
        let t = try KeyedStore(bits: bits, stepChunks: 1)
        var (app, live, deleted) = try Self.halfDeletedUser(t, seed: UInt64(bits))
        var random = SplitMix64(seed: 40 + UInt64(bits))
        try Self.expectLookups(t, app, live: live, deleted: deleted, "after the crossing delete")
        var taken = 0
        var rewrittenMost = 0
        var start: Int64 = 1_800_000_000_000
        while true {
            let before = t.store.sampleKeys.entriesRewritten
            guard try t.store.compactUUIDKeysStep() else { break }
            taken += 1
            rewrittenMost = max(rewrittenMost, t.store.sampleKeys.entriesRewritten - before)
            let census = try t.census(app.userRowID)
            #expect(census.rows == live.count)
            if taken % 3 == 0 { try Self.expectLookups(t, app, live: live, deleted: deleted, "after step \(taken)") }
            if taken % 4 == 0 {
                // A save between steps: new samples, re-sends, and deleted uuids saved again.
                var batch = (0..<20).map { _ in
                    start += 60_000
                    return steps(2, start: start, uuid: .random(using: &random))
                }
                batch += live.values.sorted { $0.start < $1.start }.prefix(3)
                let again = deleted.removeLast()
                batch.append(again)
                #expect(try t.store.save(batch, by: app) == batch.map(\.uuid))
                for sample in batch { live[sample.uuid] = sample }
            }
            if taken % 5 == 0, let victim = live.values.sorted(by: { $0.start < $1.start }).last {
                try t.store.deleteSample(victim.uuid, by: app)
                live[victim.uuid] = nil
                deleted.append(victim)
            }
            #expect(taken < 1_000, "a compaction ends")
            if taken >= 1_000 { break }
        }
        #expect(taken > 5, "the compaction took many steps")
        #expect(rewrittenMost <= 2 * SampleKeyRun.chunkEntries, "a step rewrites at most about a chunk's entries")
        try Self.expectLookups(t, app, live: live, deleted: deleted, "after the compaction")
        let census = try t.census(app.userRowID)
        #expect(census.rows == live.count && census.entries <= census.rows + 40, "only deletions noted during it remain")
        // Deleted uuids save again; live ones re-send without a copy.
        #expect(try t.store.save(Array(deleted.prefix(10)), by: app) == deleted.prefix(10).map(\.uuid))
        for sample in deleted.prefix(10) { live[sample.uuid] = sample }
        let resend = live.values.sorted { $0.start < $1.start }
        #expect(try t.store.save(resend, by: app) == resend.map(\.uuid))
        #expect(try t.census(app.userRowID).rows == live.count)
    }

    private struct Crash: Error {}

    /// `kill -9` in the middle of a compaction: a step cut short (its transaction never committed)
    /// and the process gone. The store reopened answers every lookup exactly before any further
    /// step, resumes the compaction where the last committed step left it, and ends it.
    @Test func aCompactionCutShortByACrashResumes() throws {
        let t = try KeyedStore(bits: 32, stepChunks: 2)
        let (app, live, deleted) = try Self.halfDeletedUser(t, seed: 7)
        for _ in 0..<4 { #expect(try t.store.compactUUIDKeysStep()) }
        // A step whose transaction is abandoned after its writes, as a crash before COMMIT.
        #expect(throws: Crash.self) {
            try t.store.pool.write { db in
                #expect(try t.store.sampleKeys.compactionStep(db: db))
                throw Crash()
            }
        }
        let cursor = { () throws -> [SQLValue] in
            try t.store.pool.read { db in
                try db.first("SELECT run_id, next_key, after_seq FROM sample_key_compactions", []) { row in
                    [row.value(at: 0), row.value(at: 1), row.value(at: 2)]
                } ?? []
            }
        }
        let committed = try cursor()
        #expect(!committed.isEmpty)
        try t.abandonAndReopen()
        #expect(try cursor() == committed, "the cursor of the last committed step")
        _ = try t.census(app.userRowID)
        try Self.expectLookups(t, app, live: live, deleted: deleted, "after the crash")
        #expect(try t.store.compactUUIDKeys() > 0)
        // The 1,501st deletion crossed half of 3,000 entries: the 9 after it wait for the next one.
        #expect(try t.census(app.userRowID) == Census(entries: live.count + 9, rows: live.count, deleted: 9))
        try Self.expectLookups(t, app, live: live, deleted: deleted, "after the compaction")
    }

    /// With background compaction on (the default), the store runs the compaction by itself after
    /// the delete that called for it, and starts one left from before a restart when it opens.
    @Test func theStoreRunsCompactionsByItself() throws {
        let directory = NSTemporaryDirectory() + "healthd-keys-background-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let t = try KeyedStore(bits: 32, directory: directory)
        let (app, live, deleted) = try Self.halfDeletedUser(t, seed: 8)
        #expect(try t.store.compactUUIDKeysStep())
        t.store.close()
        func waitForCompaction(_ store: SQLiteHealthStore) throws {
            let deadline = Date().addingTimeInterval(60)
            while try store.uuidKeyCompactionPending(), Date() < deadline { usleep(5_000) }
            #expect(try !store.uuidKeyCompactionPending())
        }
        // Reopened with compaction in the background: it resumes at once.
        var store = try SQLiteHealthStore(directory: directory, readers: 2)
        try waitForCompaction(store)
        #expect(store.uuidKeyCompactionFigures.steps > 0)
        // And a delete past half again starts the next one.
        let ordered = live.values.sorted { $0.start < $1.start }
        #expect(try store.deleteSamples(type: "stepCount", start: 0, end: ordered[ordered.count * 3 / 4].start, by: app) > 0)
        try waitForCompaction(store)
        var query = SampleQuery(type: "stepCount")
        query.limit = 10_000
        let remaining = try store.samples(query, for: app, userExternalID: "").samples.map(\.sample)
        #expect(remaining.count == ordered.count - ordered.count * 3 / 4)
        store.close()
        store = try SQLiteHealthStore(directory: directory, readers: 2)
        defer { store.close() }
        for sample in remaining.prefix(50) { #expect(try store.sample(sample.uuid, for: app, userExternalID: "")?.sample == sample) }
        for sample in deleted.prefix(50) { #expect(try store.sample(sample.uuid, for: app, userExternalID: "") == nil) }
        let counts = try store.uuidKeyRunCounts(userRowID: app.userRowID)
        #expect(counts.entries == remaining.count)
    }

    /// A read by uuid with no run held (after a restart, before the user's next save) probes the
    /// largest run first: a uuid there costs one chunk read, not one per newer run.
    @Test func aReadByUUIDProbesTheLargestRunFirst() throws {
        let directory = NSTemporaryDirectory() + "healthd-keys-probes-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var store = try SQLiteHealthStore(directory: directory, readers: 1, sampleKeys: SampleKeyIndex(fanout: 8))
        let user = try store.createUser(name: "alice")
        let app = try store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"]).0
        var random = SplitMix64(seed: 23)
        let old = (0..<500).map { steps(1, start: 1_700_000_000_000 + Int64($0) * 60_000, uuid: .random(using: &random)) }
        _ = try store.save(old, by: app)
        for batch in 0..<5 {
            _ = try store.save((0..<10).map { steps(1, start: 1_800_000_000_000 + Int64(batch * 10 + $0) * 60_000) }, by: app)
        }
        store.close()
        store = try SQLiteHealthStore(directory: directory, readers: 1, sampleKeys: SampleKeyIndex(fanout: 8))
        defer { store.close() }
        #expect(try store.pool.read { db in try store.sampleKeys.runs(userRowID: user.rowID, db: db) }.count == 6)
        for sample in old.prefix(50) {
            let before = store.sampleKeys.chunkReads
            #expect(try store.sample(sample.uuid, for: app, userExternalID: "")?.sample == sample)
            #expect(store.sampleKeys.chunkReads - before == 1)
        }
        let before = store.sampleKeys.chunkReads
        #expect(try store.sample(.random(using: &random), for: app, userExternalID: "") == nil)
        #expect(store.sampleKeys.chunkReads - before == 6, "an unknown uuid is looked for in every run")
    }

    /// The keys held in memory never exceed the budget: runs past it are dropped, least recently
    /// used first, and a run larger than the whole budget is not held; saves stay exact meanwhile.
    @Test func heldKeysStayWithinTheMemoryBudget() throws {
        let budget = 4_096  // 1,024 keys
        let t = try KeyedStore(bits: 32, memoryBudget: budget)
        #expect(t.store.sampleKeys.memoryBudget == budget)
        var random = SplitMix64(seed: 22)
        var start: Int64 = 1_700_000_000_000
        var users: [(AppAuthorization, [HealthSample])] = []
        for name in ["a", "b", "c"] {
            let user = try t.store.createUser(name: name)
            users.append((try t.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"]).0, []))
        }
        var peak = 0
        for round in 0..<60 {
            let user = round % 3
            let count = round % 10 == 9 ? 1_500 : Int(1 + random.next() % 200)  // some batches alone exceed the budget
            let samples = (0..<count).map { _ in
                start += 1_000
                return steps(1, start: start, seconds: 1, uuid: .random(using: &random))
            }
            let resent = Array(users[user].1.suffix(5))
            #expect(try t.store.save(samples + resent, by: users[user].0) == (samples + resent).map(\.uuid))
            users[user].1 += samples
            peak = max(peak, t.store.sampleKeys.heldBytes)
            #expect(t.store.sampleKeys.heldBytes <= budget, "round \(round)")
        }
        #expect(peak > budget / 2, "the budget is used")
        for (app, samples) in users {
            var query = SampleQuery(type: "stepCount")
            query.limit = 10_000
            #expect(try t.store.samples(query, for: app, userExternalID: "").samples.count == samples.count, "nothing stored twice")
        }
        // The public initializer passes the budget on.
        let directory = NSTemporaryDirectory() + "healthd-keys-budget-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configured = try SQLiteHealthStore(directory: directory, readers: 1, uuidKeyMemoryBudget: 3 << 20)
        #expect(configured.sampleKeys.memoryBudget == 3 << 20)
        configured.close()
    }

    /// A new data directory whose database has every migration before `migration`.
    static func database(before migration: String) throws -> (directory: String, database: Database) {
        let directory = NSTemporaryDirectory() + "healthd-keys-migration-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let older = Schema.migrator().registered(before: migration)
        #expect(Schema.migrator().registeredNames.contains(migration) && !older.registeredNames.contains(migration))
        let database = try Database(path: directory + "/healthd.sqlite")
        try older.migrate(database)
        return (directory, database)
    }

    /// Runs written before deleted rows were tracked hold every deleted row's entry: the migration
    /// rebuilds them from the rows.
    @Test func theMigrationDropsEntriesOfRowsDeletedBefore() throws {
        let (directory, database) = try Self.database(before: "015-sample-key-deletions")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try database.execute("""
            INSERT INTO users (id, external_id, name, created_ms) VALUES (1, 'u-1', 'alice', 0);
            INSERT INTO sources (id, user_id, app) VALUES (1, 1, 'phone');
            INSERT INTO type_codes (id, name) VALUES (1, 'stepCount');
            """)
        var random = SplitMix64(seed: 4)
        try database.transaction(.immediate) {
            for seq in 1...1_000 {
                try database.execute("""
                    INSERT INTO samples (seq, user_id, uuid, type_id, source_id, start_ms, end_ms, value, created_ms)
                    VALUES (?, 1, ?, 1, 1, ?, ?, 5, 0)
                    """, [.integer(Int64(seq)), .blob(HealthUUID.random(using: &random).bytes),
                          .integer(1_700_000_000_000 + Int64(seq) * 60_000), .integer(1_700_000_060_000 + Int64(seq) * 60_000)])
            }
            try database.execute("INSERT INTO meta (key, value) VALUES ('seq', 1000)")
            try SampleKeyIndex().rebuildAll(database)
            // The earlier delete: rows gone, entries kept.
            try database.execute("DELETE FROM samples WHERE seq % 3 = 0")
        }
        #expect(try database.scalarInt64("SELECT sum(count) FROM sample_key_runs") == 1_000)
        database.close()

        let t = try KeyedStore(bits: 32, directory: directory)
        #expect(try t.census(1) == Census(entries: 667, rows: 667, deleted: 0))
    }

    /// A database written by the schema with the unique (user, uuid) index: the migration builds the
    /// runs from its rows, and saves, reads and deletes by uuid work on them.
    @Test func anExistingDatabaseGetsRunsFromItsRows() throws {
        let (directory, database) = try Self.database(before: "014-sample-key-runs")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try database.scalarInt64("SELECT count(*) FROM sqlite_schema WHERE name = 'samples_by_uuid'") == 1)
        try database.execute("""
            INSERT INTO users (id, external_id, name, created_ms) VALUES (1, 'u-1', 'alice', 0), (2, 'u-2', 'bob', 0);
            INSERT INTO sources (id, user_id, app) VALUES (1, 1, 'phone'), (2, 2, 'phone');
            INSERT INTO type_codes (id, name) VALUES (1, 'stepCount');
            """)
        var random = SplitMix64(seed: 3)
        var uuids: [HealthUUID] = []
        try database.transaction(.immediate) {
            for seq in 1...3_000 {
                let uuid = HealthUUID.random(using: &random)
                uuids.append(uuid)
                try database.execute("""
                    INSERT INTO samples (seq, user_id, uuid, type_id, source_id, start_ms, end_ms, value, created_ms)
                    VALUES (?, ?, ?, 1, ?, ?, ?, 5, 0)
                    """, [.integer(Int64(seq)), .integer(Int64(seq % 2 + 1)), .blob(uuid.bytes), .integer(Int64(seq % 2 + 1)),
                          .integer(1_700_000_000_000 + Int64(seq) * 60_000), .integer(1_700_000_060_000 + Int64(seq) * 60_000)])
            }
            try database.execute("INSERT INTO meta (key, value) VALUES ('seq', 3000)")
        }
        database.close()

        let store = try SQLiteHealthStore(directory: directory, readers: 1)
        defer { store.close() }
        let (indexes, entries) = try store.pool.read { db in
            (try db.scalarInt64("SELECT count(*) FROM sqlite_schema WHERE name = 'samples_by_uuid'"),
             try db.scalarInt64("SELECT sum(count) FROM sample_key_runs"))
        }
        #expect(indexes == 0 && entries == 3_000)
        let alice = try #require(try store.user(named: "alice"))
        let app = try store.createAuthorization(user: alice, app: "phone", read: ["stepCount"], share: ["stepCount"]).0
        // seq 2, 4, ... are alice's (user 1); the odd ones bob's, invisible to her.
        for (offset, uuid) in uuids.enumerated() {
            let seq = offset + 1
            #expect((try store.sample(uuid, for: app, userExternalID: "u-1") != nil) == (seq % 2 == 0))
        }
        // A re-send of a migrated sample is idempotent; other content conflicts; delete works.
        let mine = try #require(try store.sample(uuids[1], for: app, userExternalID: "u-1")).sample
        #expect(try store.save([mine], by: app) == [mine.uuid])
        var changed = mine
        changed.content = .quantity(6)
        #expect(throws: SampleConflict.self) { try store.save([changed], by: app) }
        try store.deleteSample(mine.uuid, by: app)
        #expect(try store.sample(mine.uuid, for: app, userExternalID: "u-1") == nil)
        #expect(try store.save([changed], by: app) == [mine.uuid], "a deleted uuid can be saved again")
        #expect(try store.sample(mine.uuid, for: app, userExternalID: "u-1")?.sample.quantity == 6)
    }
}
