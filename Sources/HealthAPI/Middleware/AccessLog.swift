import Dispatch
import Foundation
import HealthModel
import HealthStore
import JSON
import Synchronization

/// Structured access logs, one JSON object per line on standard output. Never bodies, never
/// query strings, never tokens: this is health data, and query strings can carry it.
///
/// Lines are buffered and written by one writer queue at most every 200 ms (or at 64 KiB), so
/// logging costs a write system call per batch of requests, not per request. A request never
/// writes itself: a reader of the log that stops reading (a paused pipe, a stuck collector) must
/// not stop the server answering, nor its graceful stop. While nothing drains the log the buffer
/// holds up to `bufferLimit` bytes; request lines beyond it are dropped and counted, and the count is
/// written as a warning line once the reader is back.
public final class AccessLog: Sendable {
    private struct Pending {
        var bytes: [UInt8] = []
        var dropped = 0
        /// A flush is queued on the writer and has not started: more lines need no other.
        var flushQueued = false
    }

    private let pending = Mutex(Pending())
    /// Every write happens here, in order: when a block queued here ends, everything appended
    /// before it was queued is in the file.
    private let writer = DispatchQueue(label: "healthd.accesslog")
    private let fileDescriptor: Int32
    /// Dispatch sources are thread-safe objects that Dispatch does not mark Sendable; this one is
    /// set once in `init` and only cancelled in `deinit`.
    nonisolated(unsafe) private let timer: any DispatchSourceTimer
    /// Whether the log opened `fileDescriptor` itself, and so closes it when released.
    private let ownsDescriptor: Bool
    private let bufferLimit: Int
    private static let flushThreshold = 64 * 1024

    /// Writes to `fileDescriptor` (standard output by default), which the caller keeps open for
    /// as long as this log exists: the timer and late event lines (a background failure after
    /// the server stopped) may write to it until then.
    public convenience init(fileDescriptor: Int32 = 1, bufferLimit: Int = 8 << 20) {
        self.init(fileDescriptor: fileDescriptor, owned: false, bufferLimit: bufferLimit)
    }

    /// Appends to the file at `path` through a descriptor of its own, closed only when the log is
    /// released, after its last lines: no write can reach a closed, perhaps reused, descriptor.
    public convenience init(appendingTo path: String) throws(AccessLogError) {
        let descriptor = open(path, O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw AccessLogError(path: path, errno: errno) }
        self.init(fileDescriptor: descriptor, owned: true, bufferLimit: 8 << 20)
    }

    private init(fileDescriptor: Int32, owned: Bool, bufferLimit: Int) {
        self.fileDescriptor = fileDescriptor
        ownsDescriptor = owned
        self.bufferLimit = bufferLimit
        timer = DispatchSource.makeTimerSource(queue: writer)
        timer.schedule(deadline: .now() + .milliseconds(200), repeating: .milliseconds(200))
        timer.setEventHandler { [weak self] in self?.writePending() }
        timer.resume()
    }

    deinit {
        timer.cancel()
        // Nothing else holds the log (queued flushes hold it strongly), so no write is running.
        if ownsDescriptor {
            writePending()
            close(fileDescriptor)
        }
    }

    /// A log line's object, opened, with the fields every line starts with.
    private static func beginLine(level: String, message: String) -> JSONWriter {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("time"); writer.string(RFC3339.format(StoreClock.nowMilliseconds()))
        writer.key("level"); writer.string(level)
        writer.key("msg"); writer.string(message)
        return writer
    }

    public func record(requestID: String, method: String, route: String, path: String, status: Int,
                       seconds: Double, remote: String) {
        var writer = Self.beginLine(level: "info", message: "request")
        writer.key("id"); writer.string(requestID)
        writer.key("method"); writer.string(method)
        writer.key("route"); writer.string(route)
        // The route pattern says which endpoint; the raw path is kept only for files actually
        // served. An unmatched path is client-chosen text (a misplaced token, a value): not logged.
        if route == "static" { writer.key("path"); writer.string(String(path.prefix(256))) }
        writer.key("status"); writer.integer(Int64(status))
        writer.key("ms"); writer.number((seconds * 1e6).rounded() / 1e3)
        writer.key("remote"); writer.string(remote)
        writer.endObject()
        append(writer.bytes)
    }

    /// A one-off event line (start, stop, errors) in the same format, written at once: it is in
    /// the file when this returns, unless the reader has not drained the log for `patience`.
    public func event(_ message: String, level: String = "info", fields: [(String, String)] = [],
                      patience: DispatchTimeInterval = .seconds(1)) {
        var writer = Self.beginLine(level: level, message: message)
        for (key, value) in fields { writer.key(key); writer.string(value) }
        writer.endObject()
        append(writer.bytes, evenWhenFull: true)
        flush(patience: patience)
    }

    /// Events (start, stop, failures) are few and matter more than request lines: they are kept
    /// even when the buffer is full.
    private func append(_ line: [UInt8], evenWhenFull: Bool = false) {
        let queueFlush = pending.withLock { pending -> Bool in
            guard evenWhenFull || pending.bytes.count + line.count < bufferLimit else {
                pending.dropped += 1
                return false
            }
            pending.bytes.append(contentsOf: line)
            pending.bytes.append(UInt8(ascii: "\n"))
            guard pending.bytes.count >= Self.flushThreshold, !pending.flushQueued else { return false }
            pending.flushQueued = true
            return true
        }
        if queueFlush { writer.async { self.writePending() } }
    }

    /// Writes every line appended so far and waits up to `patience` for it; answers whether they
    /// were written in that time (a reader that stopped reading keeps them waiting in the writer).
    @discardableResult
    public func flush(patience: DispatchTimeInterval = .seconds(1)) -> Bool {
        let written = DispatchSemaphore(value: 0)
        writer.async {
            self.writePending()
            written.signal()
        }
        return written.wait(timeout: .now() + patience) == .success
    }

    /// Runs on `writer` only (or in `deinit`, when nothing else can).
    private func writePending() {
        var (bytes, dropped) = pending.withLock { pending -> ([UInt8], Int) in
            defer {
                pending.bytes.removeAll(keepingCapacity: true)
                pending.dropped = 0
                pending.flushQueued = false
            }
            return (pending.bytes, pending.dropped)
        }
        if dropped > 0 {
            var line = Self.beginLine(level: "warning", message: "log lines dropped: nothing read the log while its buffer was full")
            line.key("dropped"); line.integer(Int64(dropped))
            line.endObject()
            bytes = line.bytes + [UInt8(ascii: "\n")] + bytes
        }
        guard !bytes.isEmpty else { return }
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count, let base = raw.baseAddress {
                let written = write(fileDescriptor, base + offset, raw.count - offset)
                if written < 0, errno == EINTR { continue }
                if written <= 0 { break }  // a closed stdout must not take the server down
                offset += written
            }
        }
    }
}

/// A log file that could not be opened.
public struct AccessLogError: Error, Sendable, CustomStringConvertible {
    public let path: String
    public let errno: Int32
    public var description: String { "cannot open the log file \(path): \(String(cString: strerror(errno)))" }
}
