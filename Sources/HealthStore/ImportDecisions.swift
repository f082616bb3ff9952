import HealthModel

/// Decides each sample of an import batch, in order, as a save one by one would: against what is
/// stored and what the batch inserts before it. `StoredRow` is a store's row type, read into a
/// sample only when first compared.
package struct ImportDecisions<StoredRow> {
    /// What a uuid is taken by: a stored row (read in full only when first compared), or a sample of
    /// this batch, by position (a correlation's object by its position in the correlation too), so
    /// no sample is copied.
    private enum Taken {
        case stored(StoredRow)
        case materialized(sourceRowID: Int64, sample: HealthSample)
        case batch(sourceRowID: Int64, index: Int, object: Int?)
    }

    private var taken: [HealthUUID: Taken] = [:]
    /// Indices of the samples to insert, with their source.
    private var inserts: [(index: Int, sourceRowID: Int64)] = []
    /// Correlation index -> objects stored before, to adopt once it is inserted.
    package private(set) var adoptions: [Int: [HealthUUID]] = [:]

    package init(stored: [HealthUUID: StoredRow], batchCount: Int) {
        taken.reserveCapacity(stored.count + batchCount * 2)
        for (uuid, row) in stored { taken[uuid] = .stored(row) }
    }

    /// The uuids an import batch may find stored: its samples' and their correlation objects'.
    package static func uuids(of batch: [SourcedSample]) -> [HealthUUID] {
        var uuids: [HealthUUID] = []
        uuids.reserveCapacity(batch.count)
        for item in batch {
            uuids.append(item.sample.uuid)
            if case .correlation(let objects) = item.sample.content { uuids.append(contentsOf: objects.map(\.uuid)) }
        }
        return uuids
    }

    /// Decides every sample of the batch in order. `sourceRowID` gives an app's source row (asked
    /// once per app); `isKnown` and `read` as for `decide`.
    package mutating func decideAll(_ batch: [SourcedSample], sourceRowID: (String) throws -> Int64, isKnown: (String) -> Bool,
                                    read: (StoredRow) throws -> (sourceRowID: Int64, sample: HealthSample)) throws -> [ImportOutcome] {
        var sourceRows: [String: Int64] = [:]
        var outcomes: [ImportOutcome] = []
        outcomes.reserveCapacity(batch.count)
        for (index, item) in batch.enumerated() {
            let source: Int64
            if let known = sourceRows[item.app] {
                source = known
            } else {
                source = try sourceRowID(item.app)
                sourceRows[item.app] = source
            }
            outcomes.append(try decide(index, of: batch, sourceRowID: source, isKnown: isKnown, read: read))
        }
        return outcomes
    }

    /// `isKnown`: whether the store has a code for a type; `read`: a stored row's source and sample.
    package mutating func decide(_ index: Int, of batch: [SourcedSample], sourceRowID: Int64, isKnown: (String) -> Bool,
                                 read: (StoredRow) throws -> (sourceRowID: Int64, sample: HealthSample)) throws -> ImportOutcome {
        let sample = batch[index].sample
        guard isKnown(sample.type) else { return .conflict("unknown type \(sample.type)") }
        if taken[sample.uuid] != nil {
            return try isSame(sample, sourceRowID: sourceRowID, batch: batch, read: read)
                ? .alreadyStored : .conflict("uuid \(sample.uuid.lowercasedString) exists with different content")
        }
        var adopted: [HealthUUID] = []
        if case .correlation(let objects) = sample.content {
            // Check the objects first, so a conflict leaves nothing half-saved.
            for object in objects {
                guard isKnown(object.type) else { return .conflict("unknown type \(object.type)") }
                guard taken[object.uuid] != nil else { continue }
                guard try isSame(object, sourceRowID: sourceRowID, batch: batch, read: read) else {
                    return .conflict("object \(object.uuid.lowercasedString) exists with different content")
                }
                adopted.append(object.uuid)
            }
            for (position, object) in objects.enumerated() where taken[object.uuid] == nil {
                taken[object.uuid] = .batch(sourceRowID: sourceRowID, index: index, object: position)
            }
        }
        taken[sample.uuid] = .batch(sourceRowID: sourceRowID, index: index, object: nil)
        inserts.append((index, sourceRowID))
        if !adopted.isEmpty { adoptions[index] = adopted }
        return .inserted
    }

    /// Whether `sample`'s uuid is taken by the same sample from the same source (a harmless repeat).
    private mutating func isSame(_ sample: HealthSample, sourceRowID: Int64, batch: [SourcedSample],
                                 read: (StoredRow) throws -> (sourceRowID: Int64, sample: HealthSample)) throws -> Bool {
        switch taken[sample.uuid] {
        case .batch(let takenSource, let index, let object)?:
            guard takenSource == sourceRowID else { return false }
            guard let object else { return batch[index].sample == sample }
            guard case .correlation(let objects) = batch[index].sample.content else { return false }
            return objects[object] == sample
        case .materialized(let takenSource, let earlier)?:
            return takenSource == sourceRowID && earlier == sample
        case .stored(let row)?:
            let existing = try read(row)
            // Read once: later repeats of the uuid compare with the materialized sample.
            taken[sample.uuid] = .materialized(sourceRowID: existing.sourceRowID, sample: existing.sample)
            return existing.sourceRowID == sourceRowID && existing.sample == sample
        case nil:
            return false
        }
    }

    /// The samples to insert as runs of one source each, in batch order. Inserting run by run keeps
    /// the batch's order in the change sequence, so samples with the same start list in the order
    /// they had on the server a backup came from; grouping all of an app's samples instead put the
    /// app first seen in a batch ahead of the others for the whole batch.
    package func insertRuns() -> [(sourceRowID: Int64, indices: [Int])] {
        var runs: [(sourceRowID: Int64, indices: [Int])] = []
        for insert in inserts {
            if let last = runs.indices.last, runs[last].sourceRowID == insert.sourceRowID {
                runs[last].indices.append(insert.index)
            } else {
                runs.append((insert.sourceRowID, [insert.index]))
            }
        }
        return runs
    }
}
