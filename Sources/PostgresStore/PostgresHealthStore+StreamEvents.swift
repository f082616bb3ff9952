import HealthStore
import PostgreSQL

/// Stream events between nodes: a zone change worked out on one node is sent as a NOTIFY on the
/// store's channel (`z <node> <user> <readable type> <event name> <JSON>`), which every node's
/// listener appends to its own stream-event log. The sending node appends to its log at once and
/// ignores its own NOTIFY when it comes back.
extension PostgresHealthStore {
    static let streamEventPrefix = "z "

    public var isSharedByNodes: Bool { true }

    public func broadcast(_ event: StreamEvent) throws {
        streamEventLog.append(event)
        // Outside any transaction: the other nodes hear it at once. NOTIFY payloads are text
        // (at most 8000 bytes); a zone event's JSON is about 150 bytes.
        let payload = Self.streamEventPrefix
            + "\(nodeID) \(event.userRowID) \(event.readableType) \(event.name) \(String(decoding: event.data, as: UTF8.self))"
        try pool.withConnection { connection in
            _ = try connection.execute("SELECT pg_notify($1, $2)", [.text(channel), .text(payload)])
        }
    }

    func receivedStreamEvent(_ payload: String) {
        let fields = payload.dropFirst(Self.streamEventPrefix.count).split(separator: " ", maxSplits: 4, omittingEmptySubsequences: false)
        guard fields.count == 5, let node = UInt64(fields[0]), let user = Int64(fields[1]) else { return }
        if node == nodeID { return }
        streamEventLog.append(StreamEvent(userRowID: user, name: String(fields[3]), data: Array(fields[4].utf8),
                                          readableType: String(fields[2])))
    }
}
