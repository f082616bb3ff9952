import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// A small async/await client for healthd in HealthKit's vocabulary. Dependency-free: its own
// Codable models, URLSession underneath. One client = one app token acting for one user.

/// A metadata value: HealthKit allows strings, numbers and booleans.
public enum HealthMetadataValue: Codable, Sendable, Hashable {
    case string(String)
    case number(Double)
    case bool(Bool)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let text): try container.encode(text)
        case .number(let number): try container.encode(number)
        case .bool(let flag): try container.encode(flag)
        }
    }
}

/// HKDevice.
public struct HealthDevice: Codable, Sendable, Hashable {
    public var name, manufacturer, model, hardwareVersion, softwareVersion, localIdentifier: String?
    public init(name: String? = nil, manufacturer: String? = nil, model: String? = nil, hardwareVersion: String? = nil,
                softwareVersion: String? = nil, localIdentifier: String? = nil) {
        self.name = name
        self.manufacturer = manufacturer
        self.model = model
        self.hardwareVersion = hardwareVersion
        self.softwareVersion = softwareVersion
        self.localIdentifier = localIdentifier
    }
}

/// A quantity with its unit (`{"value","unit"}`), as workout totals are written.
public struct HealthQuantity: Codable, Sendable, Hashable {
    public var value: Double
    public var unit: String
    public init(value: Double, unit: String) { self.value = value; self.unit = unit }
}

public struct HealthWorkoutEvent: Codable, Sendable, Hashable {
    /// pause, resume, lap, marker or segment.
    public var type: String
    public var date: Date
    public init(type: String, date: Date) { self.type = type; self.date = date }
}

/// HKSourceRevision as the server reports it.
public struct HealthSource: Codable, Sendable, Hashable {
    public var app: String
    public var user: String
}

/// An HKSample (quantity, category, correlation or workout), as sent and as returned.
public struct HealthSample: Codable, Sendable, Hashable {
    public var uuid: String?
    /// The type id (`stepCount`) or HealthKit identifier.
    public var type: String
    public var start: Date
    public var end: Date?
    /// Quantities: a number; categories: the case name (`asleepCore`).
    public var value: HealthMetadataValue?
    /// Required for quantities (the server answers 400 without one: it never assumes the
    /// canonical unit); categories carry none. `quantity(_:_:unit:start:end:uuid:)` always sets it.
    public var unit: String?
    public var objects: [HealthSample]?
    public var activityType: String?
    public var totalEnergyBurned: HealthQuantity?
    public var totalDistance: HealthQuantity?
    public var events: [HealthWorkoutEvent]?
    public var metadata: [String: HealthMetadataValue]?
    public var device: HealthDevice?
    /// Set by the server.
    public var source: HealthSource?
    public var created: Date?

    public init(uuid: String? = nil, type: String, start: Date, end: Date? = nil, value: HealthMetadataValue? = nil,
                unit: String? = nil, metadata: [String: HealthMetadataValue]? = nil, device: HealthDevice? = nil) {
        self.uuid = uuid
        self.type = type
        self.start = start
        self.end = end
        self.value = value
        self.unit = unit
        self.metadata = metadata
        self.device = device
    }

    /// HKQuantitySample.
    public static func quantity(_ type: String, _ value: Double, unit: String, start: Date, end: Date? = nil,
                                uuid: String? = UUID().uuidString.lowercased()) -> HealthSample {
        HealthSample(uuid: uuid, type: type, start: start, end: end, value: .number(value), unit: unit)
    }

    /// HKCategorySample.
    public static func category(_ type: String, _ value: String, start: Date, end: Date? = nil,
                                uuid: String? = UUID().uuidString.lowercased()) -> HealthSample {
        HealthSample(uuid: uuid, type: type, start: start, end: end, value: .string(value))
    }

    /// HKCorrelation.
    public static func correlation(_ type: String, objects: [HealthSample], start: Date, end: Date? = nil,
                                   uuid: String? = UUID().uuidString.lowercased()) -> HealthSample {
        var sample = HealthSample(uuid: uuid, type: type, start: start, end: end)
        sample.objects = objects
        return sample
    }

