import Foundation
import Testing
import HealthModel
import Statistics
@testable import HealthStore
@testable import SQLiteStore

/// The store's readers for a token (`HealthDataStore` extension): read privacy is applied there,
/// so these answers are what every route serves. A token without read permission for a type sees
/// its own data of that type and nothing of other apps'; one with permission sees everyone's.
@Suite struct ScopedReadTests {
    static let day0: Int64 = 1_772_928_000_000  // 2026-03-08T00:00:00Z

    struct World {
        let t: TemporaryStore
        let user: User
        let reader: AppAuthorization
        let stranger: AppAuthorization

        init() throws {
            t = try TemporaryStore()
            user = try t.store.createUser(name: "alice")
            let types: Set<String> = ["stepCount", "distanceWalkingRunning", "dateOfBirth"]
            let (owner, _) = try t.store.createAuthorization(user: user, app: "owner", read: types, share: types)
            (reader, _) = try t.store.createAuthorization(user: user, app: "reader", read: types, share: [])
            (stranger, _) = try t.store.createAuthorization(user: user, app: "stranger", read: [],
                                                            share: ["stepCount", "distanceWalkingRunning"])
            _ = try t.store.save([steps(4321, start: ScopedReadTests.day0 + 3_600_000),
                                  distance(9876.5, start: ScopedReadTests.day0 + 3_600_000)], by: owner)
            _ = try t.store.save([steps(55, start: ScopedReadTests.day0 + 7_200_000),
                                  distance(33.5, start: ScopedReadTests.day0 + 9_000_000)], by: stranger)
            try t.store.replaceCharacteristics(userRowID: user.rowID, [("dateOfBirth", "1961-07-04"), ("bloodType", "A+")])
        }
    }

    static func distance(_ metres: Double, start: Int64) -> HealthSample {
        HealthSample(uuid: .random(), type: "distanceWalkingRunning", start: start, end: start + 600_000, content: .quantity(metres))
    }

    static let wholeDay = [CalendarBucket(start: day0, end: day0 + 86_400_000, startOffsetSeconds: 0, endOffsetSeconds: 0)]

    @Test func statisticsAreTheTokensOwnWithoutReadPermission() throws {
        let w = try World()
        let type = try #require(HealthTypeCatalog.type("stepCount"))
        let everyone = try w.t.store.statistics(type, buckets: Self.wholeDay, options: [.cumulativeSum, .separateBySource], for: w.reader)
        #expect(everyone.first?.figures.sum == 4376)
        #expect(Set(everyone.first?.sources.map(\.app) ?? []) == ["owner", "stranger"])
        let own = try w.t.store.statistics(type, buckets: Self.wholeDay, options: [.cumulativeSum, .separateBySource], for: w.stranger)
        #expect(own.first?.figures.sum == 55)
        #expect(own.first?.sources.map(\.app) == ["stranger"])
        // Without the split asked for, no per-source list leaks out either.
        let merged = try w.t.store.statistics(type, buckets: Self.wholeDay, options: .cumulativeSum, for: w.stranger)
        #expect(merged.first?.figures.sum == 55 && merged.first?.sources.isEmpty == true)
    }

    @Test func sourcePriorityNamesOnlyItselfWithoutReadPermission() throws {
        let w = try World()
        let type = try #require(HealthTypeCatalog.type("stepCount"))
        #expect(Set(try w.t.store.sourcePriority(type: type, for: w.reader)).isSuperset(of: ["owner", "stranger"]))
        #expect(try w.t.store.sourcePriority(type: type, for: w.stranger) == ["stranger"])
    }

    @Test func characteristicsAreThoseTheTokenMayRead() throws {
        let w = try World()
        #expect(try w.t.store.characteristics(for: w.reader).map(\.0) == ["dateOfBirth"])
        #expect(try w.t.store.characteristics(for: w.stranger).isEmpty)
        #expect(try w.t.store.characteristics(userRowID: w.user.rowID).count == 2)
    }

    @Test func coveredDurationCountsOnlyVisibleSamples() throws {
        let w = try World()
        let type = try #require(HealthTypeCatalog.type("distanceWalkingRunning"))
        let (start, end) = (Self.day0, Self.day0 + 86_400_000)
        #expect(try w.t.store.coveredDuration(type: type, start: start, end: end, for: w.reader) == 1_200_000)
        #expect(try w.t.store.coveredDuration(type: type, start: start, end: end, for: w.stranger) == 600_000)
    }

    @Test func exportPagesFollowTheScope() throws {
        let w = try World()
        let values = { (scope: ReadScope) throws -> [Double] in
            try w.t.store.exportPage(type: "stepCount", scope: scope, after: nil, limit: 10).compactMap { $0.sample.sample.quantity }
        }
        #expect(try values(.app(w.reader)) == [4321, 55])
        #expect(try values(.app(w.stranger)) == [55])
        #expect(try values(.wholeUser(w.user)) == [4321, 55])
    }
}
