import JSON

/// Reads samples from request JSON (validating every HealthKit rule, each error naming its
/// field by full path) and writes them back as response JSON. Pure.
public enum SampleCodec {
    /// Decodes one sample object. `reader` is positioned at the sample (path like `samples[3]`);
    /// unknown fields are rejected. A sample without a uuid gets `newUUID()` (the server passes
    /// `HealthUUID.timeOrdered`, from the clock and the system's random source).
    public static func decode(_ reader: inout JSONFieldReader, allowNested: Bool = true,
                              newUUID: () -> HealthUUID) throws(JSONFieldError) -> HealthSample {
        do {
            return try decodeValidated(&reader, allowNested: allowNested, newUUID: newUUID)
        } catch let error as JSONFieldError {
            throw error
        } catch let error as HealthValidationError {
            throw JSONFieldError(field: error.field, detail: error.detail)
        } catch {
            throw reader.error(String(describing: error))
        }
    }

    private static func decodeValidated(_ reader: inout JSONFieldReader, allowNested: Bool,
                                        newUUID: () -> HealthUUID) throws -> HealthSample {
        if reader.contains("source") { throw reader.error("source", "is set by the server; leave it out") }
        if reader.contains("created") { throw reader.error("created", "is set by the server; leave it out") }
        let typeName = try reader.requiredString("type")
        let type = try validating(reader) { () throws(HealthValidationError) in try HealthValidation.type(typeName, field: "type") }
        guard type.isSampleType else {
            throw reader.error("type", "\(type.id) is a characteristic: use PUT /v1/characteristics")
        }
        let uuid: HealthUUID
        if let text = try reader.optionalString("uuid") {
            uuid = try validating(reader) { () throws(HealthValidationError) in try HealthValidation.uuid(text, field: "uuid") }
        } else {
            uuid = newUUID()
        }
        let startText = try reader.requiredString("start")
        let start = try validating(reader) { () throws(HealthValidationError) in try HealthValidation.instant(startText, field: "start") }
        // An instantaneous sample (a heart-rate reading) may leave out end: it ends when it starts.
        var end = start
        if let endText = try reader.optionalString("end") {
            end = try validating(reader) { () throws(HealthValidationError) in try HealthValidation.instant(endText, field: "end") }
        }
        try validating(reader) { () throws(HealthValidationError) in
            try HealthValidation.interval(start: start, end: end, for: type, startField: "start", endField: "end")
        }

        let content: SampleContent
        switch type.kind {
        case .quantity:
            let value = try reader.requiredNumber("value")
            // Required, never defaulted to the canonical unit (see `HealthValidation.missingUnit`).
            guard let unitText = try reader.optionalString("unit") else {
                throw JSONFieldError(field: reader.path(of: "unit"), detail: HealthValidation.missingUnit(for: type).detail)
            }
            let unit = try validating(reader) { () throws(HealthValidationError) in
                try HealthValidation.unit(unitText, for: type, field: "unit")
            }
            content = .quantity(try validating(reader) { () throws(HealthValidationError) in
                try HealthValidation.quantity(value, unit: unit, for: type, field: "value", unitField: "unit")
            })
        case .category:
            if reader.contains("unit") { throw reader.error("unit", "category samples carry no unit") }
            let raw = try reader.requiredValue("value")
            switch raw {
            case .string(let name):
                content = .category(try HealthValidation.categoryValue(name, for: type, field: reader.path(of: "value")))
            case .number(let number) where number.rounded() == number && abs(number) < 1_000_000:
                content = .category(try HealthValidation.categoryValue(rawValue: Int(number), for: type, field: reader.path(of: "value")))
            default:
                throw reader.error("value", "must be one of \(type.values?.caseNames.joined(separator: ", ") ?? "the type's values")")
            }
        case .correlation:
            for field in ["value", "unit"] where reader.contains(field) {
                throw reader.error(field, "correlations carry objects, not a value")
            }
            guard allowNested else { throw reader.error("type", "a correlation cannot hold another correlation") }
            let objectsReader = try reader.requiredArray("objects")
            guard !objectsReader.isEmpty else { throw objectsReader.error("must hold at least one sample") }
            var objects: [HealthSample] = []
            for index in 0..<objectsReader.count {
                var objectReader = try objectsReader.object(at: index)
                let object = try decode(&objectReader, allowNested: false, newUUID: newUUID)
                try objectReader.finish()
                try HealthValidation.correlationObject(object.type, in: type, field: objectReader.path(of: "type"))
                objects.append(object)
            }
            content = .correlation(objects)
        case .workout:
            for field in ["value", "unit"] where reader.contains(field) {
                throw reader.error(field, "workouts carry activityType and totals, not a value")
            }
            guard allowNested else { throw reader.error("type", "a correlation cannot hold a workout") }
            let activity = try HealthValidation.workoutActivityType(try reader.requiredString("activityType"),
                                                                    field: reader.path(of: "activityType"))
            let energy = try workoutTotal(&reader, "totalEnergyBurned", canonical: .kilocalorie)
            let distance = try workoutTotal(&reader, "totalDistance", canonical: .meter)
            var events: [WorkoutEvent] = []
            if let eventsReader = try reader.optionalArray("events") {
                for index in 0..<eventsReader.count {
                    var eventReader = try eventsReader.object(at: index)
                    let typeText = try eventReader.requiredString("type")
                    guard let eventType = WorkoutEventType(rawValue: typeText) else {
                        throw eventReader.error("type", "must be one of pause, resume, lap, marker, segment")
                    }
                    let date = try HealthValidation.instant(try eventReader.requiredString("date"), field: eventReader.path(of: "date"))
                    guard date >= start && date <= end else {
                        throw eventReader.error("date", "must lie within the workout's start and end")
                    }
                    try eventReader.finish()
                    events.append(WorkoutEvent(type: eventType, date: date))
                }
            }
            content = .workout(WorkoutDetails(activityType: activity, totalEnergyBurned: energy, totalDistance: distance, events: events))
        case .series:
            for field in ["value", "unit"] where reader.contains(field) {
                throw reader.error(field, "a workout route carries workout and locations, not a value")
            }
            guard allowNested else { throw reader.error("type", "a correlation cannot hold a workout route") }
            content = .workoutRoute(try decodeRoute(&reader, start: start, end: end))
        case .characteristic:
            throw reader.error("type", "\(type.id) is a characteristic: use PUT /v1/characteristics")
        }

        var metadata: [MetadataEntry] = []
        if let metadataReader = try reader.optionalObject("metadata") {
            // The path is built only when the check fails (`validating` uses the parent's key).
            try validating(reader) { () throws(HealthValidationError) in
                try HealthValidation.metadata(keyCount: metadataReader.object.count, field: "metadata")
            }
            for member in metadataReader.object.members {
                switch member.value {
                case .string(let text): metadata.append(MetadataEntry(key: member.key, value: .string(text)))
                case .number(let number): metadata.append(MetadataEntry(key: member.key, value: .number(number)))
                case .bool(let flag): metadata.append(MetadataEntry(key: member.key, value: .bool(flag)))
                default:
                    throw JSONFieldError(field: metadataReader.path(of: member.key),
                                         detail: "metadata values are strings, numbers or booleans")
                }
            }
            // Serializing to measure is needed only when a worst-case estimate could exceed the limit.
            if metadataSizeBound(metadata) > HealthValidation.maximumMetadataBytes {
                var sizeProbe = JSONWriter()
                writeMetadata(metadata, into: &sizeProbe)
                try validating(reader) { () throws(HealthValidationError) in
                    try HealthValidation.metadata(keyCount: metadata.count, serializedByteCount: sizeProbe.bytes.count,
                                                  field: "metadata")
                }
            }
            // Mark the whole object as read: its members were checked above.
            _ = reader.optionalValue("metadata")
        }

        let device = try reader.optionalObject("device").flatMap { (deviceReader: JSONFieldReader) throws -> SampleDevice? in
            var deviceReader = deviceReader
            return try decodeDevice(&deviceReader)
        }
        return HealthSample(uuid: uuid, type: type.id, start: start, end: end, content: content, metadata: metadata, device: device)
    }

    /// Runs a check whose errors name a member of `reader`'s object by its key; the full path
    /// (`samples[3].start`) is built only when the check fails, not for every field of every sample.
    @inline(__always)
    private static func validating<Result>(_ reader: JSONFieldReader,
                                           _ check: () throws(HealthValidationError) -> Result) throws(JSONFieldError) -> Result {
        do {
            return try check()
        } catch {
            throw JSONFieldError(field: reader.path(of: error.field), detail: error.detail)
        }
    }

    /// At least as many bytes as `writeMetadata` writes: every key and string escaped at worst
    /// (6 bytes per UTF-8 byte, `\u00XX`), numbers at their longest form, plus punctuation.
    static func metadataSizeBound(_ metadata: [MetadataEntry]) -> Int {
        var bound = 2
        for entry in metadata {
            bound += entry.key.utf8.count * 6 + 4
            switch entry.value {
            case .string(let text): bound += text.utf8.count * 6 + 2
            case .number: bound += 32
            case .bool: bound += 5
            }
        }
        return bound
    }

    /// A workout route's `workout` (the uuid of the workout it belongs to) and `locations`
    /// (`{date, latitude, longitude, altitude?, speed?, course?, horizontalAccuracy?, verticalAccuracy?}`).
    private static func decodeRoute(_ reader: inout JSONFieldReader, start: Int64, end: Int64) throws -> WorkoutRoute {
        let workoutText = try reader.requiredString("workout")
        let workout = try validating(reader) { () throws(HealthValidationError) in
            try HealthValidation.uuid(workoutText, field: "workout")
        }
        let locationsReader = try reader.requiredArray("locations")
        var locations: [WorkoutRouteLocation] = []
        locations.reserveCapacity(min(locationsReader.count, HealthValidation.maximumRouteLocations))
        for index in 0..<min(locationsReader.count, HealthValidation.maximumRouteLocations + 1) {
            var locationReader = try locationsReader.object(at: index)
            let dateText = try locationReader.requiredString("date")
            let date = try validating(locationReader) { () throws(HealthValidationError) in
                try HealthValidation.instant(dateText, field: "date")
            }
            var location = WorkoutRouteLocation(date: date, latitude: try locationReader.requiredNumber("latitude"),
                                                longitude: try locationReader.requiredNumber("longitude"))
            location.altitude = try locationReader.optionalNumber("altitude")
            location.speed = try locationReader.optionalNumber("speed")
            location.course = try locationReader.optionalNumber("course")
            location.horizontalAccuracy = try locationReader.optionalNumber("horizontalAccuracy")
            location.verticalAccuracy = try locationReader.optionalNumber("verticalAccuracy")
            try locationReader.finish()
            locations.append(location)
        }
        if locationsReader.count > HealthValidation.maximumRouteLocations {
            throw locationsReader.error("a route holds at most \(HealthValidation.maximumRouteLocations) locations, not \(locationsReader.count)")
        }
        try validating(reader) { () throws(HealthValidationError) in
            try HealthValidation.workoutRoute(locations, start: start, end: end)
        }
        return WorkoutRoute(workout: workout, locations: locations)
    }

    private static func workoutTotal(_ reader: inout JSONFieldReader, _ key: String, canonical: HealthUnit) throws -> Double? {
        guard var total = try reader.optionalObject(key) else { return nil }
        let value = try total.requiredNumber("value")
        let measure = canonical == .meter ? "length" : "energy"
        guard let unitText = try total.optionalString("unit") else {
            throw total.error("unit", "unit is required for a workout total: \(key) takes a unit of \(measure) "
                              + "(\(canonical == .meter ? "m, km, mi, ft" : "kcal, kJ, Cal"), ...)")
        }
        let unit: HealthUnit
        do { unit = try HealthUnit.parse(unitText) } catch { throw total.error("unit", error.description) }
        guard unit.isCompatible(with: canonical) else {
            throw total.error("unit", "'\(unitText)' is not a unit of \(measure)")
        }
        guard value.isFinite, value >= 0 else { throw total.error("value", "must be a finite number, not negative") }
        try total.finish()
        return try unit.convert(value, to: canonical)
    }

    // MARK: Writing

    /// Member names, encoded once: a page of samples writes about twenty per sample.
    private enum Keys {
        static let uuid = JSONWriter.Key("uuid"), type = JSONWriter.Key("type"), value = JSONWriter.Key("value")
        static let unit = JSONWriter.Key("unit"), objects = JSONWriter.Key("objects")
        static let activityType = JSONWriter.Key("activityType"), totalEnergyBurned = JSONWriter.Key("totalEnergyBurned")
        static let totalDistance = JSONWriter.Key("totalDistance"), events = JSONWriter.Key("events")
        static let date = JSONWriter.Key("date"), workout = JSONWriter.Key("workout"), locations = JSONWriter.Key("locations")
        static let latitude = JSONWriter.Key("latitude"), longitude = JSONWriter.Key("longitude")
        static let start = JSONWriter.Key("start"), end = JSONWriter.Key("end"), metadata = JSONWriter.Key("metadata")
        static let device = JSONWriter.Key("device"), source = JSONWriter.Key("source"), app = JSONWriter.Key("app")
        static let user = JSONWriter.Key("user"), created = JSONWriter.Key("created")
        static let name = JSONWriter.Key("name"), manufacturer = JSONWriter.Key("manufacturer"), model = JSONWriter.Key("model")
        static let hardwareVersion = JSONWriter.Key("hardwareVersion"), softwareVersion = JSONWriter.Key("softwareVersion")
        static let localIdentifier = JSONWriter.Key("localIdentifier")
        static let altitude = JSONWriter.Key("altitude"), speed = JSONWriter.Key("speed"), course = JSONWriter.Key("course")
        static let horizontalAccuracy = JSONWriter.Key("horizontalAccuracy"), verticalAccuracy = JSONWriter.Key("verticalAccuracy")
    }

    /// Writes an instant as its RFC 3339 UTC string, formatted on the stack (no String per instant).
    public static func writeInstant(_ instant: HealthInstant, into writer: inout JSONWriter) {
        var instants = RFC3339.UTCWriter()
        writeInstant(instant, with: &instants, into: &writer)
    }

    /// An instant as RFC 3339 at a UTC offset (a statistics bucket's edge), formatted on the
    /// stack: a collection writes two per bucket, and a String for each cost more than the rest
    /// of the bucket's JSON.
    public static func writeInstant(_ instant: HealthInstant, offsetSeconds: Int, into writer: inout JSONWriter) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: RFC3339.maximumOffsetByteCount) { buffer in
            let count = RFC3339.write(instant, offsetSeconds: offsetSeconds, into: buffer)
            writer.unescapedString(UnsafeBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// The same, through a page's `UTCWriter` (which keeps the last date's text), quotes included
    /// in the one copy into the writer.
    static func writeInstant(_ instant: HealthInstant, with instants: inout RFC3339.UTCWriter, into writer: inout JSONWriter) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: RFC3339.maximumUTCByteCount + 2) { buffer in
            buffer[0] = 0x22  // "
            let count = instants.write(instant, into: UnsafeMutableBufferPointer(rebasing: buffer[1...]))
            buffer[count + 1] = 0x22
            writer.quotedUnescapedString(UnsafeBufferPointer(rebasing: buffer[0..<(count + 2)]))
        }
    }

