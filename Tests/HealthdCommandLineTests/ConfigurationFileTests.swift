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
        for bad in [#"{"corsOrigins": ["https://a.example/path"]}"#, #"{"corsOrigins": ["*"]}"#,
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
}
