import HTTP
import HealthStore

// Every failure a client can see passes through here: store errors become API errors in one
// mapper, and every 5xx is rendered and logged in one place, so no SQL text or driver message
// can reach a response.

/// Runs a store call, mapping its errors with `APIError(storeError:)`.
func storeCall<T>(_ body: () throws -> T) throws(APIError) -> T {
    do {
        return try body()
    } catch {
        throw APIError(storeError: error)
    }
}

extension APIError {
    /// What a store error means to a client. Expected outcomes (not found, conflict...) keep
    /// their words; a full disk is a 507; anything else is a 500 whose details go to the log only.
    init(storeError error: any Error) {
        switch error {
        case let error as APIError: self = error
        case let error as StoreError:
            switch error {
            case .notFound(let detail): self = .notFound(detail)
            case .conflict(let detail): self = .conflict(detail)
            case .forbidden(let detail): self = .authorizationDenied(detail)
            case .invalid(let detail): self = .invalidArgument(detail)
            }
        case is AccountErased:
            self = .authenticationRequired("the account was erased: its tokens and sessions no longer exist")
        case let denied as SharingDenied:
            self = .authorizationDenied(denied.detail)
            if let index = denied.index {
                errors = [APIError.FieldIssue(index: index, field: "type", detail: "no share permission for \(denied.type)")]
            }
        case let conflict as SampleConflict:
            self = .conflict(conflict.detail, errors: [APIError.FieldIssue(index: conflict.index, field: "uuid", detail: conflict.detail)])
        case let error where StoreFault.of(error) == .outOfSpace:
            self = .insufficientStorage(error)
        case let error where StoreFault.of(error) == .unavailable:
            self = .storeUnavailable(error)
        case let error where StoreFault.of(error) == .nulInText:
            self = .invalidArgument("a text in the request holds the character U+0000 (NUL), which cannot be stored")
        default:
            self = .internalError(error)
        }
    }
}

extension HTTPStatus {
    /// RFC 4918 §11.5: the server cannot store what the request needs stored.
    static let insufficientStorage = HTTPStatus(code: 507, reasonPhrase: "Insufficient Storage")
}

/// Turns one request's errors into responses. A server-side failure (an error with a `cause`)
/// is logged with the request id and its details, and answered with the generic detail plus a
/// `requestId` member (the `X-Request-Id` header carries the same id).
public struct ProblemResponder: Sendable {
    public let requestID: String
    let log: AccessLog?

    init(requestID: String, log: AccessLog?) {
        self.requestID = requestID
        self.log = log
    }

    public func response(_ error: APIError) -> HTTPResponse {
        guard let cause = error.cause else {
            return error.status.code >= 500 ? error.response(requestID: requestID) : error.response
        }
        log?.event(error.status.code == 507 ? "disk full" : error.status.code == 503 ? "database unavailable" : "internal error",
                   level: error.status.code == 507 || error.status.code == 503 ? "warning" : "error",
                   fields: [("id", requestID), ("status", String(error.status.code)), ("cause", cause)])
        return error.response(requestID: requestID)
    }
}
