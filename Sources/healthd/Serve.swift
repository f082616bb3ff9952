import HealthdSettings
import DemoData
import Dispatch
import Foundation
import HealthAPI
import HealthdCommandLine
import HealthStore
import SQLiteStore
import PostgresStore
import PostgreSQL
import HTTPServer

/// Defaults, then the config file, then the environment (`HEALTHD_PUBLIC_DIR`, `HEALTHD_PORT`,
/// `HEALTHD_STATISTICS_MEMORY_MIB`), then flags.
/// The dashboard folder stays empty unless one of them names it: `serve` then looks for it (`PublicDirectory`).
func loadConfiguration(_ common: CommonOptions) -> HealthdConfiguration {
    var configuration = HealthdConfiguration()
    configuration.publicDirectory = ""
    if let file = common.configFile {
        // A file handle reads pipes and process substitutions too, which FileManager does not.
        guard let handle = FileHandle(forReadingAtPath: file) else {
            fail("cannot read the config file \(file): \(String(cString: strerror(errno)))")
        }
        let data = handle.readDataToEndOfFile()
        do {
            configuration = try ConfigurationFile.apply([UInt8](data), to: configuration)
        } catch {
            fail("config file \(file): \(error.description)")
        }
    }
    let environment = ProcessInfo.processInfo.environment
    if let publicDirectory = environment["HEALTHD_PUBLIC_DIR"], !publicDirectory.isEmpty {
        configuration.publicDirectory = publicDirectory
    }
    if let text = environment["HEALTHD_PORT"], !text.isEmpty {
        guard let port = Int(text), (0...65_535).contains(port) else {
            fail("HEALTHD_PORT takes a number from 0 to 65535, not '\(text)'", status: 2)
        }
        configuration.port = port
    }
    if let memory = environment["HEALTHD_STATISTICS_MEMORY_MIB"], !memory.isEmpty {
        do { configuration.statisticsMemoryMiB = try CommandLineParser.statisticsMemory(memory) } catch {
            fail("HEALTHD_STATISTICS_MEMORY_MIB: \(error.description)", status: 2)
        }
    }
    if let dataDirectory = common.dataDirectory { configuration.dataDirectory = dataDirectory }
    if let database = common.database { configuration.database = database }
    return configuration
}

/// Opens the PostgreSQL store when `database` names one, otherwise (creating) the data
/// directory's SQLite store, or exits with one line saying why not.
func openStore(_ configuration: HealthdConfiguration) -> any HealthDataStore {
    // Never fall back to SQLite when PostgreSQL was asked for: the data would go somewhere else.
    if let url = configuration.database {
        // The data directory then holds only the generated admin token (without HEALTHD_ADMIN_TOKEN);
        // if it cannot be made, writing the token says so in one line.
        _ = try? DataDirectory.prepare(configuration.dataDirectory)
        do {
            return try PostgresHealthStore(url: url, statisticsMemoryBudget: configuration.statisticsMemoryMiB << 20)
        } catch {
            fail("cannot open the PostgreSQL database: \(error)")
        }
    }
    let directory = configuration.dataDirectory
    prepareDataDirectory(directory)
    guard FileManager.default.isWritableFile(atPath: directory) else {
        fail("the data directory \(directory) is not writable")
    }
    do {
        return try SQLiteHealthStore(directory: directory, readers: configuration.readerConnections,
                               statisticsMemoryBudget: configuration.statisticsMemoryMiB << 20,
                               uuidKeyMemoryBudget: configuration.uuidKeyMemoryMiB << 20)
    } catch {
        fail("cannot open the database in \(directory): \(error)")
    }
}

/// Creates the data directory (0700) or narrows the modes of an existing one, saying what it changed.
func prepareDataDirectory(_ directory: String) {
    let repairs: [DataDirectory.Repair]
    do {
        repairs = try DataDirectory.prepare(directory)
    } catch let error as DataDirectoryError {
        fail(error.description)
    } catch {
        fail("cannot create the data directory \(directory): \(error.localizedDescription)")
    }
    guard !repairs.isEmpty else { return }
    FileHandle.standardError.write(Data(("healthd: the data directory was readable by others; now its owner's alone: "
        + repairs.map(\.description).joined(separator: ", ") + "\n").utf8))
}

