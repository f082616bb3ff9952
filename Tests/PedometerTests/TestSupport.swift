import Foundation
import Pedometer

/// Deterministic pseudo-random numbers (SplitMix64) so synthetic signals are reproducible.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// Approximately normal noise (sum of uniforms), cheap and deterministic.
    mutating func gaussian(standardDeviation: Double) -> Double {
        var sum = 0.0
        for _ in 0..<6 { sum += Double.random(in: -1...1, using: &self) }
        return sum / 2.0.squareRoot() * standardDeviation
    }
}

struct Recording {
    var timestamps: [Double]
    var x: [Double]
    var y: [Double]
    var z: [Double]

    var count: Int { timestamps.count }

    func batch(_ range: Range<Int>, unit: AccelerationUnit = .metersPerSecondSquared) -> AccelerometerBatch {
        AccelerometerBatch(timestamps: Array(timestamps[range]), x: Array(x[range]),
                           y: Array(y[range]), z: Array(z[range]), unit: unit)
    }
}

/// Result of feeding a whole recording through a session.
struct SessionRun {
    var stepTimes: [Double]
    var session: PedometerSession
    var lastUpdate: PedometerUpdate
}

enum TestSignals {
    static let startTime = 1_790_000_000.0

    /// A walking-like signal: gravity along `direction` (any orientation) plus a
    /// vertical bounce at `stepHz` and its first harmonic, plus sensor noise.
    static func walking(stepHz: Double, seconds: Double, amplitude: Double = 2.0,
                        direction: (Double, Double, Double) = (0.31, -0.55, 0.77),
                        noise: Double = 0.15, rateHz: Double = 100, jitter: Double = 0,
                        seed: UInt64 = 1) -> Recording {
        var generator = SeededGenerator(state: seed)
        let norm = (direction.0 * direction.0 + direction.1 * direction.1 + direction.2 * direction.2).squareRoot()
        let unit = (direction.0 / norm, direction.1 / norm, direction.2 / norm)
        var recording = Recording(timestamps: [], x: [], y: [], z: [])
        var time = 0.0
        while time < seconds {
            let phase = 2 * Double.pi * stepHz * time
            let along = 9.80665 + amplitude * sin(phase) + 0.3 * amplitude * sin(2 * phase + 0.7)
            recording.timestamps.append(startTime + time)
            recording.x.append(along * unit.0 + generator.gaussian(standardDeviation: noise))
            recording.y.append(along * unit.1 + generator.gaussian(standardDeviation: noise))
            recording.z.append(along * unit.2 + generator.gaussian(standardDeviation: noise))
            let interval = 1 / rateHz
            time += interval * (1 + Double.random(in: -jitter...jitter, using: &generator))
        }
        return recording
    }

    /// 100 Hz samples of gravity along a fixed direction plus `magnitude(t)` (m/s², t in seconds from
    /// the start) along it, and sensor noise: for walks built from pulses at chosen times.
    static func recording(seconds: Double, seed: UInt64 = 7, magnitude: (Double) -> Double) -> Recording {
        var generator = SeededGenerator(state: seed)
        let direction = (0.31, -0.55, 0.77)
        let norm = (direction.0 * direction.0 + direction.1 * direction.1 + direction.2 * direction.2).squareRoot()
        var recording = Recording(timestamps: [], x: [], y: [], z: [])
        for sample in 0..<Int(seconds * 100) {
            let time = Double(sample) / 100
            let along = 9.80665 + magnitude(time)
            recording.timestamps.append(startTime + time)
            recording.x.append(along * direction.0 / norm + generator.gaussian(standardDeviation: 0.15))
            recording.y.append(along * direction.1 / norm + generator.gaussian(standardDeviation: 0.15))
            recording.z.append(along * direction.2 / norm + generator.gaussian(standardDeviation: 0.15))
        }
        return recording
    }

    /// A Gaussian pulse of unit height, `offset` seconds from its centre.
    static func pulse(_ offset: Double, width: Double) -> Double { exp(-(offset / width) * (offset / width)) }

    /// Phone at rest: gravity along `direction` and sensor noise only.
    static func resting(seconds: Double, direction: (Double, Double, Double), noise: Double,
                        seed: UInt64 = 2) -> Recording {
        walking(stepHz: 1, seconds: seconds, amplitude: 0, direction: direction, noise: noise, seed: seed)
    }

    static func run(_ recording: Recording, batchSize: Int, unit: AccelerationUnit = .metersPerSecondSquared,
                    session: PedometerSession = PedometerSession()) throws -> SessionRun {
        var session = session
        var stepTimes: [Double] = []
        var start = 0
        var lastUpdate: PedometerUpdate?
        while start < recording.count {
            let end = min(start + batchSize, recording.count)
            let update = try session.process(recording.batch(start..<end, unit: unit))
            stepTimes += update.stepTimestamps
            lastUpdate = update
            start = end
        }
        let final = session.finish()
        stepTimes += final.stepTimestamps
        return SessionRun(stepTimes: stepTimes, session: session, lastUpdate: lastUpdate ?? final)
    }
}

enum Fixtures {
    struct Trace {
        let name: String
        let position: String
        let truthSteps: Int
        let recording: Recording
    }

    struct MissingFixture: Error {
        let name: String
    }

    static let names = ["Samsung_Jamie_Hard_InHand_1", "Samsung_Dario_Hard_BackPocket_1",
                        "Samsung_Carmelo_Hard_Armband_2"]

    static func load(_ name: String) throws -> Trace {
        guard let truthURL = Bundle.module.url(forResource: "ground-truth", withExtension: "csv",
                                               subdirectory: "Fixtures"),
              let csvURL = Bundle.module.url(forResource: "accelerometer", withExtension: "csv",
                                             subdirectory: "Fixtures/\(name)") else {
            throw MissingFixture(name: name)
        }
        let truthText = try String(contentsOf: truthURL, encoding: .utf8)
        guard let row = truthText.split(whereSeparator: \.isNewline)
            .map({ $0.split(separator: ",").map(String.init) })
            .first(where: { $0.first == name }), row.count >= 7, let steps = Int(row[6]) else {
            throw MissingFixture(name: name)
        }
        let text = try String(contentsOf: csvURL, encoding: .utf8)
        var recording = Recording(timestamps: [], x: [], y: [], z: [])
        var origin: Int64?
        for line in text.split(whereSeparator: \.isNewline) {
            let fields = line.split(separator: ",")
            guard fields.count >= 5, let nanoseconds = Int64(fields[0]), let x = Double(fields[2]),
                  let y = Double(fields[3]), let z = Double(fields[4]) else { continue }
            let first = origin ?? nanoseconds
            origin = first
            recording.timestamps.append(TestSignals.startTime + Double(nanoseconds - first) / 1e9)
            recording.x.append(x)
            recording.y.append(y)
            recording.z.append(z)
        }
        return Trace(name: name, position: row[3], truthSteps: steps, recording: recording)
    }
}
