import Testing
@testable import HTTP

@Suite("Router")
struct RouterTests {
    private func makeRouter() -> Router<String> {
        var router = Router<String>()
        router.register(.get, "/v1/samples", "list")
        router.register(.post, "/v1/samples", "create")
        router.register(.get, "/v1/samples/{uuid}", "get")
        router.register(.delete, "/v1/samples/{uuid}", "delete")
        router.register(.get, "/v1/samples/statistics", "stats")
        router.register(.post, "/v1/ingest/imu/{session}/end", "end")
        router.register(.get, "/", "root")
        return router
    }

    @Test func literalAndParameterRoutes() {
        let router = makeRouter()
        guard case .found(let handler, let parameters, let pattern) = router.match(method: .get, path: "/v1/samples/abc-123") else {
            Issue.record("no match")
            return
        }
        #expect(handler == "get")
        #expect(parameters == ["uuid": "abc-123"])
        #expect(pattern == "/v1/samples/{uuid}")

        if case .found(let handler, let parameters, _) = router.match(method: .get, path: "/v1/samples/statistics") {
            #expect(handler == "stats")
            #expect(parameters.isEmpty)
        } else {
            Issue.record("literal should win over a parameter")
        }
        if case .found(let handler, let parameters, _) = router.match(method: .post, path: "/v1/ingest/imu/s%201/end") {
            #expect(handler == "end")
            #expect(parameters == ["session": "s 1"])
        } else {
            Issue.record("no match for ingest end")
        }
        if case .found(let handler, _, _) = router.match(method: .get, path: "/") { #expect(handler == "root") } else { Issue.record("root") }
    }

    @Test func encodedSlashStaysInsideItsSegment() {
        let router = makeRouter()
        guard case .found(_, let parameters, _) = router.match(method: .get, path: "/v1/samples/a%2Fb") else {
            Issue.record("no match")
            return
        }
        #expect(parameters == ["uuid": "a/b"])
    }

    @Test func methodNotAllowedListsAllowedWithImpliedHead() {
        let router = makeRouter()
        guard case .methodNotAllowed(let allowed) = router.match(method: .put, path: "/v1/samples/x") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == [.delete, .get, .head])
        if case .found(let handler, _, _) = router.match(method: .head, path: "/v1/samples") {
            #expect(handler == "list")
        } else {
            Issue.record("HEAD should fall back to GET")
        }
    }

    @Test func notFoundCases() {
        let router = makeRouter()
        for path in ["/v1/nothing", "/v1/samples/", "/v1/samples/a/b", "/v1/samples/%zz", "v1/samples", "/v1/samples/%FF",
                     // An escaped control character is no parameter a route could look up.
                     "/v1/samples/a%00b", "/v1/samples/%0A", "/v1/samples/%7F", "/v1/ingest/imu/s%1B/end"] {
            if case .notFound = router.match(method: .get, path: path[...]) { continue }
            Issue.record("\(path) should not match")
        }
    }

