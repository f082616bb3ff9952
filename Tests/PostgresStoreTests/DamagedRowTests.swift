import HealthModel
import HealthStore
import PostgreSQL
import PostgresStore
import PostgresTestSupport
import Statistics
import Testing

/// A damaged JSON body in a row is a `RowDecodingError` naming table and column, on both
/// backends: never a category sample without its value, nor a source order silently dropped
/// (which would change how overlapping sources merge). SQLite's cases are in CorruptRowTests.
@Suite(.enabled(if: TestPostgres.isAvailable, "set HEALTHD_TEST_POSTGRES_URL to run the PostgreSQL store's tests"))
struct PostgresDamagedRowTests {
    private static let start: Int64 = 1_700_000_000_000

    @Test func damagedCategoryBodyIsAnError() throws {
        let t = try TestStore(.postgres)
        let user = try t.store.createUser(name: "alice")
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: ["sleepAnalysis"], share: ["sleepAnalysis"])
        let sleep = HealthSample(uuid: .random(), type: "sleepAnalysis", start: Self.start, end: Self.start + 3_600_000,
                                 content: .category("asleepCore"))
        _ = try t.store.save([sleep], by: app)
        _ = try t.postgres { try $0.execute("UPDATE samples SET body = '\\x7b2263223a'::bytea", []) }
        #expect(throws: RowDecodingError(table: "samples", column: "body", problem: "is not a JSON object")) {
            try t.store.sample(sleep.uuid, for: app, userExternalID: user.id)
        }
        #expect(throws: RowDecodingError.self) { try t.store.samples(SampleQuery(type: "sleepAnalysis"), for: app, userExternalID: user.id) }
    }

    /// The decoder SQLite's CorruptRowTests reads the same damage through (`StoredRows.swift`).
    @Test func unknownRequestStateIsAnError() throws {
        let t = try TestStore(.postgres)
        let record = AuthorizationRequestRecord(id: "r1", userCode: "BCDFGHJK", app: "runner", displayName: "Runner", reason: "",
                                                share: ["stepCount"], read: [], created: Self.start, interval: 5)
        #expect(try t.store.createAuthorizationRequest(record, deviceCodeHash: Array(repeating: 7, count: 32)))
        _ = try t.postgres { try $0.execute("UPDATE authorization_requests SET state = 'granted'", []) }
        #expect(throws: RowDecodingError(table: "authorization_requests", column: "state", problem: "is 'granted', not a request state")) {
            try t.store.authorizationRequest(userCode: "BCDFGHJK")
        }
        // A NULL where the row promises a value names its column through PostgreSQL's getters too.
        _ = try t.postgres { try $0.execute("ALTER TABLE authorization_requests ALTER COLUMN reason DROP NOT NULL", []) }
        _ = try t.postgres { try $0.execute("UPDATE authorization_requests SET state = 'pending', reason = NULL", []) }
        #expect(throws: RowDecodingError(table: "authorization_requests", column: "reason", problem: "is NULL")) {
            try t.store.authorizationRequest(userCode: "BCDFGHJK")
        }
    }

    @Test func damagedPriorityListIsAnError() throws {
        let t = try TestStore(.postgres)
        let user = try t.store.createUser(name: "alice")
        let stepType = try #require(HealthTypeCatalog.type("stepCount"))
        for name in ["phone", "watch"] {
            let (app, _) = try t.store.createAuthorization(user: user, app: name, read: ["stepCount"], share: ["stepCount"])
            _ = try t.store.save([steps(10, start: Self.start)], by: app)
        }
        try t.store.setSourcePriority(userRowID: user.rowID, type: stepType, apps: ["watch", "phone"])
        let expected = RowDecodingError(table: "source_priorities", column: "apps", problem: "is not a JSON array of app names")
        for damaged in ["not json", "{\"watch\": 1}"] {
            _ = try t.postgres { try $0.execute("UPDATE source_priorities SET apps = $1", [.text(damaged)]) }
            #expect(throws: expected) { try t.store.sourcePriority(userRowID: user.rowID, type: stepType) }
            // A node without the series in memory reads the order with the day rows.
            let bucket = CalendarBucket(start: Self.start, end: Self.start + 86_400_000, startOffsetSeconds: 0, endOffsetSeconds: 0)
            #expect(throws: expected) {
                try t.secondNode().statistics(userRowID: user.rowID, type: stepType, buckets: [bucket], options: .cumulativeSum)
            }
        }
    }
}
