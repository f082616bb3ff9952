import HealthAPI
import HealthModel
import HealthStore
import JSON

/// One line of healthd's own NDJSON export (`healthd export`, `GET /v1/export`) read back, for
/// backup and restore or a move to another server. Pure.
public enum HealthdExportLine {
    /// The sample a line holds, as the app (`source.app`) that recorded it. The line is checked like
    /// a `POST /v1/samples` body, uuid included, so a restore keeps every uuid and a rerun stores
    /// nothing twice. `source.user` and `created` are the old server's: the importing user and the
    /// import time take their place.
    public static func decode(_ line: ArraySlice<UInt8>) throws(JSONFieldError) -> SourcedSample {
        let value: JSONValue
        do {
            value = try JSONParser.parse(line)
        } catch {
            throw JSONFieldError(field: "", detail: "invalid JSON: \(error.description)")
        }
        guard case .object(let object) = value else {
            throw JSONFieldError(field: "", detail: "expected a sample object, got \(value.typeDescription)")
        }
        guard let app = object["source"]?.objectValue?["app"]?.stringValue, !app.isEmpty else {
            throw JSONFieldError(field: "source.app", detail: "is missing: each line of healthd's export names the app")
        }
        guard object["uuid"]?.stringValue != nil else {
            throw JSONFieldError(field: "uuid", detail: "is missing: each line of healthd's export has its uuid")
        }
        var reader = JSONFieldReader(withoutServerFields(object))
        return SourcedSample(app: app, sample: try SampleCodec.decode(&reader, newUUID: HealthUUID.timeOrdered))
    }

    /// The sample as a client would send it: without the fields the server sets, in its objects too.
    static func withoutServerFields(_ object: JSONObject) -> JSONObject {
        JSONObject(object.members.compactMap { member -> JSONObject.Member? in
            switch (member.key, member.value) {
            case ("source", _), ("created", _):
                return nil
            case ("objects", .array(let items)):
                return (member.key, .array(items.map { item in item.objectValue.map { .object(withoutServerFields($0)) } ?? item }))
            default:
                return member
            }
        })
    }
}

/// Imports healthd's NDJSON export: reads it in chunks, decodes each line and saves in batches, each
/// one transaction (the same writer as the Apple Health import). A line that does not decode is
/// skipped with its reason; a sample whose uuid is stored with other content is skipped as a conflict.
/// A person's backup starts with its settings line (`PersonSettings`): its apps are restored before
/// the samples, everything else once they are in, so the same queries answer the same.
public final class HealthdExportImporter {
    private let writer: ImportWriter
    private let store: any HealthDataStore
    private let user: User
    private let batchSize: Int
    private static let chunkSize = 256 * 1024
    /// A line longer than this is not a sample of ours: the largest, a route with the most
    /// locations at their longest, fits (`SampleCodec.maximumSampleBytes`). It bounds one line's memory too.
    static let maxLineBytes = SampleCodec.maximumSampleBytes

    public init(store: any HealthDataStore, user: User, batchSize: Int = 5_000) {
        writer = ImportWriter(store: store, userRowID: user.rowID)
        self.store = store
        self.user = user
        self.batchSize = max(1, batchSize)
    }

    static let settingsLinePrefix = Array("{\"\(PersonSettings.lineKey)\"".utf8)

    /// The settings of a backup's settings line, or nil when the line is something else (a sample).
    static func settings(_ line: ArraySlice<UInt8>) throws(JSONFieldError) -> PersonSettings? {
        let text = line.drop(while: { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0xEF || $0 == 0xBB || $0 == 0xBF })
        guard text.starts(with: settingsLinePrefix) else { return nil }
        let value: JSONValue
        do { value = try JSONParser.parse(text) } catch {
            throw JSONFieldError(field: PersonSettings.lineKey, detail: "invalid JSON: \(error.description)")
        }
        guard let object = value.objectValue?[PersonSettings.lineKey]?.objectValue else {
            throw JSONFieldError(field: PersonSettings.lineKey, detail: "must be an object")
        }
        return try PersonSettings.decode(object)
    }

