import HTTP

/// The end of the chain every answer passes, whichever piece made it: the request id and CORS
/// headers, one metrics count and one access-log line under the route's pattern, then the server.
struct ResponseRecorder: Sendable {
    let metrics: Metrics
    let accessLog: AccessLog?
    let cors: CORSPolicy

    /// `consuming`: the fresh response is the only owner of its header list, so adding the
    /// request id appends in place instead of copying the list first.
    func finish(_ response: consuming HTTPResponse, route pattern: String, _ request: HTTPRequest, _ context: ChainContext) {
        response.headers.set("X-Request-Id", context.requestID)
        if cors.isEnabled { cors.decorate(&response, for: request) }
        let elapsed = Double(HealthApplication.monotonicNanoseconds() &- context.startedAt) / 1e9
        metrics.recordRequest(route: pattern, method: request.method.rawValue, status: response.status.code, seconds: elapsed)
        accessLog?.record(requestID: context.requestID, method: request.method.rawValue, route: pattern, path: String(request.path),
                          status: response.status.code, seconds: elapsed, remote: context.client)
        context.completion(response)
    }
}
