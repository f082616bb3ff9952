import HealthdSettings
import Crypto
import HTTP
import HealthModel
import HealthStore
import JSON

/// Samples, sources and the type catalog (docs/api.md, Samples).
struct SampleRoutes: Sendable {
    let data: HealthData
    let configuration: HealthdConfiguration
    /// The store's secret ready for signing cursors (its HMAC pads hashed once, not per page).
    let cursorKey: HMACSHA256.Key
    /// Next-page cursors already signed (a page polled again ends at the same place).
    let cursors: SignedToken.Memo

    init(data: HealthData, configuration: HealthdConfiguration) {
        self.data = data
        self.configuration = configuration
        cursorKey = HMACSHA256.Key(data.secret)
        cursors = SignedToken.Memo(kind: Self.cursorKind, key: cursorKey)
    }

    static let cursorKind: UInt8 = 1

    static func register(into router: inout Router<Route>, data: HealthData, configuration: HealthdConfiguration) {
        let routes = SampleRoutes(data: data, configuration: configuration)
        router.register(.post, "/v1/samples", Route(access: .token, deferred: routes.saveSamples))
        router.register(.get, "/v1/samples", Route(access: .token, handler: routes.listSamples))
        router.register(.get, "/v1/samples/{uuid}", Route(access: .token, handler: routes.readSample))
        router.register(.delete, "/v1/samples/{uuid}", Route(access: .token, handler: routes.deleteSample))
        router.register(.delete, "/v1/samples", Route(access: .token, handler: routes.deleteSamples))
        router.register(.get, "/v1/sources", Route(access: .token, handler: routes.listSources))
    }

