import HealthModel
import JSON

/// A payload healthd cannot read: JSON syntax, or the shape of the app's format. Each error names
/// the field by its path in the payload (`data.metrics[2].data[17].date`).
public struct HealthAutoExportError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Issue: Sendable, Equatable {
        public var field: String
        public var detail: String
        public init(field: String, detail: String) {
            self.field = field
            self.detail = detail
        }
    }

    public var issues: [Issue]
    /// More malformed entries were found than are listed.
    public var truncated: Bool

    public init(issues: [Issue], truncated: Bool = false) {
        self.issues = issues
        self.truncated = truncated
    }

    public var description: String { issues.map { "\($0.field): \($0.detail)" }.joined(separator: "; ") }
}

/// Reads the app's REST API payload (JSON export format v2) in one forward pass over its bytes,
/// handing the mapper one metric point or one workout at a time, and `emit` what it yields in
/// batches of at most `batchSize` items. Memory is the body plus one point and one batch.
///
/// The shape: `{"data":{"metrics":[{"name","units","data":[...]}],"workouts":[...],
/// "stateOfMind":[...],...}}`. Other top-level keys and a metric's other keys are ignored. The
/// sections symptoms, heart-rate notifications, ECG and state of mind map one sample per entry
/// (`HealthAutoExportMapper.mappedSections`); others (medications, cycle tracking) have no
/// HealthKit sample type in healthd and are counted as unmapped by their section name. JSON syntax errors stop the read at once; malformed entries
/// (a date that does not parse, a number that is a string) are collected, up to `maxIssues`, and
/// thrown together at the end, so a caller can check a whole payload before saving any of it.
public struct HealthAutoExportReader {
    public var mapper: HealthAutoExportMapper
    public var batchSize: Int
    public var maxIssues = 100
    private var issues: [HealthAutoExportError.Issue] = []
    private var truncated = false
    private var pending: [HealthAutoExportItem] = []

    public init(user: String, app: String? = nil, interval: HealthAutoExportInterval = .minutes, batchSize: Int = 5_000) {
        mapper = HealthAutoExportMapper(user: user, app: app, interval: interval)
        self.batchSize = max(1, batchSize)
    }

    /// Throws `HealthAutoExportError` for a payload it cannot read, or what `emit` throws.
    public mutating func read(_ body: UnsafeRawBufferPointer, emit: Emit) throws {
        var scanner = JSONStreamScanner(body)
        var sawData = false
        do {
            if let problem = JSONParseError.atDocumentStart(body) { throw problem }
            guard try scanner.peekKind() == .object else {
                throw HealthAutoExportError(issues: [.init(field: "", detail: "the body must be a JSON object {\"data\":{...}}")])
            }
            try scanner.forEachMember { (scanner, key) in
                guard key == "data" else {
                    try scanner.skipValue()
                    return
                }
                sawData = true
                try readData(&scanner, emit)
            }
            try scanner.expectEnd()
        } catch let error as JSONParseError {
            throw HealthAutoExportError(issues: [.init(field: "", detail: "the body is not valid JSON: \(error)")])
        }
        try flush(emit, force: true)
        guard sawData else {
            throw HealthAutoExportError(issues: [.init(field: "data", detail: "is required: the app's export is {\"data\":{\"metrics\":[...],\"workouts\":[...]}}")])
        }
        if !issues.isEmpty { throw HealthAutoExportError(issues: issues, truncated: truncated) }
    }

