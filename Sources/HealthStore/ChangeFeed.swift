import HealthModel

/// A place in one user's change sequence (HKQueryAnchor, unsigned).
///
/// `seq` is the last change the client has; `tombstoneFloor` is the sequence number when its first,
/// anchorless page was read. An initial sync lists present samples only, so deletions at or below
/// the floor (of samples it never saw) are skipped; for every later anchor `seq >= tombstoneFloor`.
public struct ChangePosition: Sendable, Hashable {
    public var seq: Int64
    public var tombstoneFloor: Int64
    public init(seq: Int64, tombstoneFloor: Int64) {
        self.seq = seq
        self.tombstoneFloor = tombstoneFloor
    }

    /// Tombstones with a seq above this are reported.
    package var tombstonesAfter: Int64 { max(seq, tombstoneFloor) }
}

/// What to read: the types (nil = every type the app can see), where to start (nil = from the
/// beginning: every sample now present) and how many changes at most.
public struct ChangeRequest: Sendable {
    public var types: Set<String>?
    public var after: ChangePosition?
    public var limit: Int
    public init(types: Set<String>?, after: ChangePosition?, limit: Int) {
        self.types = types
        self.after = after
        self.limit = limit
    }
}

public struct DeletedSample: Sendable, Hashable {
    public var uuid: HealthUUID
    public var type: String
    public init(uuid: HealthUUID, type: String) {
        self.uuid = uuid
        self.type = type
    }
}

/// One page of changes in commit order. Within a page, a uuid in both lists was deleted and then
/// saved again (a deleted row cannot be listed as added), so clients apply `deleted` first.
public struct ChangePage: Sendable {
    public var added: [StoredSample]
    public var deleted: [DeletedSample]
    /// Where the next page starts.
    public var next: ChangePosition
    /// True when more changes follow `next` right now.
    public var more: Bool
    public var isEmpty: Bool { added.isEmpty && deleted.isEmpty }

    public init(added: [StoredSample], deleted: [DeletedSample], next: ChangePosition, more: Bool) {
        self.added = added
        self.deleted = deleted
        self.next = next
        self.more = more
    }
}

extension ChangePage {
    /// Merges a snapshot's added rows and tombstones after `position` (each list in seq order, up to
    /// `limit + 1` long) into one page of at most `limit` changes in seq order, and at most
    /// `HealthType.maximumPageSize` samples of each type (`type` names a row's type), as a page of
    /// samples would hold: a route can carry 100,000 locations. When the page ends before every row
    /// read is listed, `next` is the last listed change, so the next page starts with the first one
    /// left out; otherwise it is the snapshot's `current` sequence number, which no later commit can
    /// fall below. Only the rows listed are materialized.
    package init<Row>(merging rows: [Row], seq: (Row) -> Int64, type: (Row) -> String?,
                      tombstones: [(seq: Int64, deleted: DeletedSample?)],
                      after position: ChangePosition, current: Int64, limit: Int,
                      materialize: (Row) throws -> StoredSample) rethrows {
        var added: [StoredSample] = []
        var deleted: [DeletedSample] = []
        var sampleIndex = 0, tombstoneIndex = 0, taken = 0
        var lastSeq = position.seq
        var perType: [String: Int] = [:]
        while taken < limit && (sampleIndex < rows.count || tombstoneIndex < tombstones.count) {
            let takeSample = tombstoneIndex >= tombstones.count
                || (sampleIndex < rows.count && seq(rows[sampleIndex]) < tombstones[tombstoneIndex].seq)
            if takeSample {
                let row = rows[sampleIndex]
                if let id = type(row), let capped = HealthTypeCatalog.type(id), capped.maximumPageSize != .max {
                    let count = perType[id, default: 0]
                    // The page ends before this sample, in seq order, so `next` skips nothing.
                    guard count < capped.maximumPageSize else { break }
                    perType[id] = count + 1
                }
                sampleIndex += 1
                added.append(try materialize(row))
                lastSeq = seq(row)
            } else {
                let tombstone = tombstones[tombstoneIndex]
                tombstoneIndex += 1
                if let gone = tombstone.deleted { deleted.append(gone) }
                lastSeq = tombstone.seq
            }
            taken += 1
        }
        let more = sampleIndex < rows.count || tombstoneIndex < tombstones.count
        self.init(added: added, deleted: deleted,
                  next: ChangePosition(seq: more ? lastSeq : max(position.seq, current), tombstoneFloor: position.tombstoneFloor),
                  more: more)
    }
}

public enum ChangeFeedError: Error, Sendable, Equatable {
    /// Tombstones after the anchor were purged (retention): the client must start over without one.
    case anchorExpired
}
