import Dispatch
import Foundation
import HTTP
import HealthModel
import HealthStore
import JSON

/// `GET /v1/export`: every sample the token may read, as NDJSON, streamed page by page.
enum ExportRoutes {
    static func register(into router: inout Router<Route>, store: HealthStore) {
        router.register(.get, "/v1/export", Route(access: .token) { context throws(APIError) in
            let app = try context.app()
            let types = try ExportScope.types(&context.query)
            try context.query.rejectUnknown()
            let scope = ExportScope(userRowID: app.userRowID, userExternalID: app.userID, types: types,
                                    readable: app.read, ownSourceRowID: app.sourceRowID)
            var headers = HTTPHeaders()
            headers.add("Content-Type", "application/x-ndjson")
            headers.add("Cache-Control", "no-store")
            return HTTPResponse(status: .ok, headers: headers, body: .stream({ stream in
                DispatchQueue.global(qos: .utility).async { scope.stream(from: store, to: stream) }
            }))
        })
    }
}

/// Which samples an export holds, and the paging loop that writes them.
public struct ExportScope: Sendable {
    public var userRowID: Int64
    public var userExternalID: String
    /// Nil: every type.
    public var types: Set<String>?
    /// Nil: every type is readable (the admin's CLI export); otherwise other types only from `ownSourceRowID`.
    public var readable: Set<String>?
    public var ownSourceRowID: Int64?
    public var pageSize = 1_000

    public init(userRowID: Int64, userExternalID: String, types: Set<String>? = nil, readable: Set<String>? = nil,
                ownSourceRowID: Int64? = nil) {
        self.userRowID = userRowID
        self.userExternalID = userExternalID
        self.types = types
        self.readable = readable
        self.ownSourceRowID = ownSourceRowID
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

    /// Pages through the store (keyset on the change sequence) and hands each page's NDJSON to
    /// `write`, which returns false to stop. Memory holds one page whatever the export's size.
    public func forEachPage(from store: HealthStore, _ write: ([UInt8]) throws -> Bool) throws {
        var after: Int64 = 0
        while true {
            let page = try store.exportPage(userRowID: userRowID, userExternalID: userExternalID, types: types,
                                            readable: readable, ownSourceRowID: ownSourceRowID, after: after, limit: pageSize)
            guard let last = page.last else { return }
            guard try write(Self.ndjson(page.samples)) else { return }
            after = last
        }
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

    func stream(from store: HealthStore, to stream: any HTTPBodyStream) {
        do {
            try forEachPage(from: store) { bytes in
                // Wait for the socket to drain instead of letting the backlog grow (or be cut off).
                while stream.bufferedByteCount > Self.backlogLimit && !stream.isClosed { usleep(2_000) }
                return !stream.isClosed && stream.write(bytes)
            }
        } catch {
            // The status line is gone; a last line says the export is incomplete.
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("error", "the export stopped early: \(error)")
            writer.endObject()
            stream.write(writer.bytes + [0x0A])
        }
        stream.finish()
    }
}
