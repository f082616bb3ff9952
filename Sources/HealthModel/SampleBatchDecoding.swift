import JSON

/// Reads a `POST /v1/samples` body (`{"samples":[…]}`) straight from its bytes into samples: no
/// JSON tree, no string per field, and what a batch repeats (its types, units, devices and
/// metadata) worked out once per batch.
///
/// It returns exactly what the general path (`JSONParser`, `JSONFieldReader`, `SampleCodec`)
/// returns for the same body, or nil, never anything else:
/// - Quantity samples whose members are plain (strings without escapes, numbers, no unknown
///   keys) are read here, with the same validation functions and the same results.
/// - Any other sample (a workout, a correlation, a category, an escaped string) is handed to the
///   general path on its own: `JSONParser.parseValue` over its bytes, then `SampleCodec.decode`.
/// - Anything wrong anywhere (bad JSON, a field that fails validation, too many samples) makes
///   it return nil, and the caller decodes the whole body the general way, which finds every
///   problem and names each by its field. Errors are therefore always the general path's own.
public struct SampleBatchDecoder {
    private var cursor: JSONByteCursor
    /// The quantity types met in this body, with their units' conversions.
    private var types: [KnownType] = []
    /// Recent device and metadata objects by their bytes: a batch repeats a few of each.
    private var devices = RecentObjects<SampleDevice?>(capacity: 4)
    private var metadata = RecentObjects<[MetadataEntry]>(capacity: 8)

    /// The samples of `body`, or nil when the general path must decode it (see the type's comment).
    public static func decode(_ body: [UInt8], maxBatchSize: Int, newUUID: () -> HealthUUID) -> [HealthSample]? {
        body.withUnsafeBufferPointer { buffer in
            var decoder = SampleBatchDecoder(cursor: JSONByteCursor(buffer))
            return decoder.batch(maxBatchSize: maxBatchSize, newUUID: newUUID)
        }
    }

    private init(cursor: JSONByteCursor) { self.cursor = cursor }

    private mutating func batch(maxBatchSize: Int, newUUID: () -> HealthUUID) -> [HealthSample]? {
        guard cursor.consume(UInt8(ascii: "{")), let key = cursor.plainString(), cursor.matches(key, "samples"),
              cursor.consume(UInt8(ascii: ":")), cursor.consume(UInt8(ascii: "[")) else { return nil }
        var samples: [HealthSample] = []
        // A quantity sample takes at least about 100 bytes of JSON.
        samples.reserveCapacity(max(1, min(maxBatchSize, cursor.bytes.count / 100)))
        repeat {
            guard samples.count < maxBatchSize else { return nil }
            cursor.skipWhitespace()
            let start = cursor.position
            if let sample = quantitySample(newUUID: newUUID) {
                samples.append(sample)
            } else {
                cursor.position = start
                guard let sample = generalSample(newUUID: newUUID) else { return nil }
                samples.append(sample)
            }
        } while cursor.consume(UInt8(ascii: ","))
        guard cursor.consume(UInt8(ascii: "]")), cursor.consume(UInt8(ascii: "}")) else { return nil }
        cursor.skipWhitespace()
        return cursor.isAtEnd ? samples : nil
    }

    /// One sample the general way, from its own bytes; nil if it does not parse or validate.
    private mutating func generalSample(newUUID: () -> HealthUUID) -> HealthSample? {
        // The sample sits two levels down (the body's object, its array): the same depth limit.
        guard let parsed = try? JSONParser.parseValue(cursor.bytes, at: cursor.position,
                                                      maxDepth: JSONParser.defaultMaxDepth - 2) else { return nil }
        do throws(JSONFieldError) {
            var reader = try JSONFieldReader(parsed.value)
            let sample = try SampleCodec.decode(&reader, newUUID: newUUID)
            try reader.finish()
            cursor.position = parsed.end
            return sample
        } catch {
            return nil
        }
    }

    // MARK: Quantity samples

    private enum Field: UInt8 {
        case type = 1, uuid = 2, start = 4, end = 8, value = 16, unit = 32, metadata = 64, device = 128
    }

    /// The member a key names: a candidate picked by length and first letters, then compared whole.
    private func knownField(_ key: Range<Int>) -> Field? {
        guard key.count >= 3 else { return nil }
        let candidate: (field: Field, name: StaticString)
        switch (key.count, cursor.bytes[key.lowerBound], cursor.bytes[key.lowerBound + 1]) {
        case (3, UInt8(ascii: "e"), _): candidate = (.end, "end")
        case (4, UInt8(ascii: "t"), _): candidate = (.type, "type")
        case (4, UInt8(ascii: "u"), UInt8(ascii: "u")): candidate = (.uuid, "uuid")
        case (4, UInt8(ascii: "u"), _): candidate = (.unit, "unit")
        case (5, UInt8(ascii: "v"), _): candidate = (.value, "value")
        case (5, UInt8(ascii: "s"), _): candidate = (.start, "start")
        case (6, UInt8(ascii: "d"), _): candidate = (.device, "device")
        case (8, UInt8(ascii: "m"), _): candidate = (.metadata, "metadata")
        default: return nil
        }
        return cursor.matches(key, candidate.name) ? candidate.field : nil
    }