func runServe(_ options: ServeOptions) -> Never {
    // Before any thread starts, so every thread inherits the mask (see `StopSignals`).
    StopSignals.block()
    var configuration = loadConfiguration(options.common)
    if let host = options.host { configuration.host = host }
    if let port = options.port { configuration.port = port }
    if let memory = options.statisticsMemoryMiB { configuration.statisticsMemoryMiB = memory }
    if let directory = options.publicDirectory { configuration.publicDirectory = directory }
    let dashboardSearch = locateDashboard(&configuration)

    // One server per SQLite directory: a second one would keep its own token cache and statistics
    // series, and disagree with the first. Held until the process ends.
    let lock: DataDirectoryLock?
    if configuration.database == nil {
        prepareDataDirectory(configuration.dataDirectory)
        do { lock = try DataDirectoryLock(directory: configuration.dataDirectory) } catch let error as DataDirectoryError {
            fail(error.description)
        } catch {
            fail("\(error)")
        }
    } else {
        lock = nil
    }
    let store = openStore(configuration)
    let admin: (token: String, origin: AdminToken.Origin)
    do {
        admin = try AdminToken.resolve(environment: ProcessInfo.processInfo.environment,
                                       dataDirectory: configuration.dataDirectory)
    } catch let error as ConfigurationError {
        fail(error.description)
    } catch {
        fail("\(error)")
    }

    let log = AccessLog()
    // A descriptor per connection: a soft limit of 1,024 (systemd's default) would run out long
    // before `maxConnections`. Logged once the server listens (its first line says where).
    let fileLimits = HTTPServer.raiseOpenFileLimit()
    let application = HealthApplication(configuration: configuration, store: store, adminToken: admin.token,
                                        accessLog: log)
    // Connections stop short of the limit: a process out of descriptors can be ended by libdispatch.
    let serverConfiguration = fileLimits.map { configuration.serverConfiguration.fitted(toOpenFileLimit: $0.soft) }
        ?? configuration.serverConfiguration
    let server = HTTPServer(configuration: serverConfiguration, responder: application) { event in
        log.event("protocol error", level: "warning", fields: [
            ("status", String(event.status.code)), ("detail", event.detail), ("remote", event.remoteAddress),
        ])
    }
    do {
        try server.start()
    } catch HTTPServerError.addressInUse(let host, let port) {
        // The usual first-run stumble: another healthd (or anything else) already has the port.
        fail("cannot listen on \(host):\(port): another program is listening there (perhaps another healthd); "
            + "stop it, or choose a port with --port P (--port 0 picks a free one and prints it)")
    } catch {
        fail("cannot listen on \(configuration.host):\(configuration.port): \(error)")
    }
    application.connections.connect {
        let statistics = server.statistics
        return (open: statistics.openConnections, accepted: UInt64(statistics.acceptedConnections))
    }

    lock?.record(port: server.boundPort)
    let hostForURL = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
    let baseURL = "http://\(hostForURL):\(server.boundPort)"
    say("healthd \(HealthdVersion.string) listening on \(baseURL)")
    if let fileLimits {
        log.event("open file limit", fields: [("soft", String(fileLimits.soft)), ("hard", String(fileLimits.hard)),
                                              ("softAtStart", String(fileLimits.previousSoft)),
                                              ("maxConnections", String(serverConfiguration.maxConnections))])
    }
    // Where the data goes: a binary started from another directory keeps `./healthd-data` there.
    if let url = configuration.database {
        say("data: PostgreSQL, \((try? PostgresConfiguration(url: url))?.redactedURL ?? "(the URL)")")
    } else if let sqlite = store as? SQLiteHealthStore {
        say("data: SQLite, \(URL(fileURLWithPath: sqlite.databasePath).standardizedFileURL.path)")
    }
    switch admin.origin {
    case .environment: say("admin token: from HEALTHD_ADMIN_TOKEN")
    case .file: say("admin token: in \(adminTokenPath(configuration))")
    case .generated: say("admin token (shown once; also saved in \(adminTokenPath(configuration))): \(admin.token)")
    }
    let hasDashboard = application.hasDashboard && PublicDirectory.isDashboard(configuration.publicDirectory)
    if hasDashboard {
        say("dashboard files: \(configuration.publicDirectory)")
    } else {
        warnNoDashboard(configuration, dashboardSearch)
        log.event("dashboard folder not found; static files are off", level: "warning",
                  fields: [("publicDir", configuration.publicDirectory)])
    }
    if options.demo {
        // A browser cannot open the wildcard address: point the dashboard link at loopback.
        let dashboardHost = ["0.0.0.0", "::", "[::]"].contains(configuration.host)
            ? (configuration.host == "0.0.0.0" ? "127.0.0.1" : "[::1]") : hostForURL
        // Off the main thread, which waits for stop signals: a stop during seeding is not delayed.
        DispatchQueue.global().async {
            prepareDemo(store: store, baseURL: "http://\(dashboardHost):\(server.boundPort)", zone: demoTimeZone(options.timeZone),
                        hasDashboard: hasDashboard)
        }
    }
    waitForStopSignals(server: server, application: application, store: store, log: log)
}