    /// HKWorkout.
    public static func workout(_ activityType: String, start: Date, end: Date, totalEnergyBurned: HealthQuantity? = nil,
                               totalDistance: HealthQuantity? = nil, events: [HealthWorkoutEvent] = [],
                               uuid: String? = UUID().uuidString.lowercased()) -> HealthSample {
        var sample = HealthSample(uuid: uuid, type: "workout", start: start, end: end)
        sample.activityType = activityType
        sample.totalEnergyBurned = totalEnergyBurned
        sample.totalDistance = totalDistance
        sample.events = events
        return sample
    }
}

public struct HealthSamplePage: Codable, Sendable {
    public var samples: [HealthSample]
    /// Pass back as `cursor` for the next page; nil on the last one.
    public var next: String?
}

/// HKStatisticsOptions.
public struct HealthStatisticsOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let cumulativeSum = HealthStatisticsOptions(rawValue: 1)
    public static let discreteAverage = HealthStatisticsOptions(rawValue: 2)
    public static let discreteMin = HealthStatisticsOptions(rawValue: 4)
    public static let discreteMax = HealthStatisticsOptions(rawValue: 8)
    public static let mostRecent = HealthStatisticsOptions(rawValue: 16)
    public static let separateBySource = HealthStatisticsOptions(rawValue: 32)

    var queryValue: String {
        [(Self.cumulativeSum, "cumulativeSum"), (.discreteAverage, "discreteAverage"), (.discreteMin, "discreteMin"),
         (.discreteMax, "discreteMax"), (.mostRecent, "mostRecent"), (.separateBySource, "separateBySource")]
            .filter { contains($0.0) }.map(\.1).joined(separator: ",")
    }
}

public struct HealthMostRecent: Codable, Sendable, Hashable {
    public var value: Double
    public var start: Date
    public var end: Date
}

/// HKStatistics: only the requested fields are present.
public struct HealthStatistics: Codable, Sendable, Hashable {
    public struct SourceStatistics: Codable, Sendable, Hashable {
        public var app: String
        public var sum, average, minimum, maximum: Double?
        public var mostRecent: HealthMostRecent?
    }
    public var type: String?
    public var start: Date
    public var end: Date
    public var unit: String?
    public var sum, average, minimum, maximum: Double?
    public var mostRecent: HealthMostRecent?
    public var sources: [SourceStatistics]?
}

/// HKAnchoredObjectQuery's answer.
public struct HealthChanges: Codable, Sendable {
    public struct Deleted: Codable, Sendable, Hashable {
        public var uuid: String
        public var type: String
    }
    public var added: [HealthSample]
    public var deleted: [Deleted]
    /// Opaque; pass back to continue after these changes.
    public var anchor: String
    public var more: Bool
}

/// One batch of raw accelerometer readings for `POST /v1/ingest/imu`.
public struct HealthIMUBatch: Codable, Sendable {
    public struct Readings: Codable, Sendable {
        public var t, x, y, z: [Double]
        public init(t: [Double], x: [Double], y: [Double], z: [Double]) { self.t = t; self.x = x; self.y = y; self.z = z }
    }
    public struct Pressure: Codable, Sendable {
        public var t: [Double]
        public var hPa: [Double]
        public init(t: [Double], hPa: [Double]) { self.t = t; self.hPa = hPa }
    }
    public var device: String
    public var session: String
    public var seq: Int
    /// `g` or `m/s2`.
    public var unit: String
    public var t0: Date
    public var samples: Readings
    public var pressure: Pressure?
    public var heightCm: Double?

    public init(device: String, session: String, seq: Int, unit: String = "g", t0: Date, samples: Readings,
                pressure: Pressure? = nil, heightCm: Double? = nil) {
        self.device = device
        self.session = session
        self.seq = seq
        self.unit = unit
        self.t0 = t0
        self.samples = samples
        self.pressure = pressure
        self.heightCm = heightCm
    }
}

