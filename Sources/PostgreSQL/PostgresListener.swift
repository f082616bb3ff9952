import Dispatch
import Foundation

/// A dedicated connection that LISTENs on channels and hands each NOTIFY to a callback as soon
/// as it arrives: the connection's socket is watched by a Dispatch read source, so no thread
/// blocks and no polling delay is added.
///
/// When the connection breaks, the listener reconnects (pausing 100 ms, doubling up to 5 s) and
/// LISTENs again, then calls `onReconnect`: notifications sent while it was away are lost, so a
/// consumer must treat a reconnect as "anything may have changed" (wake every waiter, drop
/// caches). Callbacks run on the listener's serial queue, one at a time.
public final class PostgresListener: @unchecked Sendable {
    // @unchecked: `connection`, `source`, `isStopped` and `reconnectPause` are touched only on `queue`.

    public let configuration: PostgresConfiguration
    public let channels: [String]
    private let queue: DispatchQueue
    private let onNotification: @Sendable (PostgresNotification) -> Void
    private let onReconnect: @Sendable () -> Void
    private let onError: @Sendable (PostgresError) -> Void

    private var connection: PostgresConnection?
    private var source: (any DispatchSourceRead)?
    private var isStopped = false
    private var reconnectPause = 0.1
    private let connectedState = NSCondition()
    private var connected = false

    /// Channel names are SQL identifiers: lowercase letters, digits and underscores.
    public init(configuration: PostgresConfiguration, channels: [String],
                onNotification: @escaping @Sendable (PostgresNotification) -> Void,
                onReconnect: @escaping @Sendable () -> Void = {},
                onError: @escaping @Sendable (PostgresError) -> Void = { _ in }) throws(PostgresError) {
        for channel in channels where !PostgresListener.isValidChannel(channel) {
            throw PostgresError.misuse("channel '\(channel)' is not a lowercase identifier")
        }
        self.configuration = configuration
        self.channels = channels
        self.queue = DispatchQueue(label: "healthd.postgres.listener")
        self.onNotification = onNotification
        self.onReconnect = onReconnect
        self.onError = onError
    }

    deinit { source?.cancel() }

    public static func isValidChannel(_ channel: String) -> Bool {
        guard let first = channel.utf8.first, channel.utf8.count <= 63, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
            return false
        }
        return channel.utf8.allSatisfy { ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: "_") }
    }

    /// Connects and LISTENs; throws if the first connection fails (later losses reconnect on
    /// their own). Returns once notifications are being received.
    public func start() throws(PostgresError) {
        let result: Result<Void, PostgresError> = queue.sync {
            do throws(PostgresError) {
                try connectAndListen()
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// Stops listening and closes the connection. No callback runs after it returns.
    public func stop() {
        queue.sync {
            isStopped = true
            tearDown()
        }
    }

    /// True while the listener has a working, LISTENing connection.
    public var isConnected: Bool { connectedState.withLock { connected } }

    /// Sends a notification on `connection` (inside the caller's transaction it is delivered
    /// only if and when that transaction commits, which is what a change feed needs).
    public static func notify(_ connection: PostgresConnection, channel: String, payload: String) throws(PostgresError) {
        try connection.execute("SELECT pg_notify($1, $2)", [.text(channel), .text(payload)])
    }

    // MARK: On the queue

    private func connectAndListen() throws(PostgresError) {
        let connection = try PostgresConnection(configuration: configuration)
        for channel in channels { try connection.execute("LISTEN \(channel)") }
        // The source watches a duplicate of libpq's socket that only its cancel handler closes.
        // libpq closes its own descriptor as soon as it reads the connection's end (the server
        // ended the backend): watched directly, that number could go to a connection the HTTP
        // server accepts before the source's cancellation is carried out, which then unregisters
        // the new connection's descriptor, and its requests are never read.
        let watched = dup(connection.socket)
        guard watched >= 0 else {
            connection.close()
            throw PostgresError(kind: .unavailable, message: "cannot watch the listening connection: \(String(cString: strerror(errno)))")
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: watched, queue: queue)
        source.setEventHandler { [weak self] in self?.readAvailable() }
        source.setCancelHandler {
            close(watched)
            connection.close()
        }
        self.connection = connection
        self.source = source
        source.resume()
        reconnectPause = 0.1
        setConnected(true)
        // libpq may already hold notifications it read while running LISTEN; the socket will not
        // signal those again, so look once now.
        queue.async { [weak self] in self?.readAvailable() }
    }

    private func readAvailable() {
        guard let connection, !isStopped else { return }
        do {
            for notification in try connection.drainNotifications() { onNotification(notification) }
        } catch {
            onError(error)
            tearDown()
            scheduleReconnect()
        }
    }

    private func tearDown() {
        source?.cancel()
        source = nil
        connection = nil
        setConnected(false)
    }

    private func scheduleReconnect() {
        let pause = reconnectPause
        reconnectPause = min(5, reconnectPause * 2)
        queue.asyncAfter(deadline: .now() + pause) { [weak self] in
            guard let self, !self.isStopped else { return }
            do throws(PostgresError) {
                try self.connectAndListen()
                self.onReconnect()
            } catch {
                self.onError(error)
                self.scheduleReconnect()
            }
        }
    }

    private func setConnected(_ value: Bool) {
        connectedState.withLock { connected = value }
    }
}
