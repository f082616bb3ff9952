import HealthdSettings
import Foundation
import HTTPServer
import HealthAPI
import HealthStore
import SQLiteStore

/// healthd's application and HTTP server in this process, on a fresh temporary store, for the
/// benchmarks that need real HTTP plus direct access to the store.
final class InProcessServer {
    let directory: String
    private let keepsDirectory: Bool
    let store: SQLiteHealthStore
    let application: HealthApplication
    let server: HTTPServer
    var port: Int { server.boundPort }

    /// `connections`: how many connections the benchmark will hold open at once. `directory`: an
    /// existing data directory to serve (kept by `stop`) instead of a fresh temporary one.
    /// `healthAutoExportBodyLimit`: the Health Auto Export route's body limit when not the default.
    init(name: String, connections: Int = 0, port: Int = 0, directory existing: String? = nil,
         healthAutoExportBodyLimit: Int? = nil, webhookAllowedHosts: [String] = []) throws {
        directory = existing ?? NSTemporaryDirectory() + "healthd-bench-\(name)-" + UUID().uuidString
        keepsDirectory = existing != nil
        var configuration = HealthdConfiguration()
        configuration.dataDirectory = directory
        configuration.accessLog = false
        // Every benchmark client is one loopback address: the abuse limits would measure themselves.
        configuration.rateLimitPerAddressPerSecond = 0
        configuration.rateLimitPerTokenPerSecond = 0
        configuration.webhookAllowedHosts = webhookAllowedHosts
        store = try SQLiteHealthStore(directory: directory)
        application = HealthApplication(configuration: configuration, store: store,
                                        adminToken: "bench-admin-token-0123456789", accessLog: nil)
        var serverConfiguration = HTTPServerConfiguration(host: "127.0.0.1", port: port)
        serverConfiguration.limits.bodyLimitOverrides = [
            HealthAutoExportRoutes.bodyLimit(healthAutoExportBodyLimit ?? configuration.maxHealthAutoExportBodyBytes),
        ]
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
        if !keepsDirectory { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// `healthd-bench http-serve --port P [--work-dir DIR]`: serves until killed. It is the same
    /// server and application as `healthd serve` (access log and abuse limits off), but it parks
    /// the main thread instead of calling `dispatchMain`, which valgrind cannot run, so
    /// Benchmarks/http-instructions.sh can count instructions per request.
    static func serve(_ arguments: [String]) -> Int32 {
        var port = 18090
        var directory: String?
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            switch (flag, rest.popFirst()) {
            case ("--port", let value?): port = Int(value) ?? port
            case ("--work-dir", let value?): directory = value
            default: benchFail("usage: healthd-bench http-serve [--port P] [--work-dir DIR]")
            }
        }
        do {
            let harness = try InProcessServer(name: "http", connections: 64, port: port, directory: directory)
            FileHandle.standardOutput.write(Data("listening on http://127.0.0.1:\(harness.port)\n".utf8))
            withExtendedLifetime(harness) { while true { sleep(3600) } }
            return 0
        } catch {
            benchFail("\(error)")
        }
    }
}