/// What the server's pedometer made of a batch (CMPedometerData's vocabulary).
public struct HealthIMUResult: Codable, Sendable {
    public var session: String
    public var seq: Int?
    public var steps: Int
    public var totalSteps: Int
    public var distance: Double?
    public var cadence: Double?
    public var pace: Double?
    public var floorsAscended: Int?
    public var floorsDescended: Int?
    public var activity: String?
    public var saved: [String]?
}

/// A failed call: the server's problem+json (`code` is HealthKit-style, e.g. `errorAuthorizationDenied`),
/// or a transport or decoding failure.
public enum HealthClientError: Error, Sendable, CustomStringConvertible {
    public struct FieldIssue: Codable, Sendable, Hashable {
        public var index: Int?
        public var field: String
        public var detail: String
    }

    case problem(status: Int, code: String, detail: String, errors: [FieldIssue])
    case unexpectedResponse(status: Int, body: String)
    case transport(String)

    public var description: String {
        switch self {
        case .problem(let status, let code, let detail, _): return "\(status) \(code): \(detail)"
        case .unexpectedResponse(let status, let body): return "unexpected response \(status): \(body.prefix(200))"
        case .transport(let detail): return detail
        }
    }

    /// True for HKError.errorAuthorizationDenied.
    public var isAuthorizationDenied: Bool {
        if case .problem(_, "errorAuthorizationDenied", _, _) = self { return true }
        return false
    }
}

/// The client. Safe to share between tasks.
public final class HealthClient: Sendable {
    public let baseURL: URL
    private let token: String
    private let session: URLSession

    public init(baseURL: URL, token: String, session: URLSession = .shared) {
        self.baseURL = baseURL
        self.token = token
        self.session = session
    }

    // MARK: Samples

    /// HKHealthStore.save: all or nothing; returns the uuids in order.
    @discardableResult
    public func save(_ samples: [HealthSample]) async throws(HealthClientError) -> [String] {
        struct Body: Encodable { var samples: [HealthSample] }
        struct Saved: Decodable { var saved: [String] }
        let saved: Saved = try await call("POST", "/v1/samples", body: Body(samples: samples))
        return saved.saved
    }

    /// HKSampleQuery: one page; pass `cursor` from the previous page to continue.
    public func samples(type: String, start: Date? = nil, end: Date? = nil, limit: Int? = nil, ascending: Bool = true,
                        unit: String? = nil, cursor: String? = nil) async throws(HealthClientError) -> HealthSamplePage {
        var query: [(String, String?)] = [("type", type), ("start", start.map(Self.format)), ("end", end.map(Self.format)),
                                          ("limit", limit.map(String.init)), ("unit", unit), ("cursor", cursor)]
        if !ascending { query.append(("order", "desc")) }
        return try await call("GET", "/v1/samples", query: query)
    }

    /// Deletes one of this app's samples.
    public func deleteSample(uuid: String) async throws(HealthClientError) {
        let _: Empty = try await call("DELETE", "/v1/samples/\(uuid)")
    }

    // MARK: Statistics

    /// HKStatisticsQuery.
    public func statistics(type: String, start: Date, end: Date, options: HealthStatisticsOptions,
                           unit: String? = nil) async throws(HealthClientError) -> HealthStatistics {
        try await call("GET", "/v1/statistics", query: [("type", type), ("start", Self.format(start)), ("end", Self.format(end)),
                                                         ("options", options.queryValue), ("unit", unit)])
    }

    /// HKStatisticsCollectionQuery: `interval` is an ISO 8601 duration (`P1D`, `PT1H`).
    public func statisticsCollection(type: String, start: Date, end: Date, interval: String, anchor: Date? = nil,
                                     timeZone: TimeZone? = nil, options: HealthStatisticsOptions,
                                     unit: String? = nil) async throws(HealthClientError) -> [HealthStatistics] {
        struct Buckets: Decodable { var buckets: [HealthStatistics] }
        let result: Buckets = try await call("GET", "/v1/statistics/collection", query: [
            ("type", type), ("start", Self.format(start)), ("end", Self.format(end)), ("interval", interval),
            ("anchor", anchor.map(Self.format)), ("timeZone", timeZone?.identifier), ("options", options.queryValue),
            ("unit", unit)])
        return result.buckets
    }

