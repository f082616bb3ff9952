import Dispatch
import Foundation
import HTTP
import HealthModel
import HealthStore
import JSON

/// `GET /v1/export`: every sample the token may read, as NDJSON, streamed page by page.
struct ExportRoutes: Sendable {
    let data: HealthData

    static func register(into router: inout Router<Route>, data: HealthData) {
        let routes = ExportRoutes(data: data)
        router.register(.get, "/v1/export", Route(access: .token, handler: routes.export))
    }

    /// `GET /v1/export`: every sample the token may read, as NDJSON, streamed page by page.
    func export(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let app = try context.app()
        let types = try ExportScope.types(&context.query)
        try context.query.rejectUnknown()
        let scope = ExportScope(.app(app), types: types)
        return ExportScope.response(problems: context.problems, stillAllowed: ExportScope.stillAllowed(app, in: data)) { write in
            try scope.forEachPage(from: data, write)
        }
    }
}

/// Which samples an export holds, and the paging loop that writes them.
public struct ExportScope: Sendable {
    /// Whose samples, with read privacy applied by the store: a token's, or a whole user's (the CLI).
    public var reader: ReadScope
    /// Nil: every type.
    public var types: Set<String>?
    public var pageSize = 1_000

    public init(_ reader: ReadScope, types: Set<String>? = nil) {
        self.reader = reader
        self.types = types
    }

    /// Unsent bytes above which the producer waits for the socket rather than queueing more.
    static let backlogLimit = 256 * 1024

    static func types(_ query: inout QueryParameters) throws(APIError) -> Set<String>? {
        guard let names = try query.list("types") else { return nil }
        var types: Set<String> = []
        for name in names {
            guard let type = HealthTypeCatalog.type(name), type.kind != .characteristic else {
                throw APIError.invalidField("types", "unknown sample type '\(name)'")
            }
            types.insert(type.id)
        }
        return types
    }

    /// Reads every type oldest first (keyset pages on each type's start index) and merges them by
    /// (start, seq), handing `write` about `pageSize` lines at a time; `write` returns false to stop.
    /// Memory holds one page per type whatever the export's size.
    public func forEachPage(from store: any HealthDataStore, _ write: ([UInt8]) throws -> Bool) throws {
        try forEachPage(from: HealthData(store), write)
    }

    func forEachPage(from data: HealthData, _ write: ([UInt8]) throws -> Bool) throws {
        let wanted = HealthTypeCatalog.all.filter { $0.kind != .characteristic && (types?.contains($0.id) ?? true) }
        struct Lane {
            var type: String
            var buffer: [(sample: StoredSample, cursor: SampleCursor)] = []
            var next = 0
            var after: SampleCursor?
            var exhausted = false
        }
        var lanes = wanted.map { Lane(type: $0.id) }
        let laneSize = max(1, min(pageSize, 1_000))
        // Series samples (routes) are large: their lanes read few at a time, and a page holding
        // that many of them goes out at once.
        let seriesBound = HealthTypeCatalog.workoutRouteType.maximumPageSize
        var seriesInPage = 0
        var out: [StoredSample] = []
        out.reserveCapacity(pageSize)
        while true {
            var best: Int?
            for index in lanes.indices where !lanes[index].exhausted {
                if lanes[index].next >= lanes[index].buffer.count {
                    let bound = HealthTypeCatalog.type(lanes[index].type)?.maximumPageSize ?? laneSize
                    let page = try data.exportPage(type: lanes[index].type, scope: reader, after: lanes[index].after,
                                                    limit: min(laneSize, bound))
                    lanes[index].buffer = page
                    lanes[index].next = 0
                    if let last = page.last { lanes[index].after = last.cursor }
                    if page.isEmpty { lanes[index].exhausted = true; continue }
                }
                let head = lanes[index].buffer[lanes[index].next].cursor
                if let current = best {
                    let other = lanes[current].buffer[lanes[current].next].cursor
                    if (head.start, head.seq) < (other.start, other.seq) { best = index }
                } else {
                    best = index
                }
            }
            guard let chosen = best else { break }
            let sample = lanes[chosen].buffer[lanes[chosen].next].sample
            if case .workoutRoute = sample.sample.content { seriesInPage += 1 }
            out.append(sample)
            lanes[chosen].next += 1
            if out.count >= pageSize || seriesInPage >= seriesBound {
                guard try write(Self.ndjson(out)) else { return }
                out.removeAll(keepingCapacity: true)
                seriesInPage = 0
            }
        }
        if !out.isEmpty { _ = try write(Self.ndjson(out)) }
    }

    public static func ndjson(_ samples: [StoredSample]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(samples.count * 400)
        for sample in samples {
            var writer = JSONWriter(capacity: 512)
            SampleCodec.write(sample, into: &writer)
            bytes += writer.bytes
            bytes.append(0x0A)
        }
        return bytes
    }

    /// Whether `reader` may still read as it did when the export began: false once its token is
    /// revoked or narrowed, or the person's session has ended (a person's own reads).
    static func stillAllowed(_ reader: AppAuthorization, in data: HealthData) -> @Sendable () throws -> Bool {
        { try data.liveAuthorizations(ids: [reader.id])[reader.id] == reader }
    }

    static let revoked = APIError.authenticationRequired("the token was revoked or its permissions changed")

    /// A 200 streaming NDJSON: `pages` hands its pages to the write function it is given (which
    /// returns false once the client is gone), on a utility thread, at the pace the socket drains.
    static func response(problems: ProblemResponder, stillAllowed: @escaping @Sendable () throws -> Bool,
                         _ pages: @escaping @Sendable (_ write: ([UInt8]) throws -> Bool) throws -> Void) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add("Content-Type", "application/x-ndjson")
        headers.add("Cache-Control", "no-store")
        return HTTPResponse(status: .ok, headers: headers, body: .stream({ stream in
            DispatchQueue.global(qos: .utility).async { Self.stream(pages, to: stream, problems: problems, stillAllowed: stillAllowed) }
        }))
    }

    static func stream(_ pages: (_ write: ([UInt8]) throws -> Bool) throws -> Void, to stream: any HTTPBodyStream,
                       problems: ProblemResponder, stillAllowed: @escaping () throws -> Bool) {
        do {
            try pages { bytes in
                // Wait for the socket to drain instead of letting the backlog grow (or be cut off).
                while stream.bufferedByteCount > Self.backlogLimit && !stream.isClosed { usleep(2_000) }
                guard !stream.isClosed else { return false }
                // A revocation or a narrowing holds for an export under way as for a change stream:
                // a page goes out only while the access it was read under is still the reader's,
                // so nothing read after the change reaches the client.
                guard try stillAllowed() else { throw Self.revoked }
                return stream.write(bytes)
            }
        } catch {
            // The status line is gone; a last line says the export is incomplete, with what a
            // problem body would say (a server-side cause goes to the log, never to the client).
            let problem = APIError(storeError: error)
            _ = problems.response(problem)
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("error", "the export stopped early: \(problem.detail)")
            writer.field("code", problem.code)
            if problem.status.code >= 500 { writer.field("requestId", problems.requestID) }
            writer.endObject()
            stream.write(writer.bytes + [0x0A])
        }
        stream.finish()
    }
}
