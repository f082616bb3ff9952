import Foundation

/// Floors climbed from barometric pressure.
///
/// Pressure → altitude with the international barometric formula, then two
/// exponential averages (0.5 s and 2 s): the fast one is the altitude, and their
/// difference divided by the difference of their lags is the vertical speed.
/// A floor is counted each time the altitude moves `floorHeightMeters` away from
/// an anchor. While the altitude is nearly level the anchor follows it slowly
/// (minutes), so weather drift (≤ ~0.01 m/s) never accumulates to a floor; during
/// a stair climb (0.1-0.7 m/s) the anchor holds still; at lift speeds (≥ 0.8 m/s)
/// the anchor moves with the altitude so rides are not counted.
struct FloorCounter: Sendable, Codable, Equatable {
    static let floorHeightMeters = 3.0
    static let fastTimeConstantSeconds = 0.5
    static let slowTimeConstantSeconds = 2.0
    static let anchorTimeConstantSeconds = 180.0
    /// Below this vertical speed the change is drift or noise, not climbing.
    static let levelSpeedMetersPerSecond = 0.1
    /// Stairs rarely exceed ~0.7 m/s of vertical speed; lifts travel at 1 m/s and more.
    static let liftEntrySpeedMetersPerSecond = 0.8
    static let liftExitSpeedMetersPerSecond = 0.2
    /// After a longer silence the old anchor says nothing about the current floor.
    static let maximumGapSeconds = 60.0

    var hasAltitude = false
    var lastTime: Double = 0
    var fastAltitude: Double = 0
    var slowAltitude: Double = 0
    var anchorAltitude: Double = 0
    var inLift = false
    var floorsAscended = 0
    var floorsDescended = 0

    /// Altitude (m) above the 1013.25 hPa standard-atmosphere reference.
    static func altitudeMeters(hectopascals: Double) -> Double {
        44_330.77 * (1 - pow(hectopascals / 1_013.25, 0.190_263))
    }

    /// Vertical speed (m/s): a ramp lags each average by its time constant × speed.
    var verticalSpeed: Double {
        (fastAltitude - slowAltitude) / (Self.slowTimeConstantSeconds - Self.fastTimeConstantSeconds)
    }

    mutating func add(time: Double, hectopascals: Double) {
        let altitude = Self.altitudeMeters(hectopascals: hectopascals)
        let elapsed = time - lastTime
        guard hasAltitude, elapsed > 0, elapsed <= Self.maximumGapSeconds else {
            hasAltitude = true
            lastTime = time
            fastAltitude = altitude
            slowAltitude = altitude
            anchorAltitude = altitude
            inLift = false
            return
        }
        lastTime = time
        fastAltitude += elapsed / (Self.fastTimeConstantSeconds + elapsed) * (altitude - fastAltitude)
        slowAltitude += elapsed / (Self.slowTimeConstantSeconds + elapsed) * (altitude - slowAltitude)
        let speed = abs(verticalSpeed)
        if inLift {
            inLift = speed > Self.liftExitSpeedMetersPerSecond
        } else {
            inLift = speed >= Self.liftEntrySpeedMetersPerSecond
        }
        if inLift {
            anchorAltitude = fastAltitude
            return
        }
        if speed < Self.levelSpeedMetersPerSecond {
            anchorAltitude += elapsed / (Self.anchorTimeConstantSeconds + elapsed) * (fastAltitude - anchorAltitude)
        }
        while fastAltitude - anchorAltitude >= Self.floorHeightMeters {
            floorsAscended += 1
            anchorAltitude += Self.floorHeightMeters
        }
        while anchorAltitude - fastAltitude >= Self.floorHeightMeters {
            floorsDescended += 1
            anchorAltitude -= Self.floorHeightMeters
        }
    }
}