    /// `POST /v1/samples`: saves a batch of samples (all or nothing) and answers their uuids.
    /// Deferred: the batch is decoded and checked on a worker, then handed to the store's group
    /// commit; the worker goes on to the next request instead of waiting for the writer's fsync.
    func saveSamples(_ context: inout RequestContext, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(APIError) {
        try context.query.rejectUnknown()
        let app = try context.app()
        let samples = try Self.decodeBatch(context.request, maxBatchSize: configuration.maxBatchSize)
        let problems = context.problems
        // Share permission for every sample and object is the store's to check (AccessPolicy).
        data.app(app).save(samples) { result in
            switch result {
            case .success(let saved):
                // 39 bytes per uuid with its quotes and comma; each written from the stack, no String.
                respond(JSONResponse.write(status: .created, capacity: 39 * saved.count + 16) { writer in
                    writer.beginObject()
                    writer.key("saved")
                    writer.beginArray()
                    for uuid in saved { SampleCodec.writeUUID(uuid, into: &writer) }
                    writer.endArray()
                    writer.endObject()
                })
            case .failure(let error):
                respond(problems.response(APIError(storeError: error)))
            }
        }
    }

    /// `GET /v1/samples`: one page of a sample query, in start order, with a signed cursor for the next page.
    func listSamples(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let app = try context.app()
        let type = try QueryParsing.type(&context.query)
        var query = SampleQuery(type: type.id)
        query.start = try QueryParsing.instant(&context.query, "start")
        query.end = try QueryParsing.instant(&context.query, "end")
        query.strictStartDate = try context.query.boolean("strictStartDate") ?? false
        query.strictEndDate = try context.query.boolean("strictEndDate") ?? false
        query.sourceApp = try context.query.string("source")
        switch try context.query.string("order") {
        case nil, "asc": query.descending = false
        case "desc": query.descending = true
        case let other?: throw APIError.invalidField("order", "must be asc or desc, not '\(other)'")
        }
        // Fewer than asked for is a full page too (`next` goes on): routes come 16 at a time.
        query.limit = min(try context.query.integer("limit", in: 1...10_000) ?? 100, type.maximumPageSize)
        let unit = try QueryParsing.unit(&context.query, for: type)
        let cursorText = try context.query.string("cursor")
        try context.query.rejectUnknown()
        if let start = query.start, let end = query.end, end < start {
            throw APIError.invalidField("end", "is before start")
        }
        var parts = SignedToken.Fingerprint()
        parts.append(app.userID)
        parts.append(type.id)
        parts.append(query.start ?? .min)
        parts.append(query.end ?? .max)
        parts.append(query.strictStartDate)
        parts.append(query.strictEndDate)
        parts.append(query.sourceApp ?? "")
        parts.append(query.descending)
        let fingerprint = parts.value
        if let cursorText {
            guard let fields = SignedToken.decode(cursorText, kind: Self.cursorKind, fieldCount: 3, key: cursorKey),
                  fields[2] == fingerprint else {
                throw APIError.invalidField("cursor", "is not a cursor of this query (forged, altered, or from another query)")
            }
            query.after = SampleCursor(start: fields[0], seq: fields[1])
        }
        let page = try storeCall { try data.app(app).samples(query) }
        // A quantity sample with a device and a little metadata writes about 500 bytes.
        return JSONResponse.write(capacity: 512 * page.samples.count + 256) { writer in
            writer.beginObject()
            writer.key("samples")
            SampleCodec.write(page.samples, unit: unit, into: &writer)
            writer.key("next")
            if let next = page.next {
                writer.string(cursors.encode([next.start, next.seq, fingerprint]))
            } else {
                writer.null()
            }
            writer.endObject()
        }
    }

    /// `GET /v1/samples/{uuid}`: one sample by uuid, optionally in another unit.
    func readSample(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let unitText = try context.query.string("unit")
        try context.query.rejectUnknown()
        let app = try context.app()
        let uuid = try QueryParsing.uuid(context.parameter("uuid"))
        guard let sample = try storeCall({ try data.app(app).sample(uuid) }) else {
            throw APIError.notFound("no sample \(uuid.lowercasedString)")
        }
        var unit: HealthUnit?
        if let unitText, let type = HealthTypeCatalog.type(sample.sample.type) {
            unit = try QueryParsing.unit(unitText, for: type)
        }
        return JSONResponse.write { writer in SampleCodec.write(sample, unit: unit, into: &writer) }
    }

    /// `DELETE /v1/samples/{uuid}`: deletes one sample the app wrote.
    func deleteSample(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let app = try context.app()
        let uuid = try QueryParsing.uuid(context.parameter("uuid"))
        try storeCall { try data.app(app).deleteSample(uuid) }
        return HTTPResponse(status: .noContent)
    }

    /// `DELETE /v1/samples`: deletes the app's samples of a type in a time range and answers the count.
    func deleteSamples(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let app = try context.app()
        let type = try QueryParsing.type(&context.query)
        guard let start = try QueryParsing.instant(&context.query, "start") else { throw APIError.invalidField("start", "is required") }
        guard let end = try QueryParsing.instant(&context.query, "end") else { throw APIError.invalidField("end", "is required") }
        try context.query.rejectUnknown()
        guard end >= start else { throw APIError.invalidField("end", "is before start") }
        let deleted = try storeCall { try data.app(app).deleteSamples(type: type.id, start: start, end: end) }
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.field("deleted", deleted)
            writer.endObject()
        }
    }