    // MARK: Change feed

    /// HKAnchoredObjectQuery: nil anchor = everything now present; follow `anchor` while `more`.
    public func changes(types: [String], anchor: String? = nil, limit: Int? = nil,
                        waitSeconds: Int? = nil) async throws(HealthClientError) -> HealthChanges {
        try await call("GET", "/v1/changes", query: [("types", types.joined(separator: ",")), ("anchor", anchor),
                                                     ("limit", limit.map(String.init)), ("wait", waitSeconds.map(String.init))])
    }

    // MARK: Motion

    /// Sends one accelerometer batch; the server's pedometer answers with steps so far.
    public func ingestIMU(_ batch: HealthIMUBatch) async throws(HealthClientError) -> HealthIMUResult {
        try await call("POST", "/v1/ingest/imu", body: batch)
    }

    /// Ends an IMU session; `totalSteps` is final.
    public func endIMUSession(_ session: String) async throws(HealthClientError) -> HealthIMUResult {
        try await call("POST", "/v1/ingest/imu/\(session)/end", body: [String: String]())
    }

    // MARK: Plumbing

    struct Empty: Decodable {}

    private struct Problem: Decodable {
        var status: Int?
        var code: String?
        var detail: String?
        var errors: [HealthClientError.FieldIssue]?
    }

    static func format(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    static func parse(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(format(date))
        }
        return encoder
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = parse(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 instant: \(text)")
            }
            return date
        }
        return decoder
    }

    private func call<Response: Decodable>(_ method: String, _ path: String, query: [(String, String?)] = [],
                                           body: (some Encodable)? = Optional<Int>.none) async throws(HealthClientError) -> Response {
        let request = try makeRequest(method, path, query: query, body: body)
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            throw .transport(error.localizedDescription)
        }
        guard let http = response as? HTTPURLResponse else { throw .transport("not an HTTP response") }
        return try Self.decodeResponse(status: http.statusCode, data: data)
    }

    /// The request a call sends: no I/O, so tests can check URL, query encoding, headers and body.
    func makeRequest(_ method: String, _ path: String, query: [(String, String?)] = [],
                     body: (some Encodable)? = Optional<Int>.none) throws(HealthClientError) -> URLRequest {
        guard var components = URLComponents(url: baseURL.appendingPathComponent(path), resolvingAgainstBaseURL: false) else {
            throw .transport("bad base URL \(baseURL)")
        }
        let items = query.compactMap { name, value in value.map { URLQueryItem(name: name, value: $0) } }
        if !items.isEmpty { components.queryItems = items }
        // `+` in an offset must stay a plus: encode it, since some servers read it as a space.
        components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        guard let url = components.url else { throw .transport("bad URL for \(path)") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let body {
            do {
                request.httpBody = try Self.encoder().encode(body)
            } catch {
                throw .transport("cannot encode the request: \(error)")
            }
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return request
    }

    /// What an answer means: the decoded body on 2xx, else the server's problem or the raw body.
    static func decodeResponse<Response: Decodable>(status: Int, data: Data) throws(HealthClientError) -> Response {
        guard (200..<300).contains(status) else {
            if let problem = try? JSONDecoder().decode(Problem.self, from: data), let code = problem.code {
                throw .problem(status: status, code: code, detail: problem.detail ?? "", errors: problem.errors ?? [])
            }
            throw .unexpectedResponse(status: status, body: String(decoding: data, as: UTF8.self))
        }
        if Response.self == Empty.self, data.isEmpty, let empty = Empty() as? Response { return empty }
        do {
            return try decoder().decode(Response.self, from: data)
        } catch {
            throw .unexpectedResponse(status: status, body: "undecodable (\(error)): " + String(decoding: data.prefix(200), as: UTF8.self))
        }
    }
}
