import Foundation
import Testing
@testable import Pedometer

@Suite struct BatchingTests {
    @Test func batchSizeDoesNotChangeStepsOrTimes() throws {
        let trace = try Fixtures.load("Samsung_Jamie_Hard_InHand_1")
        let reference = try TestSignals.run(trace.recording, batchSize: 10_000)
        #expect(reference.stepTimes.count > 200)
        for batchSize in [1, 7, 100] {
            let run = try TestSignals.run(trace.recording, batchSize: batchSize)
            #expect(run.stepTimes == reference.stepTimes, "batch size \(batchSize)")
            #expect(run.session.totalSteps == reference.session.totalSteps)
            #expect(run.session.totalDistanceMeters == reference.session.totalDistanceMeters)
        }
    }

    @Test func stepTimesAreIncreasingAndInsideTheRecording() throws {
        let trace = try Fixtures.load("Samsung_Dario_Hard_BackPocket_1")
        let run = try TestSignals.run(trace.recording, batchSize: 500)
        #expect(zip(run.stepTimes, run.stepTimes.dropFirst()).allSatisfy { $0 < $1 })
        #expect((run.stepTimes.first ?? 0) >= trace.recording.timestamps[0])
        #expect((run.stepTimes.last ?? .infinity) <= trace.recording.timestamps[trace.recording.count - 1])
    }

    @Test func storedStateRoundTripContinuesIdentically() throws {
        let trace = try Fixtures.load("Samsung_Carmelo_Hard_Armband_2")
        let recording = trace.recording
        let uninterrupted = try TestSignals.run(recording, batchSize: 333)

        var session = PedometerSession(heightCm: 180)
        var stepTimes: [Double] = []
        var start = 0
        let restartPoints: Set<Int> = [333 * 5, 333 * 17, 333 * 30]
        while start < recording.count {
            let end = min(start + 333, recording.count)
            stepTimes += try session.process(recording.batch(start..<end)).stepTimestamps
            if restartPoints.contains(end) {
                // What the server does after each batch: persist, then (after a restart) load.
                let restored = try PedometerSession(stored: session.encoded())
                #expect(restored == session)
                session = restored
            }
            start = end
        }
        stepTimes += session.finish().stepTimestamps
        #expect(stepTimes == uninterrupted.stepTimes)
        #expect(session.totalSteps == uninterrupted.session.totalSteps)
    }

    @Test func storedStateStaysSmall() throws {
        let trace = try Fixtures.load("Samsung_Jamie_Hard_InHand_1")
        let early = try TestSignals.run(Recording(timestamps: Array(trace.recording.timestamps[0..<2_000]),
                                                  x: Array(trace.recording.x[0..<2_000]),
                                                  y: Array(trace.recording.y[0..<2_000]),
                                                  z: Array(trace.recording.z[0..<2_000])), batchSize: 500)
        let late = try TestSignals.run(trace.recording, batchSize: 500)
        let earlySize = early.session.encoded().count
        let lateSize = late.session.encoded().count
        #expect(lateSize < 1_024)
        #expect(lateSize <= earlySize + 8 * 8)
    }

    @Test func gapRestartsTheFiltersWithoutInventingSteps() throws {
        var recording = TestSignals.walking(stepHz: 1.8, seconds: 20)
        let second = TestSignals.walking(stepHz: 1.8, seconds: 20, seed: 9)
        // Ten minutes of silence between the two walks.
        recording.timestamps += second.timestamps.map { $0 + 620 }
        recording.x += second.x
        recording.y += second.y
        recording.z += second.z
        let run = try TestSignals.run(recording, batchSize: 256)
        #expect(abs(run.stepTimes.count - 72) <= 3)
        #expect(!run.stepTimes.contains { $0 > TestSignals.startTime + 21 && $0 < TestSignals.startTime + 620 })
    }
}
