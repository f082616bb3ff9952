import Dispatch
import Foundation
import HealthModel
import HealthStore
import JSON
import Synchronization

/// Structured access logs, one JSON object per line on standard output. Never bodies, never
/// query strings, never tokens: this is health data, and query strings can carry it.
/// Lines are buffered and written at most every 200 ms (or at 64 KiB), so logging costs a
/// write system call per batch of requests, not per request.
public final class AccessLog: Sendable {
    private let buffer = Mutex<[UInt8]>([])
    /// Held from taking the buffer until its bytes are written, so when `flush` returns every line
    /// appended before it is in the file (not still in the hands of a concurrent flush, such as
    /// the timer's), and batches reach the file in the order they were taken.
    private let writing = Mutex<Void>(())
    private let fileDescriptor: Int32
    /// Dispatch sources are thread-safe objects that Dispatch does not mark Sendable; this one is
    /// set once in `init` and only cancelled in `deinit`.
    nonisolated(unsafe) private let timer: any DispatchSourceTimer
    /// Whether the log opened `fileDescriptor` itself, and so closes it when released.
    private let ownsDescriptor: Bool
    private static let flushThreshold = 64 * 1024

    /// Writes to `fileDescriptor` (standard output by default), which the caller keeps open for
    /// as long as this log exists: the timer and late event lines (a background failure after
    /// the server stopped) may write to it until then.
    public convenience init(fileDescriptor: Int32 = 1) {
        self.init(fileDescriptor: fileDescriptor, owned: false)
    }

    /// Appends to the file at `path` through a descriptor of its own, closed only when the log is
    /// released, after its last lines: no write can reach a closed, perhaps reused, descriptor.
    public convenience init(appendingTo path: String) throws(AccessLogError) {
        let descriptor = open(path, O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw AccessLogError(path: path, errno: errno) }
        self.init(fileDescriptor: descriptor, owned: true)
    }

    private init(fileDescriptor: Int32, owned: Bool) {
        self.fileDescriptor = fileDescriptor
        ownsDescriptor = owned
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "healthd.accesslog"))
        timer.schedule(deadline: .now() + .milliseconds(200), repeating: .milliseconds(200))
        timer.setEventHandler { [weak self] in self?.flush() }
        timer.resume()
    }

    deinit {
        timer.cancel()
        if ownsDescriptor {
            flush()
            close(fileDescriptor)
        }
    }

    public func record(requestID: String, method: String, route: String, path: String, status: Int,
                       seconds: Double, remote: String) {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("time"); writer.string(RFC3339.format(StoreClock.nowMilliseconds()))
        writer.key("level"); writer.string("info")
        writer.key("msg"); writer.string("request")
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

    /// A one-off event line (start, stop, errors) in the same format, written at once.
    public func event(_ message: String, level: String = "info", fields: [(String, String)] = []) {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("time"); writer.string(RFC3339.format(StoreClock.nowMilliseconds()))
        writer.key("level"); writer.string(level)
        writer.key("msg"); writer.string(message)
        for (key, value) in fields { writer.key(key); writer.string(value) }
        writer.endObject()
        append(writer.bytes)
        flush()
    }

    private func append(_ line: [UInt8]) {
        let full = buffer.withLock { buffer -> Bool in
            buffer.append(contentsOf: line)
            buffer.append(UInt8(ascii: "\n"))
            return buffer.count >= Self.flushThreshold
        }
        if full { flush() }
    }

    public func flush() {
        writing.withLock { _ in
            let pending = buffer.withLock { buffer -> [UInt8] in
                defer { buffer.removeAll(keepingCapacity: true) }
                return buffer
            }
            guard !pending.isEmpty else { return }
            pending.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count, let base = raw.baseAddress {
                    let written = write(fileDescriptor, base + offset, raw.count - offset)
                    if written <= 0 { break }  // a closed stdout must not take the server down
                    offset += written
                }
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