    public func run(_ source: some AppleHealthByteSource,
                    progress: @escaping (AppleHealthImportProgress) -> Void = { _ in }) throws -> AppleHealthImportReport {
        defer { writer.waitForPending() }
        var report = AppleHealthImportReport()
        var batch: [SourcedSample] = []
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: Self.chunkSize)
        var lineNumber = 0
        // Skips are counted by reason; the first line of each is named so it can be found.
        var skips: [String: (count: Int, firstLine: Int)] = [:]
        var settings: PersonSettings?
        var changes = PersonSettings.Changes()
        func accept(_ line: ArraySlice<UInt8>) throws {
            lineNumber += 1
            guard line.contains(where: { $0 != 0x20 && $0 != 0x0D && $0 != 0x09 }) else { return }
            // Settings that do not decode stop the import: a restore without them would answer differently.
            if let found = try Self.settings(line) {
                guard settings == nil else {
                    throw AppleHealthImportError.notAnExport("line \(lineNumber) is a second settings line: not one person's backup")
                }
                settings = found
                try found.restoreApps(into: store, user: user, changes: &changes)
                return
            }
            report.records += 1
            do throws(JSONFieldError) {
                batch.append(try HealthdExportLine.decode(line))
            } catch {
                let reason = (error.field.isEmpty ? "" : "\(error.field): ") + error.detail
                skips[reason, default: (0, lineNumber)].count += 1
            }
            if batch.count >= batchSize {
                try writer.submitSamples(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        while true {
            let count = try chunk.withUnsafeMutableBytes { try source.read(into: $0) }
            if count == 0 { break }
            report.bytesRead += Int64(count)
            // Only the new bytes are searched for a newline: a long line spans many chunks, and
            // searching it again from its start at each one would take quadratic time.
            var searchFrom = pending.count
            pending.append(contentsOf: chunk[0 ..< count])
            var lineStart = pending.startIndex
            while let newline = pending[searchFrom...].firstIndex(of: 0x0A) {
                try accept(pending[lineStart ..< newline])
                lineStart = newline + 1
                searchFrom = lineStart
            }
            pending.removeSubrange(..<lineStart)
            guard pending.count <= Self.maxLineBytes else {
                throw AppleHealthImportError.notAnExport("line \(lineNumber + 1) is longer than \(Self.maxLineBytes) bytes: not healthd's NDJSON export")
            }
            progress(AppleHealthImportProgress(bytesRead: report.bytesRead, totalBytes: source.totalBytes, records: report.records))
        }
        if !pending.isEmpty { try accept(pending[...]) }
        if !batch.isEmpty { try writer.submitSamples(batch) }
        for (reason, skip) in skips {
            report.skipped["\(reason) (line \(skip.firstLine)\(skip.count > 1 ? " and others" : ""))"] = skip.count
        }
        try writer.finish(into: &report)
        if let settings {
            try settings.restoreSettings(into: store, user: user, changes: &changes)
            report.settingsRestored = Self.describe(changes)
        }
        return report
    }

    static func describe(_ changes: PersonSettings.Changes) -> [String] {
        var lines: [String] = []
        if !changes.apps.isEmpty { lines.append("apps with their permissions: \(changes.apps.joined(separator: ", "))") }
        if !changes.sourcePriorities.isEmpty {
            lines.append("source order of \(changes.sourcePriorities.count) types: \(changes.sourcePriorities.joined(separator: ", "))")
        }
        if changes.characteristics { lines.append("characteristics") }
        if changes.activityGoals { lines.append("activity goals") }
        if changes.activitySummaries > 0 { lines.append("\(changes.activitySummaries) activity summaries") }
        return lines
    }
}

/// What `healthd import FILE` reads, told from the file's first bytes (never its name).
public enum ImportFormat: Equatable, Sendable {
    /// The Health app's `export.zip`.
    case appleHealthZip
    /// Its `export.xml`.
    case appleHealthXML
    /// healthd's own export: one JSON sample per line.
    case healthdNDJSON

    /// Nil when the file starts with neither a zip header, `<` nor `{` (after whitespace).
    public static func detect(head: [UInt8]) -> ImportFormat? {
        if head.starts(with: [0x50, 0x4B, 0x03, 0x04]) { return .appleHealthZip }
        let text = head.starts(with: [0xEF, 0xBB, 0xBF]) ? head.dropFirst(3) : head[...]
        switch text.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
        case UInt8(ascii: "<"): return .appleHealthXML
        case UInt8(ascii: "{"): return .healthdNDJSON
        default: return nil
        }
    }
}
