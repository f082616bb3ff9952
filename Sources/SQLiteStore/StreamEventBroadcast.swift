import HealthStore

extension SQLiteHealthStore {
    /// One process serves a SQLite file: this process's streams are all the streams.
    public func broadcast(_ event: StreamEvent) throws {
        streamEventLog.append(event)
    }

    public var isSharedByNodes: Bool { false }
}
