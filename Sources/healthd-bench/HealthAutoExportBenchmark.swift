import HealthdSettings
import Dispatch
import Foundation
import HealthAPI
import HealthAutoExport
import HealthModel
import HealthStore

/// `healthd-bench health-auto-export [--days N]`: a month of Health Auto Export's per-minute
/// export (generated) through `POST /v1/ingest/health-auto-export` over real HTTP into an
/// in-process healthd, against a floor measured in the same run: the same samples (same uuids,
/// metadata and values, as the route maps them) through `POST /v1/samples` in batches of 10,000
/// on a fresh store. Then the same payload again (all duplicates). Peak memory (VmHWM above the
/// resident size before) of the pure core and of the route; `--no-floor` skips the floor and the
/// re-send (for a year, whose sample array alone would be the largest allocation).
enum HealthAutoExportBenchmark {
    static let shareTypes = ["stepCount", "distanceWalkingRunning", "activeEnergyBurned", "basalEnergyBurned", "heartRate", "sleepAnalysis"]

    static func run(_ arguments: [String]) -> Int32 {
        var days = 30
        var floor = true
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            switch flag {
            case "--days":
                guard let value = rest.popFirst().flatMap(Int.init), value > 0 else { return usage() }
                days = value
            case "--no-floor": floor = false
            default: return usage()
            }
        }
        do {
            let payload = monthPayload(days: days)
            let megabytes = Double(payload.count) / 1e6
            print("health-auto-export: \(days) days of per-minute export, \(format(Double(payload.count) / 1_048_576, decimals: 1)) MiB")

            // Floor for the parse: one scanner pass over every byte, checking JSON structure only.
            let scanStarted = nanosecondsNow()
            try payload.withUnsafeBytes { body in
                var scanner = JSONStreamScanner(body)
                try scanner.skipValue()
            }
            let scanSeconds = Double(nanosecondsNow() - scanStarted) / 1e9

            // The pure core alone: its own peak memory, with nothing kept.
            resetPeakResident()
            let mapBase = residentMegabytes()
            let mapStarted = nanosecondsNow()
            let count = Double(try mappedCount(payload))
            let mapSeconds = Double(nanosecondsNow() - mapStarted) / 1e9
            let mapPeak = peakResidentMegabytes() - mapBase
            print("  \(Int(count)) samples")

            var floorSeconds: Double?
            var floorPeak = 0.0
            if floor {
                // Floor: the same samples through POST /v1/samples, 10,000 a batch, one connection.
                let samples = try mapped(payload)
                floorSeconds = try withServer("hae-floor") { harness, token in
                    let client = try BenchHTTPClient(port: harness.port)
                    let bodies = stride(from: 0, to: samples.count, by: 10_000).map {
                        samplesBody(samples[$0..<min(samples.count, $0 + 10_000)])
                    }
                    resetPeakResident()
                    let base = residentMegabytes()
                    defer { floorPeak = peakResidentMegabytes() - base }
                    let started = nanosecondsNow()
                    for body in bodies {
                        let reply = try client.request("POST", "/v1/samples", token: token, body: body)
                        guard reply.status == 201 else { throw BenchError("POST /v1/samples: \(reply.status) \(String(decoding: reply.body, as: UTF8.self))") }
                    }
                    return Double(nanosecondsNow() - started) / 1e9
                }
            }
            // The route's own limit is raised to fit a payload over the default (a year), so its
            // memory can be measured; the default stays what docs/guide.md says.
            let limit = max(payload.count + 4096, HealthdConfiguration().maxHealthAutoExportBodyBytes)
            let (firstSeconds, firstPeak, againSeconds, httpPeak) = try withServer("hae", healthAutoExportBodyLimit: limit) { harness, token in
                let client = try BenchHTTPClient(port: harness.port)
                func post(_ target: String = HealthAutoExportRoutes.path, expecting status: Int = 200) throws -> (Double, Double) {
                    resetPeakResident()
                    let base = residentMegabytes()
                    let started = nanosecondsNow()
                    let reply = try client.request("POST", target, token: token, body: payload)
                    guard reply.status == status else { throw BenchError("POST health-auto-export: \(reply.status) \(String(decoding: reply.body, as: UTF8.self))") }
                    return (Double(nanosecondsNow() - started) / 1e9, peakResidentMegabytes() - base)
                }
                // The HTTP layer alone: the body is received whole, then refused (a bad query)
                // before the route reads it.
                let http = try post(HealthAutoExportRoutes.path + "?interval=weeks", expecting: 400).1
                let (first, peak) = try post()
                let again = floor ? try post().0 : nil
                return (first, peak, again, http)
            }
            let bodyMiB = Double(payload.count) / 1_048_576
            print(String(format: "  raw JSON scan (JSONStreamScanner.skipValue):    %8.1f MB/s  (%.2f s)", megabytes / scanSeconds, scanSeconds))
            print(String(format: "  parse and map only (no store):                  %8.0f samples/s  %6.1f MB/s  (%.2f s), peak +%.1f MiB",
                         count / mapSeconds, megabytes / mapSeconds, mapSeconds, mapPeak))
            if let floorSeconds {
                print(String(format: "  floor  POST /v1/samples (10,000 a batch):       %8.0f samples/s  (%.2f s), peak +%.1f MiB",
                             count / floorSeconds, floorSeconds, floorPeak))
            }
            print(String(format: "  POST /v1/ingest/health-auto-export, new:        %8.0f samples/s  %6.1f MB/s  (%.2f s), peak +%.1f MiB (%.2f x the body)",
                         count / firstSeconds, megabytes / firstSeconds, firstSeconds, firstPeak, firstPeak / bodyMiB))
            print(String(format: "  the HTTP layer alone (body received, then a 400): peak +%.1f MiB (%.2f x the body)", httpPeak, httpPeak / bodyMiB))
            if let againSeconds {
                print(String(format: "  POST /v1/ingest/health-auto-export, resent:     %8.0f samples/s  (%.2f s)", count / againSeconds, againSeconds))
            }
            var ratios = String(format: "  ratios: ingest MB/s / raw scan MB/s %.3f", scanSeconds / firstSeconds)
            if let floorSeconds {
                ratios += String(format: "; new / floor %.2f", floorSeconds / firstSeconds)
                if let againSeconds { ratios += String(format: "; resent / floor %.2f", floorSeconds / againSeconds) }
            }
            print(ratios)
            print("  machine: \(machineDescription())")
            return 0
        } catch {
            print("healthd-bench health-auto-export: \(error)")
            return 1
        }
    }

    private static func usage() -> Int32 {
        print("healthd-bench health-auto-export: usage: health-auto-export [--days N] [--no-floor]")
        return 2
    }

    /// How many samples the route makes of the payload, keeping none of them.
    static func mappedCount(_ payload: [UInt8]) throws -> Int {
        var reader = HealthAutoExportReader(user: "bench")
        var count = 0
        try payload.withUnsafeBytes { body in
            try reader.read(body) { items in
                for case .sample in items { count += 1 }
            }
        }
        return count
    }

    private static func withServer<T>(_ name: String, healthAutoExportBodyLimit: Int? = nil,
                                      _ body: (InProcessServer, String) throws -> T) throws -> T {
        let harness = try InProcessServer(name: name, connections: 1, healthAutoExportBodyLimit: healthAutoExportBodyLimit)
        defer { harness.stop() }
        let user = try harness.store.createUser(name: "bench")
        let (_, token) = try harness.store.createAuthorization(user: user, app: "health-auto-export", read: [], share: Set(shareTypes))
        return try body(harness, token)
    }

    /// The samples the route makes of the payload (user id as the route passes it does not matter
    /// for the floor: it only needs the same rows).
    static func mapped(_ payload: [UInt8]) throws -> [HealthSample] {
        var reader = HealthAutoExportReader(user: "bench")
        var samples: [HealthSample] = []
        try payload.withUnsafeBytes { body in
            try reader.read(body) { items in
                for case .sample(let sample, _) in items { samples.append(sample) }
            }
        }
        return samples
    }

    /// A month as the app exports it with its default time grouping (minutes): steps and
    /// distance every waking minute, active and basal energy and heart rate (Min/Avg/Max) every
    /// minute, and unaggregated sleep stages each night. Values follow a smooth daily pattern.
    static func monthPayload(days: Int) -> [UInt8] {
        var out = #"{"data":{"metrics":["#
        let base = Date(timeIntervalSince1970: 1_706_774_400)  // 2024-02-01 00:00 -08:00
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(secondsFromGMT: -8 * 3600)
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss Z"
        var dateCache: [Int: String] = [:]
        func date(_ minute: Int) -> String {
            if let cached = dateCache[minute] { return cached }
            let text = formatter.string(from: base.addingTimeInterval(Double(minute) * 60))
            dateCache[minute] = text
            return text
        }
        let minutes = days * 1440
        func metric(_ name: String, _ units: String, first: Bool = false, _ points: () -> [String]) {
            out += (first ? "" : ",") + #"{"name":"\#(name)","units":"\#(units)","data":["# + points().joined(separator: ",") + "]}"
        }
        let source = "Jane's Apple Watch|Jane's iPhone"
        func awake(_ minute: Int) -> Bool { (minute % 1440) >= 7 * 60 && (minute % 1440) < 23 * 60 }
        metric("step_count", "count", first: true) {
            (0..<minutes).filter(awake).map { #"{"qty":\#(20 + ($0 * 7919) % 90),"date":"\#(date($0))","source":"\#(source)"}"# }
        }
        metric("walking_running_distance", "km") {
            (0..<minutes).filter(awake).map { #"{"qty":\#(String(format: "%.4f", Double(20 + ($0 * 7919) % 90) * 0.00075)),"date":"\#(date($0))","source":"\#(source)"}"# }
        }
        metric("active_energy", "kcal") {
            (0..<minutes).map { #"{"qty":\#(String(format: "%.3f", awake($0) ? 1.5 + Double($0 % 37) / 20 : 0.2)),"date":"\#(date($0))","source":"Jane's Apple Watch"}"# }
        }
        metric("basal_energy_burned", "kcal") {
            (0..<minutes).map { #"{"qty":\#(String(format: "%.3f", 1.1 + Double($0 % 11) / 100)),"date":"\#(date($0))","source":"Jane's Apple Watch"}"# }
        }
        metric("heart_rate", "count/min") {
            (0..<minutes).map { minute in
                let average = (awake(minute) ? 72.0 : 55.0) + Double((minute * 31) % 17)
                return #"{"Min":\#(Int(average) - 4),"Avg":\#(String(format: "%.1f", average)),"Max":\#(Int(average) + 5),"date":"\#(date(minute))","source":"Jane's Apple Watch"}"#
            }
        }
        metric("sleep_analysis", "hr") {
            var points: [String] = []
            for day in 0..<days {
                // 23:00 to 07:00: 90-minute cycles of core, deep, core, REM, with a short waking.
                var minute = day * 1440 - 60
                let stages = [("Core", 35), ("Deep", 25), ("Core", 15), ("REM", 13), ("Awake", 2)]
                while minute < day * 1440 + 7 * 60 {
                    for (stage, length) in stages where minute < day * 1440 + 7 * 60 {
                        guard minute >= 0 else { minute += length; continue }
                        points.append(#"{"startDate":"\#(date(minute))","endDate":"\#(date(minute + length))","qty":\#(String(format: "%.4f", Double(length) / 60)),"value":"\#(stage)","source":"Jane's Apple Watch"}"#)
                        minute += length
                    }
                }
            }
            return points
        }
        out += "]}}"
        return Array(out.utf8)
    }

    /// A `POST /v1/samples` body with the samples' own uuids, values in the canonical unit, and metadata.
    static func samplesBody(_ samples: ArraySlice<HealthSample>) -> [UInt8] {
        var out = #"{"samples":["#
        for (index, sample) in samples.enumerated() {
            if index > 0 { out += "," }
            out += #"{"uuid":"\#(sample.uuid.uuidString)","type":"\#(sample.type)","start":"\#(RFC3339.format(sample.start))","end":"\#(RFC3339.format(sample.end))""#
            switch sample.content {
            case .quantity(let value):
                let unit = HealthTypeCatalog.type(sample.type)?.canonicalUnit?.unitString ?? ""
                out += #","value":\#(value),"unit":"\#(unit)""#
            case .category(let value): out += #","value":"\#(value)""#
            default: break
            }
            out += #","metadata":{"#
            for (position, entry) in sample.metadata.enumerated() {
                if position > 0 { out += "," }
                switch entry.value {
                case .string(let text): out += #""\#(entry.key)":"\#(text.replacingOccurrences(of: "\"", with: "\\\""))""#
                case .number(let number): out += #""\#(entry.key)":\#(number)"#
                case .bool(let flag): out += #""\#(entry.key)":\#(flag)"#
                }
            }
            out += "}}"
        }
        out += "]}"
        return Array(out.utf8)
    }
}
