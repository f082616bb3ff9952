import Foundation
import Testing
import HTTP
@testable import HealthAPI
import ClientThreads
import Synchronization

@Suite struct OperationsTests {
    @Test func healthzNeedsNoToken() throws {
        let server = try TestServer()
        let reply = server.request(.get, "/healthz")
        #expect(reply.status == 200)
        #expect(reply.text == #"{"status":"ok"}"#)
        #expect(reply.headers["X-Request-Id"] != nil)
    }

    @Test func unknownRouteIsProblemJSON404() throws {
        let server = try TestServer()
        let reply = server.request(.get, "/v1/nope", token: TestServer.adminToken)
        #expect(reply.status == 404)
        #expect(reply.headers["Content-Type"] == "application/problem+json")
        #expect(reply.code == "errorNotFound")
        #expect(reply["status"]?.numberValue == 404)
        #expect(reply["title"]?.stringValue == "Not Found")
    }

    /// A trailing slash is the commonest typo in a route: the 404 names the route without it.
    @Test func aTrailingSlashIsA404NamingTheRoute() throws {
        let server = try TestServer()
        for (path, route) in [("/v1/samples/?type=stepCount", "/v1/samples"), ("/healthz/", "/healthz")] {
            let reply = server.request(.get, path, token: TestServer.adminToken)
            #expect(reply.status == 404 && reply.code == "errorNotFound", "\(reply.text)")
            #expect(reply["detail"]?.stringValue?.contains("the route is \(route), without the trailing slash") == true, "\(reply.text)")
        }
        let unknown = server.request(.get, "/v1/nope/", token: TestServer.adminToken)
        #expect(unknown.status == 404 && unknown["detail"]?.stringValue == "no route for GET /v1/nope/", "\(unknown.text)")
    }

    @Test func wrongMethodIs405WithAllow() throws {
        let server = try TestServer()
        let reply = server.request(.delete, "/healthz")
        #expect(reply.status == 405)
        #expect(reply.headers["Allow"]?.contains("GET") == true)
    }

    @Test func metricsCountRequestsByRoute() throws {
        let server = try TestServer()
        _ = server.request(.get, "/healthz")
        let reply = server.request(.get, "/metrics")
        #expect(reply.status == 200)
        #expect(reply.headers["Content-Type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        #expect(reply.text.contains(#"healthd_http_requests_total{route="/healthz",method="GET",status="200"} 1"#))
        #expect(reply.text.contains("healthd_http_request_duration_seconds_bucket{le=\"+Inf\"}"))
        #expect(reply.text.contains("healthd_store_bytes "))
        #expect(reply.text.contains("healthd_statistics_cache_hits_total 0\n"))
        #expect(reply.text.contains("healthd_statistics_cache_budget_bytes \(64 << 20)\n"))
    }

    @Test func metricsAddUpRequestsCountedOnManyThreads() {
        // Each thread counts into its own shard; the rendered totals must be the sum of all of them.
        let metrics = Metrics()
        onThreads(8) { thread in
            for index in 0 ..< 1_000 {
                metrics.recordRequest(route: "/healthz", method: "GET", status: index % 10 == 0 ? 503 : 200,
                                      seconds: thread % 2 == 0 ? 0.0004 : 0.02)
            }
        }
        let text = metrics.render(gauges: Metrics.Gauges(openConnections: 0, acceptedConnections: 0, storeBytes: 0))
        #expect(text.contains(#"healthd_http_requests_total{route="/healthz",method="GET",status="200"} 7200"#))
        #expect(text.contains(#"healthd_http_requests_total{route="/healthz",method="GET",status="503"} 800"#))
        #expect(text.contains(#"healthd_http_request_duration_seconds_bucket{le="0.0005"} 4000"#))
        #expect(text.contains(#"healthd_http_request_duration_seconds_bucket{le="0.025"} 8000"#))
        #expect(text.contains("healthd_http_request_duration_seconds_count 8000\n"))
    }

