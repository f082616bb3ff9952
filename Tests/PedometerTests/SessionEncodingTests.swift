import Foundation
import Testing
@testable import Pedometer

@Suite struct SessionEncodingTests {
    static func run(_ session: inout PedometerSession, _ recording: Recording, from start: Int, batch: Int = 500) throws -> Int {
        var steps = 0
        var start = start
        while start < recording.count {
            steps += try session.process(recording.batch(start..<min(start + batch, recording.count))).steps
            start += batch
        }
        return steps + session.finish().steps
    }

    @Test func roundTripIsExactAndContinuesIdentically() throws {
        let trace = try Fixtures.load("Samsung_Dario_Hard_BackPocket_1")
        var session = PedometerSession(heightCm: 165)
        var reference = PedometerSession(heightCm: 165)
        var stepTimes: [Double] = []
        var referenceTimes: [Double] = []
        var start = 0
        while start < trace.recording.count {
            let batch = trace.recording.batch(start..<min(start + 333, trace.recording.count))
            stepTimes += try session.process(batch).stepTimestamps
            referenceTimes += try reference.process(batch).stepTimestamps
            // What the server does after every batch: store, then restore for the next one.
            let stored = session.encoded()
            let restored = try PedometerSession(stored: stored)
            #expect(restored == session)
            #expect(restored.encoded() == stored)
            session = restored
            start += 333
        }
        #expect(stepTimes == referenceTimes)
        #expect(stepTimes.count > 100)
        #expect(session.encoded().count < 1_024)
    }

    @Test func statesStoredAsJSONBeforeStillRestoreAndMoveToTheCompactForm() throws {
        guard let url = Bundle.module.url(forResource: "legacy-session-state", withExtension: "json", subdirectory: "Fixtures") else {
            throw Fixtures.MissingFixture(name: "legacy-session-state.json")
        }
        let legacy = [UInt8](try Data(contentsOf: url))
        var session = try PedometerSession(stored: legacy)
        #expect(session.totalSteps == 48)
        #expect(session.strideModel.heightCm == 182)
        // Migrated: the next save is compact, and restores to the same session.
        let compact = session.encoded()
        #expect(compact.starts(with: PedometerSession.magic))
        #expect(try PedometerSession(stored: compact) == session)
        // It continues where it left off: the same total as an uninterrupted run of that detector.
        let trace = try Fixtures.load("Samsung_Carmelo_Hard_Armband_2")
        var uninterrupted = PedometerSession(heightCm: 182, parameters: session.parameters)
        let total = try Self.run(&uninterrupted, trace.recording, from: 0)
        let continued = try Self.run(&session, trace.recording, from: 6_000)
        #expect(session.totalSteps == total)
        #expect(continued == total - 48)
    }

    @Test func compactStatesOfTheEarlierVersionStillRestoreAndContinue() throws {
        // It continues like a fresh session of this build over the whole trace, give or take the
        // walk-start candidates version 1 did not keep (none are pending in the middle of a walk).
        let session = try Self.restoreEarlierVersion(1)
        #expect(session.strideModel.heightCm == 182)
        #expect(session.parameters.bumpRhythmTolerance == 0)
    }

    /// Restores `session-state-v<version>.bin` (the same 48-step session), checks it stores back in
    /// the current format, and runs it over the rest of its trace like an uninterrupted session with
    /// the parameters it restored with.
    static func restoreEarlierVersion(_ version: UInt8) throws -> PedometerSession {
        let name = "session-state-v\(version)"
        guard let url = Bundle.module.url(forResource: name, withExtension: "bin", subdirectory: "Fixtures") else {
            throw Fixtures.MissingFixture(name: name + ".bin")
        }
        let stored = [UInt8](try Data(contentsOf: url))
        #expect(stored[2] == version)
        var session = try PedometerSession(stored: stored)
        let restored = session
        #expect(session.totalSteps == 48)
        let current = session.encoded()
        #expect(current[2] == PedometerSession.formatVersion)
        #expect(try PedometerSession(stored: current) == session)
        let trace = try Fixtures.load("Samsung_Carmelo_Hard_Armband_2")
        var uninterrupted = PedometerSession(heightCm: 182, parameters: session.parameters)
        let total = try Self.run(&uninterrupted, trace.recording, from: 0)
        _ = try Self.run(&session, trace.recording, from: 6_000)
        #expect(session.totalSteps == total)
        return restored
    }

    @Test func compactStatesOfVersions2To4RestoreWithoutTheChecksTheyLackedAndContinue() throws {
        // They ran without the later checks, so they go on without them, with the parameters they stored.
        let version2 = try Self.restoreEarlierVersion(2).parameters
        #expect(version2.bumpRhythmTolerance == 0)
        #expect(version2.strideLockStrides == 0)
        #expect(version2.relativeProminence == 1.0)
        #expect(version2.lowPassCutoffHz == 4.0)
        let version3 = try Self.restoreEarlierVersion(3).parameters
        #expect(version3.bumpRhythmTolerance == 0.15)
        #expect(version3.longestStepPeriodSeconds == 0.9)
        #expect(version3.strideLockStrides == 0)
        #expect(version3.relativeProminence == 1.0)
        #expect(version3.strideRhythmTolerance == 0)
        let version4 = try Self.restoreEarlierVersion(4).parameters
        #expect(version4.strideLockStrides == 3)
        #expect(version4.relativeProminence == 1.2)
        #expect(version4.strideRhythmTolerance == 0)
        #expect(PedometerSession().parameters.strideRhythmTolerance == 0.15)
    }

    @Test func damagedStatesAreErrorsNotCrashes() throws {
        let trace = try Fixtures.load("Samsung_Jamie_Hard_InHand_1")
        var session = PedometerSession()
        _ = try session.process(trace.recording.batch(0..<2_000))
        let stored = session.encoded()
        #expect(throws: SessionStateError.unrecognized) { try PedometerSession(stored: []) }
        #expect(throws: SessionStateError.unrecognized) { try PedometerSession(stored: [1, 2, 3]) }
        var future = stored
        future[2] = 99
        #expect(throws: SessionStateError.unsupportedVersion(99)) { try PedometerSession(stored: future) }
        #expect(throws: SessionStateError.self) { try PedometerSession(stored: Array("{\"detector\":1}".utf8)) }
        // Every truncation, and a byte flipped at every position, is an error or a valid session: never a trap.
        for length in 0..<stored.count {
            #expect(throws: SessionStateError.self) { try PedometerSession(stored: Array(stored[0..<length])) }
        }
        for position in 3..<stored.count {
            var damaged = stored
            damaged[position] ^= 0xFF
            if let restored = try? PedometerSession(stored: damaged) {
                var copy = restored
                _ = try? copy.process(trace.recording.batch(2_000..<2_500))
            }
        }
        #expect(throws: SessionStateError.self) { try PedometerSession(stored: stored + [0]) }
    }
}
