import Foundation
import HealthModel
import HealthStore
import PostgreSQL
@testable import PostgresStore
import PostgresTestSupport
import Statistics
import Testing

/// The read path's shortcuts against the reads they stand for: the one statement a series not in
/// memory is read with equals the per-part reads of a REPEATABLE READ snapshot, and the background
/// confirmation of cached tokens keeps the revocation bound.
@Suite(.enabled(if: TestPostgres.isAvailable, "set HEALTHD_TEST_POSTGRES_URL to run the PostgreSQL store's tests"))
struct PostgresReadPathTests {
    /// Random data of three sources (a chosen order after a while), then every bucket set of the
    /// statistics tests, for both styles: `SeriesStatement` reads what `Snapshot` reads, part by part,
    /// and refuses (`SnapshotNeeded`) anything past what it was asked for.
    @Test(arguments: 1...3)
    func oneStatementReadsWhatTheSnapshotReads(seed: Int) throws {
        let schema = try TestSchema.migratedToStore()
        let connection = try schema.connect()
        defer { connection.close() }
        try RollupTestWriter.prepare(connection, sources: 3)
        var random = SplitMix(seed: UInt64(seed) &* 104_729)
        let user = RollupTestWriter.user
        for round in 0..<3 {
            for (typeCode, style) in RollupTestWriter.styles {
                _ = try RollupTestWriter.save(PostgresStatisticsTests.randomSamples(&random, count: 40, style: style),
                                              typeCode: typeCode, on: connection)
            }
            if round == 1 { try RollupTestWriter.setPriority([3, 1], on: connection) }
        }
        // A series nothing was written to reads as version 0 with no rows.
        let types = Array(RollupTestWriter.styles) + [(Int64(99), AggregationStyle.discrete)]
        for buckets in try PostgresStatisticsTests.bucketSets() {
            for (typeCode, style) in types {
                let request = PostgresRollups.SeriesRequest(buckets: buckets, style: style)
                let statement = try PostgresRollups.SeriesStatement(connection: connection, userRowID: user, typeCode: typeCode,
                                                                     request: request)
                try connection.transaction(.repeatableRead, readOnly: true) { connection in
                    let snapshot = PostgresRollups.Snapshot(connection: connection, userRowID: user, typeCode: typeCode)
                    #expect(try statement.rollupVersion() == snapshot.rollupVersion())
                    #expect(try statement.sourcePriority() == snapshot.sourcePriority())
                    #expect(try statement.appNames() == snapshot.appNames())
                    let rows = try statement.rollupRows(days: request.days, detailDays: request.detailDays)
                    let expected = try snapshot.rollupRows(days: request.days, detailDays: request.detailDays)
                    #expect(rows.map(\.day) == expected.map(\.day))
                    #expect(rows.map(\.body) == expected.map(\.body))
                    #expect(rows.map(\.detail) == expected.map(\.detail))
                    for range in request.slots {
                        let samples = try statement.statisticsSamples(from: range.lowerBound, to: range.upperBound)
                        let direct = try snapshot.statisticsSamples(from: range.lowerBound, to: range.upperBound)
                        #expect(samples.sorted { $0.id < $1.id } == direct.sorted { $0.id < $1.id })
                    }
                }
                if typeCode != 99, style == .cumulative {
                    #expect(try !statement.rollupRows(days: request.days, detailDays: request.detailDays).isEmpty)
                }
                #expect(throws: PostgresRollups.VersionProbe.SnapshotNeeded.self) {
                    try statement.rollupRows(days: request.days.lowerBound...(request.days.upperBound + 1), detailDays: [])
                }
                #expect(throws: PostgresRollups.VersionProbe.SnapshotNeeded.self) {
                    try statement.statisticsSamples(from: request.days.lowerBound * DayRollup.dayLength,
                                                    to: (request.days.lowerBound + 1) * DayRollup.dayLength)
                }
            }
        }
    }

    /// A token in use is confirmed in the background, so its entry stays younger than the bound
    /// without a request reading it; one revoked without a notification reaching this node (the
    /// row changed behind its back) is dropped by the next round; one unused for the refresh
    /// window is forgotten.
    @Test func cachedTokensAreConfirmedInBulkAndRevocationsStillTakeEffect() throws {
        let t = try TestStore(.postgres)
        let node = try t.secondNode()
        let user = try t.store.createUser(name: "alice")
        let (kept, keptToken) = try t.store.createAuthorization(user: user, app: "phone", read: [], share: [])
        let (revoked, revokedToken) = try t.store.createAuthorization(user: user, app: "watch", read: [], share: [])
        let keptHash = TokenHashing.hash(keptToken)
        let revokedHash = TokenHashing.hash(revokedToken)
        #expect(try node.authorization(tokenHash: keptHash) == kept)
        #expect(try node.authorization(tokenHash: revokedHash) == revoked)
        let readAt = try #require(node.authorizationCache.withLock { $0.entries[keptHash]?.readAt })
        _ = try t.postgres { connection in
            try connection.execute("UPDATE authorizations SET revoked_ms = 1 WHERE id = $1", [.text(revoked.id)])
        }
        usleep(20_000)
        try node.refreshCachedAuthorizations()
        #expect(try #require(node.authorizationCache.withLock { $0.entries[keptHash]?.readAt }) > readAt)
        #expect(node.cachedAuthorization(tokenHash: keptHash) == kept)
        #expect(node.cachedAuthorization(tokenHash: revokedHash) == nil)
        #expect(try node.authorization(tokenHash: revokedHash) == nil)
        // Unused for longer than the window: forgotten, and read again when it comes back.
        node.authorizationCache.withLock { $0.entries[keptHash]?.usedAt -= PostgresHealthStore.authorizationRefreshWindow }
        try node.refreshCachedAuthorizations()
        #expect(node.cachedAuthorization(tokenHash: keptHash) == nil)
        #expect(try node.authorization(tokenHash: keptHash) == kept)
    }
}
