import HealthdSettings
import Foundation
import HealthAPI
import Testing
@testable import HealthdCommandLine

@Suite struct ConfigurationFileTests {
    @Test func configurationFileReadsTheLimitsAndChecksOrigins() throws {
        let text = #"{"rateLimitPerAddressPerSecond": 5, "rateLimitPerAddressBurst": 10, "rateLimitPerTokenPerSecond": 0,"#
            + #" "authenticationFailureCost": 7, "maxConnectionsPerAddress": 3, "corsOrigins": ["https://a.example:8443"]}"#
        let configuration = try ConfigurationFile.apply(Array(text.utf8), to: HealthdConfiguration())
        #expect(configuration.rateLimitPerAddressPerSecond == 5 && configuration.rateLimitPerAddressBurst == 10)
        #expect(configuration.rateLimitPerTokenPerSecond == 0 && configuration.authenticationFailureCost == 7)
        #expect(configuration.maxConnectionsPerAddress == 3 && configuration.corsOrigins == ["https://a.example:8443"])
        #expect(HealthdConfiguration().effectiveMaxConnectionsPerAddress == HealthdConfiguration().maxConnections)
        let proxies = #"{"trustedProxies": ["10.0.0.0/8", "fd00::/8", "192.0.2.7"], "trustedProxyHeader": "Forwarded"}"#
        let behindProxy = try ConfigurationFile.apply(Array(proxies.utf8), to: HealthdConfiguration())
        #expect(behindProxy.trustedProxies.map(\.description) == ["10.0.0.0/8", "fd00::/8", "192.0.2.7/32"])
        #expect(behindProxy.trustedProxyHeader == .forwarded)
        for bad in [#"{"trustedProxies": ["10.0.0.0/33"]}"#, #"{"trustedProxies": ["example.com"]}"#,
                    #"{"trustedProxies": "10.0.0.0/8"}"#, #"{"trustedProxyHeader": "X-Real-IP"}"#,
                    #"{"corsOrigins": ["https://a.example/path"]}"#, #"{"corsOrigins": ["*"]}"#,
                    #"{"rateLimitPerTokenBurst": -1}"#, #"{"corsOrigins": "https://a.example"}"#] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try ConfigurationFile.apply(Array(bad.utf8), to: HealthdConfiguration()) }
        }
    }

