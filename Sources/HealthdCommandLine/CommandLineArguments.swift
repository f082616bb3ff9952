// Parses healthd's command line into a command and its options. Pure: reading the config
// file and the environment happens in the executable.

public enum HealthdCommand: Equatable, Sendable {
    case help(topic: String?)
    /// No command at all: the overview goes to standard error and the exit status is 2.
    case usage
    case version
    case serve(ServeOptions)
    case seed(SeedOptions)
    case importFile(ImportOptions)
    case export(ExportOptions)
    case invite(InviteOptions)
    case users(UsersOptions)
}

/// Flags shared by every command.
public struct CommonOptions: Equatable, Sendable {
    public var configFile: String?
    public var dataDirectory: String?
    /// A `postgres://` URL: the PostgreSQL store instead of the data directory's SQLite file.
    public var database: String?
    public init(configFile: String? = nil, dataDirectory: String? = nil, database: String? = nil) {
        self.configFile = configFile
        self.dataDirectory = dataDirectory
        self.database = database
    }
}

public struct ServeOptions: Equatable, Sendable {
    public var common = CommonOptions()
    public var host: String?
    public var port: Int?
    public var demo = false
    public var publicDirectory: String?
    /// The IANA zone the demo person lives in; nil: TZ's, else the server's (`DemoTimeZoneChoice`).
    public var timeZone: String?
    /// MiB of decoded statistics rollups kept in memory (`statisticsMemoryMiB`).
    public var statisticsMemoryMiB: Int?
    public init() {}
}

public struct SeedOptions: Equatable, Sendable {
    public var common = CommonOptions()
    public var user = ""
    public var days = 28
    /// The IANA zone the demo person lives in; nil: TZ's, else the server's (`DemoTimeZoneChoice`).
    public var timeZone: String?
    public init() {}
}

public struct ImportOptions: Equatable, Sendable {
    public var common = CommonOptions()
    public var file = ""
    public var user = ""
    public init() {}
}

public struct ExportOptions: Equatable, Sendable {
    public var common = CommonOptions()
    public var user = ""
    public var output: String?
    public init() {}
}

public struct InviteOptions: Equatable, Sendable {
    public var common = CommonOptions()
    public var user = ""
    public init() {}
}

public struct UsersOptions: Equatable, Sendable {
    public var common = CommonOptions()
    /// The body of `GET /v1/users` instead of a line per user.
    public var json = false
    public init() {}
}

public struct UsageError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

