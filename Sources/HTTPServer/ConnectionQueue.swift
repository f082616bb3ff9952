import Dispatch
import Glibc
import HTTP

/// One serial Dispatch queue and the connections it owns: their sockets' read/write sources,
/// parsing and writing all run on it (no event loop of its own; Dispatch does the polling).
// @unchecked: every mutable property is only touched on `queue`.
final class ConnectionQueue: @unchecked Sendable {
    let index: Int
    let queue: DispatchQueue
    let configuration: HTTPServerConfiguration
    /// Shared by every connection of this loop: reads are consumed before the next one starts.
    let readBuffer: UnsafeMutableRawBufferPointer
    private(set) var connections: [UInt64: Connection] = [:]
    private var sweepTimer: (any DispatchSourceTimer)?
    private(set) var shuttingDown = false
    private var cachedSecond = -1
    private var cachedDate = ""
    /// The action list of whichever connection is handling an event: one list for all of them,
    /// its capacity kept, so a request costs no allocation and a thousand connections do not each
    /// keep one that a request has to bring into the cache. Sharing it is sound because a
    /// connection's work never runs another connection's synchronously (a completion for another
    /// connection is always queued with `queue.async`), so the list is empty whenever an event
    /// handler starts and is emptied before it returns.
    var work: [HTTPConnectionStateMachine.Action] = []
    /// The handled event's time and a response returned inside `respond`: per event, so per loop
    /// for the same reason (see `Connection`).
    var eventInstant: HTTPInstant?
    var responseReturnedDuringRespond: HTTPResponse?
    var admissionReturnedDuringAdmit: HTTPAdmission?

    init(index: Int, configuration: HTTPServerConfiguration) {
        self.index = index
        self.configuration = configuration
        self.queue = DispatchQueue(label: "healthd.http.loop\(index)")
        self.readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        work.reserveCapacity(16)
    }

    deinit {
        sweepTimer?.cancel()
        readBuffer.deallocate()
    }

    /// The monotonic time and the `Date` value, the latter formatted at most once per second.
    func now() -> HTTPInstant {
        let second = time(nil)
        if second != cachedSecond {
            cachedSecond = second
            cachedDate = HTTPDate.imfFixdate(unixSeconds: second)
        }
        return HTTPInstant(uptimeNanoseconds: DispatchTime.now().uptimeNanoseconds, httpDate: cachedDate)
    }

    func register(_ connection: Connection) {
        connections[connection.info.id] = connection
        connection.start()
        if shuttingDown { connection.shutdownRequested() }
    }

    func unregister(_ connection: Connection) {
        connections[connection.info.id] = nil
    }

    /// One timer per loop sweeps all its connections: cheap even with thousands idle.
    func startSweeping() {
        let timeouts = configuration.timeouts
        let shortest = min(timeouts.idle, timeouts.header, timeouts.body, configuration.writeTimeout, 2)
        let interval = max(0.01, min(1, shortest / 4))
        queue.async {
            let timer = DispatchSource.makeTimerSource(queue: self.queue)
            timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(Int(interval * 250)))
            timer.setEventHandler { [weak self] in self?.sweep() }
            self.sweepTimer = timer
            timer.activate()
        }
    }

    func stopSweeping() {
        sweepTimer?.cancel()
        sweepTimer = nil
    }

    private func sweep() {
        let instant = now()
        for connection in Array(connections.values) { connection.tick(instant) }
    }

    func beginShutdown() {
        shuttingDown = true
        for connection in Array(connections.values) { connection.shutdownRequested() }
    }

    func closeAll() {
        for connection in Array(connections.values) { connection.closeNow() }
    }
}
