import HTTP
import HealthModel
import HealthStore
import JSON
import Pedometer

/// One IMU batch as a phone sends it (docs/api.md, Motion: IMU ingest and pedometer), before the pedometer sees it.
struct IMUBatchRequest {
    var device: SampleDevice?
    var session: String
    var seq: Int
    var unit: String
    /// Milliseconds since 1970; sample times are seconds after it.
    var t0: Int64
    var t: [Double]
    var x: [Double]
    var y: [Double]
    var z: [Double]
    var pressureT: [Double]?
    var pressureHectopascals: [Double]?
    var heightCm: Double?

    /// The batch on the pedometer's absolute time base (seconds since 1970), its unit parsed: an
    /// unknown one is a 400, never read as m/s2.
    func accelerometerBatch() throws(APIError) -> AccelerometerBatch {
        let parsedUnit: AccelerationUnit
        do { parsedUnit = try AccelerationUnit(parsing: unit) } catch {
            throw APIError.invalidField("unit", "must be g or m/s2, not '\(unit)'")
        }
        let base = Double(t0) / 1000
        var pressure: PressureSamples?
        if let pressureT, let pressureHectopascals {
            pressure = PressureSamples(timestamps: pressureT.map { base + $0 }, hectopascals: pressureHectopascals)
        }
        return AccelerometerBatch(timestamps: t.map { base + $0 }, x: x, y: y, z: z,
                                  unit: parsedUnit, pressure: pressure)
    }
}

struct IMURoutes: Sendable {
    let data: HealthData

    static let maximumSamplesPerBatch = 100_000

    static func register(into router: inout Router<Route>, data: HealthData) {
        let routes = IMURoutes(data: data)
        router.register(.post, "/v1/ingest/imu", Route(access: .token, deferred: routes.ingestBatch))
        router.register(.post, "/v1/ingest/imu/{session}/end", Route(access: .token, deferred: routes.endSession))
        router.register(.get, "/v1/pedometer", Route(access: .token, handler: routes.pedometerTotals))
    }

