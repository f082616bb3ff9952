import Foundation
import Testing
import HealthModel
import SQLite
@testable import HealthStore
@testable import SQLiteStore

/// The page query of `samples(_:for:userExternalID:)` is prepared once per shape (its filters and
/// order) and connection, and its text is built only for a shape the connection has not seen.
@Suite struct SamplePageQueryTests {
    private static let t0: Int64 = 1_700_000_000_000

    /// Every combination of the query's choices: the shape must determine the SQL text (a shape
    /// naming two texts would run one query's statement for another), and the values bound must
    /// be the same whether or not the text was built.
    @Test func everyShapeNamesOneTextAndBindsTheSameValues() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (reader, _) = try t.store.createAuthorization(user: user, app: "reader", read: ["stepCount"], share: ["stepCount"])
        let (writer, _) = try t.store.createAuthorization(user: user, app: "writer", read: [], share: ["stepCount"])
        _ = try t.store.save([steps(5, start: Self.t0, seconds: 600)], by: writer)
        guard let typeCode = t.store.typeCode(for: "stepCount") else { Issue.record("no type code"); return }
        var texts: [Int: String] = [:]
        try t.store.pool.read { db in
            for combination in 0..<256 {
                func flag(_ bit: Int) -> Bool { combination & (1 << bit) != 0 }
                let app = flag(0) ? writer : reader
                var query = SampleQuery(type: "stepCount")
                if flag(1) { query.sourceApp = "writer" }
                if flag(2) { query.end = Self.t0 + 3_600_000 }
                query.strictEndDate = flag(3)
                if flag(4) { query.start = Self.t0 + 60_000 }
                query.strictStartDate = flag(5)
                if flag(6) { query.after = SampleCursor(start: Self.t0, seq: 1) }
                query.descending = flag(7)
                let sources = ReadVisibility(app: app).sources(of: "stepCount")
                let shape = SQLiteHealthStore.samplePageShape(query, narrowed: sources != .everySource)
                let full = try t.store.samplePageClause(db, query: query, typeCode: typeCode, userRowID: app.userRowID,
                                                        sources: sources, buildsText: true)
                let lean = try t.store.samplePageClause(db, query: query, typeCode: typeCode, userRowID: app.userRowID,
                                                        sources: sources, buildsText: false)
                #expect(lean.values == full.values && lean.conditions.isEmpty)
                let text = SQLiteHealthStore.samplePageSQL(full, descending: query.descending)
                if let known = texts[shape] {
                    #expect(known == text, "shape \(shape) names two texts")
                } else {
                    texts[shape] = text
                }
                // The text's parameters are exactly the values plus the limit.
                let statement = try db.prepare(text)
                #expect(statement.parameterCount == full.values.count + 1)
            }
        }
        #expect(Set(texts.values).count > 1)
    }

    /// Paging through every shape twice (the second time on prepared statements) gives the same
    /// pages, in order, narrowed as the access policy says.
    @Test func pagesAreTheSameFromPreparedStatements() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (reader, _) = try t.store.createAuthorization(user: user, app: "reader", read: ["stepCount"], share: ["stepCount"])
        let (writer, _) = try t.store.createAuthorization(user: user, app: "writer", read: [], share: ["stepCount"])
        let theirs = try t.store.save((0..<20).map { steps(Double($0), start: Self.t0 + Int64($0) * 60_000) }, by: reader)
        let mine = try t.store.save((0..<15).map { steps(Double($0), start: Self.t0 + Int64($0) * 90_000 + 30_000) }, by: writer)
        func all(_ query: SampleQuery, _ app: AppAuthorization) throws -> [HealthUUID] {
            var query = query
            query.limit = 4
            var seen: [HealthUUID] = []
            while true {
                let page = try t.store.samples(query, for: app, userExternalID: user.id)
                seen += page.samples.map(\.sample.uuid)
                guard let next = page.next else { return seen }
                query.after = next
            }
        }
        var queries: [SampleQuery] = []
        for descending in [false, true] {
            for bounded in [false, true] {
                var query = SampleQuery(type: "stepCount")
                query.descending = descending
                if bounded {
                    query.start = Self.t0 + 5 * 60_000
                    query.end = Self.t0 + 12 * 60_000
                }
                queries.append(query)
            }
        }
        var first: [[HealthUUID]] = []
        for round in 0..<2 {
            var results: [[HealthUUID]] = []
            for query in queries {
                results.append(try all(query, reader))
                results.append(try all(query, writer))
            }
            if round == 0 { first = results } else { #expect(results == first) }
        }
        // Unbounded ascending: the reader sees everything, the writer only its own samples.
        #expect(Set(first[0]) == Set(theirs + mine) && first[0].count == 35)
        #expect(first[1] == mine)
        #expect(first[5] == mine.reversed())
    }
}