    /// `GET /v1/sources`: the apps and devices that wrote samples of a type.
    func listSources(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let app = try context.app()
        let type = try QueryParsing.type(&context.query)
        try context.query.rejectUnknown()
        let sources = try storeCall { try data.app(app).sources(type: type.id) }
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.key("sources")
            writer.beginArray()
            for source in sources {
                writer.beginObject()
                writer.field("app", source.app)
                writer.key("devices")
                writer.beginArray()
                for device in source.devices { SampleCodec.writeDevice(device, into: &writer) }
                writer.endArray()
                writer.endObject()
            }
            writer.endArray()
            writer.endObject()
        }
    }

    /// Decodes `{"samples":[...]}`, collecting every invalid sample's errors (index, field, detail).
    /// A valid batch is read straight from the body's bytes (`SampleBatchDecoder`); anything it
    /// does not accept is decoded here the general way, which names every problem.
    static func decodeBatch(_ request: HTTPRequest, maxBatchSize: Int) throws(APIError) -> [HealthSample] {
        try RequestBody.requireContentType(request, "application/json")
        if let samples = SampleBatchDecoder.decode(request.body, maxBatchSize: maxBatchSize, newUUID: HealthUUID.timeOrdered) {
            return samples
        }
        var body = try RequestBody.json(request)
        let list: JSONArrayReader = try RequestBody.decode { () throws(JSONFieldError) in
            let list = try body.requiredArray("samples")
            try body.finish()
            return list
        }
        guard !list.isEmpty else { throw APIError.invalidField("samples", "is empty") }
        guard list.count <= maxBatchSize else {
            throw APIError.payloadTooLarge("a batch holds at most \(maxBatchSize) samples; this one has \(list.count)")
        }
        var samples: [HealthSample] = []
        samples.reserveCapacity(list.count)
        var issues: [APIError.FieldIssue] = []
        for index in 0..<list.count {
            do throws(JSONFieldError) {
                var reader = try list.object(at: index)
                let sample = try SampleCodec.decode(&reader, newUUID: HealthUUID.timeOrdered)
                try reader.finish()
                samples.append(sample)
            } catch {
                let prefix = list.path(at: index)
                var field = error.field
                if field.hasPrefix(prefix) { field = String(field.dropFirst(prefix.count)) }
                if field.hasPrefix(".") { field.removeFirst() }
                if issues.count < 100 { issues.append(APIError.FieldIssue(index: index, field: field.isEmpty ? "sample" : field, detail: error.detail)) }
            }
        }
        if let first = issues.first {
            let more = issues.count > 1 ? " (and \(issues.count - 1) more)" : ""
            throw APIError.invalidArgument("samples[\(first.index ?? 0)].\(first.field): \(first.detail)\(more); nothing was saved",
                                           errors: issues)
        }
        return samples
    }
}

/// Query-parameter readers shared by the routes.
enum QueryParsing {
    static func type(_ query: inout QueryParameters, _ name: String = "type") throws(APIError) -> HealthType {
        let text = try query.requiredString(name)
        guard let type = HealthTypeCatalog.type(text) else { throw APIError.invalidField(name, "unknown type '\(text)'") }
        return type
    }

    static func instant(_ query: inout QueryParameters, _ name: String) throws(APIError) -> Int64? {
        guard let text = try query.string(name) else { return nil }
        do {
            return try RFC3339.parseOrThrow(text)
        } catch {
            throw APIError.invalidField(name, "\(error.description) (RFC 3339 with an offset, e.g. 2026-03-08T09:30:00-05:00)")
        }
    }

    static func unit(_ query: inout QueryParameters, for type: HealthType) throws(APIError) -> HealthUnit? {
        guard let text = try query.string("unit") else { return nil }
        return try unit(text, for: type)
    }

    static func unit(_ text: String, for type: HealthType) throws(APIError) -> HealthUnit {
        if type.kind == .workout {
            guard let unit = try? HealthUnit.parse(text), unit.isCompatible(with: .kilocalorie) || unit.isCompatible(with: .meter) else {
                throw APIError.invalidField("unit", "workouts convert to an energy or a length unit, not '\(text)'")
            }
            return unit
        }
        do {
            return try HealthValidation.unit(text, for: type, field: "unit")
        } catch {
            throw APIError.invalidField("unit", error.detail)
        }
    }

    static func uuid(_ text: String) throws(APIError) -> HealthUUID {
        guard let uuid = HealthUUID(text) else { throw APIError.invalidField("uuid", "'\(text)' is not a uuid") }
        return uuid
    }
}
