import HealthModel
import JSON
import SQLSupport

/// The columns of `samples` that `SampleRow` reads, in SELECT order. Both stores' `samples`
/// tables have these columns; the PostgreSQL store decodes the same row type from its results.
package enum SampleColumn: Int, TableColumns {
    case seq, uuid, typeID, sourceID, deviceID, start, end, value, body, created, parentSeq

    package static let table = "samples"

    package var name: String {
        switch self {
        case .seq: "seq"
        case .uuid: "uuid"
        case .typeID: "type_id"
        case .sourceID: "source_id"
        case .deviceID: "device_id"
        case .start: "start_ms"
        case .end: "end_ms"
        case .value: "value"
        case .body: "body"
        case .created: "created_ms"
        case .parentSeq: "parent_seq"
        }
    }
}

/// One row of `samples`, copied out of the statement (selected with `SampleColumn.selectList`).
/// A NULL in a NOT NULL column or a uuid that is not 16 bytes throws instead of reading as zero.
package struct SampleRow: Sendable {
    package var seq: Int64
    package var uuid: HealthUUID
    package var typeCode: Int64
    package var sourceRowID: Int64
    package var deviceRowID: Int64?
    package var start: Int64
    package var end: Int64
    package var value: Double?
    package var body: [UInt8]?
    package var created: Int64
    package var parentSeq: Int64?

    /// "seq, uuid, ...": the SELECT list in `SampleColumn` order.
    package static let selectList = SampleColumn.selectList

    package init(seq: Int64, uuid: HealthUUID, typeCode: Int64, sourceRowID: Int64, deviceRowID: Int64?, start: Int64,
                 end: Int64, value: Double?, body: [UInt8]?, created: Int64, parentSeq: Int64?) {
        self.seq = seq
        self.uuid = uuid
        self.typeCode = typeCode
        self.sourceRowID = sourceRowID
        self.deviceRowID = deviceRowID
        self.start = start
        self.end = end
        self.value = value
        self.body = body
        self.created = created
        self.parentSeq = parentSeq
    }
}

