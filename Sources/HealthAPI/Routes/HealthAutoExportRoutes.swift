import HTTP
import HealthAutoExport
import HealthStore

/// `POST /v1/ingest/health-auto-export`: what the Health Auto Export iOS app's REST API
/// automation posts (JSON, export format v2), unchanged (docs/api.md, Health Auto Export; the mapping in docs/guide.md).
/// The handler reads the request; `HealthAutoExportIngest` maps and saves the body;
/// `HealthAutoExportReport` is the answer.
public struct HealthAutoExportRoutes: Sendable {
    public static let path = "/v1/ingest/health-auto-export"

    let data: HealthData

    /// This route's own body limit, with what the app's user can do about a 413.
    public static func bodyLimit(_ bytes: Int) -> HTTPBodyLimitOverride {
        HTTPBodyLimitOverride(
            path: path, maxBodyLength: bytes,
            hint: "Health Auto Export: choose a shorter export period (Since Last Sync, Today) or a coarser time grouping, or raise maxHealthAutoExportBodyBytes.")
    }

    static func register(into router: inout Router<Route>, data: HealthData) {
        let routes = HealthAutoExportRoutes(data: data)
        router.register(.post, path, Route(access: .token, handler: routes.ingestHealthAutoExport))
    }

    /// `POST /v1/ingest/health-auto-export`: maps and saves the app's payload; answers with what was saved, duplicated, unmapped, refused and invalid.
    func ingestHealthAutoExport(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let interval = try Self.interval(&context.query)
        try context.query.rejectUnknown()
        let app = try context.app()
        try RequestBody.requireContentType(context.request, "application/json")
        let ingest = HealthAutoExportIngest(app: app, interval: interval, data: data)
        let report = try ingest.run(context.request.body)
        return JSONResponse.write { writer in report.write(to: &writer) }
    }

    /// `interval`: the automation's time grouping, how long one aggregated point lasts; minutes
    /// (the app's default) when left out.
    private static func interval(_ query: inout QueryParameters) throws(APIError) -> HealthAutoExportInterval {
        guard let text = try query.string("interval") else { return .minutes }
        guard let interval = HealthAutoExportInterval(rawValue: text) else {
            throw APIError.invalidField(
                "interval", "must be \(HealthAutoExportInterval.allCases.map(\.rawValue).joined(separator: ", ")) (the app's time grouping), not '\(text)'")
        }
        return interval
    }
}
