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
    /// payload is a 400 with nothing stored; the second saves batch by batch inside one store
    /// transaction, so the request is stored whole or not at all (a 507 or 503 part way stores
    /// nothing) while memory holds one batch. Uuids derive from content, so a re-send stores
    /// nothing twice.
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
        do {
            try data.app(app).importSamples { session in
                // Runs again from the start if the store retries the transaction.
                report = HealthAutoExportReport()
                // Only an app that saved before can have samples under the uuids of before.
                let legacy = try session.hasSource() ? LegacyContentUUIDs() : nil
                var reader = HealthAutoExportReader(user: app.userID, app: app.appName, interval: interval, batchSize: Self.batchSize)
                reader.mapper.legacyUUIDs = legacy
                try body.withUnsafeBytes { bytes in
                    try reader.read(bytes) { items in try save(items, session: session, legacy: legacy, into: &report) }
                }
            }
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError(storeError: error)
        }
        return report
    }

    /// One batch: counted, share-checked, and saved in the request's transaction.
    private func save(_ items: [HealthAutoExportItem], session: AppImportSession, legacy: LegacyContentUUIDs?,
                      into report: inout HealthAutoExportReport) throws {
        var batch: [SourcedSample] = []
        var legacyUUIDs: [HealthUUID?] = []
        batch.reserveCapacity(items.count)
        legacyUUIDs.reserveCapacity(items.count)
        for item in items {
            switch item {
            case .sample(let sample, let metric):
                let legacyUUID = legacy?.take(sample.uuid)
                // A type the token may not share is refused, not saved, and not fatal to the rest.
                guard data.app(app).mayShare(sample) else {
                    report.refused[metric, default: 0] += 1
                    continue
                }
                batch.append(SourcedSample(app: app.appName, sample: sample))
                legacyUUIDs.append(legacyUUID)
            case .unmapped(let name):
                report.unmapped[name, default: 0] += 1
            case .invalid(let metric, let field, let detail):
                report.countInvalid(metric: metric, field: field, detail: detail)
            }
        }
        guard !batch.isEmpty else { return }
        // Stored by this app before uuids included the app: the same sample under its old uuid.
        let storedBefore = legacy == nil ? [] : try session.storedUUIDs(legacyUUIDs.compactMap { $0 })
        if !storedBefore.isEmpty {
            var fresh: [SourcedSample] = []
            fresh.reserveCapacity(batch.count)
            for (item, legacyUUID) in zip(batch, legacyUUIDs) {
                if let legacyUUID, storedBefore.contains(legacyUUID) { report.duplicates += 1 } else { fresh.append(item) }
            }
            batch = fresh
        }
        for outcome in try session.save(batch) {
            switch outcome {
            case .inserted: report.saved += 1
            // Stored before; a resend that differs only in metadata (the phone's zone changed,
            // so HKTimeZone did) keeps the first copy.
            case .alreadyStored, .conflict: report.duplicates += 1
            }
        }
    }
}
