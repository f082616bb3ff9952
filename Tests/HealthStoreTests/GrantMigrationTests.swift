import Foundation
import HealthStore
import SQLite
import SQLiteStore
import Testing

/// `011-people-grants` carries an existing database forward: each (user, app)'s live tokens become
/// one grant, the union of what they could read and share, and every token follows it.
@Suite struct GrantMigrationTests {
    @Test func existingTokensBecomeGrants() throws {
        let t = try TemporaryStore()
        let alice = try t.store.createUser(name: "alice")
        let (_, first) = try t.store.createAuthorization(user: alice, app: "runner", read: ["stepCount"], share: ["stepCount"])
        let (_, second) = try t.store.createAuthorization(user: alice, app: "runner", read: ["heartRate"], share: [])
        let gone = try t.store.createAuthorization(user: alice, app: "gone", read: ["bodyMass"], share: []).authorization
        #expect(try t.store.revokeAuthorization(id: gone.id))
        t.store.close()
        // Back to the schema before the migration, each token with its own lists as it had them.
        let database = try Database(path: t.directory + "/healthd.sqlite")
        let id = try #require(try database.first("SELECT id FROM schema_migrations WHERE name = '011-people-grants'", [], { try $0.int64(at: 0) }))
        for migration in StatisticsRollupTests.laterMigrations.drop(while: { $0.name != "011-people-grants" }).reversed() {
            try database.execute(migration.undo)
        }
        try database.execute("""
            UPDATE authorizations SET read_types = 'heartRate', share_types = '' WHERE id IN
                (SELECT id FROM authorizations WHERE app = 'runner' ORDER BY created_ms DESC, rowid DESC LIMIT 1);
            DELETE FROM schema_migrations WHERE id >= \(id); PRAGMA user_version = \(id - 1);
            """)
        database.close()
        try t.reopen()
        let grants = try t.store.appGrants(userRowID: alice.rowID)
        #expect(grants.map(\.app) == ["runner"])
        #expect(grants.first?.read == ["stepCount", "heartRate"] && grants.first?.share == ["stepCount"])
        #expect(grants.first?.decidedRead == ["stepCount", "heartRate"] && grants.first?.decidedShare == ["stepCount"])
        for token in [first, second] {
            let found = try #require(try t.store.authorization(tokenHash: TokenHashing.hash(token)))
            #expect(found.read == ["stepCount", "heartRate"] && found.share == ["stepCount"])
        }
    }
}
