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
            timeouts: HTTPTimeouts(idle: idleTimeoutSeconds, header: headerTimeoutSeconds, body: bodyTimeoutSeconds,
                                   minBodyBytesPerSecond: minBodyBytesPerSecond, minBodyRateSeconds: minBodyRateSeconds),
            maxConnections: maxConnections, maxConnectionsPerAddress: effectiveMaxConnectionsPerAddress,
            maxStreamBacklogBytes: maxStreamBacklogBytes, loopCount: eventLoops,
            maxBodyBytesInFlight: maxBodyBytesInFlight, proxies: proxyPolicy)
    }

    /// Behind trusted reverse proxies, connections count for the client each request names.
    private var proxyPolicy: HTTPProxyPolicy? {
        guard !trustedProxies.isEmpty else { return nil }
        let resolver = ClientAddressResolver(trustedProxies: trustedProxies, header: trustedProxyHeader)
        return HTTPProxyPolicy(isTrustedProxy: { IPAddress($0).map(resolver.isTrusted) ?? false },
                               clientAddress: { resolver.clientAddress(peer: $0, headers: $1) })
    }
}
