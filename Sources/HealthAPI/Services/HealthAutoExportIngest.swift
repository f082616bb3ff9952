import HealthAutoExport
import HealthModel
import HealthStore

/// Maps and saves one Health Auto Export payload for the calling app.
struct HealthAutoExportIngest {
    /// Samples per store transaction: memory stays one batch, whatever the payload's size.
    static let batchSize = 5_000

    let app: AppAuthorization
    let interval: HealthAutoExportInterval
    let data: HealthData

    /// Two passes over the body: the first maps everything and saves nothing, so a malformed
    /// payload is a 400 with nothing stored; the second saves batch by batch. Each batch is one
    /// transaction; uuids derive from content, so a payload cut short by a crash and posted
    /// again completes without storing anything twice.
    func run(_ body: [UInt8]) throws(APIError) -> HealthAutoExportReport {
        do {
            var check = HealthAutoExportReader(user: app.userID, interval: interval, batchSize: Self.batchSize)
            check.mapper.computesUUIDs = false
            try body.withUnsafeBytes { bytes in try check.read(bytes) { _ in } }
        } catch let error as HealthAutoExportError {
            throw APIError.invalidArgument(
                "the Health Auto Export payload is malformed; nothing was saved" + (error.truncated ? " (first 100 problems listed)" : ""),
                errors: error.issues.map { APIError.FieldIssue(field: $0.field.isEmpty ? "body" : $0.field, detail: $0.detail) })
        } catch {
            throw APIError.invalidArgument("the Health Auto Export payload cannot be read: \(error)")
        }
        var report = HealthAutoExportReport()
        var reader = HealthAutoExportReader(user: app.userID, interval: interval, batchSize: Self.batchSize)
        do {
            try body.withUnsafeBytes { bytes in
                try reader.read(bytes) { items in try save(items, into: &report) }
            }
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError(storeError: error)
        }
        return report
    }

    /// One batch: counted, share-checked, and saved in one transaction.
    private func save(_ items: [HealthAutoExportItem], into report: inout HealthAutoExportReport) throws {
        var batch: [SourcedSample] = []
        batch.reserveCapacity(items.count)
        for item in items {
            switch item {
            case .sample(let sample, let metric):
                // A type the token may not share is refused, not saved, and not fatal to the rest.
                guard data.app(app).mayShare(sample) else {
                    report.refused[metric, default: 0] += 1
                    continue
                }
                batch.append(SourcedSample(app: app.appName, sample: sample))
            case .unmapped(let name):
                report.unmapped[name, default: 0] += 1
            case .invalid(let metric, let field, let detail):
                report.countInvalid(metric: metric, field: field, detail: detail)
            }
        }
        guard !batch.isEmpty else { return }
        for outcome in try data.app(app).importSamples(batch) {
            switch outcome {
            case .inserted: report.saved += 1
            // Stored before; a resend that differs only in metadata (the phone's zone changed,
            // so HKTimeZone did) keeps the first copy.
            case .alreadyStored, .conflict: report.duplicates += 1
            }
        }
    }
}
