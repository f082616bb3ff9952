import HTTP

/// Routing's two outcomes after the checks at the chain's head: a matched route runs on its
/// queue (authentication and rate limits, then the handler, with every thrown error mapped to a
/// problem answer); anything else is answered here.
extension HealthApplication {
    /// Runs a matched route: inline on the connection's queue or on the worker pool.
    func serve(_ route: Route, parameters: [String: String], pattern: String, _ request: HTTPRequest,
               connection: ConnectionInfo, _ chain: ChainContext, presentsToken: Bool) {
        // A local function rather than a closure value: a route answered inline (`/healthz`) then
        // costs no closure allocation; its captures are boxed only where a worker or a deferred
        // handler takes them away.
        @Sendable func run() {
            let problems = ProblemResponder(requestID: chain.requestID, log: eventLog)
            do throws(APIError) {
                var context = try self.context(for: route, request: request, parameters: parameters, problems: problems,
                                               connection: connection, client: chain.client, hasCredentials: presentsToken)
                // Only a person's session renews its cookie: other routes read nothing of the principal.
                let renewal = route.access == .person ? context.sessionRenewal : nil
                switch route.body {
                case .immediate(let handler):
                    var response = try handler(&context)
                    response.addSessionRenewal(renewal)
                    recorder.finish(response, route: pattern, request, chain)
                case .deferred(let handler):
                    try handler(&context) { [recorder] response in
                        var response = response
                        response.addSessionRenewal(renewal)
                        recorder.finish(response, route: pattern, request, chain)
                    }
                }
            } catch {
                recorder.finish(problems.response(error), route: pattern, request, chain)
            }
        }
        switch route.execution {
        case .inline: run()
        case .worker: workers.async { run() }
        }
    }

    /// No route for the path: a hint for a trailing slash, the dashboard's files, or a 404.
    func answerUnmatched(_ request: HTTPRequest, _ chain: ChainContext) {
        let path = request.path
        let method = Self.routingMethod(request)
        // `/v1/samples/` or `/healthz/`: a route without its trailing slash. Said so, rather than
        // a bare 404 (or the dashboard's "no such file"), since the slash is easy to miss.
        if path.utf8.count > 1, path.hasSuffix("/"), case .found = router.match(method: method, path: path.dropLast()) {
            recorder.finish(APIError.notFound("no route for \(request.method.rawValue) \(path): the route is \(path.dropLast()), "
                                              + "without the trailing slash").response, route: "unmatched", request, chain)
        } else if !path.hasPrefix("/v1/") && path != "/v1", let staticFiles, method == .get {
            workers.async { [recorder] in
                let response = staticFiles.response(for: request)
                recorder.finish(response, route: response.status.code == 404 ? "unmatched" : "static", request, chain)
            }
        } else {
            recorder.finish(APIError.notFound("no route for \(request.method.rawValue) \(path)").response, route: "unmatched",
                            request, chain)
        }
    }

    /// HEAD is routed as GET (the server leaves the body out).
    static func routingMethod(_ request: HTTPRequest) -> HTTPMethod { request.method == .head ? .get : request.method }
}
