import Foundation
import Testing
import Pedometer

@Suite struct MetricsTests {
    @Test func strideModelScalesWithHeightAndCadence() {
        let model = StrideModel(heightCm: 180)
        #expect(abs(model.stepLengthMeters(cadence: 1.8) - 1.80 * 0.416) < 1e-9)
        #expect(model.stepLengthMeters(cadence: 2.8) > model.stepLengthMeters(cadence: 1.8))
        #expect(StrideModel(heightCm: nil).heightCm == StrideModel.defaultHeightCm)
        #expect(StrideModel(heightCm: .nan).heightCm == StrideModel.defaultHeightCm)
        #expect(StrideModel(heightCm: 5).heightCm == StrideModel.defaultHeightCm)
    }

    @Test func distanceAndPaceFollowTheStrideModel() throws {
        let recording = TestSignals.walking(stepHz: 1.8, seconds: 60)
        let run = try TestSignals.run(recording, batchSize: 500, session: PedometerSession(heightCm: 175))
        let steps = Double(run.session.totalSteps)
        let expectedStep = StrideModel(heightCm: 175).stepLengthMeters(cadence: 1.8)
        #expect(abs(run.session.totalDistanceMeters / steps - expectedStep) < 0.02)
        let pace = try #require(run.lastUpdate.paceSecondsPerMeter)
        #expect(abs(pace - 1 / (1.8 * expectedStep)) < 0.03)
    }

    @Test func updatesCarryPerBatchAndTotalCounts() throws {
        let recording = TestSignals.walking(stepHz: 1.8, seconds: 30)
        var session = PedometerSession()
        var sum = 0
        var distance = 0.0
        var start = 0
        while start < recording.count {
            let end = min(start + 500, recording.count)
            let update = try session.process(recording.batch(start..<end))
            sum += update.steps
            distance += update.distanceMeters
            #expect(update.totalSteps == sum)
            start = end
        }
        let final = session.finish()
        sum += final.steps
        distance += final.distanceMeters
        #expect(final.totalSteps == sum)
        #expect(abs(final.totalDistanceMeters - distance) < 1e-9)
    }
}