    /// `POST /v1/ingest/imu`: ingests one accelerometer batch of an IMU session and saves the steps the pedometer finds in it.
    /// Deferred: the session is read on a reader, the pedometer runs with no transaction open,
    /// and only the conditional state update, the samples and the answer go to the writer's
    /// group commit (SQLiteHealthStore.commitIMU); the worker moves on meanwhile.
    func ingestBatch(_ context: inout RequestContext, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(APIError) {
        let app = try context.app()
        try Self.requireShare(data.app(app))
        let batch = try Self.decode(&context)
        let accelerometer = try batch.accelerometerBatch()
        // Validate before touching the store, so a bad batch is a 400 even for a new session.
        do throws(PedometerInputError) { try accelerometer.validate(limits: Self.limits) } catch { throw Self.invalid(error) }
        let input = accelerometer
        let writer = data.app(app)
        Self.ingest(writer, session: batch.session, seq: batch.seq, device: batch.device, respond: respond) {
            state throws(APIError) -> IMUBatchResult in
            var session = try Self.restore(state, name: batch.session) ?? PedometerSession(heightCm: batch.heightCm)
            let update: PedometerUpdate
            do throws(PedometerInputError) { update = try session.process(input, limits: Self.limits) } catch { throw Self.invalid(error) }
            let span = update.processedSpan ?? {
                let last = session.lastAccelerometerTimestamp ?? 0
                return last...last
            }()
            return Self.result(for: update, session: session, name: batch.session, seq: batch.seq, device: batch.device, sharing: writer,
                          spanStart: span.lowerBound, spanEnd: span.upperBound, ended: false)
        }
    }

    /// `POST /v1/ingest/imu/{session}/end`: ends an IMU session, flushing the pedometer's pending steps.
    func endSession(_ context: inout RequestContext, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(APIError) {
        try context.query.rejectUnknown()
        let app = try context.app()
        try Self.requireShare(data.app(app))
        if !context.request.body.isEmpty {
            let body = try RequestBody.json(context.request)
            try RequestBody.decode { () throws(JSONFieldError) in try body.finish() }
        }
        let name = context.parameter("session")
        try Self.validateSessionName(name)
        let writer = data.app(app)
        Self.ingest(writer, session: name, seq: nil, device: nil, respond: respond) {
            state throws(APIError) -> IMUBatchResult in
            guard var session = try Self.restore(state, name: name) else {
                throw APIError.conflict("the stored state of session '\(name)' cannot be read")
            }
            let update = session.finish()
            let last = session.lastAccelerometerTimestamp ?? 0
            return Self.result(for: update, session: session, name: name, seq: state.nextSeq - 1, device: nil, sharing: writer,
                          spanStart: update.stepTimestamps.first ?? last, spanEnd: max(last, update.stepTimestamps.last ?? last),
                          ended: true)
        }
    }

    /// `GET /v1/pedometer`: step, distance, pace, cadence and floor totals in a time range (CMPedometerData).
    func pedometerTotals(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let app = try context.app()
        guard let start = try QueryParsing.instant(&context.query, "start") else { throw APIError.invalidField("start", "is required") }
        guard let end = try QueryParsing.instant(&context.query, "end") else { throw APIError.invalidField("end", "is required") }
        try context.query.rejectUnknown()
        guard end > start else { throw APIError.invalidField("end", "must be after start") }
        let totals = try storeCall { try data.app(app).pedometerTotals(start: start, end: end) }
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.field("numberOfSteps", Int64(totals.steps.rounded()))
            writer.field("distance", totals.distance)
            writer.field("averageActivePace", totals.distance > 0 ? totals.activeSeconds / totals.distance : nil)
            writer.field("currentPace", totals.currentPace)
            writer.field("currentCadence", totals.currentCadence)
            writer.field("floorsAscended", Int64(totals.floorsAscended.rounded()))
            writer.field("floorsDescended", Int64(totals.floorsDescended.rounded()))
            writer.endObject()
        }
    }

    static let limits = PedometerInputLimits(maximumSamplesPerBatch: maximumSamplesPerBatch)

    /// The pedometer's samples are written as the calling app, so it needs share permission for them.
    static func requireShare(_ writer: AppHealthData) throws(APIError) {
        do throws(SharingDenied) {
            try writer.requireShare(["stepCount", "distanceWalkingRunning"]) { type in
                "IMU ingest saves \(type) samples: this token may not share \(type)"
            }
        } catch {
            throw APIError.authorizationDenied(error.detail)
        }
    }

    /// Attempts at a batch whose session another request moved on meanwhile; each retry reads
    /// the session afresh, so a concurrent copy of the same seq ends in the first answer's replay.
    static let maximumAttempts = 8

    /// Reads the session, runs `process` (the pedometer) outside any transaction, commits the
    /// outcome if the session has not moved meanwhile (otherwise reads it again), and answers.
    static func ingest(_ writer: AppHealthData, session: String, seq: Int?, device: SampleDevice?,
                       attempt: Int = 1, respond: @escaping @Sendable (HTTPResponse) -> Void,
                       _ process: @escaping @Sendable (IMUSessionState) throws(APIError) -> IMUBatchResult) {
        let basis: IMUSessionState
        let outcome: IMUBatchResult
        do {
            switch try writer.imuSession(session, seq: seq) {
            case .replay(let answer):
                respond(JSONResponse.ok(answer))
                return
            case .ready(let state):
                basis = state
            }
            outcome = try process(basis)
        } catch {
            respond(apiError(error, session: session).response)
            return
        }
        writer.commitIMU(session: session, seq: seq, device: device, basis: basis, result: outcome) { committed in
            switch committed {
            case .success(let answer):
                respond(JSONResponse.ok(answer))
            case .failure(IMUIngestError.sessionChanged) where attempt < maximumAttempts:
                ingest(writer, session: session, seq: seq, device: device, attempt: attempt + 1,
                       respond: respond, process)
            case .failure(let error):
                respond(apiError(error, session: session).response)
            }
        }
    }

    static func apiError(_ error: any Error, session: String) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case IMUIngestError.unexpectedSeq(let expected):
            return APIError.conflict("seq must be \(expected) next (a gap or an out-of-order batch)",
                                     errors: [APIError.FieldIssue(field: "seq", detail: "expected \(expected)")])
        case IMUIngestError.sessionEnded:
            return APIError.conflict("session '\(session)' has ended; start a new session")
        case IMUIngestError.unknownSession:
            return APIError.notFound("no session '\(session)' for this app")
        case IMUIngestError.sessionChanged:
            return APIError.conflict("session '\(session)' is being changed by concurrent requests; send the batch again")
        default:
            return APIError(storeError: error)
        }
    }

    /// The session stored before this batch; nil for a new session.
    static func restore(_ state: IMUSessionState, name: String) throws(APIError) -> PedometerSession? {
        guard let stored = state.detectorState else { return nil }
        do {
            return try PedometerSession(stored: stored)
        } catch {
            throw APIError.conflict("the stored state of session '\(name)' cannot be read (\(error)); start a new session")
        }
    }

    /// The samples and the answer for one pedometer update: only the samples `sharing` may share are
    /// saved; the others are counted by type under `refused` (as Health Auto Export's are).
    static func result(for update: PedometerUpdate, session: PedometerSession, name: String, seq: Int, device: SampleDevice?,
                       sharing: AppHealthData, spanStart: Double, spanEnd: Double, ended: Bool) -> IMUBatchResult {
        let first = min(spanStart, update.stepTimestamps.first ?? spanStart)
        let last = max(spanEnd, update.stepTimestamps.last ?? spanEnd)
        let start = Int64((first * 1000).rounded(.down)), end = Int64((last * 1000).rounded(.up))
        let metadata = [MetadataEntry(key: "HKPedometerSession", value: .string(name))]
        var samples: [HealthSample] = []
        if update.steps > 0 {
            samples.append(HealthSample(uuid: .timeOrdered(), type: "stepCount", start: start, end: end,
                                        content: .quantity(Double(update.steps)), metadata: metadata, device: device))
        }
        if update.distanceMeters > 0 {
            samples.append(HealthSample(uuid: .timeOrdered(), type: "distanceWalkingRunning", start: start, end: end,
                                        content: .quantity(update.distanceMeters), metadata: metadata, device: device))
        }
        if update.floorsAscended > 0 {
            samples.append(HealthSample(uuid: .timeOrdered(), type: "flightsClimbed", start: start, end: end,
                                        content: .quantity(Double(update.floorsAscended)), metadata: metadata, device: device))
        }
        let (saved, refused) = sharing.shareable(samples)
        samples = saved
        var writer = JSONWriter(capacity: 512)
        writer.beginObject()
        writer.field("session", name)
        writer.field("seq", seq)
        writer.field("steps", update.steps)
        writer.field("totalSteps", update.totalSteps)
        writer.field("distance", update.totalDistanceMeters)
        writer.field("cadence", update.cadenceStepsPerSecond)
        writer.field("pace", update.paceSecondsPerMeter)
        writer.field("floorsAscended", update.totalFloorsAscended)
        writer.field("floorsDescended", update.totalFloorsDescended)
        writer.field("activity", update.activity.rawValue)
        writer.key("repaired")
        writer.beginObject()
        writer.field("duplicates", update.repairs.duplicates)
        writer.field("reordered", update.repairs.reordered)
        writer.field("late", update.repairs.late)
        writer.endObject()
        writer.key("saved")
        writer.beginArray()
        for sample in samples { writer.string(sample.uuid.lowercasedString) }
        writer.endArray()
        if !refused.isEmpty {
            writer.key("refused")
            writer.beginObject()
            for (type, count) in refused.sorted(by: { $0.key < $1.key }) { writer.field(type, count) }
            writer.endObject()
        }
        writer.endObject()
        return IMUBatchResult(
            state: session.encoded(), samples: samples, start: start, end: end, steps: update.steps,
            distance: update.distanceMeters, floorsAscended: update.floorsAscended, floorsDescended: update.floorsDescended,
            cadence: update.cadenceStepsPerSecond, pace: update.paceSecondsPerMeter, ended: ended, response: writer.bytes)
    }

    static func invalid(_ error: PedometerInputError) -> APIError {
        let field: String
        switch error.field {
        case "timestamps": field = "samples.t"
        case "x", "y", "z": field = "samples.\(error.field)"
        case "x/y/z/timestamps": field = "samples"
        case "pressure.timestamps": field = "pressure.t"
        case "pressure.hectopascals": field = "pressure.hPa"
        default: field = error.field
        }
        let detail = error.reason + "; nothing was saved"
        return APIError.invalidArgument("\(field): \(detail)", errors: [APIError.FieldIssue(index: error.index, field: field, detail: detail)])
    }

    static func validateSessionName(_ name: String) throws(APIError) {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:")
        guard (1...128).contains(name.count), name.allSatisfy({ allowed.contains($0) }) else {
            throw APIError.invalidField("session", "must be 1 to 128 characters of letters, digits, - _ . :")
        }
    }

    // MARK: Decoding

    static func decode(_ context: inout RequestContext) throws(APIError) -> IMUBatchRequest {
        let contentType = context.request.headers["Content-Type"]?.lowercased() ?? ""
        if contentType.hasPrefix("text/csv") { return try decodeCSV(&context) }
        try context.query.rejectUnknown()
        var body = try RequestBody.json(context.request)
        return try RequestBody.decode { () throws(JSONFieldError) -> IMUBatchRequest in
            let device = try decodeDevice(&body)
            let session = try body.requiredString("session")
            let seq = try body.requiredInteger("seq")
            let unit = try body.requiredString("unit")
            let t0Text = try body.requiredString("t0")
            var samples = try body.requiredObject("samples")
            let t = try samples.requiredArray("t").numbers()
            let x = try samples.requiredArray("x").numbers()
            let y = try samples.requiredArray("y").numbers()
            let z = try samples.requiredArray("z").numbers()
            try samples.finish()
            var pressureT: [Double]?
            var pressureValues: [Double]?
            if var pressure = try body.optionalObject("pressure") {
                pressureT = try pressure.requiredArray("t").numbers()
                pressureValues = try pressure.requiredArray("hPa").numbers()
                try pressure.finish()
            }
            let height = try body.optionalNumber("heightCm")
            try body.finish()
            guard let t0 = RFC3339.parse(t0Text), HealthInstantLimits.sampleRange.contains(t0) else {
                throw body.error("t0", "must be an RFC 3339 instant with an offset between 1900 and 2200")
            }
            guard (0...Int64(Int32.max)).contains(seq) else { throw body.error("seq", "must be a whole number from 0") }
            if let height, !(40...280).contains(height) { throw body.error("heightCm", "must be from 40 to 280") }
            return IMUBatchRequest(device: device, session: session, seq: Int(seq), unit: unit, t0: t0, t: t, x: x, y: y, z: z,
                                   pressureT: pressureT, pressureHectopascals: pressureValues, heightCm: height)
        }.validated()
    }

    static func decodeDevice(_ body: inout JSONFieldReader) throws(JSONFieldError) -> SampleDevice? {
        guard let value = body.optionalValue("device") else { return nil }
        switch value {
        case .string(let name): return SampleDevice(name: name)
        case .object(let object):
            var reader = JSONFieldReader(object, path: body.path(of: "device"))
            return try SampleCodec.decodeDevice(&reader)
        case .null: return nil
        default: throw body.error("device", "must be an object of device fields (or a name)")
        }
    }

    /// `text/csv` with a header row `t,x,y,z`; the other fields come as query parameters.
    static func decodeCSV(_ context: inout RequestContext) throws(APIError) -> IMUBatchRequest {
        let session = try context.query.requiredString("session")
        guard let seq = try context.query.integer("seq", in: 0...Int(Int32.max)) else { throw APIError.invalidField("seq", "is required") }
        let unit = try context.query.requiredString("unit")
        let t0Text = try context.query.requiredString("t0")
        let deviceName = try context.query.string("device")
        let heightText = try context.query.string("heightCm")
        try context.query.rejectUnknown()
        guard let t0 = RFC3339.parse(t0Text), HealthInstantLimits.sampleRange.contains(t0) else {
            throw APIError.invalidField("t0", "must be an RFC 3339 instant with an offset between 1900 and 2200")
        }
        var height: Double?
        if let heightText {
            guard let value = Double(heightText), (40...280).contains(value) else { throw APIError.invalidField("heightCm", "must be from 40 to 280") }
            height = value
        }
        let columns: AccelerometerCSV.Columns
        do {
            columns = try AccelerometerCSV.parse(context.request.body, maximumRows: maximumSamplesPerBatch)
        } catch {
            if case .tooManyRows = error { throw APIError.payloadTooLarge(error.description) }
            throw APIError.invalidField("body", error.description)
        }
        let (t, x, y, z) = (columns.t, columns.x, columns.y, columns.z)
        return try IMUBatchRequest(device: deviceName.map { SampleDevice(name: $0) }, session: session, seq: seq, unit: unit, t0: t0,
                                   t: t, x: x, y: y, z: z, pressureT: nil, pressureHectopascals: nil, heightCm: height).validated()
    }
}

