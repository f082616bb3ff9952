import Foundation

/// Floors climbed from barometric pressure.
///
/// Pressure → altitude with the international barometric formula, smoothed
/// (a few seconds). A floor is counted each time the smoothed altitude moves
/// `floorHeightMeters` away from an anchor. The anchor slowly follows the altitude
/// (minutes), so weather drift (≤ ~0.01 m/s) never accumulates to a floor, and
/// vertical speeds typical of lifts, not stairs, move the anchor along with the
/// altitude so rides are not counted.
struct FloorCounter: Sendable, Codable, Equatable {
    static let floorHeightMeters = 3.0
    static let smoothingTimeConstantSeconds = 3.0
    static let anchorTimeConstantSeconds = 180.0
    static let speedTimeConstantSeconds = 3.0
    /// Stairs rarely exceed ~0.7 m/s of vertical speed; lifts travel at 1 m/s and more.
    static let liftSpeedMetersPerSecond = 1.0
    /// After a longer silence the old anchor says nothing about the current floor.
    static let maximumGapSeconds = 60.0

    var hasAltitude = false
    var lastTime: Double = 0
    var smoothedAltitude: Double = 0
    var anchorAltitude: Double = 0
    var verticalSpeed: Double = 0
    var floorsAscended = 0
    var floorsDescended = 0

    /// Altitude (m) above the 1013.25 hPa standard-atmosphere reference.
    static func altitudeMeters(hectopascals: Double) -> Double {
        44_330.77 * (1 - pow(hectopascals / 1_013.25, 0.190_263))
    }

    mutating func add(time: Double, hectopascals: Double) {
        let altitude = Self.altitudeMeters(hectopascals: hectopascals)
        let elapsed = time - lastTime
        guard hasAltitude, elapsed > 0, elapsed <= Self.maximumGapSeconds else {
            hasAltitude = true
            lastTime = time
            smoothedAltitude = altitude
            anchorAltitude = altitude
            verticalSpeed = 0
            return
        }
        lastTime = time
        let previous = smoothedAltitude
        smoothedAltitude += elapsed / (Self.smoothingTimeConstantSeconds + elapsed) * (altitude - smoothedAltitude)
        let change = smoothedAltitude - previous
        verticalSpeed += elapsed / (Self.speedTimeConstantSeconds + elapsed) * (change / elapsed - verticalSpeed)
        if abs(verticalSpeed) > Self.liftSpeedMetersPerSecond {
            anchorAltitude += change
        }
        anchorAltitude += elapsed / (Self.anchorTimeConstantSeconds + elapsed) * (smoothedAltitude - anchorAltitude)
        while smoothedAltitude - anchorAltitude >= Self.floorHeightMeters {
            floorsAscended += 1
            anchorAltitude += Self.floorHeightMeters
        }
        while anchorAltitude - smoothedAltitude >= Self.floorHeightMeters {
            floorsDescended += 1
            anchorAltitude -= Self.floorHeightMeters
        }
    }
}