    /// Writes a uuid in lowercase, formatted on the stack (no String per uuid).
    public static func writeUUID(_ uuid: HealthUUID, into writer: inout JSONWriter) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 38) { buffer in
            buffer[0] = 0x22  // "
            let count = uuid.write(into: UnsafeMutableBufferPointer(rebasing: buffer[1...]))
            buffer[count + 1] = 0x22
            writer.quotedUnescapedString(UnsafeBufferPointer(rebasing: buffer[0..<(count + 2)]))
        }
    }

    /// The most bytes one location of `writeLocations` takes, with its comma: every field present,
    /// the longest date and numbers of the longest form. Measured by writing such a location.
    public static let maximumLocationBytes: Int = {
        let longest = -2.2250738585072014e-308
        let location = WorkoutRouteLocation(date: 0, latitude: longest, longitude: longest, altitude: longest, speed: longest,
                                            course: longest, horizontalAccuracy: longest, verticalAccuracy: longest)
        var numbers = JSONWriter()
        numbers.number(longest)
        precondition(numbers.bytes.count == JSONWriter.maximumDoubleBytes)
        var writer = JSONWriter()
        writeLocations([location], into: &writer)
        var date = JSONWriter()
        writeInstant(0, into: &date)
        // Less the array's brackets and the quoted date written, plus the longest date and a comma.
        return writer.bytes.count - 2 - (date.bytes.count - 2) + RFC3339.maximumUTCByteCount + 1
    }()

    /// The most bytes one sample's JSON (an export line) takes: a route's maximum number of
    /// locations at their longest, plus `maximumNonLocationBytes` for everything else.
    public static let maximumSampleBytes = HealthValidation.maximumRouteLocations * maximumLocationBytes + maximumNonLocationBytes

    /// What a sample's fields other than route locations may take: the default request body limit
    /// (a sample's strings and metadata arrive in one request body; its locations are the only part
    /// a sample's JSON grows by as the route's bounded count of them).
    public static let maximumNonLocationBytes = 16 * 1024 * 1024

    /// A route's locations as API JSON (`GET /v1/samples`, the export, `GET /v1/workouts/{uuid}/route`).
    public static func writeLocations(_ locations: [WorkoutRouteLocation], into writer: inout JSONWriter) {
        writer.beginArray()
        for location in locations {
            writer.beginObject()
            writer.key(Keys.date); writeInstant(location.date, into: &writer)
            writer.key(Keys.latitude); writer.number(location.latitude)
            writer.key(Keys.longitude); writer.number(location.longitude)
            if let altitude = location.altitude { writer.key(Keys.altitude); writer.number(altitude) }
            if let speed = location.speed { writer.key(Keys.speed); writer.number(speed) }
            if let course = location.course { writer.key(Keys.course); writer.number(course) }
            if let accuracy = location.horizontalAccuracy { writer.key(Keys.horizontalAccuracy); writer.number(accuracy) }
            if let accuracy = location.verticalAccuracy { writer.key(Keys.verticalAccuracy); writer.number(accuracy) }
            writer.endObject()
        }
        writer.endArray()
    }

    /// What writing a run of samples works out once rather than per sample. A page is mostly of
    /// one type, so its unit conversion is found (a catalog lookup by name) for the first sample
    /// and reused while the type stays the same; and its rows mostly repeat one device and one
    /// source, whose JSON is serialized once and copied while they stay the same (compact
    /// output only: a pretty-printed fragment depends on its depth).
    private struct QuantityUnits {
        let shown: HealthUnit?
        var lastType: String?
        var lastConversion = HealthUnitConversion.identity(.count)
        var device = RepeatedFragment<SampleDevice>(capacity: 128)
        var source = RepeatedFragment<SampleSource>(capacity: 96)
        /// A page's instants mostly share their dates: each date is formatted once.
        var instants = RFC3339.UTCWriter()

        init(shown: HealthUnit?) { self.shown = shown }

        mutating func writeDevice(_ device: SampleDevice, into writer: inout JSONWriter) {
            self.device.write(device, into: &writer, with: SampleCodec.writeDevice)
        }

        mutating func writeSource(_ source: SampleSource, into writer: inout JSONWriter) {
            self.source.write(source, into: &writer, with: SampleCodec.writeSource)
        }

        mutating func conversion(for type: String) -> HealthUnitConversion {
            if let lastType, lastType == type { return lastConversion }
            let canonical = HealthTypeCatalog.type(type)?.canonicalUnit ?? .count
            lastConversion = shown.flatMap { HealthUnitConversion(from: canonical, to: $0) } ?? .identity(canonical)
            lastType = type
            return lastConversion
        }
    }

    /// The JSON of the last value written, copied while the next value equals it (compact output
    /// only: a pretty-printed fragment depends on its depth).
    private struct RepeatedFragment<Value: Equatable> {
        let capacity: Int
        var last: Value?
        var lastJSON: [UInt8] = []

        init(capacity: Int) { self.capacity = capacity }

        mutating func write(_ value: Value, into writer: inout JSONWriter,
                            with serialize: (Value, inout JSONWriter) -> Void) {
            guard !writer.prettyPrinted else { return serialize(value, &writer) }
            if last != value {
                var fragment = JSONWriter(capacity: capacity)
                serialize(value, &fragment)
                last = value
                lastJSON = fragment.bytes
            }
            writer.serializedValue(lastJSON)
        }
    }

    /// Writes a stored sample as API JSON. `unit`, when given, is the unit quantities are shown in
    /// (callers check that it fits the type); otherwise, or if it does not fit, the canonical unit:
    /// a value is never written under a unit it is not in.
    public static func write(_ stored: StoredSample, unit: HealthUnit? = nil, into writer: inout JSONWriter) {
        var units = QuantityUnits(shown: unit)
        write(stored, units: &units, into: &writer)
    }

    /// Writes samples as a JSON array, each as `write(_:unit:into:)` writes it.
    public static func write(_ samples: [StoredSample], unit: HealthUnit? = nil, into writer: inout JSONWriter) {
        var units = QuantityUnits(shown: unit)
        writer.beginArray()
        for stored in samples { write(stored, units: &units, into: &writer) }
        writer.endArray()
    }

    private static func write(_ stored: StoredSample, units: inout QuantityUnits, into writer: inout JSONWriter) {
        let sample = stored.sample
        writer.beginObject()
        writer.key(Keys.uuid); writeUUID(sample.uuid, into: &writer)
        writer.key(Keys.type); writer.string(sample.type)
        switch sample.content {
        case .quantity(let canonicalValue):
            let conversion = units.conversion(for: sample.type)
            writer.key(Keys.value); writer.number(conversion.apply(canonicalValue))
            writer.key(Keys.unit); writer.string(conversion.target.unitString)
        case .category(let name):
            writer.key(Keys.value); writer.string(name)
        case .correlation(let objects):
            // The objects show in their canonical units, whatever `unit` says.
            var objectUnits = QuantityUnits(shown: nil)
            writer.key(Keys.objects)
            writer.beginArray()
            for object in objects {
                write(StoredSample(sample: object, source: stored.source, created: stored.created), units: &objectUnits, into: &writer)
            }
            writer.endArray()
        case .workout(let workout):
            writer.key(Keys.activityType); writer.string(workout.activityType)
            if let energy = workout.totalEnergyBurned {
                writer.key(Keys.totalEnergyBurned)
                writeQuantity(energy, canonical: .kilocalorie, shown: units.shown, into: &writer)
            }
            if let distance = workout.totalDistance {
                writer.key(Keys.totalDistance)
                writeQuantity(distance, canonical: .meter, shown: units.shown, into: &writer)
            }
            writer.key(Keys.events)
            writer.beginArray()
            for event in workout.events {
                writer.beginObject()
                writer.key(Keys.type); writer.string(event.type.rawValue)
                writer.key(Keys.date); writeInstant(event.date, into: &writer)
                writer.endObject()
            }
            writer.endArray()
        case .workoutRoute(let route):
            writer.key(Keys.workout); writeUUID(route.workout, into: &writer)
            writer.key(Keys.locations); writeLocations(route.locations, into: &writer)
        }
        writer.key(Keys.start); writeInstant(sample.start, with: &units.instants, into: &writer)
        writer.key(Keys.end); writeInstant(sample.end, with: &units.instants, into: &writer)
        writer.key(Keys.metadata); writeMetadata(sample.metadata, into: &writer)
        writer.key(Keys.device)
        if let device = sample.device { units.writeDevice(device, into: &writer) } else { writer.null() }
        writer.key(Keys.source)
        units.writeSource(stored.source, into: &writer)
        writer.key(Keys.created); writeInstant(stored.created, with: &units.instants, into: &writer)
        writer.endObject()
    }

    static func writeSource(_ source: SampleSource, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key(Keys.app); writer.string(source.app)
        writer.key(Keys.user); writer.string(source.user)
        writer.endObject()
    }

    /// A workout total in `shown` when it measures the same thing (a `unit` of kcal shows energy
    /// in kcal and leaves distance in m), else in its canonical unit.
    private static func writeQuantity(_ canonicalValue: Double, canonical: HealthUnit, shown: HealthUnit?, into writer: inout JSONWriter) {
        let conversion = shown.flatMap { HealthUnitConversion(from: canonical, to: $0) } ?? .identity(canonical)
        writer.beginObject()
        writer.key(Keys.value); writer.number(conversion.apply(canonicalValue))
        writer.key(Keys.unit); writer.string(conversion.target.unitString)
        writer.endObject()
    }

    public static func writeMetadata(_ metadata: [MetadataEntry], into writer: inout JSONWriter) {
        writer.beginObject()
        for entry in metadata {
            writer.key(entry.key)
            switch entry.value {
            case .string(let text): writer.string(text)
            case .number(let number): writer.number(number)
            case .bool(let flag): writer.bool(flag)
            }
        }
        writer.endObject()
    }

    /// Reads an HKDevice object (every field an optional string; unknown fields rejected).
    /// Nil when it names nothing.
    public static func decodeDevice(_ reader: inout JSONFieldReader) throws(JSONFieldError) -> SampleDevice? {
        var device = SampleDevice()
        device.name = try reader.optionalString("name")
        device.manufacturer = try reader.optionalString("manufacturer")
        device.model = try reader.optionalString("model")
        device.hardwareVersion = try reader.optionalString("hardwareVersion")
        device.softwareVersion = try reader.optionalString("softwareVersion")
        device.localIdentifier = try reader.optionalString("localIdentifier")
        try reader.finish()
        return device.isEmpty ? nil : device
    }

    public static func writeDevice(_ device: SampleDevice, into writer: inout JSONWriter) {
        // Field by field rather than through `device.fields`: this runs for every row of a page.
        writer.beginObject()
        if let name = device.name { writer.key(Keys.name); writer.string(name) }
        if let manufacturer = device.manufacturer { writer.key(Keys.manufacturer); writer.string(manufacturer) }
        if let model = device.model { writer.key(Keys.model); writer.string(model) }
        if let hardwareVersion = device.hardwareVersion { writer.key(Keys.hardwareVersion); writer.string(hardwareVersion) }
        if let softwareVersion = device.softwareVersion { writer.key(Keys.softwareVersion); writer.string(softwareVersion) }
        if let localIdentifier = device.localIdentifier { writer.key(Keys.localIdentifier); writer.string(localIdentifier) }
        writer.endObject()
    }
}
