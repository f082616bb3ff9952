import Testing
import HealthAPI
import HealthStore
@testable import HealthdCommandLine

@Suite struct CommandLineParserTests {
    @Test func serveTakesItsFlagsAndTheCommonOnes() throws {
        guard case .serve(let options) = try CommandLineParser.parse(
            ["serve", "--port", "0", "--host", "::", "--demo", "--data-dir", "/tmp/d", "--config", "c.json"]) else {
            Issue.record("not serve"); return
        }
        #expect(options.port == 0 && options.host == "::" && options.demo)
        #expect(options.common == CommonOptions(configFile: "c.json", dataDirectory: "/tmp/d"))
    }

    @Test func serveDemoAndSeedTakeTheDemoPersonsTimeZone() throws {
        guard case .serve(let serve) = try CommandLineParser.parse(["serve", "--demo", "--time-zone", "America/New_York"]),
              case .seed(let seed) = try CommandLineParser.parse(["seed", "--user", "a", "--time-zone", "Asia/Tokyo"]),
              case .seed(let local) = try CommandLineParser.parse(["seed", "--user", "a"]) else {
            Issue.record("not serve and seed"); return
        }
        #expect(serve.timeZone == "America/New_York" && serve.demo)
        #expect(seed.timeZone == "Asia/Tokyo")
        #expect(local.timeZone == nil, "nil: the server's local zone")
        #expect(HelpText.text(for: "seed").contains("--time-zone"))
    }

    @Test func inviteTakesTheNameAndTheCommonFlags() throws {
        guard case .invite(let options) = try CommandLineParser.parse(["invite", "jane", "--data-dir", "/tmp/d"]) else {
            Issue.record("not invite"); return
        }
        #expect(options.user == "jane")
        #expect(options.common == CommonOptions(dataDirectory: "/tmp/d"))
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["invite"]) }
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["invite", "jane", "john"]) }
        #expect(HelpText.overview.contains("invite") && HelpText.text(for: "invite").contains("7 days"))
    }

    @Test func usersTakesJSONAndTheCommonFlagsAndNothingElse() throws {
        guard case .users(let plain) = try CommandLineParser.parse(["users"]),
              case .users(let json) = try CommandLineParser.parse(
                ["users", "--json", "--database", "postgres://h@localhost:5432/healthd", "--config", "c.json"]) else {
            Issue.record("not users"); return
        }
        #expect(plain == UsersOptions())
        #expect(json.json && json.common == CommonOptions(configFile: "c.json", database: "postgres://h@localhost:5432/healthd"))
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["users", "jane"]) }
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["users", "--data-dir"]) }
        #expect(try CommandLineParser.parse(["users", "--help"]) == .help(topic: "users"))
        #expect(HelpText.overview.contains("users") && HelpText.text(for: "users").contains("GET /v1/users"))
    }

    @Test func usersPrintsALinePerUserWithTheNamesLinedUp() {
        let users = [UserListing(user: User(rowID: 1, id: "u1", name: "ada"), created: 1_764_324_000_000, activated: true),
                     UserListing(user: User(rowID: 2, id: "u2", name: "grace"), created: 1_764_324_060_500, activated: false)]
        #expect(UserListText.lines(users) == ["u1  ada    created 2025-11-28T10:00:00.000Z  activated",
                                              "u2  grace  created 2025-11-28T10:01:00.500Z  not activated"])
        #expect(UserListText.lines([]).isEmpty)
        #expect(String(decoding: UserListJSON.bytes(Array(users.prefix(1))), as: UTF8.self)
                == #"{"users":[{"id":"u1","name":"ada","created":"2025-11-28T10:00:00.000Z","activated":true}]}"#)
    }

    @Test func helpForACommand() throws {
        #expect(try CommandLineParser.parse(["--help"]) == .help(topic: nil))
        #expect(try CommandLineParser.parse(["import", "-h"]) == .help(topic: "import"))
        #expect(HelpText.text(for: "serve").contains("--port"))
    }

    @Test func mistakesAreUsageErrorsThatSayWhatToDo() {
        for (arguments, words) in [(["serve", "--port", "70000"], "0 to 65535"), (["frobnicate"], "unknown command"),
                                   (["import", "export.zip"], "--user"), (["seed", "--days", "0"], "1 to 3660"),
                                   (["serve", "--verbose"], "unknown option")] {
            #expect(throws: UsageError.self, "\(arguments)") { try CommandLineParser.parse(arguments) }
            do { _ = try CommandLineParser.parse(arguments) } catch { #expect(error.description.contains(words), "\(error)") }
        }
    }
}

@Suite struct CommandLineFirstContactTests {
    @Test func noCommandIsUsageAndVersionIsACommand() throws {
        #expect(try CommandLineParser.parse([]) == .usage)
        #expect(try CommandLineParser.parse(["--version"]) == .version)
        #expect(try CommandLineParser.parse(["version"]) == .version)
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["--version", "serve"]) }
        #expect(HelpText.overview.contains("--version"))
    }

    @Test func servePublicDirectoryFlagAndItsHelp() throws {
        guard case .serve(let options) = try CommandLineParser.parse(["serve", "--public-dir", "/srv/Public"]) else {
            Issue.record("not serve"); return
        }
        #expect(options.publicDirectory == "/srv/Public")
        let help = HelpText.text(for: "serve")
        #expect(help.contains("--public-dir") && help.contains("HEALTHD_PUBLIC_DIR") && help.contains("HEALTHD_PORT"))
    }

    /// A command's usage lines show every option its help explains.
    @Test(arguments: ["serve", "seed", "import", "export", "invite", "users"])
    func usageLinesNameEveryExplainedOption(command: String) throws {
        let help = HelpText.text(for: command)
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        let usageEnd = lines.firstIndex(where: { $0.isEmpty }) ?? lines.count
        let options = try Regex(#"--[a-z][a-z-]*"#)
        func named(_ part: ArraySlice<Substring>) -> Set<String> {
            Set(part.flatMap { $0.matches(of: options).map { String($0.output[0].substring ?? "") } }).subtracting(["--help"])
        }
        let explained = Set(lines[usageEnd...].filter { $0.hasPrefix("  --") }.compactMap { $0.matches(of: options).first.map { String($0.output[0].substring ?? "") } })
            .subtracting(["--help"])
        #expect(!explained.isEmpty && explained.isSubset(of: named(lines[..<usageEnd])),
                "\(command): usage \(named(lines[..<usageEnd]).sorted()), explained \(explained.sorted())")
    }
}