    private mutating func readData(_ scanner: inout JSONStreamScanner, _ emit: Emit) throws {
        guard try scanner.peekKind() == .object else {
            issue("data", "must be an object with metrics and workouts")
            try scanner.skipValue()
            return
        }
        try scanner.forEachMember { (scanner, section) in
            let kind = try scanner.peekKind()
            if kind == .null {
                try scanner.skipValue()
                return
            }
            guard kind == .array else {
                issue("data.\(section)", "must be an array")
                try scanner.skipValue()
                return
            }
            switch section {
            case "metrics":
                try scanner.forEachElement { (scanner, index) in
                    try readMetric(&scanner, path: "data.metrics[\(index)]", emit)
                }
            case "workouts":
                try scanner.forEachElement { (scanner, index) in
                    let value = try scanner.readValue()
                    guard let object = value.objectValue else {
                        return issue("data.workouts[\(index)]", "must be an object, not \(value.typeDescription)")
                    }
                    do throws(MalformedField) { try mapper.workout(object) } catch {
                        issue("data.workouts[\(index)].\(error.field)", error.detail)
                    }
                    try collect(emit)
                }
            case _ where HealthAutoExportMapper.mappedSections.contains(section):
                try scanner.forEachElement { (scanner, index) in
                    let value = try scanner.readValue()
                    guard let object = value.objectValue else {
                        return issue("data.\(section)[\(index)]", "must be an object, not \(value.typeDescription)")
                    }
                    do throws(MalformedField) { try mapper.sectionEntry(section, object) } catch {
                        issue("data.\(section)[\(index)].\(error.field)", error.detail)
                    }
                    try collect(emit)
                }
            default:
                try scanner.forEachElement { (scanner, _) in
                    try scanner.skipValue()
                    pending.append(.unmapped(section))
                    try collect(emit)
                }
            }
        }
    }

    /// A metric's keys may come in any order: its `data` is found first and read once `name`
    /// and `units` are known.
    private mutating func readMetric(_ scanner: inout JSONStreamScanner, path: String, _ emit: Emit) throws {
        guard try scanner.peekKind() == .object else {
            issue(path, "must be an object {name, units, data}")
            try scanner.skipValue()
            return
        }
        var name: String?
        var units: String?
        var data: Range<Int>?
        try scanner.forEachMember { (scanner, key) in
            switch key {
            case "name", "units":
                let value = try scanner.readValue()
                guard let text = value.stringValue else {
                    return issue("\(path).\(key)", "must be a string, not \(value.typeDescription)")
                }
                if key == "name" { name = text } else { units = text }
            case "data":
                guard try scanner.peekKind() == .array else {
                    try scanner.skipValue()
                    return issue("\(path).data", "must be an array of points")
                }
                data = try scanner.skipValue()
            default:
                try scanner.skipValue()
            }
        }
        guard let name else { return issue("\(path).name", "is required (the metric's name, e.g. step_count)") }
        guard let data else { return issue("\(path).data", "is required (an array of points)") }
        var points = JSONStreamScanner(scanner.bytes)
        points.position = data.lowerBound
        let mapped = HealthAutoExportMapper.isMapped(metric: name)
        try points.forEachElement { (points, index) in
            guard mapped else {
                // Nothing to map: the point is only counted.
                try points.skipValue()
                pending.append(.unmapped(name))
                return try collect(emit)
            }
            let value = try points.readValue()
            guard let object = value.objectValue else {
                return issue("\(path).data[\(index)]", "must be an object, not \(value.typeDescription)")
            }
            do throws(MalformedField) { try mapper.point(metric: name, units: units, object) } catch {
                issue("\(path).data[\(index)].\(error.field)", error.detail)
            }
            try collect(emit)
        }
    }

    private mutating func issue(_ field: String, _ detail: String) {
        guard issues.count < maxIssues else {
            truncated = true
            return
        }
        issues.append(.init(field: field, detail: detail))
    }

    public typealias Emit = ([HealthAutoExportItem]) throws -> Void

    private mutating func collect(_ emit: Emit) throws {
        pending.append(contentsOf: mapper.drain())
        if pending.count >= batchSize { try flush(emit, force: false) }
    }

    /// Full batches are handed over while reading, the rest at the end.
    private mutating func flush(_ emit: Emit, force: Bool) throws {
        while pending.count >= batchSize || (force && !pending.isEmpty) {
            let count = min(batchSize, pending.count)
            let batch = Array(pending.prefix(count))
            pending.removeFirst(count)
            try emit(batch)
        }
    }
}
