import AppleHealthExport
import Dispatch
import Glibc
import HealthModel
import HealthStore
import Synchronization

/// Where an export's XML bytes come from: a file, or an entry of `export.zip` inflated on the fly.
public protocol AppleHealthByteSource: AnyObject {
    /// Reads up to `buffer.count` bytes; 0 at the end.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// The XML's size when known, for progress.
    var totalBytes: Int64? { get }
}

/// `export.xml` read from a file with plain `read(2)` calls.
public final class FileByteSource: AppleHealthByteSource {
    private let descriptor: Int32
    public let totalBytes: Int64?

    public init(path: String) throws {
        descriptor = Glibc.open(path, O_RDONLY)
        guard descriptor >= 0 else { throw AppleHealthImportError.unreadable("cannot open \(path): \(String(cString: strerror(errno)))") }
        var info = stat()
        totalBytes = fstat(descriptor, &info) == 0 ? Int64(info.st_size) : nil
    }

    deinit { Glibc.close(descriptor) }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            throw AppleHealthImportError.unreadable("read failed: \(String(cString: strerror(errno)))")
        }
    }
}

public enum AppleHealthImportError: Error, CustomStringConvertible, Sendable {
    case unreadable(String)
    case malformedXML(line: Int, column: Int, detail: String)
    case notAnExport(String)
    case storeFailed(String)

    public var description: String {
        switch self {
        case .unreadable(let detail), .notAnExport(let detail): return detail
        case .storeFailed(let detail): return "saving failed: \(detail)"
        case .malformedXML(let line, let column, let detail):
            return "the export's XML is broken at line \(line), column \(column): \(detail)"
        }
    }
}

public struct AppleHealthImportProgress: Sendable {
    /// XML bytes read so far (after inflating).
    public var bytesRead: Int64
    public var totalBytes: Int64?
    /// Records, correlations, workouts and summaries seen so far.
    public var records: Int
}

/// What an import did.
public struct AppleHealthImportReport: Sendable {
    /// Catalog type id -> samples stored now.
    public var inserted: [String: Int] = [:]
    /// Catalog type id -> samples that were already stored (an earlier import, or a duplicate in the file).
    public var alreadyStored: [String: Int] = [:]
    /// "type: reason" -> records skipped.
    public var skipped: [String: Int] = [:]
    public var characteristics: [String: String] = [:]
    public var activitySummaries = 0
    public var records = 0
    public var bytesRead: Int64 = 0
    public var droppedControlCharacters = 0
    public var removedDoctype = false
    /// A person's backup only: what restoring its settings changed ("apps: a, b", ...), empty when
    /// all were already so; nil when the file carried no settings.
    public var settingsRestored: [String]?

    public var insertedCount: Int { inserted.values.reduce(0, +) }
    public var alreadyStoredCount: Int { alreadyStored.values.reduce(0, +) }
    public var skippedCount: Int { skipped.values.reduce(0, +) }
}

/// The shell around `AppleHealthExportParser` (sanitizer → byte-level XML tokenizer → mapper, all
/// pure): reads the byte source in chunks on the calling thread, parses each, and saves what the
/// mapper yields in batches, each one transaction. Saving runs on its own queue, overlapping
/// parsing (one core parses while the other writes), with at most two batches in flight, so
/// memory stays flat whatever the file's size.
public final class AppleHealthImporter {
    private let writer: ImportWriter
    private let batchSize: Int
    private var batch: [SourcedSample] = []
    private var summaries: [ActivitySummary] = []
    private var report = AppleHealthImportReport()
    private static let chunkSize = 256 * 1024
    private static let progressInterval = 50_000

    public init(store: any HealthDataStore, userRowID: Int64, batchSize: Int = 5_000) {
        writer = ImportWriter(store: store, userRowID: userRowID)
        self.batchSize = max(1, batchSize)
    }

    /// Imports everything; `progress` is called every few thousand records and at the end.
    /// Throws on unreadable input or XML broken beyond repair; what was saved before stays saved,
    /// and running the import again saves nothing twice.
    public func run(_ source: some AppleHealthByteSource,
                    progress: @escaping (AppleHealthImportProgress) -> Void = { _ in }) throws -> AppleHealthImportReport {
        // Whatever way this returns, no save is still running afterwards (the caller may close the store).
        defer { writer.waitForPending() }
        var parser = AppleHealthExportParser()
        var chunk = [UInt8](repeating: 0, count: Self.chunkSize)
        var bytesRead: Int64 = 0
        var nextProgress = Self.progressInterval
        do {
            while true {
                let count = try chunk.withUnsafeMutableBytes { try source.read(into: $0) }
                if count == 0 { break }
                bytesRead += Int64(count)
                var broken: XMLSyntaxError?
                chunk.withUnsafeBytes { raw in
                    do throws(XMLSyntaxError) { try parser.feed(UnsafeRawBufferPointer(rebasing: raw[0..<count])) } catch { broken = error }
                }
                if let broken { throw broken }
                try accept(parser.drain())
                if parser.records >= nextProgress {
                    nextProgress = (parser.records / Self.progressInterval + 1) * Self.progressInterval
                    progress(AppleHealthImportProgress(bytesRead: bytesRead, totalBytes: source.totalBytes, records: parser.records))
                }
            }
            try parser.finish()
        } catch let broken as XMLSyntaxError {
            // What was complete before the break is kept: save it, then report the break.
            try accept(parser.drain())
            try flush()
            try writer.finish(into: &report)
            guard parser.sawHealthData else {
                throw AppleHealthImportError.notAnExport(
                    "this is not an Apple Health export (no <HealthData> element before XML that breaks at line \(broken.line): \(broken.detail))")
            }
            throw AppleHealthImportError.malformedXML(line: broken.line, column: broken.column, detail: broken.detail)
        }
        try accept(parser.drain())
        try flush()
        try writer.finish(into: &report)
        guard parser.sawHealthData else {
            throw AppleHealthImportError.notAnExport("this is not an Apple Health export (no <HealthData> element)")
        }
        report.records = parser.records
        report.bytesRead = bytesRead
        report.droppedControlCharacters = parser.droppedControlCharacters
        report.removedDoctype = parser.removedDoctype
        progress(AppleHealthImportProgress(bytesRead: bytesRead, totalBytes: source.totalBytes, records: parser.records))
        return report
    }

