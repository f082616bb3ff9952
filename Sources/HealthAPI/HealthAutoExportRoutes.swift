import HTTP
import HealthAutoExport
import HealthModel
import HealthStore
import JSON

/// `POST /v1/ingest/health-auto-export`: what the Health Auto Export iOS app's REST API
/// automation posts (JSON, export format v2), unchanged (API.md, Health Auto Export; README).
public enum HealthAutoExportRoutes {
    public static let path = "/v1/ingest/health-auto-export"
    /// Samples per store transaction: memory stays one batch, whatever the payload's size.
    static let batchSize = 5_000

    /// This route's own body limit, with what the app's user can do about a 413.
    public static func bodyLimit(_ bytes: Int) -> HTTPBodyLimitOverride {
        HTTPBodyLimitOverride(
            path: path, maxBodyLength: bytes,
            hint: "Health Auto Export: choose a shorter export period (Since Last Sync, Today) or a coarser time grouping, or raise maxHealthAutoExportBodyBytes.")
    }

    static func register(into router: inout Router<Route>, store: any HealthDataStore) {
        router.register(.post, path, Route(access: .token) { context throws(APIError) in
            let interval: HealthAutoExportInterval
            let intervalText = try context.query.string("interval")
            if let intervalText {
                guard let parsed = HealthAutoExportInterval(rawValue: intervalText) else {
                    throw APIError.invalidField(
                        "interval", "must be \(HealthAutoExportInterval.allCases.map(\.rawValue).joined(separator: ", ")) (the app's time grouping), not '\(intervalText)'")
                }
                interval = parsed
            } else {
                interval = .minutes
            }
            try context.query.rejectUnknown()
            let app = try context.app()
            try RequestBody.requireContentType(context.request, "application/json")
            let report = try ingest(context.request.body, app: app, interval: interval, store: store)
            return JSONResponse.write { writer in report.write(to: &writer) }
        })
    }

    /// What one payload did.
    struct Report {
        var saved = 0
        var duplicates = 0
        var unmapped: [String: Int] = [:]
        var refused: [String: Int] = [:]
        var invalid: [String: Int] = [:]
        var invalidExamples: [HealthAutoExportError.Issue] = []
    }

    /// Two passes over the body: the first maps everything and saves nothing, so a malformed
    /// payload is a 400 with nothing stored; the second saves batch by batch. Each batch is one
    /// transaction; uuids derive from content, so a payload cut short by a crash and posted
    /// again completes without storing anything twice.
    static func ingest(_ body: [UInt8], app: AppAuthorization, interval: HealthAutoExportInterval,
                       store: any HealthDataStore) throws(APIError) -> Report {
        do {
            var check = HealthAutoExportReader(user: app.userID, interval: interval, batchSize: batchSize)
            check.mapper.computesUUIDs = false
            try body.withUnsafeBytes { bytes in try check.read(bytes) { _ in } }
        } catch let error as HealthAutoExportError {
            throw APIError.invalidArgument(
                "the Health Auto Export payload is malformed; nothing was saved" + (error.truncated ? " (first 100 problems listed)" : ""),
                errors: error.issues.map { APIError.FieldIssue(field: $0.field.isEmpty ? "body" : $0.field, detail: $0.detail) })
        } catch {
            throw APIError.invalidArgument("the Health Auto Export payload cannot be read: \(error)")
        }
        var report = Report()
        var reader = HealthAutoExportReader(user: app.userID, interval: interval, batchSize: batchSize)
        do {
            try body.withUnsafeBytes { bytes in
                try reader.read(bytes) { items in try save(items, app: app, store: store, into: &report) }
            }
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError(storeError: error)
        }
        return report
    }

    private static func save(_ items: [HealthAutoExportItem], app: AppAuthorization, store: any HealthDataStore, into report: inout Report) throws {
        var batch: [SourcedSample] = []
        batch.reserveCapacity(items.count)
        for item in items {
            switch item {
            case .sample(let sample, let metric):
                var types = [sample.type]
                if case .correlation(let objects) = sample.content { types += objects.map(\.type) }
                // A type the token may not share is refused, not saved, and not fatal to the rest.
                guard types.allSatisfy(app.mayShare) else {
                    report.refused[metric, default: 0] += 1
                    continue
                }
                batch.append(SourcedSample(app: app.appName, sample: sample))
            case .unmapped(let name):
                report.unmapped[name, default: 0] += 1
            case .invalid(let metric, let field, let detail):
                report.invalid[metric, default: 0] += 1
                if report.invalidExamples.count < 20 {
                    report.invalidExamples.append(.init(field: "\(metric): \(field)", detail: detail))
                }
            }
        }
        guard !batch.isEmpty else { return }
        for outcome in try store.importSamples(batch, userRowID: app.userRowID) {
            switch outcome {
            case .inserted: report.saved += 1
            // Stored before; a resend that differs only in metadata (the phone's zone changed,
            // so HKTimeZone did) keeps the first copy.
            case .alreadyStored, .conflict: report.duplicates += 1
            }
        }
    }
}

extension HealthAutoExportRoutes.Report {
    func write(to writer: inout JSONWriter) {
        func counts(_ name: String, _ table: [String: Int]) {
            writer.key(name)
            writer.beginObject()
            for (key, count) in table.sorted(by: { $0.key < $1.key }) { writer.field(key, count) }
            writer.endObject()
        }
        writer.beginObject()
        writer.field("saved", saved)
        writer.field("duplicates", duplicates)
        counts("unmapped", unmapped)
        counts("refused", refused)
        counts("invalid", invalid)
        writer.key("errors")
        writer.beginArray()
        for example in invalidExamples {
            writer.beginObject()
            writer.field("field", example.field)
            writer.field("detail", example.detail)
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
    }
}
