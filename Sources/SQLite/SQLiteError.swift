import CSQLite

/// A primary SQLite result code, named so callers need not import the C module.
public struct ResultCode: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let error = ResultCode(rawValue: SQLITE_ERROR)
    public static let busy = ResultCode(rawValue: SQLITE_BUSY)
    public static let locked = ResultCode(rawValue: SQLITE_LOCKED)
    public static let readOnly = ResultCode(rawValue: SQLITE_READONLY)
    public static let ioError = ResultCode(rawValue: SQLITE_IOERR)
    public static let corrupt = ResultCode(rawValue: SQLITE_CORRUPT)
    public static let full = ResultCode(rawValue: SQLITE_FULL)
    public static let cannotOpen = ResultCode(rawValue: SQLITE_CANTOPEN)
    public static let constraint = ResultCode(rawValue: SQLITE_CONSTRAINT)
    public static let mismatch = ResultCode(rawValue: SQLITE_MISMATCH)
    public static let misuse = ResultCode(rawValue: SQLITE_MISUSE)
    public static let range = ResultCode(rawValue: SQLITE_RANGE)

    public var description: String {
        guard let text = sqlite3_errstr(rawValue) else { return "code \(rawValue)" }
        return String(cString: text)
    }
}

/// An error reported by SQLite, with enough context to diagnose it from a log line.
public struct SQLiteError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The extended result code (e.g. SQLITE_CONSTRAINT_UNIQUE = 2067).
    public let extendedCode: Int32
    /// SQLite's message for the failure (`sqlite3_errmsg` at the time of the error).
    public let message: String
    /// The SQL being prepared or run, when there was one.
    public let sql: String?

    public init(extendedCode: Int32, message: String, sql: String? = nil) {
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
    }

    /// The primary result code: the low byte of the extended code.
    public var code: ResultCode { ResultCode(rawValue: extendedCode & 0xFF) }

    public var isConstraintViolation: Bool { code == .constraint }
    public var isBusy: Bool { code == .busy || code == .locked }

    public var description: String {
        var text = "SQLite error \(extendedCode) (\(code)): \(message)"
        if let sql { text += " — while running: \(sql)" }
        return text
    }

    /// Builds an error for result `code`, taking the extended code and message from the
    /// connection when they describe this failure (their primary codes agree); otherwise the
    /// connection's state is stale (e.g. the call does not record errors) and `code` alone is used.
    static func from(connection: OpaquePointer?, code: Int32, sql: String?) -> SQLiteError {
        if let connection {
            let extended = sqlite3_extended_errcode(connection)
            if (extended & 0xFF) == (code & 0xFF), let text = sqlite3_errmsg(connection) {
                return SQLiteError(extendedCode: extended, message: String(cString: text), sql: sql)
            }
        }
        let message = sqlite3_errstr(code).map { String(cString: $0) } ?? "unknown error"
        return SQLiteError(extendedCode: code, message: message, sql: sql)
    }
}
