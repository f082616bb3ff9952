import Foundation
import Testing

/// What issue 29's structure check holds the repository to, checked on every test run so it keeps
/// holding: a short README, the documents in docs/ (the API reference the code cites among them), a
/// BENCHMARKS of current tables, rows read by column name, and a PostgreSQL store that stands apart
/// from the SQLite one.
@Suite struct RepositoryStructureTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    static func lineCount(_ path: String) throws -> Int {
        try text(path).split(separator: "\n", omittingEmptySubsequences: false).count
    }

    /// Every file under `directory` whose name ends in one of `suffixes`, relative to the root.
    static func files(under directory: String, suffixes: [String]) -> [String] {
        let base = root.appendingPathComponent(directory)
        guard let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else { return [] }
        var found: [String] = []
        for case let url as URL in walker where suffixes.contains(where: url.lastPathComponent.hasSuffix) {
            found.append(String(url.path.dropFirst(root.path.count + 1)))
        }
        return found.sorted()
    }

    @Test func theReadmeIsAFrontDoorAndTheDocumentsAreInDocs() throws {
        #expect(try Self.lineCount("README.md") <= 400)
        #expect(try Self.text("README.md").hasPrefix("# "), "the README opens with its title")
        for document in ["api.md", "guide.md", "operations.md", "architecture.md", "decisions.md"] {
            #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent("docs/" + document).path), "docs/\(document)")
        }
        #expect(try Self.lineCount("BENCHMARKS.md") <= 800)
    }

    /// The API reference is docs/api.md: a citation of the contract's upper-case file name (which a
    /// clone does not have) points nowhere.
    @Test func everyCitationOfTheAPIReferenceNamesDocsApiMd() throws {
        let missing = "API" + ".md"
        var citing: [String] = []
        for directory in ["Sources", "Tests", "Tools", "docs", "Benchmarks", "Examples"] {
            for path in Self.files(under: directory, suffixes: [".swift", ".py", ".sh", ".md", ".js", ".html"])
            where try Self.text(path).contains(missing) {
                citing.append(path)
            }
        }
        for path in ["README.md", "BENCHMARKS.md", "Package.swift"] where try Self.text(path).contains(missing) { citing.append(path) }
        #expect(citing == [], "cite docs/api.md instead")
    }

    /// Rows are read by named column (`TableColumns`); a few single-column reads stay positional.
    @Test func atMostTwentyPositionalColumnReads() throws {
        let positional = try NSRegularExpression(pattern: #"\brow\.\w+\(at: *\d"#)
        var count = 0
        for path in Self.files(under: "Sources", suffixes: [".swift"]) {
            let source = try Self.text(path)
            count += positional.numberOfMatches(in: source, range: NSRange(source.startIndex..., in: source))
        }
        #expect(count <= 20)
    }

    @Test func thePostgreSQLStoreNeitherLinksNorCallsTheSQLiteStore() throws {
        for path in Self.files(under: "Sources/PostgresStore", suffixes: [".swift"]) {
            let source = try Self.text(path)
            #expect(!source.contains("import SQLiteStore") && !source.contains("import SQLite\n") && !source.contains("SQLiteHealthStore."), "\(path)")
        }
        // The target's dependency list, from its name to its settings.
        let manifest = try Self.text("Package.swift")
        let start = try #require(manifest.range(of: #".target(name: "PostgresStore""#))
        let end = try #require(manifest.range(of: "swiftSettings", range: start.upperBound..<manifest.endIndex))
        let dependencies = manifest[start.upperBound..<end.lowerBound]
        #expect(!dependencies.contains(#""SQLiteStore""#) && !dependencies.contains(#""SQLite""#), "\(dependencies)")
    }
}