public enum CommandLineParser {
    public static func parse(_ arguments: [String]) throws(UsageError) -> HealthdCommand {
        guard let command = arguments.first else { return .usage }
        var rest = ArraySlice(arguments.dropFirst())
        if command == "--help" || command == "-h" || command == "help" {
            return .help(topic: rest.first)
        }
        if command == "--version" || command == "version" {
            guard rest.isEmpty else { throw UsageError("--version takes no arguments") }
            return .version
        }
        if rest.contains("--help") || rest.contains("-h") { return .help(topic: command) }
        switch command {
        case "serve":
            var options = ServeOptions()
            while let flag = rest.popFirst() {
                if try parseCommon(flag, &rest, into: &options.common) { continue }
                switch flag {
                case "--host": options.host = try value(for: flag, &rest)
                case "--port": options.port = try port(try value(for: flag, &rest))
                case "--demo": options.demo = true
                case "--public-dir": options.publicDirectory = try value(for: flag, &rest)
                case "--time-zone": options.timeZone = try value(for: flag, &rest)
                case "--statistics-memory": options.statisticsMemoryMiB = try statisticsMemory(try value(for: flag, &rest))
                default: throw unknown(flag, command)
                }
            }
            return .serve(options)
        case "seed":
            var options = SeedOptions()
            var sawUser = false
            while let flag = rest.popFirst() {
                if try parseCommon(flag, &rest, into: &options.common) { continue }
                switch flag {
                case "--user": options.user = try value(for: flag, &rest); sawUser = true
                case "--days":
                    let text = try value(for: flag, &rest)
                    guard let days = Int(text), (1...3660).contains(days) else {
                        throw UsageError("--days takes a whole number of days from 1 to 3660, not '\(text)'")
                    }
                    options.days = days
                case "--time-zone": options.timeZone = try value(for: flag, &rest)
                default: throw unknown(flag, command)
                }
            }
            guard sawUser, !options.user.isEmpty else { throw UsageError("seed needs --user NAME") }
            return .seed(options)
        case "import":
            var options = ImportOptions()
            while let flag = rest.popFirst() {
                if try parseCommon(flag, &rest, into: &options.common) { continue }
                switch flag {
                case "--user": options.user = try value(for: flag, &rest)
                default:
                    guard !flag.hasPrefix("-"), options.file.isEmpty else { throw unknown(flag, command) }
                    options.file = flag
                }
            }
            guard !options.file.isEmpty else { throw UsageError("import needs a FILE (export.zip, export.xml, or an NDJSON file from healthd export)") }
            guard !options.user.isEmpty else { throw UsageError("import needs --user NAME") }
            return .importFile(options)
        case "export":
            var options = ExportOptions()
            while let flag = rest.popFirst() {
                if try parseCommon(flag, &rest, into: &options.common) { continue }
                switch flag {
                case "--user": options.user = try value(for: flag, &rest)
                case "--output", "-o": options.output = try value(for: flag, &rest)
                default: throw unknown(flag, command)
                }
            }
            guard !options.user.isEmpty else { throw UsageError("export needs --user NAME") }
            return .export(options)
        case "invite":
            var options = InviteOptions()
            while let flag = rest.popFirst() {
                if try parseCommon(flag, &rest, into: &options.common) { continue }
                guard !flag.hasPrefix("-"), options.user.isEmpty else { throw unknown(flag, command) }
                options.user = flag
            }
            guard !options.user.isEmpty else { throw UsageError("invite needs the person's NAME") }
            return .invite(options)
        case "users":
            var options = UsersOptions()
            while let flag = rest.popFirst() {
                if try parseCommon(flag, &rest, into: &options.common) { continue }
                switch flag {
                case "--json": options.json = true
                default: throw unknown(flag, command)
                }
            }
            return .users(options)
        default:
            throw UsageError("unknown command '\(command)'; run 'healthd --help'")
        }
    }

    private static func parseCommon(_ flag: String, _ rest: inout ArraySlice<String>,
                                    into common: inout CommonOptions) throws(UsageError) -> Bool {
        switch flag {
        case "--config": common.configFile = try value(for: flag, &rest); return true
        case "--data-dir": common.dataDirectory = try value(for: flag, &rest); return true
        case "--database":
            let url = try value(for: flag, &rest)
            guard DatabaseSetting.isPostgresURL(url) else { throw UsageError("--database \(DatabaseSetting.requirement), not '\(url)'") }
            common.database = url
            return true
        default: return false
        }
    }

    private static func value(for flag: String, _ rest: inout ArraySlice<String>) throws(UsageError) -> String {
        guard let value = rest.popFirst(), !value.hasPrefix("--") else {
            throw UsageError("\(flag) needs a value")
        }
        return value
    }

    private static func port(_ text: String) throws(UsageError) -> Int {
        guard let port = Int(text), (0...65535).contains(port) else {
            throw UsageError("--port takes a number from 0 to 65535 (0 picks a free port), not '\(text)'")
        }
        return port
    }

    /// MiB of statistics rollups kept in memory, as `--statistics-memory` or `HEALTHD_STATISTICS_MEMORY_MIB` give it.
    public static func statisticsMemory(_ text: String) throws(UsageError) -> Int {
        guard let mebibytes = Int(text), (1...1_048_576).contains(mebibytes) else {
            throw UsageError("statistics memory takes a whole number of MiB from 1 to 1048576, not '\(text)'")
        }
        return mebibytes
    }

    private static func unknown(_ flag: String, _ command: String) -> UsageError {
        UsageError("unknown option '\(flag)' for '\(command)'; run 'healthd \(command) --help'")
    }
}

/// Where the data lives: the data directory's SQLite file by default, or a PostgreSQL database
/// named by a URL (`--database`, `"database"` in the config file). Only the URL's form is checked
/// here; libpq parses it fully when the store opens, and an unreachable server stops start-up.
public enum DatabaseSetting {
    static let requirement = "takes a PostgreSQL URL (postgres://user@host:port/database); SQLite, the default, needs no setting (--data-dir)"

    public static func isPostgresURL(_ text: String) -> Bool {
        (text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")) && !text.contains(where: \.isWhitespace)
    }
}