    /// The example file in the repository is what people copy: it must load as it stands.
    @Test func theExampleConfigurationLoads() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let data = try Data(contentsOf: root.appendingPathComponent("config.example.json"))
        let configuration = try ConfigurationFile.apply([UInt8](data), to: HealthdConfiguration())
        #expect(configuration.port == 8080)
    }

    /// The reader, `HealthdConfiguration.fileKeys`, config.example.json and the Configuration
    /// table of docs/operations.md name the same keys, so no setting is undocumented or documented wrongly.
    @Test func everyKeyIsReadListedInTheExampleAndInTheOperationsGuide() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let keys = Set(HealthdConfiguration.fileKeys)
        // Each listed key is read: a value of the wrong type is refused under its name, never as unknown.
        for key in keys {
            #expect {
                _ = try ConfigurationFile.apply(Array(#"{"\#(key)": {}}"#.utf8), to: HealthdConfiguration())
            } throws: { error in
                let text = (error as? ConfigurationError)?.description ?? ""
                return text.hasPrefix("\(key): ") && !text.contains("unknown field")
            }
        }
        // The reader reads no key the list leaves out.
        let source = try String(contentsOf: root.appendingPathComponent("Sources/HealthdCommandLine/ConfigurationFile.swift"), encoding: .utf8)
        let pattern = try Regex(#"(?:integer|seconds|rate|optional[A-Za-z]+)\("([A-Za-z]+)""#)
        let read = Set(source.matches(of: pattern).compactMap { $0.output[1].substring.map(String.init) })
        #expect(read == keys, "read but not listed: \(read.subtracting(keys)); listed but not read: \(keys.subtracting(read))")
        // The example holds each key, with its value or as a `// key` comment only.
        let example = try JSONSerialization.jsonObject(with: Data(contentsOf: root.appendingPathComponent("config.example.json")))
        let named = Set(((example as? [String: Any])?.keys ?? [:].keys).map { $0.hasPrefix("// ") ? String($0.dropFirst(3)) : $0 })
        #expect(named.subtracting(["healthd configuration"]) == keys)
        // The Configuration section of docs/operations.md names each one.
        let operations = try String(contentsOf: root.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let section = operations.components(separatedBy: "\n## Configuration\n").dropFirst().first?.components(separatedBy: "\n## ").first ?? ""
        for key in keys.sorted() { #expect(section.contains("`\(key)`"), "the Configuration section of docs/operations.md does not name \(key)") }
    }
}

@Suite struct StatisticsMemorySettingTests {
    /// The statistics memory budget: 64 MiB unless the config file, or serve's flag, says otherwise.
    @Test func statisticsMemoryComesFromTheFileOrTheFlag() throws {
        #expect(HealthdConfiguration().statisticsMemoryMiB == 64)
        let configuration = try ConfigurationFile.apply(Array(#"{"statisticsMemoryMiB": 512}"#.utf8), to: HealthdConfiguration())
        #expect(configuration.statisticsMemoryMiB == 512)
        #expect(throws: ConfigurationError.self) {
            try ConfigurationFile.apply(Array(#"{"statisticsMemoryMiB": 0}"#.utf8), to: HealthdConfiguration())
        }
        guard case .serve(let serve) = try CommandLineParser.parse(["serve", "--statistics-memory", "16"]) else {
            Issue.record("not serve")
            return
        }
        #expect(serve.statisticsMemoryMiB == 16)
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["serve", "--statistics-memory", "lots"]) }
    }
}

@Suite struct UUIDKeyMemorySettingTests {
    /// The uuid keys' memory budget: 32 MiB (the SQLite store's own default) unless the config file says
    /// otherwise, within 1 to 65536 MiB; the example file states the default.
    @Test func uuidKeyMemoryComesFromTheFileWithinItsRange() throws {
        #expect(HealthdConfiguration().uuidKeyMemoryMiB == 32)
        let configuration = try ConfigurationFile.apply(Array(#"{"uuidKeyMemoryMiB": 256}"#.utf8), to: HealthdConfiguration())
        #expect(configuration.uuidKeyMemoryMiB == 256)
        for refused in ["0", "65537", "-1", "1.5", #""32""#] {
            let error = #expect(throws: ConfigurationError.self) {
                try ConfigurationFile.apply(Array(#"{"uuidKeyMemoryMiB": \#(refused)}"#.utf8), to: HealthdConfiguration())
            }
            #expect(error?.description.contains("uuidKeyMemoryMiB") == true, "\(refused): \(error?.description ?? "")")
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let example = try ConfigurationFile.apply([UInt8](try Data(contentsOf: root.appendingPathComponent("config.example.json"))),
                                                  to: HealthdConfiguration())
        #expect(example.uuidKeyMemoryMiB == HealthdConfiguration().uuidKeyMemoryMiB)
    }
}

@Suite struct DatabaseSettingTests {
    /// SQLite in the data directory unless a PostgreSQL URL is given, by flag or by the file; anything
    /// else is refused up front instead of quietly falling back to SQLite.
    @Test func postgresURLComesFromTheFileOrTheFlag() throws {
        #expect(HealthdConfiguration().database == nil)
        let file = try ConfigurationFile.apply(Array(#"{"database": "postgres://healthd@db:5432/healthd"}"#.utf8), to: HealthdConfiguration())
        #expect(file.database == "postgres://healthd@db:5432/healthd")
        for bad in [#"{"database": "healthd.sqlite"}"#, #"{"database": "mysql://db/x"}"#, #"{"database": 5432}"#,
                    #"{"database": "postgres://db/x y"}"#] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try ConfigurationFile.apply(Array(bad.utf8), to: HealthdConfiguration()) }
        }
        for command in ["serve", "seed", "import", "export"] {
            let extra = command == "serve" ? [] : (command == "import" ? ["f.zip", "--user", "u"] : ["--user", "u"])
            let parsed = try CommandLineParser.parse([command, "--database", "postgresql://u@h/db"] + extra)
            let common: CommonOptions? = switch parsed {
            case .serve(let options): options.common
            case .seed(let options): options.common
            case .importFile(let options): options.common
            case .export(let options): options.common
            default: nil
            }
            #expect(common?.database == "postgresql://u@h/db", "\(command)")
        }
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["serve", "--database", "./data.sqlite"]) }
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["serve", "--database"]) }
    }
}
