import HealthAutoExport
import JSON

/// What one Health Auto Export payload did: the answer of `POST /v1/ingest/health-auto-export`.
struct HealthAutoExportReport: Sendable {
    var saved = 0
    var duplicates = 0
    /// Entries healthd has no type for, by the app's metric or section name.
    var unmapped: [String: Int] = [:]
    /// Entries of types the token may not share, by metric name.
    var refused: [String: Int] = [:]
    /// Well-formed entries HealthKit would refuse, by metric name; the first few in `invalidExamples`.
    var invalid: [String: Int] = [:]
    var invalidExamples: [HealthAutoExportError.Issue] = []
    static let maximumExamples = 20

    mutating func countInvalid(metric: String, field: String, detail: String) {
        invalid[metric, default: 0] += 1
        if invalidExamples.count < Self.maximumExamples {
            invalidExamples.append(.init(field: "\(metric): \(field)", detail: detail))
        }
    }

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