    /// A quantity sample with plain members, validated as `SampleCodec.decode` validates it; nil
    /// for any other sample and for any problem (the cursor is then anywhere inside it).
    private mutating func quantitySample(newUUID: () -> HealthUUID) -> HealthSample? {
        guard cursor.consume(UInt8(ascii: "{")) else { return nil }
        var seen: UInt8 = 0
        var typeName: Range<Int>?, uuidText: Range<Int>?, startText: Range<Int>?, endText: Range<Int>?, unitText: Range<Int>?
        var value: Double?
        var entries: [MetadataEntry] = []
        var device: SampleDevice?
        repeat {
            guard let key = cursor.plainString(), let field = knownField(key), seen & field.rawValue == 0,
                  cursor.consume(UInt8(ascii: ":")) else { return nil }
            seen |= field.rawValue
            // `null` is what an absent optional member is; a required one the general path reports.
            if field != .type && field != .start && field != .value, cursor.consumeLiteral("null") { continue }
            switch field {
            case .type: typeName = cursor.plainString(); if typeName == nil { return nil }
            case .uuid: uuidText = cursor.plainString(); if uuidText == nil { return nil }
            case .start: startText = cursor.plainString(); if startText == nil { return nil }
            case .end: endText = cursor.plainString(); if endText == nil { return nil }
            case .unit: unitText = cursor.plainString(); if unitText == nil { return nil }
            case .value: value = cursor.number(); if value == nil { return nil }
            case .metadata:
                guard let read = metadataObject() else { return nil }
                entries = read
            case .device:
                guard let read = deviceObject() else { return nil }
                device = read
            }
        } while cursor.consume(UInt8(ascii: ","))
        guard cursor.consume(UInt8(ascii: "}")), let typeName, let known = knownType(typeName), let startText,
              let value else { return nil }
        let type = types[known].type
        let uuid: HealthUUID
        if let uuidText {
            guard let parsed = HealthUUID(utf8: UnsafeBufferPointer(rebasing: cursor.bytes[uuidText])) else { return nil }
            uuid = parsed
        } else {
            uuid = newUUID()
        }
        guard let start = instant(startText) else { return nil }
        var end = start
        if let endText {
            guard let parsed = instant(endText) else { return nil }
            end = parsed
        }
        guard (try? HealthValidation.interval(start: start, end: end, for: type)) != nil else { return nil }
        // A missing unit is an error (the general path names it), never the canonical unit.
        guard let unitText, let conversion = self.conversion(unitText, type: known) else { return nil }
        guard let canonicalValue = try? HealthValidation.quantity(value, conversion: conversion, for: type) else { return nil }
        return HealthSample(uuid: uuid, type: type.id, start: start, end: end, content: .quantity(canonicalValue),
                            metadata: entries, device: device)
    }

    private func instant(_ text: Range<Int>) -> HealthInstant? {
        guard let instant = RFC3339.parse(utf8: UnsafeBufferPointer(rebasing: cursor.bytes[text])),
              HealthInstantLimits.sampleRange.contains(instant) else { return nil }
        return instant
    }

    /// A quantity type met in this body: where its name first appeared, and the conversions of
    /// the units samples of it came in.
    private struct KnownType {
        let name: Range<Int>
        let type: HealthType
        var units: [(name: Range<Int>, conversion: HealthUnitConversion)] = []
    }

    /// The index in `types` of the quantity type named at `name`, looked up in the catalog the
    /// first time; nil for other kinds (the general path decodes those) and unknown names.
    private mutating func knownType(_ name: Range<Int>) -> Int? {
        for index in types.indices where cursor.sameBytes(name, types[index].name) { return index }
        guard types.count < 64, let type = HealthTypeCatalog.type(cursor.string(name)), type.kind == .quantity,
              type.isSampleType, type.canonicalUnit != nil else { return nil }
        types.append(KnownType(name: name, type: type))
        return types.count - 1
    }

    /// The conversion of the unit named at `name` to the type's canonical unit, checked by
    /// `HealthValidation.unit` the first time; nil when the unit does not fit.
    private mutating func conversion(_ name: Range<Int>, type index: Int) -> HealthUnitConversion? {
        for unit in types[index].units where cursor.sameBytes(name, unit.name) { return unit.conversion }
        let type = types[index].type
        guard types[index].units.count < 16, let canonical = type.canonicalUnit,
              let unit = try? HealthValidation.unit(cursor.string(name), for: type),
              let conversion = HealthUnitConversion(from: unit, to: canonical) else { return nil }
        types[index].units.append((name, conversion))
        return conversion
    }

    // MARK: Devices and metadata

