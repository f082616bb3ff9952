import Dispatch
import Foundation
import HTTP
import HealthModel
import JSON
import Synchronization
import Testing
@testable import HealthAPI
@testable import HealthStore
@testable import SQLiteStore
@testable import HealthdCommandLine

/// Bytes from memory in chunks of a chosen size, so chunk boundaries fall everywhere.
final class MemoryByteSource: AppleHealthByteSource {
    private let bytes: [UInt8]
    private let chunkSize: Int
    private var offset = 0
    var totalBytes: Int64? { Int64(bytes.count) }

    init(_ text: String, chunkSize: Int = 4096) {
        bytes = Array(text.utf8)
        self.chunkSize = chunkSize
    }

    init(bytes: [UInt8], chunkSize: Int = 4096) {
        self.bytes = bytes
        self.chunkSize = chunkSize
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(chunkSize, buffer.count, bytes.count - offset)
        guard count > 0 else { return 0 }
        bytes.withUnsafeBytes { source in
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[offset..<(offset + count)]))
        }
        offset += count
        return count
    }
}

enum Fixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/apple-health")

    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
}

@Suite struct AppleHealthImporterTests {
    private func importer(_ server: TestServer, user: String = "jane") throws -> (AppleHealthImporter, User) {
        let user = try server.store.userCreatingIfNeeded(name: user)
        return (AppleHealthImporter(store: server.store, userRowID: user.rowID, batchSize: 7), user)
    }

