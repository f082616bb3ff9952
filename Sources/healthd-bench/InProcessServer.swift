import Foundation
import HTTPServer
import HealthAPI
import HealthStore

/// healthd's application and HTTP server in this process, on a fresh temporary store, for the
/// benchmarks that need real HTTP plus direct access to the store.
final class InProcessServer {
    let directory: String
    let store: HealthStore
    let application: HealthApplication
    let server: HTTPServer
    var port: Int { server.boundPort }

    /// `connections`: how many connections the benchmark will hold open at once.
    init(name: String, connections: Int = 0) throws {
        directory = NSTemporaryDirectory() + "healthd-bench-\(name)-" + UUID().uuidString
        var configuration = HealthdConfiguration()
        configuration.dataDirectory = directory
        configuration.accessLog = false
        // Every benchmark client is one loopback address: the abuse limits would measure themselves.
        configuration.rateLimitPerAddressPerSecond = 0
        configuration.rateLimitPerTokenPerSecond = 0
        store = try HealthStore(directory: directory)
        application = HealthApplication(configuration: configuration, store: store,
                                        adminToken: "bench-admin-token-0123456789", accessLog: nil)
        var serverConfiguration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
        serverConfiguration.limits.bodyLimitOverrides = [HealthAutoExportRoutes.bodyLimit(configuration.maxHealthAutoExportBodyBytes)]
        serverConfiguration.maxConnections = max(serverConfiguration.maxConnections, connections * 2 + 16)
        serverConfiguration.maxConnectionsPerAddress = max(serverConfiguration.maxConnectionsPerAddress, connections * 2 + 16)
        server = HTTPServer(configuration: serverConfiguration, responder: application)
        try server.start()
    }

    /// Answers parked requests, stops the server, closes the store and removes its files.
    func stop() {
        application.beginShutdown()
        let done = DispatchSemaphore(value: 0)
        server.shutdown(deadline: 1) { done.signal() }
        done.wait()
        store.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
