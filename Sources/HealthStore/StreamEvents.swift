import Synchronization

/// An event for one user's change streams that every node serving the data must send: a workout
/// session's zone change. It is worked out once, by whichever node judged the readings (the
/// judgement's progress is stored, so no other node judges them again), and then handed to every
/// node's store: the SQLite store is served by one process, so that is its own log; the PostgreSQL
/// store also tells the other nodes (NOTIFY). Streams read the events back through the store, which
/// applies the reader's `AccessPolicy` like on every other read.
public struct StreamEvent: Sendable, Equatable {
    public var userRowID: Int64
    /// The SSE event name (`zone`).
    public var name: String
    /// The event's JSON data line.
    public var data: [UInt8]
    /// The type the event discloses: only apps that may read it get the event.
    public var readableType: String

    public init(userRowID: Int64, name: String, data: [UInt8], readableType: String) {
        self.userRowID = userRowID
        self.name = name
        self.data = data
        self.readableType = readableType
    }
}

/// A place in this process's stream-event log: a reader asks for the events after it. Positions
/// are this process's own (every node numbers the events it heard), never sent to a client: a
/// stream event carries no SSE `id`, so a client's Last-Event-ID stays the change feed's anchor.
public struct StreamEventPosition: Sendable, Hashable, Comparable {
    public var value: UInt64
    public init(_ value: UInt64) { self.value = value }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.value < rhs.value }
}

/// The recent stream events of one process, shared by both stores' implementations: events are
/// appended as they are broadcast or heard from another node, observers learn which user has news,
/// and each stream reads what its app may see after its own position. Only the latest
/// `retainedCount` events are kept (over all users): streams read them within milliseconds, and a
/// zone event is only sent when a state changes, so a stream that far behind has been cut off as a
/// slow consumer long before.
public final class StreamEventLog: Sendable {
    public static let retainedCount = 4096

    private struct State {
        var last = StreamEventPosition(0)
        /// Oldest first, positions rising by one.
        var events: [(position: StreamEventPosition, event: StreamEvent)] = []
        var observers: [@Sendable (Int64) -> Void] = []
    }

    private let state = Mutex(State())

    public init() {}

    public func addObserver(_ observer: @escaping @Sendable (_ userRowID: Int64) -> Void) {
        state.withLock { $0.observers.append(observer) }
    }

    /// Records an event and tells the observers its user has news.
    public func append(_ event: StreamEvent) {
        let observers = state.withLock { state in
            state.last.value += 1
            state.events.append((state.last, event))
            if state.events.count > Self.retainedCount {
                state.events.removeFirst(state.events.count - Self.retainedCount)
            }
            return state.observers
        }
        for observer in observers { observer(event.userRowID) }
    }

    /// Where a reader starting now begins: it gets only later events.
    public var current: StreamEventPosition { state.withLock { $0.last } }

    /// The events after `position` that `app` may see: its user's, of types it may read (read
    /// privacy for events is all or nothing: an event is not anyone's own data). `next` is where
    /// the following read starts.
    public func events(after position: StreamEventPosition, for app: AppAuthorization)
        -> (events: [StreamEvent], next: StreamEventPosition) {
        state.withLock { state in
            guard let first = state.events.first, position < state.last else { return ([], state.last) }
            // Positions rise by one, so the first event after `position` is found by subtraction.
            let start = position.value < first.position.value ? 0 : Int(position.value - first.position.value) + 1
            var visible: [StreamEvent] = []
            for (_, event) in state.events[start...]
            where event.userRowID == app.userRowID && app.access.mayRead(event.readableType) {
                visible.append(event)
            }
            return (visible, state.last)
        }
    }
}
