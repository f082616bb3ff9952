import Synchronization

/// An event for one user's change streams that every node serving the data must send: a workout
/// session's zone change. It is worked out once, by whichever node judged the readings (the
/// judgement's progress is stored, so no other node judges them again), and then handed to every
/// node's streams through the store: the SQLite store is served by one process, so that is its own
/// observers; the PostgreSQL store also tells the other nodes (NOTIFY).
public struct StreamEvent: Sendable, Equatable {
    public var userRowID: Int64
    /// The SSE event name (`zone`).
    public var name: String
    /// The event's JSON data line.
    public var data: [UInt8]
    /// Only streams whose app may read this type get the event.
    public var readableType: String

    public init(userRowID: Int64, name: String, data: [UInt8], readableType: String) {
        self.userRowID = userRowID
        self.name = name
        self.data = data
        self.readableType = readableType
    }
}

/// The stream-event observers of one process, shared by the stores' implementations.
public final class StreamEventObservers: Sendable {
    private let observers = Mutex<[@Sendable (StreamEvent) -> Void]>([])

    public init() {}

    public func add(_ observer: @escaping @Sendable (StreamEvent) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    public func deliver(_ event: StreamEvent) {
        for observer in observers.withLock({ $0 }) { observer(event) }
    }
}

extension HealthStore {
    /// One process serves a SQLite file: this process's streams are all the streams.
    public func broadcast(_ event: StreamEvent) throws {
        streamEventObservers.deliver(event)
    }

    public func addStreamEventObserver(_ observer: @escaping @Sendable (StreamEvent) -> Void) {
        streamEventObservers.add(observer)
    }

    public var isSharedByNodes: Bool { false }
}