    private func accept(_ items: [AppleHealthImportItem]) throws {
        for item in items {
            switch item {
            case .sample(let sample):
                batch.append(sample)
                if batch.count >= batchSize { try flushSamples() }
            case .activitySummary(let summary):
                summaries.append(summary)
                if summaries.count >= 1_000 { try flushSummaries() }
            case .characteristics(let values):
                report.characteristics = values
                try writer.submit { store, userRowID, _ in
                    // Imported values win; characteristics the export leaves empty keep what was stored.
                    var merged = Dictionary(try store.characteristics(userRowID: userRowID), uniquingKeysWith: { $1 })
                    merged.merge(values) { $1 }
                    let ordered = HealthTypeCatalog.characteristicTypes.compactMap { type in merged[type.id].map { (type.id, $0) } }
                    try store.replaceCharacteristics(userRowID: userRowID, ordered)
                }
            case .skipped(let skip):
                report.skipped["\(skip.type): \(skip.reason)", default: 0] += 1
            }
        }
    }

    private func flush() throws {
        try flushSamples()
        try flushSummaries()
    }

    private func flushSamples() throws {
        guard !batch.isEmpty else { return }
        let samples = batch
        batch.removeAll(keepingCapacity: true)
        try writer.submitSamples(samples)
    }

    private func flushSummaries() throws {
        guard !summaries.isEmpty else { return }
        let days = summaries
        summaries.removeAll(keepingCapacity: true)
        try writer.submit { store, userRowID, counts in
            try store.saveActivitySummaries(days, userRowID: userRowID)
            counts.activitySummaries += days.count
        }
    }
}

/// Saves on a serial queue of its own. `submit` blocks while two batches are pending (so memory
/// stays bounded) and rethrows the first failure, which stops the parse. Both importers (the Apple
/// Health export and healthd's own NDJSON) save through it.
final class ImportWriter: Sendable {
    struct Counts: Sendable {
        var inserted: [String: Int] = [:]
        var alreadyStored: [String: Int] = [:]
        var skipped: [String: Int] = [:]
        var activitySummaries = 0
        var failure: String?
    }

    private let store: any HealthDataStore
    private let userRowID: Int64
    private let queue = DispatchQueue(label: "healthd.import.writer")
    private let slots = DispatchSemaphore(value: 2)
    private let pending = DispatchGroup()
    private let counts = Mutex(Counts())

    init(store: any HealthDataStore, userRowID: Int64) {
        self.store = store
        self.userRowID = userRowID
    }

    func submit(_ work: @escaping @Sendable (any HealthDataStore, Int64, inout Counts) throws -> Void) throws {
        try throwIfFailed()
        slots.wait()
        pending.enter()
        queue.async { [self] in
            defer {
                slots.signal()
                pending.leave()
            }
            guard counts.withLock({ $0.failure == nil }) else { return }
            var local = Counts()
            do {
                try work(store, userRowID, &local)
            } catch {
                local.failure = "\(error)"
            }
            counts.withLock { total in
                total.inserted.merge(local.inserted, uniquingKeysWith: +)
                total.alreadyStored.merge(local.alreadyStored, uniquingKeysWith: +)
                total.skipped.merge(local.skipped, uniquingKeysWith: +)
                total.activitySummaries += local.activitySummaries
                if total.failure == nil { total.failure = local.failure }
            }
        }
    }

    /// Saves a batch of samples in one transaction, counting each outcome by type.
    func submitSamples(_ samples: [SourcedSample]) throws {
        try submit { store, userRowID, counts in
            let outcomes = try store.importSamples(samples, userRowID: userRowID)
            for (item, outcome) in zip(samples, outcomes) {
                switch outcome {
                case .inserted: counts.inserted[item.sample.type, default: 0] += 1
                case .alreadyStored: counts.alreadyStored[item.sample.type, default: 0] += 1
                case .conflict(let detail): counts.skipped["\(item.sample.type): \(detail)", default: 0] += 1
                }
            }
        }
    }

    private func throwIfFailed() throws {
        if let failure = counts.withLock({ $0.failure }) { throw AppleHealthImportError.storeFailed(failure) }
    }

    func waitForPending() { pending.wait() }

    /// Waits for every pending save and adds the counts to `report`.
    func finish(into report: inout AppleHealthImportReport) throws {
        pending.wait()
        try throwIfFailed()
        let totals = counts.withLock { $0 }
        report.inserted = totals.inserted
        report.alreadyStored = totals.alreadyStored
        report.skipped.merge(totals.skipped, uniquingKeysWith: +)
        report.activitySummaries = totals.activitySummaries
    }
}
