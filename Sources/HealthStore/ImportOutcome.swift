
/// What happened to one sample of an import batch.
public enum ImportOutcome: Sendable, Hashable {
    /// Stored now.
    case inserted
    /// The same uuid with the same content was stored before (an earlier import, or an earlier batch).
    case alreadyStored
    /// The uuid is taken by different content (e.g. the same record with other metadata); nothing saved.
    case conflict(String)
}
