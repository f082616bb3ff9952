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

@Suite struct BumpBetweenStepsTests {
    /// A slow walk as a train of heel-strike pulses (intervals alternating `short`/`long`, as the two
    /// feet differ) with a sharp knock of the phone `bumpDelay` after the start of every
    /// `bumpEvery`-th long interval from 12 s on, once the walk is confirmed.
    static func slowWalk(short: Double, long: Double, bumpDelay: Double, bumpEvery: Int,
                         seconds: Double = 40) -> (recording: Recording, steps: Int, bumps: Int) {
        var stepTimes: [Double] = []
        var bumpTimes: [Double] = []
        var time = 0.3
        while time < seconds {
            let index = stepTimes.count
            stepTimes.append(time)
            if index % 2 == 1, time > 12, (index / 2) % bumpEvery == 0 { bumpTimes.append(time + bumpDelay) }
            time += index % 2 == 0 ? short : long
        }
        let recording = TestSignals.recording(seconds: seconds) { time in
            var along = 0.0
            for step in stepTimes where abs(step - time) < 0.5 {
                along += 4 * TestSignals.pulse(time - step, width: 0.09) - 1.5 * TestSignals.pulse(time - step - 0.2, width: 0.12)
            }
            for bump in bumpTimes where abs(bump - time) < 0.3 { along += 4 * TestSignals.pulse(time - bump, width: 0.05) }
            return along
        }
        return (recording, stepTimes.count, bumpTimes.count)
    }

    static func withoutLookAhead() -> PedometerSession {
        var parameters = StepDetectionParameters.standard
        parameters.bumpRhythmTolerance = 0
        return PedometerSession(parameters: parameters)
    }

    @Test(arguments: [0.40, 0.42, 0.44])
    func aKnockBetweenTwoStepsOfASlowWalkIsNotAStep(bumpDelay: Double) throws {
        let walk = Self.slowWalk(short: 0.76, long: 0.84, bumpDelay: bumpDelay, bumpEvery: 2)
        let run = try TestSignals.run(walk.recording, batchSize: 500)
        #expect(abs(run.stepTimes.count - walk.steps) <= 1)
        // The knocks are candidates the spacing rule lets through: without the look-ahead they count.
        let unguarded = try TestSignals.run(walk.recording, batchSize: 500, session: Self.withoutLookAhead())
        #expect(unguarded.stepTimes.count >= walk.steps + walk.bumps - 2)
    }

    @Test func everyStepOfAnUnevenWalkStillCounts() throws {
        for (short, long) in [(0.76, 0.84), (0.45, 0.65), (0.5, 0.5)] {
            let walk = Self.slowWalk(short: short, long: long, bumpDelay: 0, bumpEvery: Int.max)
            let run = try TestSignals.run(walk.recording, batchSize: 500)
            #expect(abs(run.stepTimes.count - walk.steps) <= 1, "\(short)/\(long) s steps")
        }
    }
}

@Suite struct StrideLockTests {
    /// A walk of strong steps every `stride` s, each followed `weakDelay` s later by the other foot's
    /// step: barely visible (0.3 m/s²) for the first 20 s, so the walk is confirmed on strides alone,
    /// then clear (1.5 m/s²) but still weaker than the strong foot's (4 m/s²).
    static func lopsidedWalk(stride: Double, weakDelay: Double, seconds: Double = 60)
        -> (recording: Recording, visibleSteps: Int) {
        var steps: [(time: Double, amplitude: Double)] = []
        var time = 0.3
        while time < seconds {
            steps.append((time, 4))
            let weak = time + weakDelay
            if weak < seconds { steps.append((weak, weak < 20 ? 0.3 : 1.5)) }
            time += stride
        }
        let recording = TestSignals.recording(seconds: seconds) { time in
            var along = 0.0
            for step in steps where abs(step.time - time) < 0.5 {
                along += step.amplitude * (TestSignals.pulse(time - step.time, width: 0.09)
                    - 0.4 * TestSignals.pulse(time - step.time - 0.2, width: 0.12))
            }
            return along
        }
        let visible = steps.filter { $0.amplitude > 1 }.count
        return (recording, visible)
    }

    @Test(arguments: [(1.1, 0.53), (1.1, 0.47), (1.0, 0.53), (1.25, 0.6)])
    func aWalkConfirmedOnItsStridesCountsTheOtherFootOnceItShows(stride: Double, weakDelay: Double) throws {
        let walk = Self.lopsidedWalk(stride: stride, weakDelay: weakDelay * stride)
        let run = try TestSignals.run(walk.recording, batchSize: 500)
        // Every visible step but those of the few strides the check needs.
        #expect(run.stepTimes.count >= walk.visibleSteps - 5)
        #expect(run.stepTimes.count <= walk.visibleSteps)
        // Without the check the period stays a stride and the weaker foot is merged away for good.
        var parameters = StepDetectionParameters.standard
        parameters.strideLockStrides = 0
        let locked = try TestSignals.run(walk.recording, batchSize: 500, session: PedometerSession(parameters: parameters))
        #expect(locked.stepTimes.count < walk.visibleSteps * 2 / 3)
    }
}
