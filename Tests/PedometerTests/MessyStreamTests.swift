import Foundation
import Testing
import Pedometer

/// Real traces with injected sensor-stream defects (repeated timestamps, backwards jitter, gaps,
/// rate changes): every batch is accepted, and the step count moves by at most one step per defect.
@Suite struct MessyStreamTests {
    static let batchSize = 500
    static let defectsPerTrace = 6

    static func steps(_ recording: Recording) throws -> Int {
        try TestSignals.run(recording, batchSize: batchSize).stepTimes.count
    }

    /// Positions spread over the trace (away from its ends), reproducibly shuffled.
    static func positions(_ count: Int, in recording: Recording, seed: UInt64) -> [Int] {
        var generator = SeededGenerator(state: seed)
        let margin = recording.count / 10
        let span = (recording.count - 2 * margin) / count
        return (0..<count).map { margin + $0 * span + Int.random(in: 0..<span / 2, using: &generator) }
    }

    static func removing(_ range: Range<Int>, from recording: Recording) -> Recording {
        var copy = recording
        copy.timestamps.removeSubrange(range)
        copy.x.removeSubrange(range)
        copy.y.removeSubrange(range)
        copy.z.removeSubrange(range)
        return copy
    }

    @Test(arguments: Fixtures.names)
    func repeatedTimestampsKeepTheFirstSample(name: String) throws {
        let trace = try Fixtures.load(name)
        let clean = try Self.steps(trace.recording)
        var messy = trace.recording
        // From the back, so earlier positions stay valid: a second reading stamped like the one before.
        for index in Self.positions(Self.defectsPerTrace, in: messy, seed: 1).reversed() {
            messy.timestamps.insert(messy.timestamps[index], at: index + 1)
            messy.x.insert(messy.x[index] + 3, at: index + 1)
            messy.y.insert(messy.y[index] - 2, at: index + 1)
            messy.z.insert(messy.z[index] + 1, at: index + 1)
        }
        // And one repeated across a batch boundary: the next batch starts with the last one's time.
        let boundary = 3 * Self.batchSize
        messy.timestamps.insert(messy.timestamps[boundary - 1], at: boundary)
        messy.x.insert(messy.x[boundary - 1], at: boundary)
        messy.y.insert(messy.y[boundary - 1], at: boundary)
        messy.z.insert(messy.z[boundary - 1], at: boundary)
        let run = try TestSignals.run(messy, batchSize: Self.batchSize)
        #expect(abs(run.stepTimes.count - clean) <= Self.defectsPerTrace + 1, "\(name): \(run.stepTimes.count) vs \(clean)")
        #expect(zip(run.stepTimes, run.stepTimes.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test(arguments: Fixtures.names)
    func backwardsJitterIsReordered(name: String) throws {
        let trace = try Fixtures.load(name)
        let clean = try Self.steps(trace.recording)
        var messy = trace.recording
        var generator = SeededGenerator(state: 2)
        // A reading delivered a few places late: its timestamp lags the ones before it by up to ~50 ms.
        for index in Self.positions(Self.defectsPerTrace, in: messy, seed: 3) {
            let delay = Int.random(in: 1...5, using: &generator)
            for column in [\Recording.timestamps, \Recording.x, \Recording.y, \Recording.z] {
                let value = messy[keyPath: column].remove(at: index)
                messy[keyPath: column].insert(value, at: index + delay)
            }
        }
        // And jitter across a batch boundary: the next batch's first reading is stamped 20 ms
        // before the last one's (within the tolerance), so it is dropped as late.
        let boundary = 5 * Self.batchSize
        messy.timestamps[boundary] = messy.timestamps[boundary - 1] - 0.02
        let run = try TestSignals.run(messy, batchSize: Self.batchSize)
        #expect(abs(run.stepTimes.count - clean) <= Self.defectsPerTrace + 1, "\(name): \(run.stepTimes.count) vs \(clean)")
    }

    @Test(arguments: Fixtures.names)
    func gapsRestartTheDetectorWithoutCountingAcrossThem(name: String) throws {
        let trace = try Fixtures.load(name)
        let cleanRun = try TestSignals.run(trace.recording, batchSize: Self.batchSize)
        var messy = trace.recording
        var generator = SeededGenerator(state: 4)
        var removedSteps = 0
        var gaps: [ClosedRange<Double>] = []
        for index in Self.positions(Self.defectsPerTrace, in: messy, seed: 5).reversed() {
            // 1.5 to 4 s of missing data (a phone busy, a Bluetooth hiccup).
            let seconds = Double.random(in: 1.5...4, using: &generator)
            let start = messy.timestamps[index]
            let end = messy.timestamps.firstIndex { $0 > start + seconds } ?? messy.count
            guard let last = messy.timestamps[index..<end].last else { continue }
            removedSteps += cleanRun.stepTimes.filter { (start...last).contains($0) }.count
            gaps.append(start...last)
            messy = Self.removing(index..<end, from: messy)
        }
        let run = try TestSignals.run(messy, batchSize: Self.batchSize)
        let expected = cleanRun.stepTimes.count - removedSteps
        #expect(abs(run.stepTimes.count - expected) <= Self.defectsPerTrace,
                "\(name): \(run.stepTimes.count) vs \(expected) (clean \(cleanRun.stepTimes.count), \(removedSteps) in gaps)")
        // No step is placed inside a gap.
        #expect(!run.stepTimes.contains { time in gaps.contains { $0.contains(time) && time != $0.lowerBound } })
    }

