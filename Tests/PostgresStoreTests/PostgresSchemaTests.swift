import Foundation
@testable import PostgresStore
import Testing

/// The schema's promises to a Citus cluster, checked on its text (no database needed): every
/// table is either a listed reference table or distributed on `user_id` with every key starting
/// with it, and nothing needs a cluster-wide sequence.
@Suite struct PostgresSchemaTests {
    /// (table name, its column and constraint list) for every CREATE TABLE of every migration.
    static var tables: [(name: String, body: String)] {
        var found: [(String, String)] = []
        for migration in PostgresSchema.migrations {
            var rest = Substring(migration.sql)
            while let start = rest.range(of: "CREATE TABLE ") {
                rest = rest[start.upperBound...]
                guard let open = rest.firstIndex(of: "("), let close = rest.range(of: "\n);") else { break }
                found.append((rest[..<open].trimmingCharacters(in: .whitespaces), String(rest[open..<close.lowerBound])))
                rest = rest[close.upperBound...]
            }
        }
        return found
    }

    @Test func everyTableIsReferenceOrDistributedByUser() {
        let names = Self.tables.map(\.name)
        #expect(Set(names) == Set(PostgresSchema.referenceTables + PostgresSchema.distributedTables))
        #expect(names.count == Set(names).count)
        #expect(PostgresSchema.distributedTables.first == "samples")
    }

    @Test func distributedKeysStartWithUser() {
        for (name, body) in Self.tables where PostgresSchema.distributedTables.contains(name) {
            let singleKey = body.contains("user_id bigint PRIMARY KEY")
            let compositeKey = body.contains("PRIMARY KEY (user_id,")
            #expect(singleKey != compositeKey, "\(name): primary key must be user_id or start with it")
            for line in body.split(separator: "\n") where line.contains("UNIQUE") {
                #expect(line.contains("UNIQUE (user_id"), "\(name): \(line)")
            }
            #expect(!body.contains("REFERENCES"), "\(name): a distributed table points at no other table")
        }
        for migration in PostgresSchema.migrations {
            for line in migration.sql.split(separator: "\n") where line.contains("CREATE UNIQUE INDEX") {
                #expect(line.contains("(user_id"), "unique index without user_id first: \(line)")
            }
        }
    }

    @Test func noSequencesAndOrderedNames() {
        for migration in PostgresSchema.migrations {
            // Statements only: the comments may explain why there is no sequence.
            let sql = migration.sql.lowercased().split(separator: "\n")
                .map { $0.split(separator: "--", maxSplits: 1, omittingEmptySubsequences: false).first ?? "" }
                .joined(separator: "\n")
            for word in ["serial", "sequence", "generated", "identity"] {
                #expect(!sql.contains(word), "\(migration.name) uses \(word)")
            }
        }
        // Numbered in increasing order; gaps are allowed (each area of work has its own number, so
        // branches that add migrations side by side do not clash on a name).
        let numbers = PostgresSchema.migrations.map { Int($0.name.prefix(3)) }
        #expect(!numbers.contains(nil))
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { ($0 ?? 0) < ($1 ?? 0) })
    }

    @Test func citusStatementsCoverEveryTable() {
        let statements = PostgresSchema.citusDistributionStatements
        #expect(statements.count == PostgresSchema.referenceTables.count + PostgresSchema.distributedTables.count)
        #expect(statements.contains("SELECT create_distributed_table('samples', 'user_id');"))
        #expect(statements.contains("SELECT create_reference_table('users');"))
        #expect(statements.contains("SELECT create_distributed_table('devices', 'user_id', colocate_with => 'samples');"))
    }
}

/// NOTIFY channels are database-wide; each schema's deployment gets a channel of its own.
@Suite struct PostgresChannelNameTests {
    @Test func eachSchemaHasItsOwnValidChannel() {
        #expect(PostgresHealthStore.channel(forSchema: "public") == "healthd_changes")
        let names = ["tenant_a", "tenant_b", "Tenant A", "\"quoted\"", String(repeating: "x", count: 200)]
            .map(PostgresHealthStore.channel(forSchema:))
        #expect(Set(names).count == names.count)
        for name in names {
            // Unquoted identifiers: lower case, digits and '_', at most 63 bytes.
            #expect(name.utf8.count <= 63 && name.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }, "\(name)")
        }
    }
}
