import Foundation
import Testing
@testable import Pedometer

@Suite struct WalkStartTests {
    @Test func candidatesKeepingTheRhythmBeforeConfirmationAreBackFilled() {
        // Steps every 0.6 s before the first confirmed step at 10.0, with a stray bump at 8.1.
        let prelude = [7.0, 7.6, 8.1, 8.2, 8.8, 9.4]
        #expect(StepDetector.periodicPrelude(prelude, before: 10.0, period: 0.6) == [7.0, 7.6, 8.2, 8.8, 9.4])
    }

    @Test func theBackFillStopsAtTheFirstBreakInTheRhythm() {
        // Handling before the walk: 1.9 s before the chain and irregular; none of it counts.
        let prelude = [3.0, 3.4, 4.1, 6.0, 6.6, 7.2]
        #expect(StepDetector.periodicPrelude(prelude, before: 7.8, period: 0.6) == [6.0, 6.6, 7.2])
        #expect(StepDetector.periodicPrelude([5.0, 6.9], before: 7.8, period: 0.6).isEmpty)
        #expect(StepDetector.periodicPrelude([], before: 7.8, period: 0.6).isEmpty)
        #expect(StepDetector.periodicPrelude([7.2], before: 7.8, period: 0).isEmpty)
    }

    @Test func aWalkKeepsItsFirstStepsThoughConfirmationComesLater() throws {
        // 30 s at 1.25 Hz (37-38 steps). In the first 8 s every third step is followed by a bump
        // (the phone knocked in the hand), so the first runs of candidates are irregular and the bout
        // is confirmed only after them; the steps among the bumps still count, the bumps do not.
        var recording = TestSignals.walking(stepHz: 1.25, seconds: 30, seed: 3)
        let bumps = stride(from: 0.2 + 0.33, to: 8, by: 2.4)
        for index in recording.timestamps.indices {
            let time = recording.timestamps[index] - TestSignals.startTime
            // A jolt along gravity: the magnitude jumps by 5 m/s² for 0.12 s.
            for bump in bumps where abs(time - bump) < 0.06 {
                let scale = 1 + 5 / 9.80665
                recording.x[index] *= scale
                recording.y[index] *= scale
                recording.z[index] *= scale
            }
        }
        let run = try TestSignals.run(recording, batchSize: 250)
        // Without the back-fill the first ten steps are lost (27).
        #expect(abs(run.stepTimes.count - 37) <= 1)
        #expect(run.stepTimes.first.map { $0 - TestSignals.startTime < 0.5 } == true)
    }
}
