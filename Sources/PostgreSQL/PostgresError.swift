/// A failure from the server, libpq or the driver, classified so callers act on the class and
/// never on message text. `description` carries everything (SQLSTATE, message, detail, SQL) and
/// is for the log only: a client is told at most the class (conflict, unavailable...).
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// 23505: a unique or primary key already holds the value. Callers that re-send a batch
        /// with the same client uuids treat it as the idempotent success the API promises.
        case uniqueViolation
        /// 23503.
        case foreignKeyViolation
        /// 23502, 23514, 23P01 and other class 23 errors.
        case otherConstraintViolation
        /// 40001: retried by `transaction` (the whole body runs again on a fresh snapshot).
        case serializationFailure
        /// 40P01: retried like a serialization failure.
        case deadlock
        /// The server cannot be reached or went away (class 08, 57P01-57P03, 53300, a closed
        /// socket, a pool wait that timed out). Nothing is known to be committed unless
        /// `commitOutcomeUnknown`; clients get 503 with Retry-After.
        case unavailable
        /// 57014: `statement_timeout` or a cancel.
        case queryCanceled
        /// 53100: the database server's disk is full.
        case diskFull
        /// The SQL or its parameters were wrong (syntax, undefined column, bad input text...).
        case invalidStatement
        /// The driver was used wrongly (closed connection, transaction misuse).
        case misuse
        /// A text parameter holds U+0000, which PostgreSQL text cannot hold (SQLite can): the
        /// input's fault, refused before anything is sent.
        case nulInText
        /// Anything else from the server.
        case other
    }

    public let kind: Kind
    /// The five-character SQLSTATE, when the server sent one.
    public let sqlState: String?
    public let message: String
    public let detail: String?
    public let constraint: String?
    public let table: String?
    public let column: String?
    /// The statement being run, for the log.
    public let sql: String?
    /// True when the connection broke after COMMIT was sent: the transaction may or may not have
    /// committed. Never retried inside the server; an idempotent client retry settles it.
    public let commitOutcomeUnknown: Bool

    public init(kind: Kind, sqlState: String? = nil, message: String, detail: String? = nil,
                constraint: String? = nil, table: String? = nil, column: String? = nil,
                sql: String? = nil, commitOutcomeUnknown: Bool = false) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.constraint = constraint
        self.table = table
        self.column = column
        self.sql = sql
        self.commitOutcomeUnknown = commitOutcomeUnknown
    }

    /// Maps a SQLSTATE to its class; connection-level codes first, then by class.
    public static func kind(sqlState: String) -> Kind {
        switch sqlState {
        case "23505": return .uniqueViolation
        case "23503": return .foreignKeyViolation
        case "40001": return .serializationFailure
        case "40P01": return .deadlock
        case "57P01", "57P02", "57P03", "53300": return .unavailable
        case "57014": return .queryCanceled
        case "53100": return .diskFull
        default: break
        }
        switch sqlState.prefix(2) {
        case "08": return .unavailable
        case "23": return .otherConstraintViolation
        case "22", "42": return .invalidStatement
        default: return .other
        }
    }

    /// Serialization failures and deadlocks: running the transaction again may succeed.
    public var isTransactionRetryable: Bool { kind == .serializationFailure || kind == .deadlock }

    public var isUniqueViolation: Bool { kind == .uniqueViolation }

    public var isUnavailable: Bool { kind == .unavailable }

    public var description: String {
        var text = "PostgreSQL error"
        if let sqlState { text += " \(sqlState)" }
        text += " (\(kind)): \(message)"
        if let detail { text += " — \(detail)" }
        if let constraint { text += " [constraint \(constraint)]" }
        if commitOutcomeUnknown { text += " [commit outcome unknown]" }
        if let sql { text += " — while running: \(sql)" }
        return text
    }

    @usableFromInline
    static func misuse(_ message: String, sql: String? = nil) -> PostgresError {
        PostgresError(kind: .misuse, message: message, sql: sql)
    }

    func with(commitOutcomeUnknown: Bool) -> PostgresError {
        PostgresError(kind: kind, sqlState: sqlState, message: message, detail: detail, constraint: constraint,
                      table: table, column: column, sql: sql, commitOutcomeUnknown: commitOutcomeUnknown)
    }
}