extension IMUBatchRequest {
    /// Checks that do not need the pedometer: the session name and the batch span.
    func validated() throws(APIError) -> IMUBatchRequest {
        try IMURoutes.validateSessionName(session)
        if t.count > IMURoutes.maximumSamplesPerBatch {
            throw APIError.payloadTooLarge("a batch holds at most \(IMURoutes.maximumSamplesPerBatch) samples")
        }
        if let first = t.first, let last = t.last, first.isFinite, last.isFinite, last - first > 345_600 {
            throw APIError.invalidField("samples.t", "a batch may span at most 345,600 s (HealthKit's limit for step samples)")
        }
        // Each sample's instant (t0 + t) must be a sample instant: the steps' start and end become
        // milliseconds, and an offset of 1e300 s would not fit. Non-finite offsets are the pedometer's 400.
        let earliest = Double(HealthInstantLimits.sampleRange.lowerBound - t0) / 1000
        let latest = Double(HealthInstantLimits.sampleRange.upperBound - t0) / 1000
        for (field, offsets) in [("samples.t", t), ("pressure.t", pressureT ?? [])] {
            if let index = offsets.firstIndex(where: { $0.isFinite && !(earliest...latest).contains($0) }) {
                let detail = "t0 plus \(offsets[index]) s lies outside 1900-2200 (each offset must keep the sample between 1900 and 2200)"
                throw APIError.invalidArgument("\(field)[\(index)]: \(detail)", errors: [APIError.FieldIssue(index: index, field: field, detail: detail)])
            }
        }
        return self
    }
}