/// SIGTERM and SIGINT stay blocked in every thread and are taken with `sigwait` on the main thread.
/// A Dispatch signal source with the signal ignored lost a stop sent just after "listening on": until
/// the main thread reached `dispatchMain()` it did not block the signal, and the kernel discards an
/// ignored signal delivered to a thread that does not block it. A blocked signal stays pending until
/// taken, whenever it was sent.
enum StopSignals {
    static func set() -> sigset_t {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        return signals
    }

    /// Blocks both in the calling thread and in every thread it starts later.
    static func block() {
        var signals = set()
        pthread_sigmask(SIG_BLOCK, &signals, nil)
    }

    /// Waits for the next SIGTERM or SIGINT.
    static func next() -> Int32 {
        var signals = set()
        var received: Int32 = 0
        while sigwait(&signals, &received) != 0 {}
        return received
    }
}

/// Graceful stop: stop accepting, let in-flight requests finish, then close the store so the WAL
/// is checkpointed. A second signal stops at once (nothing acknowledged is lost either way: every
/// 2xx was durable before it was sent).
func waitForStopSignals(server: HTTPServer, application: HealthApplication, store: any HealthDataStore,
                        log: AccessLog) -> Never {
    var stopping = false
    while true {
        let signalNumber = StopSignals.next()
        if stopping { exit(1) }
        stopping = true
        log.event("stopping", fields: [("signal", signalNumber == SIGTERM ? "SIGTERM" : "SIGINT")])
        application.beginShutdown()
        server.shutdown {
            application.flushRecentAccess()
            store.close()
            log.event("stopped")
            exit(0)
        }
    }
}

/// `serve --demo`: four weeks and today so far of data for user `demo` (idempotent), then a dashboard URL with a
/// fresh read-only token that opens on a whole day (`DemoSeeder.openingDay`). Runs while the server already
/// answers, so health checks pass meanwhile.
func prepareDemo(store: any HealthDataStore, baseURL: String, zone: DemoTimeZoneChoice, hasDashboard: Bool) {
    let started = Date()
    let timeZone = zone.zone
    do {
        let now = StoreClock.nowMilliseconds()
        let report = try DemoSeeder.seed(store: store, userName: "demo", days: 28,
                                         today: DemoSeeder.today(nowMilliseconds: now, timeZone: timeZone), now: now, timeZone: timeZone)
        let token = try DemoSeeder.dashboardToken(store: store, user: report.user)
        let seconds = String(format: "%.1f", Date().timeIntervalSince(started))
        say("demo user ready: \(report.generated) samples \(report.firstDay) to \(report.lastDay) (\(zone.description)), "
            + "\(report.added) new, in \(seconds) s")
        if hasDashboard {
            // The day in the link, not today: before noon today is mostly empty, and a link opened later still shows seeded data.
            let day = DemoSeeder.openingDay(nowMilliseconds: now, timeZone: timeZone)
            say("dashboard: \(baseURL)/#date=\(day)&token=\(token)")
        } else {
            // No page to open: the token still reads the demo user's data through the API.
            say("demo read token (no dashboard to open, see the warning above): \(token)")
        }
    } catch {
        fail("preparing the demo user failed: \(error)")
    }
}

/// The admin token file's absolute path (printed at every start; the token itself only when generated).
func adminTokenPath(_ configuration: HealthdConfiguration) -> String {
    URL(fileURLWithPath: configuration.dataDirectory).appendingPathComponent("admin-token").standardizedFileURL.path
}

/// Fills in the dashboard folder when no setting named one, and says what was searched.
func locateDashboard(_ configuration: inout HealthdConfiguration) -> PublicDirectory.Search? {
    guard configuration.publicDirectory.isEmpty else { return nil }
    let search = PublicDirectory.search(executablePath: PublicDirectory.currentExecutable(),
                                        workingDirectory: FileManager.default.currentDirectoryPath)
    // Nothing found: keep a path that does not exist, so the static files stay off.
    configuration.publicDirectory = search.found ?? FileManager.default.currentDirectoryPath + "/Public"
    return search
}

/// A person reads this on the terminal: the API works, but / and /openapi.json will answer 404.
func warnNoDashboard(_ configuration: HealthdConfiguration, _ search: PublicDirectory.Search?) {
    let looked = search.map { "looked in " + $0.tried.joined(separator: ", ") }
        ?? "\(configuration.publicDirectory) holds no index.html"
    FileHandle.standardError.write(Data(("healthd: warning: no dashboard files (\(looked)); the API works, but / and "
        + "/openapi.json answer 404. Point --public-dir or HEALTHD_PUBLIC_DIR at the repository's Public folder.\n").utf8))
}
