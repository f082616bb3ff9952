import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import HealthClient

/// The real `healthd` binary on a free port with a fresh data directory, driven through
/// `HealthClient` over real HTTP.
final class RunningServer: @unchecked Sendable {
    static let adminToken = "e2e-swift-admin-token-0123456789"
    let process = Process()
    let directory = NSTemporaryDirectory() + "healthd-e2e-swift-" + UUID().uuidString
    private(set) var baseURL = URL(fileURLWithPath: "/")

    /// `swift test` builds every product, so the binary sits next to the test bundle.
    static var binaryPath: String {
        let bundleDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [bundleDirectory, bundleDirectory.deletingLastPathComponent()]
            .map { $0.appendingPathComponent("healthd").path }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[0]
    }

    init() throws {
        process.executableURL = URL(fileURLWithPath: Self.binaryPath)
        process.arguments = ["serve", "--port", "0", "--data-dir", directory]
        var environment = ProcessInfo.processInfo.environment
        environment["HEALTHD_ADMIN_TOKEN"] = Self.adminToken
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The first line says where it listens: "healthd listening on http://127.0.0.1:PORT".
        var received = Data()
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            received.append(chunk)
            if let text = String(data: received, encoding: .utf8),
               let range = text.range(of: #"listening on (http://[^\s]+)"#, options: .regularExpression) {
                let url = text[range].replacingOccurrences(of: "listening on ", with: "")
                baseURL = URL(string: url) ?? baseURL
                return
            }
        }
        throw RunningServerError(message: "healthd did not report its address: \(String(decoding: received, as: UTF8.self))")
    }

    /// SIGTERM, and the exit status (0 means a graceful stop).
    func stop() -> Int32 {
        process.terminate()
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// An admin call, returning the JSON object answered.
    func admin(_ path: String, _ body: [String: Any]) async throws -> [String: Any] {
        var request = URLRequest(url: baseURL.appendingPathComponent(path))
        request.httpMethod = "POST"
        request.setValue("Bearer \(Self.adminToken)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        let (data, _) = try await URLSession.shared.data(for: request)
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    }
}

struct RunningServerError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

@Suite(.serialized) struct HealthClientEndToEndTests {
    @Test func saveQueryChangesAndIngestThroughTheRealBinary() async throws {
        let server = try RunningServer()
        let user = try await server.admin("/v1/users", ["name": "client-user"])
        let userID = try #require(user["id"] as? String)
        let types = ["stepCount", "heartRate", "distanceWalkingRunning"]
        let authorization = try await server.admin("/v1/authorizations",
                                                   ["user": userID, "app": "swift-client", "read": types, "share": types])
        let token = try #require(authorization["token"] as? String)
        let client = HealthClient(baseURL: server.baseURL, token: token)

        let start = Date(timeIntervalSince1970: 1_772_960_400)  // 2026-03-08T09:00:00Z
        let uuids = try await client.save([
            HealthSample(type: "stepCount", start: start, end: start.addingTimeInterval(600), value: .number(420), unit: "count"),
            HealthSample(type: "heartRate", start: start, value: .number(72), unit: "count/min"),
        ])
        #expect(uuids.count == 2)

        let page = try await client.samples(type: "stepCount", start: start.addingTimeInterval(-60))
        #expect(page.samples.count == 1)
        #expect(page.samples.first?.source?.app == "swift-client")

        let changes = try await client.changes(types: ["stepCount", "heartRate"])
        #expect(Set(changes.added.compactMap(\.uuid)) == Set(uuids))

        // A bad sample comes back as a typed problem naming the field.
        do {
            try await client.save([HealthSample(type: "stepCount", start: start, value: .number(-1), unit: "count")])
            Issue.record("a negative step count was accepted")
        } catch {
            guard case .problem(let status, let code, _, let errors) = error else {
                Issue.record("expected a problem, got \(error)")
                return
            }
            #expect(status == 400)
            #expect(code == "errorInvalidArgument")
            #expect(errors.first?.field == "value")
        }

        // The server-side pedometer: 30 s of walking at 1.8 steps/s in two batches, in g.
        var readings: [(t: Double, x: Double, y: Double, z: Double)] = []
        for i in 0..<1500 {
            let t = Double(i) / 50
            let bounce = 0.3 * sin(2 * .pi * 1.8 * t)
            readings.append((t, 0.1 * bounce + 0.12 * sin(2 * .pi * 0.9 * t), 0.7 + 0.7 * bounce, 0.7 + 0.7 * bounce))
        }
        for (seq, range) in [0..<750, 750..<1500].enumerated() {
            let part = readings[range]
            let batch = HealthIMUBatch(device: "Test Phone", session: "client-walk", seq: seq, unit: "g", t0: start,
                                       samples: .init(t: part.map(\.t), x: part.map(\.x), y: part.map(\.y), z: part.map(\.z)))
            let result = try await client.ingestIMU(batch)
            #expect(result.seq == seq)
        }
        let final = try await client.endIMUSession("client-walk")
        #expect(abs(final.totalSteps - 54) <= 3, "30 s at 1.8 steps/s; got \(final.totalSteps)")

        #expect(server.stop() == 0, "SIGTERM stops healthd gracefully")
    }
}

/// Paging, anchors, deletes and statistics through the client, against the real binary.
@Suite(.serialized) struct HealthClientPagingEndToEndTests {
    static func client(_ server: RunningServer, read: [String], share: [String]) async throws -> HealthClient {
        let user = try await server.admin("/v1/users", ["name": "paging-user"])
        let userID = try #require(user["id"] as? String)
        let authorization = try await server.admin("/v1/authorizations",
                                                   ["user": userID, "app": "paging-client", "read": read, "share": share])
        return HealthClient(baseURL: server.baseURL, token: try #require(authorization["token"] as? String))
    }

    @Test func cursorsAndAnchorsPageWithoutGapsOrRepeats() async throws {
        let server = try RunningServer()
        let client = try await Self.client(server, read: ["stepCount"], share: ["stepCount"])
        let start = Date(timeIntervalSince1970: 1_772_960_400)
        let saved = try await client.save((0..<7).map { i in
            .quantity("stepCount", Double(10 + i), unit: "count", start: start.addingTimeInterval(Double(i) * 60),
                      end: start.addingTimeInterval(Double(i) * 60 + 30))
        })

        // HKSampleQuery pages of 3: 3 + 3 + 1, in start order, then no cursor.
        var seen: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            let page = try await client.samples(type: "stepCount", limit: 3, cursor: cursor)
            seen += page.samples.compactMap(\.uuid)
            cursor = page.next
            pages += 1
        } while cursor != nil && pages < 10
        #expect(seen == saved)
        #expect(pages == 3)
        let newestFirst = try await client.samples(type: "stepCount", limit: 2, ascending: false)
        #expect(newestFirst.samples.compactMap(\.uuid) == Array(saved.reversed().prefix(2)))

        // HKAnchoredObjectQuery in pages of 4, then a delete after the last anchor.
        var added: [String] = []
        var anchor: String?
        var more = true
        while more {
            let changes = try await client.changes(types: ["stepCount"], anchor: anchor, limit: 4)
            added += changes.added.compactMap(\.uuid)
            anchor = changes.anchor
            more = changes.more && added.count < 100
        }
        #expect(Set(added) == Set(saved))
        #expect(added.count == saved.count)
        try await client.deleteSample(uuid: saved[0])
        let afterDelete = try await client.changes(types: ["stepCount"], anchor: anchor)
        #expect(afterDelete.added.isEmpty)
        #expect(afterDelete.deleted.map(\.uuid) == [saved[0]])
        #expect(!afterDelete.more)

        // A forged anchor is the server's 400, surfaced as a typed problem.
        do {
            _ = try await client.changes(types: ["stepCount"], anchor: "forged")
            Issue.record("a forged anchor was accepted")
        } catch {
            guard case .problem(400, let code, _, _) = error else { Issue.record("got \(error)"); return }
            #expect(code == "errorInvalidArgument")
        }

        // Statistics over what is left: 11 + ... + 16.
        let statistics = try await client.statistics(type: "stepCount", start: start, end: start.addingTimeInterval(3600),
                                                     options: [.cumulativeSum])
        #expect(statistics.sum == 81)
        #expect(server.stop() == 0)
    }

    @Test func aMissingPermissionIsAuthorizationDenied() async throws {
        let server = try RunningServer()
        let client = try await Self.client(server, read: ["stepCount"], share: [])
        do {
            try await client.save([.quantity("stepCount", 1, unit: "count", start: Date(timeIntervalSince1970: 1_772_960_400))])
            Issue.record("a save without share permission was accepted")
        } catch {
            #expect(error.isAuthorizationDenied)
        }
        do {
            try await client.deleteSample(uuid: UUID().uuidString.lowercased())
            Issue.record("deleting an unknown sample succeeded")
        } catch {
            guard case .problem(let status, _, _, _) = error else { Issue.record("got \(error)"); return }
            #expect(status == 403 || status == 404)
        }
        #expect(server.stop() == 0)
    }
}
