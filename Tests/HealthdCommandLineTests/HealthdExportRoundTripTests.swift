import Foundation
import HealthAPI
import HealthModel
import HealthStore
import SQLiteStore
import JSON
import Testing
@testable import HealthdCommandLine

/// Bytes from memory, as `healthd import` reads a file.
final class MemoryByteSource: AppleHealthByteSource {
    let bytes: [UInt8]
    var offset = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    var totalBytes: Int64? { Int64(bytes.count) }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(buffer.count, bytes.count - offset)
        bytes.withUnsafeBytes { source in
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[offset ..< offset + count]))
        }
        offset += count
        return count
    }
}

@Suite("healthd export round trip")
struct HealthdExportRoundTripTests {
    /// A route with the most locations the API accepts, every field present and long.
    static func largestRoute() throws -> HealthSample {
        let start: Int64 = 1_772_960_400_123
        let locations = (0 ..< HealthValidation.maximumRouteLocations).map { index in
            let wobble = Double(index) * 1.234567890123e-9
            return WorkoutRouteLocation(date: start + Int64(index) * 7, latitude: -51.50071234567891 - wobble,
                                        longitude: -0.12461234567891234 - wobble, altitude: -11.123456789012345 - wobble,
                                        speed: 3.1234567890123456 + wobble, course: 45.12345678901234 + wobble,
                                        horizontalAccuracy: 4.123456789012345 + wobble, verticalAccuracy: 6.123456789012345 + wobble)
        }
        let workout = try #require(HealthUUID("0195c8a4-1f00-7000-8000-0000000000a1"))
        let uuid = try #require(HealthUUID("0195c8a4-1f00-7000-8000-0000000000a2"))
        return HealthSample(uuid: uuid, type: "workoutRoute", start: start, end: start + 7 * Int64(locations.count),
                            content: .workoutRoute(WorkoutRoute(workout: workout, locations: locations)))
    }

    @Test("the largest route the API accepts exports as one line that imports back unchanged")
    func largestRouteRoundTrips() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("healthd-roundtrip-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteHealthStore(directory: directory.path, readers: 1)
        let original = try Self.largestRoute()
        var writer = JSONWriter()
        SampleCodec.write(StoredSample(sample: original, source: SampleSource(app: "runner", user: "u"), created: 0), into: &writer)
        let line = writer.bytes + [0x0A]
        // Beyond the limit this line once met, and within the one derived from the API's limits.
        #expect(line.count > 16 * 1024 * 1024 && line.count <= HealthdExportImporter.maxLineBytes)

        let first = try store.createUser(name: "jane")
        let imported = try HealthdExportImporter(store: store, user: first).run(MemoryByteSource(line))
        #expect(imported.skipped.isEmpty, "\(imported.skipped)")

        // Exported from the store and imported again for another user: the same sample.
        var exported: [UInt8] = []
        try ExportScope(.wholeUser(first)).forEachPage(from: store) { exported += $0; return true }
        let restored = try HealthdExportLine.decode(exported.dropLast())
        #expect(restored.sample == original)
        let second = try store.createUser(name: "john")
        let again = try HealthdExportImporter(store: store, user: second).run(MemoryByteSource(exported))
        #expect(again.skipped.isEmpty, "\(again.skipped)")
    }

    @Test("a line longer than the largest sample is refused with the limit named")
    func overlongLineIsRefused() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("healthd-roundtrip-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteHealthStore(directory: directory.path, readers: 1)
        let user = try store.createUser(name: "jane")
        let bytes = [UInt8(ascii: "{")] + [UInt8](repeating: 0x20, count: HealthdExportImporter.maxLineBytes + 256 * 1024)
        #expect {
            _ = try HealthdExportImporter(store: store, user: user).run(MemoryByteSource(bytes))
        } throws: { error in
            "\(error)".contains("longer than \(HealthdExportImporter.maxLineBytes) bytes")
        }
    }
}
