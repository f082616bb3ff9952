import HTTP
import JSON

/// An error a handler answers with: RFC 9457 problem details carrying a HealthKit-style `code`.
public struct APIError: Error, Sendable {
    public struct FieldIssue: Sendable, Equatable {
        public var index: Int?
        public var field: String
        public var detail: String
        public init(index: Int? = nil, field: String, detail: String) {
            self.index = index
            self.field = field
            self.detail = detail
        }
    }

    public var status: HTTPStatus
    public var code: String
    public var detail: String
    public var errors: [FieldIssue]
    public var headers: HTTPHeaders
    /// What really went wrong (a driver message, SQL text), for the server's log line only:
    /// never part of the response. Set by `internalError` and `insufficientStorage`.
    public var cause: String?

    public init(status: HTTPStatus, code: String, detail: String, errors: [FieldIssue] = [], headers: HTTPHeaders = HTTPHeaders()) {
        self.status = status
        self.code = code
        self.detail = detail
        self.errors = errors
        self.headers = headers
    }

    /// The one way to build a 500: a generic detail for the client, the details for the log line
    /// that carries the request id (`ProblemResponder`).
    public static func internalError(_ cause: any Error) -> APIError {
        internalError(describing: String(describing: cause))
    }

    public static func internalError(describing cause: String) -> APIError {
        var error = APIError(status: .internalServerError, code: "errorInternal",
                             detail: "the server could not complete this request; the request id identifies it in the server's log")
        error.cause = cause
        return error
    }

    /// Seconds a client is asked to wait before retrying a write refused for lack of disk space.
    public static let insufficientStorageRetrySeconds = 30

    /// Seconds a client is asked to wait when the database could not be reached.
    public static let storeUnavailableRetrySeconds = 2

    /// 503 with Retry-After when the database cannot be reached (the driver already retried):
    /// nothing is known to be stored, and an idempotent retry (client uuids) settles any doubt.
    public static func storeUnavailable(_ cause: any Error) -> APIError {
        retryLater(.serviceUnavailable, code: "errorUnavailable", detail: "the database is unavailable right now; retry later",
                   seconds: storeUnavailableRetrySeconds, cause: cause)
    }

    /// 507 (RFC 4918) when the data directory's disk is full: the write was not stored, reads go
    /// on, and the same request succeeds once space returns (no restart needed).
    public static func insufficientStorage(_ cause: any Error) -> APIError {
        retryLater(.insufficientStorage, code: "errorInsufficientStorage",
                   detail: "the server's disk is full; nothing of this request was stored, retry later",
                   seconds: insufficientStorageRetrySeconds, cause: cause)
    }

    /// 503 with `Retry-After: 1` when a bounded resource is taken (password hashes, name
    /// resolutions): the same request succeeds a moment later.
    public static func busy(_ detail: String) -> APIError {
        retryLater(.serviceUnavailable, code: "errorUnavailable", detail: detail, seconds: 1, cause: nil)
    }

    /// A server-side refusal the same request may retry after `seconds` (Retry-After); the cause
    /// goes to the log only.
    private static func retryLater(_ status: HTTPStatus, code: String, detail: String, seconds: Int, cause: (any Error)?) -> APIError {
        var headers = HTTPHeaders()
        headers.set("Retry-After", String(seconds))
        var error = APIError(status: status, code: code, detail: detail, headers: headers)
        error.cause = cause.map { String(describing: $0) }
        return error
    }

    public static func invalidArgument(_ detail: String, errors: [FieldIssue] = []) -> APIError {
        APIError(status: .badRequest, code: "errorInvalidArgument", detail: detail, errors: errors)
    }

    /// A 400 about one named field (a query parameter or a JSON path).
    public static func invalidField(_ field: String, _ detail: String) -> APIError {
        APIError(status: .badRequest, code: "errorInvalidArgument", detail: "\(field): \(detail)",
                 errors: [FieldIssue(field: field, detail: detail)])
    }

    public static func authenticationRequired(_ detail: String) -> APIError {
        var headers = HTTPHeaders()
        headers.add("WWW-Authenticate", "Bearer realm=\"healthd\"")
        return APIError(status: .unauthorized, code: "errorAuthenticationRequired", detail: detail, headers: headers)
    }

    public static func authorizationDenied(_ detail: String) -> APIError {
        APIError(status: .forbidden, code: "errorAuthorizationDenied", detail: detail)
    }

    public static func notFound(_ detail: String) -> APIError {
        APIError(status: .notFound, code: "errorNotFound", detail: detail)
    }

    public static func conflict(_ detail: String, errors: [FieldIssue] = []) -> APIError {
        APIError(status: .conflict, code: "errorConflict", detail: detail, errors: errors)
    }

    public static func payloadTooLarge(_ detail: String) -> APIError {
        APIError(status: .contentTooLarge, code: "errorPayloadTooLarge", detail: detail)
    }

    public static func unsupportedMediaType(_ detail: String) -> APIError {
        APIError(status: .unsupportedMediaType, code: "errorUnsupportedMediaType", detail: detail)
    }

    public static func methodNotAllowed(_ allowed: [HTTPMethod]) -> APIError {
        var headers = HTTPHeaders()
        headers.add("Allow", allowed.map(\.rawValue).joined(separator: ", "))
        return APIError(status: .methodNotAllowed, code: "errorMethodNotAllowed",
                        detail: "allowed methods: \(allowed.map(\.rawValue).joined(separator: ", "))", headers: headers)
    }

    /// The problem+json response for this error. `cause` is never rendered.
    public var response: HTTPResponse { response(requestID: nil) }

    /// The response with a `requestId` member, so a client can quote the id of a server failure.
    public func response(requestID: String?) -> HTTPResponse {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("type"); writer.string("about:blank")
        writer.key("title"); writer.string(status.reasonPhrase)
        writer.key("status"); writer.integer(Int64(status.code))
        writer.key("detail"); writer.string(detail)
        writer.key("code"); writer.string(code)
        if let requestID { writer.key("requestId"); writer.string(requestID) }
        if !errors.isEmpty {
            writer.key("errors")
            writer.beginArray()
            for issue in errors {
                writer.beginObject()
                if let index = issue.index { writer.key("index"); writer.integer(Int64(index)) }
                writer.key("field"); writer.string(issue.field)
                writer.key("detail"); writer.string(issue.detail)
                writer.endObject()
            }
            writer.endArray()
        }
        writer.endObject()
        var headers = self.headers
        headers.set("Content-Type", "application/problem+json")
        return HTTPResponse(status: status, headers: headers, bytes: writer.bytes)
    }
}
