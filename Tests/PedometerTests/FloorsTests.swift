import Foundation
import Testing
import Pedometer

@Suite struct FloorsTests {
    /// Inverse of the barometric formula: station pressure (hPa) at an altitude (m).
    static func hectopascals(altitude: Double) -> Double {
        1_013.25 * pow(1 - altitude / 44_330.77, 1 / 0.190_263)
    }

    /// Feeds a pressure profile in 10 s batches, each carrying a short accelerometer burst.
    static func run(seconds: Double, pressureRateHz: Double = 4, noise: Double = 0,
                    altitude: (Double) -> Double) throws -> PedometerUpdate {
        var generator = SeededGenerator(state: 3)
        var session = PedometerSession()
        var batchStart = 0.0
        var pressureTime = 0.0
        var last: PedometerUpdate?
        while batchStart < seconds {
            let batchEnd = batchStart + 10
            let accelTimes = (0..<10).map { TestSignals.startTime + batchStart + Double($0) * 0.01 }
            var pressureTimes: [Double] = []
            var pressures: [Double] = []
            while pressureTime < min(batchEnd, seconds) {
                pressureTimes.append(TestSignals.startTime + pressureTime)
                pressures.append(hectopascals(altitude: altitude(pressureTime))
                                 + generator.gaussian(standardDeviation: noise))
                pressureTime += 1 / pressureRateHz
            }
            let batch = AccelerometerBatch(
                timestamps: accelTimes, x: Array(repeating: 0, count: 10), y: Array(repeating: 0, count: 10),
                z: Array(repeating: 9.81, count: 10), unit: .metersPerSecondSquared,
                pressure: PressureSamples(timestamps: pressureTimes, hectopascals: pressures))
            last = try session.process(batch)
            batchStart = batchEnd
        }
        return try #require(last)
    }

    @Test func stairsClimbAndDescentCountFloors() throws {
        // 30 s level, 9.6 m up at 0.32 m/s, 60 s level, 9.6 m down, 30 s level; from 250 m.
        let update = try Self.run(seconds: 180, noise: 0.03) { time in
            switch time {
            case ..<30: 250
            case ..<60: 250 + (time - 30) * 0.32
            case ..<120: 259.6
            case ..<150: 259.6 - (time - 120) * 0.32
            default: 250
            }
        }
        #expect(update.totalFloorsAscended == 3)
        #expect(update.totalFloorsDescended == 3)
    }

    @Test func slowWeatherDriftIsIgnored() throws {
        // A falling barometer: 3 hPa over two hours, i.e. about 25 m of apparent climb.
        let update = try Self.run(seconds: 7_200, pressureRateHz: 0.5) { time in 100 + time * 25 / 7_200 }
        #expect(update.totalFloorsAscended == 0)
        #expect(update.totalFloorsDescended == 0)
    }

    @Test func liftRideIsNotCountedAsFloors() throws {
        // 15 m in 7.5 s: a lift, not stairs.
        let update = try Self.run(seconds: 60) { time in
            switch time {
            case ..<20: 40
            case ..<27.5: 40 + (time - 20) * 2
            default: 55
            }
        }
        #expect(update.totalFloorsAscended == 0)
    }

    @Test func floorsAreReportedPerBatch() throws {
        var session = PedometerSession()
        var ascended = 0
        for second in 0..<60 {
            let time = TestSignals.startTime + Double(second)
            let altitude = second < 10 ? 0 : min(Double(second - 10) * 0.4, 12)
            let batch = AccelerometerBatch(
                timestamps: [time, time + 0.01], x: [0, 0], y: [0, 0], z: [9.8, 9.8], unit: .metersPerSecondSquared,
                pressure: PressureSamples(timestamps: [time], hectopascals: [Self.hectopascals(altitude: altitude)]))
            let update = try session.process(batch)
            ascended += update.floorsAscended
            #expect(update.totalFloorsAscended == ascended)
        }
        #expect(ascended == 3 || ascended == 4)
    }
}
