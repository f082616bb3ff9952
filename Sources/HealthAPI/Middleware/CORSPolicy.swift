import HTTP
import HealthdSettings

/// Cross-origin access for dashboards served from other origins (docs/operations.md, Abuse and privacy).
/// Only listed origins get CORS headers; for any other origin the browser's same-origin rule
/// stays in force because nothing is added. Tokens travel in `Authorization`, never cookies,
/// so credentials mode is never enabled.
public struct CORSPolicy: Sendable {
    public let allowedOrigins: Set<String>
    public static let allowedMethods = "GET, POST, PUT, DELETE, OPTIONS"
    public static let allowedHeaders = "Authorization, Content-Type, Last-Event-ID"
    public static let exposedHeaders = "X-Request-Id, Retry-After, Location"
    /// How long a browser may cache a preflight answer, in seconds.
    public static let preflightMaxAge = "600"

    public init(origins: [String]) {
        allowedOrigins = Set(origins.map { $0.lowercased() })
    }

    public var isEnabled: Bool { !allowedOrigins.isEmpty }

    /// scheme://host[:port] with an http(s) scheme and nothing after the authority.
    public static func isValidOrigin(_ text: String) -> Bool { CORSOrigin.isValid(text) }

    /// The request's Origin when it is on the list.
    public func allowedOrigin(of request: HTTPRequest) -> String? {
        guard isEnabled, let origin = request.headers["Origin"], allowedOrigins.contains(origin.lowercased()) else { return nil }
        return origin
    }

    /// A CORS preflight: OPTIONS with Origin and Access-Control-Request-Method.
    public static func isPreflight(_ request: HTTPRequest) -> Bool {
        request.method == .options && request.headers["Origin"] != nil && request.headers["Access-Control-Request-Method"] != nil
    }

    /// The preflight answer: 204 with the allowed methods and headers for a listed origin,
    /// a bare 204 (no CORS headers, so the browser refuses) for any other.
    public func preflightResponse(for request: HTTPRequest) -> HTTPResponse {
        var response = HTTPResponse(status: .noContent)
        response.headers.set("Vary", "Origin")
        guard let origin = allowedOrigin(of: request) else { return response }
        response.headers.set("Access-Control-Allow-Origin", origin)
        response.headers.set("Access-Control-Allow-Methods", Self.allowedMethods)
        response.headers.set("Access-Control-Allow-Headers", Self.allowedHeaders)
        response.headers.set("Access-Control-Max-Age", Self.preflightMaxAge)
        return response
    }

    /// Adds the CORS headers to an actual response for a listed origin.
    public func decorate(_ response: inout HTTPResponse, for request: HTTPRequest) {
        guard isEnabled else { return }
        response.headers.set("Vary", "Origin")
        guard let origin = allowedOrigin(of: request) else { return }
        response.headers.set("Access-Control-Allow-Origin", origin)
        response.headers.set("Access-Control-Expose-Headers", Self.exposedHeaders)
    }
}
