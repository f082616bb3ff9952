// A health sample as HealthKit models it (HKSample and its subclasses), as plain values.
// Instants are Int64 milliseconds since 1970 UTC; quantities are in the type's canonical unit.

/// HKDevice's fields; every one optional.
public struct SampleDevice: Sendable, Hashable {
    public var name: String?
    public var manufacturer: String?
    public var model: String?
    public var hardwareVersion: String?
    public var softwareVersion: String?
    public var localIdentifier: String?

    public init(name: String? = nil, manufacturer: String? = nil, model: String? = nil, hardwareVersion: String? = nil,
                softwareVersion: String? = nil, localIdentifier: String? = nil) {
        self.name = name
        self.manufacturer = manufacturer
        self.model = model
        self.hardwareVersion = hardwareVersion
        self.softwareVersion = softwareVersion
        self.localIdentifier = localIdentifier
    }

    public static let fieldNames = ["name", "manufacturer", "model", "hardwareVersion", "softwareVersion", "localIdentifier"]

    public var fields: [(String, String?)] {
        [("name", name), ("manufacturer", manufacturer), ("model", model), ("hardwareVersion", hardwareVersion),
         ("softwareVersion", softwareVersion), ("localIdentifier", localIdentifier)]
    }

    public var isEmpty: Bool {
        name == nil && manufacturer == nil && model == nil && hardwareVersion == nil && softwareVersion == nil
            && localIdentifier == nil
    }
}

/// A metadata value: HealthKit allows strings, numbers and booleans (and dates, which JSON carries as strings).
public enum MetadataValue: Sendable, Hashable {
    case string(String)
    case number(Double)
    case bool(Bool)
}

public enum WorkoutEventType: String, Sendable, CaseIterable {
    case pause, resume, lap, marker, segment
}

public struct WorkoutEvent: Sendable, Hashable {
    public var type: WorkoutEventType
    public var date: Int64
    public init(type: WorkoutEventType, date: Int64) { self.type = type; self.date = date }
}

/// HKWorkout's own fields. Totals are canonical: kilocalories and metres.
public struct WorkoutDetails: Sendable, Hashable {
    public var activityType: String
    public var totalEnergyBurned: Double?
    public var totalDistance: Double?
    public var events: [WorkoutEvent]
    public init(activityType: String, totalEnergyBurned: Double? = nil, totalDistance: Double? = nil, events: [WorkoutEvent] = []) {
        self.activityType = activityType
        self.totalEnergyBurned = totalEnergyBurned
        self.totalDistance = totalDistance
        self.events = events
    }
}

public indirect enum SampleContent: Sendable, Hashable {
    /// A quantity in the type's canonical unit.
    case quantity(Double)
    /// A category value by HealthKit's case name (`asleepCore`).
    case category(String)
    /// The objects of a correlation (`bloodPressure`, `food`).
    case correlation([HealthSample])
    case workout(WorkoutDetails)
    /// A workout's route (`workoutRoute`).
    case workoutRoute(WorkoutRoute)
}

/// One sample as an app sends it; the store adds its source and creation time.
public struct HealthSample: Sendable, Hashable {
    public var uuid: HealthUUID
    /// The catalog id (`stepCount`).
    public var type: String
    public var start: Int64
    public var end: Int64
    public var content: SampleContent
    /// In the order given; keys unique.
    public var metadata: [MetadataEntry]
    public var device: SampleDevice?

    public init(uuid: HealthUUID, type: String, start: Int64, end: Int64, content: SampleContent,
                metadata: [MetadataEntry] = [], device: SampleDevice? = nil) {
        self.uuid = uuid
        self.type = type
        self.start = start
        self.end = end
        self.content = content
        self.metadata = metadata
        self.device = device
    }

    public var quantity: Double? {
        if case .quantity(let value) = content { return value }
        return nil
    }
}

public struct MetadataEntry: Sendable, Hashable {
    public var key: String
    public var value: MetadataValue
    public init(key: String, value: MetadataValue) { self.key = key; self.value = value }
}

/// Who saved a sample (HKSourceRevision reduced to what a server knows): the app and the user.
public struct SampleSource: Sendable, Hashable {
    public var app: String
    public var user: String
    public init(app: String, user: String) { self.app = app; self.user = user }
}

/// A sample as stored: the app's sample plus what the server assigned.
public struct StoredSample: Sendable, Hashable {
    public var sample: HealthSample
    public var source: SampleSource
    public var created: Int64
    public init(sample: HealthSample, source: SampleSource, created: Int64) {
        self.sample = sample
        self.source = source
        self.created = created
    }
}

extension HealthSample {
    /// The types of a correlation's objects (empty for other samples): saving one needs share
    /// permission for each.
    public var objectTypes: [String] {
        if case .correlation(let objects) = content { return objects.map(\.type) }
        return []
    }
}
