import HealthModel
import HealthStore

/// Saves generated samples through a store in batches of 10,000, as a syncing client would send
/// them, and counts what was saved: the statistics benchmarks' loads produce one sample at a time.
struct BatchedSave {
    static let batchSize = 10_000

    let store: any HealthDataStore
    let app: AppAuthorization
    private(set) var saved = 0
    private var batch: [HealthSample] = []

    init(into store: any HealthDataStore, by app: AppAuthorization) {
        self.store = store
        self.app = app
        batch.reserveCapacity(Self.batchSize)
    }

    mutating func append(_ sample: HealthSample) throws {
        batch.append(sample)
        if batch.count == Self.batchSize { try flush() }
    }

    /// Saves what is left; returns the count saved in all.
    mutating func finish() throws -> Int {
        try flush()
        return saved
    }

    private mutating func flush() throws {
        guard !batch.isEmpty else { return }
        saved += try store.save(batch, by: app).count
        batch.removeAll(keepingCapacity: true)
    }
}
