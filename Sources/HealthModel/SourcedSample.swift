/// A sample from an import, with the app (HKSource name) that recorded it.
public struct SourcedSample: Sendable, Hashable {
    public var app: String
    public var sample: HealthSample
    public init(app: String, sample: HealthSample) { self.app = app; self.sample = sample }
}