    @Test func metricsCountRunsAndChangesOfRoute() {
        // One thread: a run of one route is counted apart from the table until the route changes.
        let metrics = Metrics()
        for route in ["/a", "/a", "/b", "/a", "/a", "/a", "/b", "/b"] {
            metrics.recordRequest(route: route, method: "GET", status: 200, seconds: 0.001)
        }
        let gauges = Metrics.Gauges(openConnections: 0, acceptedConnections: 0, storeBytes: 0)
        for _ in 0 ..< 2 {  // rendering reads the counts without consuming them
            let text = metrics.render(gauges: gauges)
            #expect(text.contains(#"healthd_http_requests_total{route="/a",method="GET",status="200"} 5"#))
            #expect(text.contains(#"healthd_http_requests_total{route="/b",method="GET",status="200"} 3"#))
        }
        metrics.recordRequest(route: "/b", method: "GET", status: 200, seconds: 0.001)
        #expect(metrics.render(gauges: gauges).contains(#"healthd_http_requests_total{route="/b",method="GET",status="200"} 4"#))
    }

    /// Request ids are `<connection>-<counter>` in base 36, zero and the largest values included.
    @Test func requestIDsAreConnectionAndCounterInBase36() {
        let counter = RequestCounter()
        for connection: UInt64 in [0, 7, 35, 36, 123_456_789, .max] {
            let id = counter.next(connection: connection)
            let parts = id.split(separator: "-")
            #expect(parts.count == 2 && parts[0] == String(connection, radix: 36), "\(id)")
            #expect(UInt64(parts.last ?? "", radix: 36) != nil, "\(id)")
        }
        #expect(counter.next(connection: 1) == "1-7" && counter.next(connection: 1) == "1-8")
    }

    /// A latency on a bucket's bound counts in that bucket (Prometheus' `le`), one just above it in
    /// the next; past the last bound only the `+Inf` count and the sum hold it.
    @Test func latencyBucketsIncludeTheirUpperBound() {
        #expect(Metrics.bucketIndex(seconds: 0) == 0)
        #expect(Metrics.bucketIndex(seconds: 0.0005) == 0)
        #expect(Metrics.bucketIndex(seconds: 0.000_500_1) == 1)
        #expect(Metrics.bucketIndex(seconds: 0.3) == Metrics.latencyBuckets.firstIndex(of: 0.5))
        #expect(Metrics.bucketIndex(seconds: 10) == Metrics.latencyBuckets.count - 1)
        #expect(Metrics.bucketIndex(seconds: 10.5) == nil)
        for (index, bound) in Metrics.latencyBuckets.enumerated() {
            #expect(Metrics.bucketIndex(seconds: bound) == index)
            #expect(Metrics.bucketIndex(seconds: bound.nextUp) == (index + 1 < Metrics.latencyBuckets.count ? index + 1 : nil))
        }
    }

    /// The route lookup reads the path's bytes in place: a path sliced from a longer target (the
    /// query after it) must route exactly like the same path on its own.
    @Test func pathWithQueryRoutesLikeThePathAlone() throws {
        let server = try TestServer()
        #expect(server.request(.get, "/healthz?probe=1").status == 200)
        #expect(server.request(.get, "/healthz").status == 200)
        #expect(server.request(.get, "/healthz/?x").status == 404)
    }

    @Test func unknownQueryParameterIs400() throws {
        let server = try TestServer()
        let reply = server.request(.get, "/metrics?verbose=1")
        #expect(reply.status == 400)
        #expect(reply.text.contains("verbose"))
    }

    @Test func missingOrWrongTokenIs401() throws {
        let server = try TestServer()
        #expect(server.request(.post, "/v1/users", json: #"{"name":"a"}"#).status == 401)
        let wrong = server.request(.post, "/v1/users", token: "nope", json: #"{"name":"a"}"#)
        #expect(wrong.status == 401)
        #expect(wrong.code == "errorAuthenticationRequired")
        #expect(wrong.headers["WWW-Authenticate"]?.hasPrefix("Bearer") == true)
    }
}

@Suite struct StaticFileTests {
    @Test(arguments: [
        "/../secret", "/%2e%2e/secret", "/..%2fsecret", "/%2e%2e%2fsecret", "/a/..%2f..%2fsecret",
        "/.hidden", "/%00", "/..\\secret", "/%zz", "/%c0%ae%c0%ae/secret",
    ])
    func pathsOutsidePublicAreRefused(path: String) {
        #expect(StaticFileServer.relativePath(fromRawPath: path) == nil)
    }

    @Test func plainPathsDecode() {
        #expect(StaticFileServer.relativePath(fromRawPath: "/") == "")
        #expect(StaticFileServer.relativePath(fromRawPath: "/css/app%20main.css") == "css/app main.css")
    }

