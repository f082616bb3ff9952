import CLibPQ
import Foundation

/// Where and how to connect: a libpq connection URL (`postgres://user:password@host:port/db?...`,
/// any parameter libpq knows) plus healthd's defaults for what a server must never lack: a connect
/// timeout, a statement timeout and a TCP timeout, so a dead or partitioned database surfaces as
/// an error instead of a hung request. Parameters in the URL override these defaults.
public struct PostgresConfiguration: Sendable, Hashable {
    public var url: String
    /// Shown in `pg_stat_activity`, so an operator can tell healthd's connections apart.
    public var applicationName: String = "healthd"
    /// libpq's `connect_timeout` (its minimum is 2 s).
    public var connectTimeoutSeconds: Int = 5
    /// Server-side limit for one statement; 0 means none.
    public var statementTimeoutMilliseconds: Int = 30_000
    /// How long unacknowledged data may sit on a TCP connection before the kernel drops it
    /// (`tcp_user_timeout`): without it a network partition blocks a call for minutes.
    public var tcpUserTimeoutMilliseconds: Int = 15_000
    /// Further run-time parameters set for every session at connect (sent as libpq `options`, so
    /// they survive `RESET ALL`), e.g. `["search_path": "tenant_a"]`.
    public var settings: [String: String] = [:]

    /// Validates `url` with libpq's own parser (no connection is made).
    public init(url: String) throws(PostgresError) {
        guard PostgresConfiguration.isPostgresURL(url) else {
            throw PostgresError.misuse("a PostgreSQL URL starts with postgres:// or postgresql://")
        }
        try PostgresConfiguration.requireLibPQ()
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &message) else {
            let text = message.map { String(cString: $0) } ?? "not a valid connection URL"
            PQfreemem(message)
            throw PostgresError.misuse("invalid PostgreSQL URL: \(text.asOneLine)")
        }
        PQconninfoFree(options)
        self.url = url
    }

    /// libpq is loaded at run time (see CLibPQ/shim.h): without it, PostgreSQL is a clear error
    /// naming the package, never a call into a missing library.
    static func requireLibPQ() throws(PostgresError) {
        guard healthd_libpq_available() != 0 else {
            throw PostgresError.misuse("PostgreSQL needs libpq (libpq.so.5), which is not installed: apt-get install libpq5")
        }
    }

    /// True for the URL forms libpq accepts (`postgres://` and `postgresql://`).
    public static func isPostgresURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// The URL with any password replaced, for logs and messages.
    public var redactedURL: String {
        guard let schemeEnd = url.range(of: "://"),
              let at = url[schemeEnd.upperBound...].firstIndex(of: "@") else { return url }
        let userInfo = url[schemeEnd.upperBound..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + ":***" + String(url[at...])
    }

    /// libpq keywords and values. The defaults come before `dbname` (the URL), because libpq lets
    /// values expanded from the URL override earlier keywords: whatever the operator wrote wins.
    func connectionParameters() -> [(String, String)] {
        var parameters: [(String, String)] = [
            ("application_name", applicationName),
            ("connect_timeout", String(max(2, connectTimeoutSeconds))),
            ("tcp_user_timeout", String(max(0, tcpUserTimeoutMilliseconds))),
            ("keepalives", "1"),
            ("keepalives_idle", "30"),
        ]
        var options = settings
        if statementTimeoutMilliseconds > 0, options["statement_timeout"] == nil {
            options["statement_timeout"] = String(statementTimeoutMilliseconds)
        }
        if !options.isEmpty {
            // `-c name=value`, spaces and backslashes escaped with a backslash (libpq's rule).
            let escaped = options.sorted { $0.key < $1.key }.map { key, value in
                "-c \(key)=\(value.replacingBackslashesAndSpaces)"
            }
            parameters.append(("options", escaped.joined(separator: " ")))
        }
        parameters.append(("dbname", url))
        return parameters
    }
}

extension String {
    /// libpq's messages end with a newline and some span lines ("…failed: Connection refused\n\tIs
    /// the server running…"): one line, so a log line or an error printed at start-up stays one line.
    var asOneLine: String {
        split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            .joined(separator: " ")
    }

    fileprivate var replacingBackslashesAndSpaces: String {
        var out = ""
        for character in self {
            if character == "\\" || character == " " { out.append("\\") }
            out.append(character)
        }
        return out
    }
}
