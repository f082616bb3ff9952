import HealthdSettings
import HTTP
import HTTPServer
import HealthAPI

extension HealthdConfiguration {
    /// The server shell's settings from healthd's configuration.
    var serverConfiguration: HTTPServerConfiguration {
        HTTPServerConfiguration(
            host: host, port: port,
            limits: HTTPLimits(maxRequestLineLength: maxRequestLineBytes, maxHeaderBlockLength: maxHeaderBytes,
                               maxHeaderCount: maxHeaderCount, maxBodyLength: maxBodyBytes,
                               bodyLimitOverrides: [HealthAutoExportRoutes.bodyLimit(maxHealthAutoExportBodyBytes)]),
            timeouts: HTTPTimeouts(idle: idleTimeoutSeconds, header: headerTimeoutSeconds, body: bodyTimeoutSeconds),
            maxConnections: maxConnections, maxConnectionsPerAddress: effectiveMaxConnectionsPerAddress,
            maxStreamBacklogBytes: maxStreamBacklogBytes, loopCount: eventLoops)
    }
}