    /// An HKDevice object of plain strings (nil when it names nothing, as `decodeDevice` reads it);
    /// `.none` when it is not one.
    private mutating func deviceObject() -> SampleDevice?? {
        guard cursor.peek() == UInt8(ascii: "{") else { return .none }
        let start = cursor.position
        if let known = devices.find(at: start, in: cursor) {
            cursor.position = known.end
            return .some(known.value)
        }
        cursor.position += 1
        var device = SampleDevice()
        var seen: UInt8 = 0
        if !cursor.consume(UInt8(ascii: "}")) {
            repeat {
                guard let key = cursor.plainString(), cursor.consume(UInt8(ascii: ":")) else { return .none }
                let bit: UInt8
                let path: WritableKeyPath<SampleDevice, String?>
                switch key.count {
                case 4 where cursor.matches(key, "name"): bit = 1; path = \.name
                case 5 where cursor.matches(key, "model"): bit = 2; path = \.model
                case 12 where cursor.matches(key, "manufacturer"): bit = 4; path = \.manufacturer
                case 15 where cursor.matches(key, "hardwareVersion"): bit = 8; path = \.hardwareVersion
                case 15 where cursor.matches(key, "softwareVersion"): bit = 16; path = \.softwareVersion
                case 15 where cursor.matches(key, "localIdentifier"): bit = 32; path = \.localIdentifier
                default: return .none
                }
                guard seen & bit == 0 else { return .none }
                seen |= bit
                if cursor.consumeLiteral("null") { continue }
                guard let text = cursor.plainString() else { return .none }
                device[keyPath: path] = cursor.string(text)
            } while cursor.consume(UInt8(ascii: ","))
            guard cursor.consume(UInt8(ascii: "}")) else { return .none }
        }
        let value: SampleDevice? = device.isEmpty ? nil : device
        devices.remember(start..<cursor.position, value)
        return .some(value)
    }

    /// A metadata object of at most 16 entries with ASCII keys and plain values (strings,
    /// numbers, booleans) within the size limit; nil for anything else. ASCII keys, because the
    /// parser finds duplicates by String equality, which for other text is Unicode equivalence.
    private mutating func metadataObject() -> [MetadataEntry]? {
        guard cursor.peek() == UInt8(ascii: "{") else { return nil }
        let start = cursor.position
        if let known = metadata.find(at: start, in: cursor) {
            cursor.position = known.end
            return known.value
        }
        cursor.position += 1
        var entries: [MetadataEntry] = []
        var keys: [Range<Int>] = []
        if !cursor.consume(UInt8(ascii: "}")) {
            repeat {
                guard keys.count < 16, let key = cursor.plainString(), cursor.consume(UInt8(ascii: ":")) else { return nil }
                for index in key where cursor.bytes[index] >= 0x80 { return nil }
                for earlier in keys where cursor.sameBytes(key, earlier) { return nil }
                keys.append(key)
                guard let first = cursor.peek() else { return nil }
                let value: MetadataValue
                switch first {
                case UInt8(ascii: "\""):
                    guard let text = cursor.plainString() else { return nil }
                    value = .string(cursor.string(text))
                case UInt8(ascii: "t"):
                    guard cursor.consumeLiteral("true") else { return nil }
                    value = .bool(true)
                case UInt8(ascii: "f"):
                    guard cursor.consumeLiteral("false") else { return nil }
                    value = .bool(false)
                default:
                    guard let number = cursor.number() else { return nil }
                    value = .number(number)
                }
                entries.append(MetadataEntry(key: cursor.string(key), value: value))
            } while cursor.consume(UInt8(ascii: ","))
            guard cursor.consume(UInt8(ascii: "}")) else { return nil }
        }
        // Larger metadata is measured exactly by the general path.
        guard SampleCodec.metadataSizeBound(entries) <= HealthValidation.maximumMetadataBytes else { return nil }
        metadata.remember(start..<cursor.position, entries)
        return entries
    }
}

/// The last few objects read, by their bytes: the same bytes at another place in the body are
/// the same complete object (an object's extent is fixed by its bytes), so it is not read again.
private struct RecentObjects<Value> {
    let capacity: Int
    private var entries: [(bytes: Range<Int>, value: Value)] = []
    private var next = 0

    init(capacity: Int) { self.capacity = capacity }

    func find(at start: Int, in cursor: JSONByteCursor) -> (value: Value, end: Int)? {
        // By index: iterating the entries would copy (retain and release) every value compared.
        for index in entries.indices {
            let candidate = start..<(start + entries[index].bytes.count)
            if cursor.sameBytes(candidate, entries[index].bytes) { return (entries[index].value, candidate.upperBound) }
        }
        return nil
    }

    mutating func remember(_ bytes: Range<Int>, _ value: Value) {
        if entries.count < capacity {
            entries.append((bytes, value))
        } else {
            entries[next] = (bytes, value)
            next = (next + 1) % capacity
        }
    }
}
