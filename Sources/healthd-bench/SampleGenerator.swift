import HealthModel
import Primitives

/// Realistic phone/watch traffic: alternating step counts (one-minute intervals from the phone)
/// and heart-rate readings (instantaneous, from a watch, with the motion context), a uuid on every
/// sample as a syncing client sends, and a few metadata entries.
struct SampleGenerator {
    static let phone = SampleDevice(name: "iPhone", manufacturer: "Apple Inc.", model: "iPhone", hardwareVersion: "iPhone15,2",
                                    softwareVersion: "17.4")
    static let watch = SampleDevice(name: "Apple Watch", manufacturer: "Apple Inc.", model: "Watch", hardwareVersion: "Watch6,18",
                                    softwareVersion: "10.4")
    /// 2026-01-01T00:00:00Z.
    static let epoch: Int64 = 1_767_225_600_000
    /// Samples are 5 s apart on the timeline: 5 million cover about 290 days.
    static let spacingMilliseconds: Int64 = 5_000

    var random: SplitMix64

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    /// Sample number `index` of the timeline.
    mutating func sample(_ index: Int) -> HealthSample {
        let uuid = HealthUUID.random(using: &random)
        let start = Self.epoch + Int64(index) * Self.spacingMilliseconds
        if index % 2 == 0 {
            let steps = Double(random.next() % 120)
            var metadata: [MetadataEntry] = []
            if index % 10 == 0 { metadata.append(MetadataEntry(key: "HKWasUserEntered", value: .bool(false))) }
            return HealthSample(uuid: uuid, type: "stepCount", start: start, end: start + 60_000, content: .quantity(steps),
                                metadata: metadata, device: Self.phone)
        }
        let beatsPerMinute = Double(55 + random.next() % 90)
        let metadata = [MetadataEntry(key: "HKHeartRateMotionContext", value: .number(Double(random.next() % 3)))]
        return HealthSample(uuid: uuid, type: "heartRate", start: start, end: start, content: .quantity(beatsPerMinute),
                            metadata: metadata, device: Self.watch)
    }

    /// The API's JSON for `{"samples":[...]}` of `count` samples starting at `firstIndex`, written
    /// the way a client would (offsets in the user's zone, units spelled out).
    /// `withUUIDs: false` leaves the uuid out, as a script does, and the server assigns one.
    mutating func batchJSON(firstIndex: Int, count: Int, withUUIDs: Bool = true) -> [UInt8] {
        var out = "{\"samples\":["
        out.reserveCapacity(count * 330)
        for index in firstIndex..<(firstIndex + count) {
            let sample = sample(index)
            if index > firstIndex { out += "," }
            out += withUUIDs ? "{\"uuid\":\"\(sample.uuid.lowercasedString)\"," : "{"
            out += "\"type\":\"\(sample.type)\","
            let value = Int(sample.quantity ?? 0)
            if sample.type == "stepCount" {
                out += "\"value\":\(value),\"unit\":\"count\",\"start\":\"\(Self.offsetDate(sample.start))\",\"end\":\"\(Self.offsetDate(sample.end))\""
            } else {
                out += "\"value\":\(value),\"unit\":\"count/min\",\"start\":\"\(Self.offsetDate(sample.start))\""
            }
            if !sample.metadata.isEmpty {
                out += ",\"metadata\":{"
                for (position, entry) in sample.metadata.enumerated() {
                    if position > 0 { out += "," }
                    switch entry.value {
                    case .bool(let flag): out += "\"\(entry.key)\":\(flag)"
                    case .number(let number): out += "\"\(entry.key)\":\(Int(number))"
                    case .string(let text): out += "\"\(entry.key)\":\"\(text)\""
                    }
                }
                out += "}"
            }
            let device = sample.device ?? Self.phone
            out += ",\"device\":{\"name\":\"\(device.name ?? "")\",\"manufacturer\":\"\(device.manufacturer ?? "")\","
            out += "\"model\":\"\(device.model ?? "")\",\"hardwareVersion\":\"\(device.hardwareVersion ?? "")\","
            out += "\"softwareVersion\":\"\(device.softwareVersion ?? "")\"}}"
        }
        out += "]}"
        return Array(out.utf8)
    }

    /// RFC 3339 in a fixed -05:00 offset, as a phone in New York would send.
    static func offsetDate(_ milliseconds: Int64) -> String {
        RFC3339.format(milliseconds, offsetSeconds: -5 * 3_600)
    }
}
