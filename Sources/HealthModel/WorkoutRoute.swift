// HKWorkoutRoute: the series of locations (CLLocation's fields) recorded during a workout,
// saved as a sample of its own and linked to its workout, as HKWorkoutRouteBuilder does.

/// One location of a route. Coordinates are WGS 84 degrees, altitude metres above sea level,
/// speed m/s, course degrees clockwise from true north, accuracies metres. CLLocation marks an
/// unknown speed, course or accuracy with a negative number; here it is nil.
public struct WorkoutRouteLocation: Sendable, Hashable {
    public var date: Int64
    public var latitude: Double
    public var longitude: Double
    public var altitude: Double?
    public var speed: Double?
    public var course: Double?
    public var horizontalAccuracy: Double?
    public var verticalAccuracy: Double?

    public init(date: Int64, latitude: Double, longitude: Double, altitude: Double? = nil, speed: Double? = nil,
                course: Double? = nil, horizontalAccuracy: Double? = nil, verticalAccuracy: Double? = nil) {
        self.date = date
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.speed = speed
        self.course = course
        self.horizontalAccuracy = horizontalAccuracy
        self.verticalAccuracy = verticalAccuracy
    }

    /// The optional fields by their JSON names, in the order they are written.
    public var optionalFields: [(String, Double?)] {
        [("altitude", altitude), ("speed", speed), ("course", course),
         ("horizontalAccuracy", horizontalAccuracy), ("verticalAccuracy", verticalAccuracy)]
    }
}

/// A workout's route: its locations in time order and the workout it belongs to.
public struct WorkoutRoute: Sendable, Hashable {
    /// The workout's uuid (HKWorkoutRouteBuilder's `finishRoute(with:)`).
    public var workout: HealthUUID
    public var locations: [WorkoutRouteLocation]

    public init(workout: HealthUUID, locations: [WorkoutRouteLocation]) {
        self.workout = workout
        self.locations = locations
    }
}

extension HealthValidation {
    /// A route holds at most this many locations: a day at one per second, far beyond any
    /// workout's GPS track, and a bound on one sample's size.
    public static let maximumRouteLocations = 100_000

    /// Checks one location: coordinates on the globe, altitude between the deepest point and
    /// the stratosphere, speed, course and accuracies finite and in range, the date inside the
    /// route's [start, end]. `field` is the location's path (`locations[3]`).
    public static func routeLocation(_ location: WorkoutRouteLocation, start: Int64, end: Int64,
                                     field: String) throws(HealthValidationError) {
        func check(_ value: Double?, _ name: String, _ range: ClosedRange<Double>, _ what: String) throws(HealthValidationError) {
            guard let value else { return }
            guard value.isFinite else {
                throw HealthValidationError(field: "\(field).\(name)", reason: .valueNotFinite, detail: "must be a finite number")
            }
            guard range.contains(value) else {
                throw HealthValidationError(field: "\(field).\(name)", reason: .valueOutOfRange,
                                            detail: "\(plain(value)) is not \(what)")
            }
        }
        try check(location.latitude, "latitude", -90...90, "a latitude (-90 to 90 degrees)")
        try check(location.longitude, "longitude", -180...180, "a longitude (-180 to 180 degrees)")
        try check(location.altitude, "altitude", -12_000...100_000, "an altitude in metres (-12,000 to 100,000)")
        try check(location.speed, "speed", 0...1_000, "a speed in m/s (0 to 1,000)")
        try check(location.course, "course", 0...360, "a course in degrees (0 to 360)")
        try check(location.horizontalAccuracy, "horizontalAccuracy", 0...100_000, "an accuracy in metres (0 to 100,000)")
        try check(location.verticalAccuracy, "verticalAccuracy", 0...100_000, "an accuracy in metres (0 to 100,000)")
        guard location.date >= start && location.date <= end else {
            throw HealthValidationError(field: "\(field).date", reason: .valueOutOfRange,
                                        detail: "must lie within the route's start and end")
        }
    }

    /// Checks a route: one location at least, at most `maximumRouteLocations`, each valid, in
    /// time order (equal times allowed: receivers repeat a fix).
    public static func workoutRoute(_ locations: [WorkoutRouteLocation], start: Int64, end: Int64,
                                    field: String = "locations") throws(HealthValidationError) {
        guard !locations.isEmpty else {
            throw HealthValidationError(field: field, reason: .missingField, detail: "a route holds at least one location")
        }
        guard locations.count <= maximumRouteLocations else {
            throw HealthValidationError(field: field, reason: .valueOutOfRange,
                                        detail: "a route holds at most \(maximumRouteLocations) locations, not \(locations.count)")
        }
        var previous = Int64.min
        for (index, location) in locations.enumerated() {
            try routeLocation(location, start: start, end: end, field: "\(field)[\(index)]")
            guard location.date >= previous else {
                throw HealthValidationError(field: "\(field)[\(index)].date", reason: .valueOutOfRange,
                                            detail: "locations must be in time order")
            }
            previous = location.date
        }
    }
}
