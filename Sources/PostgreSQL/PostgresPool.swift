import Foundation

/// A bounded set of connections shared by the server's threads. Connections open on demand up to
/// `maxConnections`; a caller finding all busy waits at most `acquireTimeoutMilliseconds`, then
/// gets `.unavailable` (503 with Retry-After), never an endless wait.
///
/// A connection that broke (server restart, failover, network) is discarded, and the body runs
/// again on a fresh one, up to `connectionAttempts` times with a growing pause; after that the
/// caller gets `.unavailable`. Bodies must therefore be safe to run again after a lost
/// connection: a transaction is (the server rolled it back), a sequence of autocommit writes
/// may not be. A connection lost after COMMIT was sent is never retried (`commitOutcomeUnknown`).
public final class PostgresPool: @unchecked Sendable {
    // @unchecked: `idle`, `openCount` and `isClosed` are guarded by `condition`; a connection is
    // used only by the thread that checked it out.

    public struct Configuration: Sendable {
        public var connection: PostgresConfiguration
        public var maxConnections: Int = 8
        public var acquireTimeoutMilliseconds: Int = 5_000
        /// Runs of a body when connections keep breaking, the first one included.
        public var connectionAttempts: Int = 3
        /// Pause before the second run; doubles each time.
        public var reconnectPauseMilliseconds: Int = 100

        public init(connection: PostgresConfiguration) { self.connection = connection }
    }

    public let configuration: Configuration
    private let condition = NSCondition()
    private var idle: [PostgresConnection] = []
    private var openCount = 0
    private var isClosed = false

    /// Opens one connection right away, so a wrong URL or an unreachable server fails at start-up
    /// instead of at the first request.
    public init(configuration: Configuration) throws(PostgresError) {
        guard configuration.maxConnections > 0 else { throw PostgresError.misuse("a pool needs at least one connection") }
        self.configuration = configuration
        idle = [try PostgresConnection(configuration: configuration.connection)]
        openCount = 1
    }

    public convenience init(url: String, maxConnections: Int = 8) throws(PostgresError) {
        var configuration = Configuration(connection: try PostgresConfiguration(url: url))
        configuration.maxConnections = maxConnections
        try self.init(configuration: configuration)
    }

    /// Connections currently open (idle or in use).
    public var openConnectionCount: Int { condition.withLock { openCount } }
    public var idleConnectionCount: Int { condition.withLock { idle.count } }

    /// Closes idle connections now and the others when they come back; later calls fail.
    public func close() { discardIdle(closingThePool: true) }

    // MARK: Running work

    /// Runs `body` on a pooled connection, retrying on a fresh one when the connection breaks.
    public func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        var attempt = 1
        while true {
            let connection: PostgresConnection
            do {
                connection = try checkOut()
            } catch let failure {
                // A server that refuses connections (restarting, failing over) gets the same
                // bounded retries as a connection lost mid-request; a full pool does not, its
                // wait was the bound.
                guard failure.isConnectFailure, attempt < configuration.connectionAttempts else { throw failure.error }
                pause(afterAttempt: attempt)
                attempt += 1
                continue
            }
            do {
                let result = try body(connection)
                checkIn(connection)
                return result
            } catch let error as PostgresError where error.isUnavailable {
                checkIn(connection)
                // What broke this connection (a server restart, a failover, every backend
                // terminated) most likely broke the idle ones too: the retry connects afresh
                // rather than spending its few attempts on dead connections one by one.
                discardIdle()
                guard !error.commitOutcomeUnknown, attempt < configuration.connectionAttempts else { throw error }
                pause(afterAttempt: attempt)
                attempt += 1
            } catch {
                checkIn(connection)
                throw error
            }
        }
    }

    /// `body` in a transaction, with serialization failures and deadlocks retried on the same
    /// connection and lost connections retried on a new one.
    public func transaction<T>(_ isolation: PostgresConnection.IsolationLevel = .readCommitted, readOnly: Bool = false,
                               _ body: (PostgresConnection) throws -> T) throws -> T {
        try withConnection { try $0.transaction(isolation, readOnly: readOnly, body) }
    }

    /// A read-only transaction on one snapshot (REPEATABLE READ): every statement in `body` sees
    /// the same committed state, as on a SQLite reader.
    public func read<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try transaction(.repeatableRead, readOnly: true, body)
    }

    private func pause(afterAttempt attempt: Int) {
        let milliseconds = configuration.reconnectPauseMilliseconds << min(attempt - 1, 6)
        usleep(UInt32(clamping: milliseconds * 1_000))
    }

    /// Closes every idle connection (the next callers connect anew), and with `closingThePool`
    /// marks the pool closed in the same step, so no connection comes back to idle after it.
    private func discardIdle(closingThePool: Bool = false) {
        let discarded: [PostgresConnection] = condition.withLock {
            if closingThePool { isClosed = true }
            let connections = idle
            idle.removeAll()
            openCount -= connections.count
            condition.broadcast()
            return connections
        }
        discarded.forEach { $0.close() }
    }

    // MARK: Checking connections out and in

    /// Why no connection could be had: the server refused a new one, or the pool stayed full.
    private struct CheckOutFailure: Error {
        let error: PostgresError
        let isConnectFailure: Bool
    }

    private func checkOut() throws(CheckOutFailure) -> PostgresConnection {
        let deadline = Date(timeIntervalSinceNow: Double(configuration.acquireTimeoutMilliseconds) / 1_000)
        condition.lock()
        while true {
            if isClosed {
                condition.unlock()
                throw CheckOutFailure(error: PostgresError(kind: .unavailable, message: "the database pool is closed"), isConnectFailure: false)
            }
            if let connection = idle.popLast() {
                condition.unlock()
                return connection
            }
            if openCount < configuration.maxConnections {
                openCount += 1
                condition.unlock()
                // Connect outside the lock: a slow server must not block check-ins.
                do {
                    return try PostgresConnection(configuration: configuration.connection)
                } catch {
                    condition.withLock {
                        openCount -= 1
                        condition.signal()
                    }
                    throw CheckOutFailure(error: error, isConnectFailure: true)
                }
            }
            if !condition.wait(until: deadline) {
                condition.unlock()
                throw CheckOutFailure(error: PostgresError(kind: .unavailable,
                                                           message: "no database connection became free within \(configuration.acquireTimeoutMilliseconds) ms (pool of \(configuration.maxConnections))"),
                                      isConnectFailure: false)
            }
        }
    }

    /// Returns a healthy idle connection to the pool; a broken one, or one left inside a
    /// transaction, is closed instead so the next caller never inherits its state.
    private func checkIn(_ connection: PostgresConnection) {
        let keep = connection.isHealthy && !connection.isInTransaction
        let closedPool: Bool = condition.withLock {
            if keep && !isClosed {
                idle.append(connection)
            } else {
                openCount -= 1
            }
            condition.signal()
            return isClosed
        }
        if !keep || closedPool { connection.close() }
    }
}
