import Foundation
import Testing
import SQLite
@testable import HealthStore
@testable import SQLiteStore

/// Whether a token may learn its own read list: off unless the admin opts in, kept with the authorization.
@Suite struct ReadDisclosureTests {
    static let migration = "010-authorization-read-disclosure"

    @Test func theFlagIsStoredAndSurvivesReopening() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (plain, plainToken) = try t.store.createAuthorization(user: user, app: "phone", read: ["stepCount"], share: [])
        let (viewer, viewerToken) = try t.store.createAuthorization(user: user, app: "dashboard", read: ["stepCount"], share: [],
                                                                    disclosesRead: true)
        #expect(!plain.disclosesRead && viewer.disclosesRead)
        try t.reopen()
        let plainAgain = try #require(try t.store.authorization(tokenHash: TokenHashing.hash(plainToken)))
        let viewerAgain = try #require(try t.store.authorization(tokenHash: TokenHashing.hash(viewerToken)))
        #expect(!plainAgain.disclosesRead)
        #expect(viewerAgain.disclosesRead && viewerAgain.read == ["stepCount"])
        // Server-side writers reuse an authorization with the flag it was stored with.
        let reused = try t.store.appAuthorizationCreatingIfNeeded(user: user, app: "dashboard", read: ["stepCount"], share: [])
        #expect(reused.id == viewer.id && reused.disclosesRead)
    }

    /// A database written by the build before the flag existed opens with every authorization kept
    /// and none of them disclosing its read list.
    @Test func anExistingDatabaseIsCarriedForward() throws {
        let directory = NSTemporaryDirectory() + "healthd-disclosure-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let older = Schema.migrator().registered(before: Self.migration)
        #expect(Schema.migrator().registeredNames.contains(Self.migration))
        #expect(!older.registeredNames.contains(Self.migration) && older.registeredNames.contains("001-users-authorizations-samples"))
        let token = "hdt_written-by-an-older-build"
        let database = try Database(path: directory + "/healthd.sqlite")
        try older.migrate(database)
        try database.execute("""
            INSERT INTO users (id, external_id, name, created_ms) VALUES (1, 'u-1', 'alice', 0);
            INSERT INTO sources (id, user_id, app) VALUES (1, 1, 'phone');
            """)
        try database.execute("""
            INSERT INTO authorizations (id, user_id, app, token_hash, read_types, share_types, created_ms)
            VALUES ('a-1', 1, 'phone', ?, 'heartRate,stepCount', 'stepCount', 0)
            """, [.blob(TokenHashing.hash(token))])
        database.close()

        let store = try SQLiteHealthStore(directory: directory, readers: 1)
        defer { store.close() }
        let carried = try #require(try store.authorization(tokenHash: TokenHashing.hash(token)))
        #expect(carried.id == "a-1" && carried.appName == "phone" && carried.userID == "u-1")
        #expect(carried.read == ["heartRate", "stepCount"] && carried.share == ["stepCount"])
        #expect(!carried.disclosesRead, "an authorization from before the opt-in existed keeps read permission undisclosed")
        let applied = try store.pool.read { db in try db.map("SELECT name FROM schema_migrations ORDER BY id") { try $0.string(at: 0) } }
        #expect(applied == Schema.migrator().registeredNames)
    }
}