    @Test func importsTheDTDFixtureOnceAndOnlyOnce() throws {
        let server = try TestServer()
        let (first, user) = try importer(server)
        let report = try first.run(try FileByteSource(path: Fixtures.path("tdda/export6s3sample.xml")))
        #expect(report.inserted == ["stepCount": 10, "distanceWalkingRunning": 5, "workout": 1])
        #expect(report.activitySummaries == 2)
        #expect(report.removedDoctype)
        #expect(report.skippedCount == 0)
        #expect(try server.store.characteristics(userRowID: user.rowID).map(\.0) == ["dateOfBirth", "biologicalSex", "bloodType",
                                                                                     "fitzpatrickSkinType"])
        let days = try server.store.activitySummaries(userRowID: user.rowID, from: HealthDay(daysSinceEpoch: 0),
                                                      through: HealthDay(daysSinceEpoch: 30_000))
        #expect(days.map(\.day.description) == ["2016-04-14", "2016-04-15"])
        #expect(days.first?.appleStandHours == 16)

        let (second, _) = try importer(server)
        let again = try second.run(try FileByteSource(path: Fixtures.path("tdda/export6s3sample.xml")))
        #expect(again.insertedCount == 0)
        #expect(again.alreadyStoredCount == 16)
    }

    @Test func importsTheWatchFixtureWithMetadataAndSleep() throws {
        let server = try TestServer()
        let (importer, _) = try importer(server)
        let report = try importer.run(try FileByteSource(path: Fixtures.path("alxdrcirilo/export.xml")))
        #expect(report.inserted == ["heartRate": 2, "activeEnergyBurned": 2, "appleExerciseTime": 1, "appleStandTime": 1,
                                    "sleepAnalysis": 2])
        #expect(report.skipped == ["HKCharacteristicTypeIdentifierCardioFitnessMedicationsUse: characteristic not supported by healthd": 1])
        #expect(report.characteristics["bloodType"] == "aNegative")
    }

    @Test func survivesControlCharactersABrokenDTDAndDuplicates() throws {
        let server = try TestServer()
        let (importer, user) = try importer(server)
        let step = #"<Record type="HKQuantityTypeIdentifierStepCount" sourceName="iPhone" unit="count" "#
            + #"startDate="2024-01-01 10:00:00 +0000" endDate="2024-01-01 10:01:00 +0000" value="12"/>"#
        let bp = { (type: String, value: Int) in
            #"<Record type="HKQuantityTypeIdentifierBloodPressure\#(type)" sourceName="Cuff" unit="mmHg" "#
                + #"startDate="2024-01-01 08:00:00 +0000" endDate="2024-01-01 08:00:00 +0000" value="\#(value)"/>"#
        }
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE HealthData [
            <!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary)*)>
            <!ATTLIST Record type CDATA #REQUIRED type CDATA #REQUIRED>
            <!ATTLIST Broken
            ]>
            <HealthData locale="en_US">
             \(step)
             \(step)
             \(bp("Systolic", 120))\(bp("Diastolic", 80))
             <Correlation type="HKCorrelationTypeIdentifierBloodPressure" sourceName="Cuff" startDate="2024-01-01 08:00:00 +0000" endDate="2024-01-01 08:00:00 +0000">
              \(bp("Systolic", 120))\(bp("Diastolic", 80))
             </Correlation>
             <Record type="HKCategoryTypeIdentifierMindfulSession" sourceName="Calm\u{0B}" startDate="2024-01-01 10:00:00 +0000" endDate="2024-01-01 10:10:00 +0000" value="HKCategoryValueNotApplicable">
              <MetadataEntry key="note" value="bad\u{02}byte"/>
             </Record>
            </HealthData>
            """
        let report = try importer.run(MemoryByteSource(xml, chunkSize: 5))
        #expect(report.removedDoctype)
        #expect(report.droppedControlCharacters == 2)
        #expect(report.inserted == ["stepCount": 1, "bloodPressureSystolic": 1, "bloodPressureDiastolic": 1, "bloodPressure": 1,
                                    "mindfulSession": 1])
        #expect(report.alreadyStored == ["stepCount": 1])

        // The correlation adopted the top-level records: one systolic sample, inside the correlation.
        let app = try server.store.createAuthorization(user: user, app: "reader", read: ["bloodPressureSystolic", "bloodPressure"], share: [])
        let systolic = try server.store.samples(SampleQuery(type: "bloodPressureSystolic"), for: app.authorization, userExternalID: user.id)
        #expect(systolic.samples.count == 1)
        let correlation = try server.store.samples(SampleQuery(type: "bloodPressure"), for: app.authorization, userExternalID: user.id)
        guard case .correlation(let objects)? = correlation.samples.first?.sample.content else {
            Issue.record("no correlation")
            return
        }
        #expect(objects.map(\.uuid) == systolic.samples.map(\.sample.uuid) + objects.dropFirst().map(\.uuid))
        #expect(objects.count == 2)
    }

    @Test func brokenXMLKeepsWhatCameBeforeAndSaysWhere() throws {
        let server = try TestServer()
        let (importer, _) = try importer(server)
        let xml = #"<HealthData><Record type="HKQuantityTypeIdentifierStepCount" sourceName="iPhone" unit="count" "#
            + #"startDate="2024-01-01 10:00:00 +0000" endDate="2024-01-01 10:01:00 +0000" value="12"/><Record type="#
        #expect {
            _ = try importer.run(MemoryByteSource(xml))
        } throws: { error in
            guard case AppleHealthImportError.malformedXML = error else { return false }
            return true
        }
        let user = try #require(try server.store.user(named: "jane"))
        let page = try server.store.exportPage(type: "stepCount", scope: .wholeUser(user), after: nil, limit: 10)
        #expect(page.count == 1)
    }

    @Test func aFailingStoreStopsTheImportWithItsReason() throws {
        let directory = NSTemporaryDirectory() + "healthd-import-fail-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteHealthStore(directory: directory, readers: 1)
        let user = try store.createUser(name: "jane")
        store.close()
        let importer = AppleHealthImporter(store: store, userRowID: user.rowID, batchSize: 2)
        #expect {
            _ = try importer.run(try FileByteSource(path: Fixtures.path("tdda/export6s3sample.xml")))
        } throws: { error in
            guard case AppleHealthImportError.storeFailed = error else { return false }
            return true
        }
    }

    @Test func notAnExport() throws {
        let server = try TestServer()
        let (importer, _) = try importer(server)
        #expect(throws: AppleHealthImportError.self) { _ = try importer.run(MemoryByteSource("<plist><dict/></plist>")) }
    }
}

/// Collects a streamed body.
final class CollectingBodyStream: HTTPBodyStream, Sendable {
    private let state = Mutex<(bytes: [UInt8], closed: Bool, handlers: [@Sendable () -> Void])>(([], false, []))
    private let done = DispatchSemaphore(value: 0)

    func write(_ bytes: [UInt8]) -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.bytes += bytes
            return true
        }
    }

    func finish() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.closed else { return [] }
            state.closed = true
            defer { state.handlers = [] }
            return state.handlers
        }
        handlers.forEach { $0() }
        done.signal()
    }

    var isClosed: Bool { state.withLock { $0.closed } }
    var bufferedByteCount: Int { 0 }
    func onClose(_ handler: @escaping @Sendable () -> Void) {
        let run = state.withLock { state -> Bool in
            if state.closed { return true }
            state.handlers.append(handler)
            return false
        }
        if run { handler() }
    }

    func waitForBody() -> [UInt8] {
        done.wait()
        return state.withLock { $0.bytes }
    }
}

@Suite struct ExportTests {
    private func streamed(_ server: TestServer, _ target: String, token: String) -> (status: Int, contentType: String?, lines: [JSONObject]) {
        var headers = HTTPHeaders()
        headers.add("Host", "test")
        headers.add("Authorization", "Bearer \(token)")
        let request = HTTPRequest(method: .get, target: target, headers: headers, body: [])
        let result = Mutex<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        server.application.respond(to: request, connection: ConnectionInfo(id: 1, remoteAddress: "127.0.0.1")) { response in
            result.withLock { $0 = response }
            done.signal()
        }
        done.wait()
        guard let response = result.withLock({ $0 }) else { return (0, nil, []) }
        switch response.body {
        case .bytes(let bytes):
            return (response.status.code, response.headers["Content-Type"], [try? JSONParser.parse(bytes)].compactMap { $0??.objectValue })
        case .stream(let producer), .sizedStream(_, let producer):
            let collector = CollectingBodyStream()
            producer(collector)
            let body = collector.waitForBody()
            let lines = body.split(separator: 0x0A).compactMap { (try? JSONParser.parse(Array($0)))?.objectValue }
            if !body.isEmpty { #expect(body.last == 0x0A) }
            return (response.status.code, response.headers["Content-Type"], lines)
        }
    }

    @Test func importThenExportGivesTheSameSamples() throws {
        let server = try TestServer()
        let userID = server.createUser("jane")
        let user = try #require(try server.store.user(named: "jane"))
        let importer = AppleHealthImporter(store: server.store, userRowID: user.rowID)
        let report = try importer.run(try FileByteSource(path: Fixtures.path("alxdrcirilo/export.xml")))
        let all = HealthTypeCatalog.all.filter { $0.kind != .characteristic }.map(\.id)
        let token = server.token(user: userID, app: "exporter", read: all, share: [])
        let export = streamed(server, "/v1/export", token: token)
        #expect(export.status == 200)
        #expect(export.contentType == "application/x-ndjson")
        #expect(export.lines.count == report.insertedCount)
        var byType: [String: Int] = [:]
        for line in export.lines { byType[line["type"]?.stringValue ?? "", default: 0] += 1 }
        #expect(byType == report.inserted)
        // Oldest first: the iPhone's in-bed sample starts before the Watch's first heart rate.
        #expect(export.lines.first?["value"]?.stringValue == "inBed")
        let first = try #require(export.lines.first { $0["type"]?.stringValue == "heartRate" })
        #expect(first["value"]?.numberValue == 74)
        #expect(first["source"]?.objectValue?["app"]?.stringValue == "Alexandre's Apple Watch")
        #expect(first["metadata"]?.objectValue?["HKMetadataKeyHeartRateMotionContext"]?.stringValue == "0")

        let filtered = streamed(server, "/v1/export?types=sleepAnalysis,HKQuantityTypeIdentifierHeartRate", token: token)
        #expect(filtered.lines.count == 4)
    }

    @Test func exportRespectsReadPrivacyAndPagesThroughEverything() throws {
        let server = try TestServer()
        let userID = server.createUser("jane")
        let user = try #require(try server.store.user(named: "jane"))
        let importer = AppleHealthImporter(store: server.store, userRowID: user.rowID)
        _ = try importer.run(try FileByteSource(path: Fixtures.path("tdda/export6s3sample.xml")))
        let stranger = server.token(user: userID, app: "stranger", read: [], share: ["stepCount"])
        #expect(streamed(server, "/v1/export", token: stranger).lines.isEmpty)
        let own = server.request(.post, "/v1/samples", token: stranger, json: #"""
            {"samples":[{"uuid":"7d3c1a52-0f0e-4c57-9f0b-1f2a3b4c5d6e","type":"stepCount","value":5,"unit":"count",
              "start":"2026-01-01T10:00:00Z","end":"2026-01-01T10:01:00Z"}]}
            """#)
        #expect(own.status == 201)
        #expect(streamed(server, "/v1/export", token: stranger).lines.map { $0["uuid"]?.stringValue } == ["7d3c1a52-0f0e-4c57-9f0b-1f2a3b4c5d6e"])

        let steps = server.token(user: userID, app: "steps", read: ["stepCount"], share: [])
        let lines = streamed(server, "/v1/export", token: steps).lines
        #expect(lines.count == 11)
        #expect(Set(lines.compactMap { $0["type"]?.stringValue }) == ["stepCount"])

        // Paging: small pages give the same lines in the same order.
        var scope = ExportScope(.wholeUser(user))
        scope.pageSize = 3
        var paged: [UInt8] = []
        try scope.forEachPage(from: server.store) { paged += $0; return true }
        scope.pageSize = 1_000
        var whole: [UInt8] = []
        try scope.forEachPage(from: server.store) { whole += $0; return true }
        #expect(paged == whole)
        #expect(whole.filter { $0 == 0x0A }.count == 17)
        // Oldest first across types: starts never go backwards.
        let starts = whole.split(separator: 0x0A).compactMap { (try? JSONParser.parse(Array($0)))?.objectValue?["start"]?.stringValue }
        #expect(starts.count == 17)
        #expect(starts == starts.sorted())
        #expect(starts.last == "2026-01-01T10:00:00.000Z")
    }

    @Test func importedSamplesReachTheChangeFeed() throws {
        let server = try TestServer()
        let userID = server.createUser("jane")
        let user = try #require(try server.store.user(named: "jane"))
        _ = try AppleHealthImporter(store: server.store, userRowID: user.rowID)
            .run(try FileByteSource(path: Fixtures.path("tdda/export6s3sample.xml")))
        let token = server.token(user: userID, app: "feed", read: ["stepCount", "workout"], share: [])
        let changes = server.request(.get, "/v1/changes?types=stepCount,workout", token: token)
        #expect(changes.status == 200)
        #expect(changes["added"]?.arrayValue?.count == 11)
    }

    @Test func exportRejectsUnknownTypesAndParameters() throws {
        let server = try TestServer()
        let userID = server.createUser("jane")
        let token = server.token(user: userID, app: "a", read: ["stepCount"], share: [])
        #expect(server.request(.get, "/v1/export?types=stepCount,nonsense", token: token).status == 400)
        #expect(server.request(.get, "/v1/export?types=", token: token).status == 400)
        #expect(server.request(.get, "/v1/export?since=1", token: token).status == 400)
        #expect(server.request(.get, "/v1/export").status == 401)
    }
}