/// How a sample maps to a row: quantities in `value`; everything that is not a column (category
/// name, metadata, workout fields) in `body` as compact JSON, NULL when there is nothing (most
/// step and heart-rate samples), which keeps rows small and inserts fast.
package enum SampleRowBody {
    package static func encode(_ sample: HealthSample) -> [UInt8]? {
        var hasContent = !sample.metadata.isEmpty
        switch sample.content {
        case .category, .workout, .workoutRoute: hasContent = true
        case .quantity, .correlation: break
        }
        guard hasContent else { return nil }
        var writer = JSONWriter(capacity: 128)
        writer.beginObject()
        switch sample.content {
        case .category(let name):
            writer.key("c"); writer.string(name)
        case .workout(let workout):
            writer.key("w")
            writer.beginObject()
            writer.key("a"); writer.string(workout.activityType)
            if let energy = workout.totalEnergyBurned { writer.key("e"); writer.number(energy) }
            if let distance = workout.totalDistance { writer.key("d"); writer.number(distance) }
            writer.key("v")
            writer.beginArray()
            for event in workout.events {
                writer.beginArray()
                writer.string(event.type.rawValue)
                writer.integer(event.date)
                writer.endArray()
            }
            writer.endArray()
            writer.endObject()
        case .workoutRoute(let route):
            // {"w": workout uuid, "l": [[date, latitude, longitude, altitude, speed, course,
            // horizontalAccuracy, verticalAccuracy], ...]}: arrays, not objects, since a route has
            // thousands of locations; an unknown field is null.
            writer.key("r")
            writer.beginObject()
            writer.key("w"); writer.string(route.workout.lowercasedString)
            writer.key("l")
            writer.beginArray()
            for location in route.locations {
                writer.beginArray()
                writer.integer(location.date)
                writer.number(location.latitude)
                writer.number(location.longitude)
                for (_, value) in location.optionalFields {
                    if let value { writer.number(value) } else { writer.null() }
                }
                writer.endArray()
            }
            writer.endArray()
            writer.endObject()
        case .quantity, .correlation: break
        }
        if !sample.metadata.isEmpty {
            writer.key("m")
            SampleCodec.writeMetadata(sample.metadata, into: &writer)
        }
        writer.endObject()
        return writer.bytes
    }

    /// Bodies for the rows of one batch. A quantity's (or correlation's) body is its metadata
    /// alone, and a batch repeats a few metadata objects (the batch decoder even shares their
    /// storage), so the bodies of the last few are kept and reused instead of written again.
    package struct BatchMemo {
        private var recent: [(metadata: [MetadataEntry], body: [UInt8]?)] = []
        private var next = 0

        package init() {}

        package mutating func body(for sample: HealthSample) -> [UInt8]? {
            switch sample.content {
            case .quantity, .correlation:
                guard !sample.metadata.isEmpty else { return nil }
                for entry in recent where entry.metadata == sample.metadata { return entry.body }
                let body = SampleRowBody.encode(sample)
                if recent.count < 4 {
                    recent.append((sample.metadata, body))
                } else {
                    recent[next] = (sample.metadata, body)
                    next = (next + 1) % 4
                }
                return body
            case .category, .workout, .workoutRoute:
                return SampleRowBody.encode(sample)
            }
        }
    }

    package struct Decoded {
        package var category: String?
        package var workout: WorkoutDetails?
        package var route: WorkoutRoute?
        package var metadata: [MetadataEntry] = []

        package init() {}

        /// The content a body holds by itself (a category value, a workout, a route); nil for
        /// quantities (in `value`) and correlations (in child rows). Every store reads rows
        /// through this, so a new kind of content is decoded in one place.
        package var content: SampleContent? {
            if let category { return .category(category) }
            if let workout { return .workout(workout) }
            if let route { return .workoutRoute(route) }
            return nil
        }
    }

    /// Bodies are written only by `encode`; one that is not a JSON object is a damaged row, and
    /// throws rather than reading as empty (a category sample would lose its value).
    package static func decode(_ bytes: [UInt8]) throws(RowDecodingError) -> Decoded {
        var decoded = Decoded()
        guard case .object(let object)? = try? JSONParser.parse(bytes) else {
            throw RowDecodingError(table: SampleColumn.table, column: SampleColumn.body.name, problem: "is not a JSON object")
        }
        if case .string(let name)? = object["c"] { decoded.category = name }
        if case .object(let workout)? = object["w"], case .string(let activity)? = workout["a"] {
            var events: [WorkoutEvent] = []
            if case .array(let list)? = workout["v"] {
                for item in list {
                    if case .array(let pair) = item, pair.count == 2, case .string(let type) = pair[0],
                       case .number(let date) = pair[1], let eventType = WorkoutEventType(rawValue: type) {
                        events.append(WorkoutEvent(type: eventType, date: Int64(date)))
                    }
                }
            }
            decoded.workout = WorkoutDetails(activityType: activity, totalEnergyBurned: workout["e"]?.numberValue,
                                             totalDistance: workout["d"]?.numberValue, events: events)
        }
        if case .object(let route)? = object["r"], case .string(let workoutText)? = route["w"],
           let workout = HealthUUID(workoutText), case .array(let rows)? = route["l"] {
            var locations: [WorkoutRouteLocation] = []
            locations.reserveCapacity(rows.count)
            for case .array(let fields) in rows where fields.count == 8 {
                guard case .number(let date) = fields[0], case .number(let latitude) = fields[1],
                      case .number(let longitude) = fields[2] else { continue }
                locations.append(WorkoutRouteLocation(
                    date: Int64(date), latitude: latitude, longitude: longitude, altitude: fields[3].numberValue,
                    speed: fields[4].numberValue, course: fields[5].numberValue,
                    horizontalAccuracy: fields[6].numberValue, verticalAccuracy: fields[7].numberValue))
            }
            decoded.route = WorkoutRoute(workout: workout, locations: locations)
        }
        if case .object(let metadata)? = object["m"] {
            for member in metadata.members {
                switch member.value {
                case .string(let text): decoded.metadata.append(MetadataEntry(key: member.key, value: .string(text)))
                case .number(let number): decoded.metadata.append(MetadataEntry(key: member.key, value: .number(number)))
                case .bool(let flag): decoded.metadata.append(MetadataEntry(key: member.key, value: .bool(flag)))
                default: break
                }
            }
        }
        return decoded
    }
}

/// Row bodies already decoded while materializing one result: they repeat (the same few metadata
/// values), so each is parsed once, up to a bound. Only small bodies are kept: a route's
/// locations are unique and would pin megabytes.
package struct SampleBodyCache {
    private var bodies: [[UInt8]: SampleRowBody.Decoded] = [:]

    package init() {}

    package mutating func decoded(_ bytes: [UInt8]) throws(RowDecodingError) -> SampleRowBody.Decoded {
        if let known = bodies[bytes] { return known }
        let decoded = try SampleRowBody.decode(bytes)
        if bodies.count < 256, bytes.count <= 1_024 { bodies[bytes] = decoded }
        return decoded
    }
}

package enum DeviceBody {
    package static func encode(_ device: SampleDevice) -> [UInt8] {
        var writer = JSONWriter(capacity: 96)
        SampleCodec.writeDevice(device, into: &writer)
        return writer.bytes
    }

    /// Bodies are written only by `encode`; one that is not a JSON object is a damaged row.
    package static func decode(_ bytes: [UInt8]) throws(RowDecodingError) -> SampleDevice {
        guard case .object(let object)? = try? JSONParser.parse(bytes) else {
            throw RowDecodingError(table: "devices", column: "body", problem: "is not a JSON object")
        }
        var device = SampleDevice()
        device.name = object["name"]?.stringValue
        device.manufacturer = object["manufacturer"]?.stringValue
        device.model = object["model"]?.stringValue
        device.hardwareVersion = object["hardwareVersion"]?.stringValue
        device.softwareVersion = object["softwareVersion"]?.stringValue
        device.localIdentifier = object["localIdentifier"]?.stringValue
        return device
    }
}
