import HealthModel

/// HKQuery's sample predicate plus paging.
public struct SampleQuery: Sendable {
    public var type: String
    public var start: Int64?
    public var end: Int64?
    public var strictStartDate = false
    public var strictEndDate = false
    /// Only this app's samples.
    public var sourceApp: String?
    public var descending = false
    public var limit = 100
    public var after: SampleCursor?

    public init(type: String) { self.type = type }
}

/// Where a page ended, in the query's order: keyset paging on (start, seq), so rows written while
/// a client pages neither shift nor repeat what it has seen.
public struct SampleCursor: Sendable, Equatable {
    public var start: Int64
    public var seq: Int64
    public init(start: Int64, seq: Int64) { self.start = start; self.seq = seq }
}

public struct SamplePage: Sendable {
    public var samples: [StoredSample]
    public var next: SampleCursor?

    public init(samples: [StoredSample], next: SampleCursor?) {
        self.samples = samples
        self.next = next
    }
}

/// A save that could not be done; `index` is the position in the request's batch.
public struct SampleConflict: Error, Sendable, Equatable {
    public var index: Int
    public var uuid: HealthUUID
    public var detail: String

    public init(index: Int, uuid: HealthUUID, detail: String) {
        self.index = index
        self.uuid = uuid
        self.detail = detail
    }
}

/// What a commit changed, for commit observers (the change feed, the workout zone monitor).
public struct CommittedChange: Sendable {
    public var userRowID: Int64
    public var typeIDs: Set<String>
    /// The user's change sequence number after the commit.
    public var lastSeq: Int64

    public init(userRowID: Int64, typeIDs: Set<String>, lastSeq: Int64) {
        self.userRowID = userRowID
        self.typeIDs = typeIDs
        self.lastSeq = lastSeq
    }
}