    @Test func servesFilesWithTypesCachingAndCSP() throws {
        let server = try TestServer()
        let publicDir = server.directory + "/Public"
        try FileManager.default.createDirectory(atPath: publicDir, withIntermediateDirectories: true)
        try Data("<html>hi</html>".utf8).write(to: URL(fileURLWithPath: publicDir + "/index.html"))
        try Data("body{}".utf8).write(to: URL(fileURLWithPath: publicDir + "/app.css"))
        try Data("secret".utf8).write(to: URL(fileURLWithPath: server.directory + "/outside.txt"))
        try FileManager.default.createSymbolicLink(atPath: publicDir + "/link.txt", withDestinationPath: server.directory + "/outside.txt")
        let fresh = try TestServer { $0.publicDirectory = publicDir }
        let index = fresh.request(.get, "/")
        #expect(index.status == 200)
        #expect(index.headers["Content-Type"] == "text/html; charset=utf-8")
        #expect(index.headers["Cache-Control"] == "no-cache")
        #expect(index.headers["Content-Security-Policy"]?.contains("default-src 'self'") == true)
        let css = fresh.request(.get, "/app.css")
        #expect(css.headers["Content-Type"] == "text/css; charset=utf-8")
        let etag = try #require(css.headers["ETag"])
        #expect(fresh.request(.get, "/app.css", headers: [("If-None-Match", etag)]).status == 304)
        #expect(fresh.request(.get, "/link.txt").status == 404, "a symlink pointing out of Public/ is not followed")
        #expect(fresh.request(.get, "/missing.js").status == 404)
    }

    /// A file larger than a chunk is streamed with its length announced: the response holds no copy
    /// of the file, and the stream carries it in chunks of at most `chunkSize`, byte for byte.
    @Test func largeFilesAreStreamedInChunksWithTheirLength() throws {
        let server = try TestServer()
        let publicDir = server.directory + "/Public"
        try FileManager.default.createDirectory(atPath: publicDir, withIntermediateDirectories: true)
        try Data("<html>hi</html>".utf8).write(to: URL(fileURLWithPath: publicDir + "/index.html"))
        let size = StaticFileServer.chunkSize * 5 + 123
        var generator = SystemRandomNumberGenerator()
        let content = (0 ..< size).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }
        try Data(content).write(to: URL(fileURLWithPath: publicDir + "/big.bin"))
        let files = try #require(StaticFileServer(root: publicDir))
        let request = HTTPRequest(method: .get, target: "/big.bin", version: .http1_1, headers: HTTPHeaders(), body: [])
        let response = files.response(for: request)
        #expect(response.status.code == 200)
        #expect(response.headers["ETag"] != nil && response.headers["Cache-Control"] == "public, max-age=300")
        guard case .sizedStream(let length, let producer) = response.body else {
            Issue.record("a large file was answered whole: \(response.body)")
            return
        }
        #expect(length == size)
        let collector = ChunkRecordingStream()
        producer(collector)
        let chunks = collector.waitForChunks()
        #expect(chunks.joined().elementsEqual(content))
        #expect(chunks.allSatisfy { $0.count <= StaticFileServer.chunkSize } && chunks.count == 6)
        // A small file is still one body with its bytes.
        let small = files.response(for: HTTPRequest(method: .get, target: "/index.html", version: .http1_1,
                                                    headers: HTTPHeaders(), body: []))
        guard case .bytes(let bytes) = small.body else { Issue.record("index.html was streamed"); return }
        #expect(bytes == Array("<html>hi</html>".utf8))
    }
}

/// Records each write separately, as the socket would receive the chunks.
final class ChunkRecordingStream: HTTPBodyStream, Sendable {
    private let state = Mutex<(chunks: [[UInt8]], closed: Bool)>(([], false))
    private let done = DispatchSemaphore(value: 0)

    func write(_ bytes: [UInt8]) -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.chunks.append(bytes)
            return true
        }
    }

    func finish() {
        state.withLock { $0.closed = true }
        done.signal()
    }

    var isClosed: Bool { state.withLock { $0.closed } }
    var bufferedByteCount: Int { 0 }
    func onClose(_ handler: @escaping @Sendable () -> Void) {}

    func waitForChunks() -> [[UInt8]] {
        done.wait()
        return state.withLock { $0.chunks }
    }
}