    @Test(arguments: Fixtures.names)
    func rateChangesWithinAndBetweenBatches(name: String) throws {
        let trace = try Fixtures.load(name)
        let clean = try Self.steps(trace.recording)
        var messy = trace.recording
        var generator = SeededGenerator(state: 6)
        // Stretches of 5-15 s where the phone delivers every 2nd, 3rd or 4th reading (down to 25 Hz).
        for index in Self.positions(Self.defectsPerTrace, in: messy, seed: 7).reversed() {
            let keepEvery = Int.random(in: 2...4, using: &generator)
            let seconds = Double.random(in: 5...15, using: &generator)
            let end = messy.timestamps.firstIndex { $0 > messy.timestamps[index] + seconds } ?? messy.count
            let dropped = (index..<end).filter { ($0 - index) % keepEvery != 0 }
            for position in dropped.reversed() { messy = Self.removing(position..<position + 1, from: messy) }
        }
        let run = try TestSignals.run(messy, batchSize: Self.batchSize)
        #expect(abs(run.stepTimes.count - clean) <= Self.defectsPerTrace, "\(name): \(run.stepTimes.count) vs \(clean)")
    }

    @Test func repairsAreReportedAndTheSessionOnlyMovesForward() throws {
        let t0 = TestSignals.startTime
        var session = PedometerSession()
        let first = AccelerometerBatch(timestamps: [t0, t0 + 0.01, t0 + 0.01, t0 + 0.03, t0 + 0.02, t0 + 0.04],
                                       x: [0, 1, 2, 3, 4, 5], y: Array(repeating: 0, count: 6),
                                       z: Array(repeating: 9.8, count: 6), unit: .metersPerSecondSquared)
        let update = try session.process(first)
        #expect(update.repairs == { var r = StreamRepairs(); r.duplicates = 1; r.reordered = 1; return r }())
        #expect(update.processedSpan == t0...(t0 + 0.04))
        #expect(session.lastAccelerometerTimestamp == t0 + 0.04)
        // Entirely at or before the previous end (within the tolerance): all late, nothing moves back.
        let late = AccelerometerBatch(timestamps: [t0 + 0.0, t0 + 0.04], x: [0, 0], y: [0, 0], z: [9.8, 9.8],
                                      unit: .metersPerSecondSquared)
        let lateUpdate = try session.process(late)
        #expect(lateUpdate.repairs.late == 2)
        #expect(lateUpdate.processedSpan == nil)
        #expect(session.lastAccelerometerTimestamp == t0 + 0.04)
    }

    @Test func keepingTheFirstDoesNotDependOnBatchBoundaries() throws {
        let trace = try Fixtures.load("Samsung_Jamie_Hard_InHand_1")
        var messy = trace.recording
        for index in stride(from: 200, to: messy.count - 1, by: 97).reversed() {
            messy.timestamps.insert(messy.timestamps[index], at: index + 1)
            messy.x.insert(0, at: index + 1)
            messy.y.insert(0, at: index + 1)
            messy.z.insert(0, at: index + 1)
        }
        let whole = try TestSignals.run(messy, batchSize: messy.count)
        for size in [1, 97, 500] {
            #expect(try TestSignals.run(messy, batchSize: size).stepTimes == whole.stepTimes, "batch size \(size)")
        }
    }
}
