import HealthdSettings
import JSON

/// Reads `config.example.json`-style files: a JSON object whose keys are `HealthdConfiguration.fileKeys`.
/// Unknown keys and wrong types are errors naming the key.
public enum ConfigurationFile {
    public static func apply(_ bytes: [UInt8], to base: HealthdConfiguration) throws(ConfigurationError) -> HealthdConfiguration {
        var configuration = base
        do throws(JSONFieldError) {
            var reader = try JSONFieldReader(parsing: bytes)
            // Keys starting with "//" are comments, so the example file can explain itself.
            for key in reader.object.keys where key.hasPrefix("//") { _ = reader.optionalValue(key) }
            func integer(_ key: String, _ range: ClosedRange<Int64>, _ apply: (Int) -> Void) throws(JSONFieldError) {
                guard let value = try reader.optionalInteger(key) else { return }
                guard range.contains(value) else { throw reader.error(key, "must be from \(range.lowerBound) to \(range.upperBound)") }
                apply(Int(value))
            }
            func seconds(_ key: String, _ apply: (Double) -> Void) throws(JSONFieldError) {
                guard let value = try reader.optionalNumber(key) else { return }
                guard value > 0, value <= 86_400 else { throw reader.error(key, "must be more than 0 and at most 86400 seconds") }
                apply(value)
            }
            if let host = try reader.optionalString("host") { configuration.host = host }
            try integer("port", 0...65_535) { configuration.port = $0 }
            if let dir = try reader.optionalString("dataDir") { configuration.dataDirectory = dir }
            if let url = try reader.optionalString("database") {
                guard DatabaseSetting.isPostgresURL(url) else { throw reader.error("database", DatabaseSetting.requirement) }
                configuration.database = url
            }
            if let dir = try reader.optionalString("publicDir") { configuration.publicDirectory = dir }
            try integer("maxHeaderBytes", 1_024...1_048_576) { configuration.maxHeaderBytes = $0 }
            try integer("maxHeaderCount", 8...1_000) { configuration.maxHeaderCount = $0 }
            try integer("maxRequestLineBytes", 256...1_048_576) { configuration.maxRequestLineBytes = $0 }
            try integer("maxBodyBytes", 1_024...1_073_741_824) { configuration.maxBodyBytes = $0 }
            try integer("maxHealthAutoExportBodyBytes", 1_024...1_073_741_824) { configuration.maxHealthAutoExportBodyBytes = $0 }
            try seconds("idleTimeoutSeconds") { configuration.idleTimeoutSeconds = $0 }
            try seconds("headerTimeoutSeconds") { configuration.headerTimeoutSeconds = $0 }
            try seconds("bodyTimeoutSeconds") { configuration.bodyTimeoutSeconds = $0 }
            try integer("minBodyBytesPerSecond", 0...1_073_741_824) { configuration.minBodyBytesPerSecond = $0 }
            try seconds("minBodyRateSeconds") { configuration.minBodyRateSeconds = $0 }
            try integer("maxBodyBytesInFlight", 65_536...68_719_476_736) { configuration.maxBodyBytesInFlight = $0 }
            try integer("maxConnections", 1...1_000_000) { configuration.maxConnections = $0 }
            try integer("eventLoops", 0...256) { configuration.eventLoops = $0 }
            try integer("maxStreamBacklogBytes", 4_096...1_073_741_824) { configuration.maxStreamBacklogBytes = $0 }
            try integer("maxBatchSize", 1...100_000) { configuration.maxBatchSize = $0 }
            try integer("tombstoneRetentionDays", 1...36_500) { configuration.tombstoneRetentionDays = $0 }
            try integer("accessLogRetentionDays", 1...36_500) { configuration.accessLogRetentionDays = $0 }
            try integer("readerConnections", 1...64) { configuration.readerConnections = $0 }
            try integer("statisticsMemoryMiB", 1...1_048_576) { configuration.statisticsMemoryMiB = $0 }
            try integer("uuidKeyMemoryMiB", 1...65_536) { configuration.uuidKeyMemoryMiB = $0 }
            if let flag = try reader.optionalBool("accessLog") { configuration.accessLog = flag }
            func rate(_ key: String, _ apply: (Double) -> Void) throws(JSONFieldError) {
                guard let value = try reader.optionalNumber(key) else { return }
                guard value >= 0, value <= 1_000_000 else { throw reader.error(key, "must be from 0 (off) to 1000000") }
                apply(value)
            }
            try rate("rateLimitPerAddressPerSecond") { configuration.rateLimitPerAddressPerSecond = $0 }
            try rate("rateLimitPerAddressBurst") { configuration.rateLimitPerAddressBurst = $0 }
            try rate("rateLimitPerTokenPerSecond") { configuration.rateLimitPerTokenPerSecond = $0 }
            try rate("rateLimitPerTokenBurst") { configuration.rateLimitPerTokenBurst = $0 }
            try rate("authenticationFailureCost") { configuration.authenticationFailureCost = $0 }
            try integer("maxConnectionsPerAddress", 1...1_000_000) { configuration.maxConnectionsPerAddress = $0 }
            if let list = try reader.optionalArray("trustedProxies") {
                var blocks: [CIDRBlock] = []
                for index in 0 ..< list.count {
                    let text = try list.string(at: index)
                    guard let block = CIDRBlock(text) else {
                        throw list.error(at: index, "'\(text)' is not an address block (CIDR: 10.0.0.0/8, fd00::/8, or one address)")
                    }
                    blocks.append(block)
                }
                configuration.trustedProxies = blocks
            }
            if let name = try reader.optionalString("trustedProxyHeader") {
                guard let header = ForwardedHeader(rawValue: name) else {
                    throw reader.error("trustedProxyHeader", "must be \(ForwardedHeader.allCases.map { "'\($0.rawValue)'" }.joined(separator: " or "))")
                }
                configuration.trustedProxyHeader = header
            }
            if let list = try reader.optionalArray("corsOrigins") {
                var origins: [String] = []
                for index in 0 ..< list.count {
                    let origin = try list.string(at: index)
                    guard CORSOrigin.isValid(origin) else {
                        throw list.error(at: index, "'\(origin)' is not an origin (scheme://host[:port], no path)")
                    }
                    origins.append(origin)
                }
                configuration.corsOrigins = origins
            }
            if let list = try reader.optionalArray("webhookAllowedHosts") {
                var hosts: [String] = []
                for index in 0 ..< list.count {
                    let host = try list.string(at: index)
                    guard !host.isEmpty, host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "@") }) else {
                        throw list.error(at: index, "'\(host)' is not a host name or address as written in a URL (no scheme, port or path)")
                    }
                    hosts.append(host)
                }
                configuration.webhookAllowedHosts = hosts
            }
            try reader.finish()
        } catch {
            throw ConfigurationError(error.description)
        }
        return configuration
    }
}