    @Test func registeredRoutesInOrder() {
        let router = makeRouter()
        #expect(router.registeredRoutes.map { "\($0.0) \($0.1)" } == [
            "GET /v1/samples", "POST /v1/samples", "GET /v1/samples/{uuid}", "DELETE /v1/samples/{uuid}",
            "GET /v1/samples/statistics", "POST /v1/ingest/imu/{session}/end", "GET /",
        ])
    }

    @Test func literalPathsFoundByTheirBytesAmongMany() {
        // Enough literal patterns to grow the byte-keyed table several times.
        var router = Router<String>()
        for index in 0 ..< 100 { router.register(.get, "/static/\(index)", "get \(index)") }
        router.register(.post, "/static/7", "post 7")
        router.register(.head, "/static/8", "head 8")
        router.register(.get, "/static/9", "get 9 again")
        for index in [0, 1, 42, 99] {
            guard case .found(let handler, let parameters, let pattern) = router.match(method: .get, path: "/static/\(index)") else {
                Issue.record("/static/\(index) not found")
                continue
            }
            #expect(handler == "get \(index)")
            #expect(parameters.isEmpty)
            #expect(pattern == "/static/\(index)")
        }
        if case .found(let handler, _, _) = router.match(method: .post, path: "/static/7") { #expect(handler == "post 7") } else { Issue.record("POST") }
        // HEAD falls back to GET, unless the path registered HEAD itself.
        if case .found(let handler, _, _) = router.match(method: .head, path: "/static/3") { #expect(handler == "get 3") } else { Issue.record("HEAD") }
        if case .found(let handler, _, _) = router.match(method: .head, path: "/static/8") { #expect(handler == "head 8") } else { Issue.record("HEAD 8") }
        // Registering a method and pattern again replaces the handler.
        if case .found(let handler, _, _) = router.match(method: .get, path: "/static/9") { #expect(handler == "get 9 again") } else { Issue.record("9") }
        guard case .methodNotAllowed(let allowed) = router.match(method: .delete, path: "/static/7") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == [.get, .head, .post])
        for path in ["/static/100", "/static/", "/static", "/static/1/", "/Static/1", "/static/%31"] {
            if case .found(let handler, _, _) = router.match(method: .get, path: path[...]) {
                // An escaped path is decoded by the segment walk: "/static/%31" is "/static/1".
                #expect(path == "/static/%31" && handler == "get 1", "\(path) matched \(handler)")
            }
        }
    }

    /// Matching a request reads its path's bytes in place; it must answer exactly what matching
    /// the path does, whatever the query, escapes, method or shape of the path.
    @Test func requestMatchAgreesWithPathMatch() {
        let router = makeRouter()
        let targets = ["/v1/samples", "/v1/samples?limit=1", "/v1/samples/abc?x=/y", "/v1/samples/statistics?a=%2F",
                       "/v1/samples/a%2Fb", "/v1/ingest/imu/s%201/end", "/", "/?q", "/v1/nothing?x", "/v1/samples/",
                       "/v1/samples/%zz", "*", "/v1/samples/é?é=1", "?x", ""]
        func describe(_ match: RouteMatch<String>) -> String {
            switch match {
            case .found(let handler, let parameters, let pattern): return "found \(handler) \(parameters.sorted { $0.key < $1.key }) \(pattern)"
            case .methodNotAllowed(let allowed): return "405 \(allowed)"
            case .notFound: return "404"
            }
        }
        for target in targets {
            for method in [HTTPMethod.get, .head, .post, .delete, .put] {
                let request = HTTPRequest(method: method, target: target)
                #expect(describe(router.match(method: method, request: request)) == describe(router.match(method: method, path: request.path)),
                        "\(method) \(target)")
            }
        }
        var request = HTTPRequest(method: .get, target: "/v1/samples/x?y")
        request.target = "/v1/samples?limit=2"  // a changed target is searched again
        #expect(describe(router.match(method: .get, request: request)) == "found list [] /v1/samples")
        request.withPathBytes { #expect(Array($0) == Array("/v1/samples".utf8)) }
    }

    @Test func malformedPatternsAreReported() {
        var router = Router<Int>()
        #expect(throws: Router<Int>.RegistrationError.self) { try router.tryRegister(.get, "no-slash", 1) }
        #expect(throws: Router<Int>.RegistrationError.self) { try router.tryRegister(.get, "/a{b}", 1) }
        try? router.tryRegister(.get, "/x/{id}", 1)
        #expect(throws: Router<Int>.RegistrationError.self) { try router.tryRegister(.get, "/x/{other}/y", 1) }
    }
}

@Suite("HTTPQuery and PathNormalizer")
struct QueryAndPathTests {
    @Test func queryDecoding() throws {
        let pairs = try HTTPQuery.parse("start=2026-03-08T09:30:00+01:00&type=heart%20rate&flag&&empty=&a=1&a=2")
        #expect(pairs.map(\.name) == ["start", "type", "flag", "empty", "a", "a"])
        #expect(pairs.map(\.value) == ["2026-03-08T09:30:00+01:00", "heart rate", "", "", "1", "2"])
        #expect(try HTTPQuery.parse("").isEmpty)
        #expect(try HTTPQuery.parse("q=%E2%9C%93")[0].value == "\u{2713}")
    }

    @Test(arguments: ["a=%", "a=%4", "a=%zz", "%G1=1", "a=%FF", "a=%C3%28"])
    func invalidQueriesAreRejected(_ raw: String) {
        #expect(throws: HTTPQueryError.self) { try HTTPQuery.parse(raw[...]) }
    }

    @Test func safePaths() throws {
        #expect(try PathNormalizer.segments("/") == [])
        #expect(try PathNormalizer.segments("/css/site%20main.css") == ["css", "site main.css"])
        #expect(try PathNormalizer.segments("//a///b/") == ["a", "b"])
        #expect(try PathNormalizer.segments("/.well-known/x") == [".well-known", "x"])
    }

    @Test(arguments: [
        ("/../etc/passwd", PathNormalizer.Rejection.dotSegment),
        ("/a/./b", .dotSegment),
        ("/a/%2e%2e/b", .dotSegment),
        ("/a/%2E", .dotSegment),
        ("/a%2Fb", .separatorInSegment),
        ("/a%5Cb", .separatorInSegment),
        ("/a\\b", .separatorInSegment),
        ("/a%00b", .controlCharacter),
        ("/a%zz", .invalidPercentEncoding),
        ("relative", .notAbsolute),
    ])
    func unsafePathsAreRejected(_ path: String, _ rejection: PathNormalizer.Rejection) {
        #expect(throws: rejection) { try PathNormalizer.segments(path) }
    }
}

@Suite("Serialization")
struct SerializationTests {
    @Test func imfFixdate() {
        #expect(HTTPDate.imfFixdate(unixSeconds: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.imfFixdate(unixSeconds: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.imfFixdate(unixSeconds: 951_782_400) == "Tue, 29 Feb 2000 00:00:00 GMT")
        #expect(HTTPDate.imfFixdate(unixSeconds: 1_772_962_200) == "Sun, 08 Mar 2026 09:30:00 GMT")
    }

    @Test func headOwnsFramingHeadersAndStripsControls() {
        var headers = HTTPHeaders()
        headers.add("Content-Length", "999")
        headers.add("X-Evil", "a\r\nSet-Cookie: b")
        headers.add("Content-Type", "text/plain")
        let text = String(decoding: HTTPResponseSerializer.head(status: .ok, headers: headers, framing: .contentLength(2),
                                                                keepAlive: true, requestVersion: .http1_1, date: "D"), as: UTF8.self)
        #expect(text == "HTTP/1.1 200 OK\r\nDate: D\r\nX-Content-Type-Options: nosniff\r\nX-Evil: a  Set-Cookie: b\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n")
    }

    /// Every response says `nosniff` once, whether or not the application set it too.
    @Test func everyResponseSaysNosniffOnce() {
        for headers: HTTPHeaders in [[:], ["x-content-type-options": "nosniff"], ["Content-Type": "application/json"]] {
            let text = String(decoding: HTTPResponseSerializer.head(status: .ok, headers: headers, framing: .contentLength(0),
                                                                    keepAlive: true, requestVersion: .http1_1, date: "D"), as: UTF8.self)
            #expect(text.lowercased().split(separator: "\r\n").filter { $0 == "x-content-type-options: nosniff" }.count == 1)
        }
    }

    @Test(arguments: [0, 1, 9, 10, 99, 100, 1_000_000, 16_777_216])
    func contentLengthDigits(_ length: Int) {
        let text = String(decoding: HTTPResponseSerializer.head(status: .ok, headers: HTTPHeaders(), framing: .contentLength(length),
                                                                keepAlive: true, requestVersion: .http1_1, date: "D"), as: UTF8.self)
        #expect(text.contains("\r\nContent-Length: \(length)\r\n"))
    }

    /// The head is written into a buffer sized up front: the largest fixed pieces together (a
    /// 20-digit length, `Connection: keep-alive`, an odd status code), many fields and multi-byte
    /// text must all fit, and the reserved body room must not show up as bytes.
    @Test func headSizedUpFrontHoldsEveryPiece() {
        var headers = HTTPHeaders()
        for index in 0 ..< 40 { headers.add("X-Field-\(index)", String(repeating: "é\u{7F}", count: index)) }
        let status = HTTPStatus(code: Int.max, reasonPhrase: "Très\nLong")
        let head = HTTPResponseSerializer.head(status: status, headers: headers, framing: .contentLength(Int.max),
                                               keepAlive: true, requestVersion: .http1_0, date: "Thu, 01 Jan 1970 00:00:00 GMT",
                                               reservingBody: 4096)
        let text = String(decoding: head, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 \(Int.max) Très Long\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\nX-Content-Type-Options: nosniff\r\nX-Field-0: \r\n"))
        #expect(text.contains("\r\nX-Field-3: é é é \r\n"))
        #expect(text.hasSuffix("\r\nContent-Length: \(Int.max)\r\nConnection: keep-alive\r\n\r\n"))
        #expect(head.capacity >= head.count + 4096)
        let chunked = HTTPResponseSerializer.head(status: .ok, headers: HTTPHeaders(), framing: .chunked,
                                                  keepAlive: false, requestVersion: .http1_1, date: "")
        #expect(String(decoding: chunked, as: UTF8.self) == "HTTP/1.1 200 OK\r\nDate: \r\nX-Content-Type-Options: nosniff\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
    }

    /// The word-at-a-time control checks against a byte-by-byte one, for every byte value at
    /// every offset of strings covering whole words, the tail, the overlapping last word of the
    /// copying check and its hand-over to memmove above 32 bytes; the copy must be exact.
    @Test func controlCheckFindsEveryControlByteAtEveryOffset() {
        for length in Array(1 ... 19) + [31, 32, 33] {
            for offset in 0 ..< length {
                for value in 0 ... 255 {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    bytes[offset] = UInt8(value)
                    if length > 2 { bytes[(offset + 1) % length] = 0xFF }  // a high byte beside it
                    let expected = !bytes.contains { $0 < 0x20 || $0 == 0x7F }
                    let found = bytes.withUnsafeBufferPointer { HTTPResponseSerializer.HeadWriter.hasNoControls($0) }
                    #expect(found == expected, "length \(length), byte \(value) at \(offset)")
                    var copy = [UInt8](repeating: 0, count: length)
                    let flagged = bytes.withUnsafeBufferPointer { source in
                        copy.withUnsafeMutableBufferPointer { target in
                            guard let from = source.baseAddress, let to = target.baseAddress else { return false }
                            return HTTPResponseSerializer.HeadWriter.copyFlaggingControls(from: from, to: to, count: length)
                        }
                    }
                    #expect(flagged == !expected, "copying: length \(length), byte \(value) at \(offset)")
                    #expect(copy == bytes, "copying: length \(length), byte \(value) at \(offset)")
                }
            }
        }
        var headers = HTTPHeaders()
        headers.add("X-Tab", "a\tb\u{7F}c d")
        let text = String(decoding: HTTPResponseSerializer.head(status: .ok, headers: headers, framing: .none,
                                                                keepAlive: true, requestVersion: .http1_1, date: "D"), as: UTF8.self)
        #expect(text == "HTTP/1.1 200 OK\r\nDate: D\r\nX-Content-Type-Options: nosniff\r\nX-Tab: a\tb c d\r\n\r\n")
    }

    @Test(arguments: [("/healthz", "/healthz", nil), ("/v1/samples?type=stepCount&limit=10", "/v1/samples", "type=stepCount&limit=10"),
                      ("/a?", "/a", ""), ("?x", "", "x"), ("/é?q=é?", "/é", "q=é?")] as [(String, String, String?)])
    func pathAndQuerySplitAtTheFirstQuestionMark(_ target: String, _ path: String, _ query: String?) {
        let request = HTTPRequest(method: .get, target: target)
        #expect(request.path == path)
        #expect(request.rawQuery.map(String.init) == query)
    }

    @Test func chunkSizesInHex() {
        #expect(HTTPResponseSerializer.chunk([UInt8](repeating: 1, count: 256)).prefix(5) == Array("100\r\n".utf8)[...])
        #expect(HTTPResponseSerializer.chunk([UInt8](repeating: 1, count: 4095)).prefix(5) == Array("fff\r\n".utf8)[...])
    }

    @Test func chunkFraming() {
        #expect(HTTPResponseSerializer.chunk(Array("hello world, 26 bytes long".utf8)) == Array("1a\r\nhello world, 26 bytes long\r\n".utf8))
        #expect(HTTPResponseSerializer.chunk([]).isEmpty)
    }

    @Test func problemJSONEscapes() {
        let json = String(decoding: HTTPProblem.json(status: .badRequest, detail: "bad \"q\" \\ \n\u{1} é"), as: UTF8.self)
        #expect(json == #"{"type":"about:blank","title":"Bad Request","status":400,"detail":"bad \"q\" \\ \n\u0001 é","code":"errorInvalidArgument"}"#)
        #expect(HTTPProblem.code(for: .contentTooLarge) == "errorPayloadTooLarge")
        #expect(HTTPProblem.code(for: .requestTimeout) == "errorInvalidArgument")
        #expect(HTTPProblem.code(for: .serviceUnavailable) == "errorUnavailable")
    }
}
