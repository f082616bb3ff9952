import Testing
import Pedometer

/// The mechanical corrections applied to foot-sensor references before the detector is judged.
@Suite struct FootContactReferenceTests {
    /// Two feet alternating every 0.55 s (a 1.1 s stride), `count` contacts each.
    static func walk(strides count: Int) -> [[Double]] {
        [(0..<count).map { 1.0 + 1.1 * Double($0) }, (0..<count).map { 1.55 + 1.1 * Double($0) }]
    }

    @Test func cleanContactsAreKeptAsRecorded() {
        let reference = FootContactReference(contacts: Self.walk(strides: 40))
        #expect(reference.recordedSteps == 80)
        #expect(reference.correctedSteps == 80)
        #expect(reference.retriggers == [0, 0] && reference.missed == [0, 0])
    }

    @Test func aSwitchBouncingWithinHalfAStrideIsOneContact() {
        var contacts = Self.walk(strides: 40)
        // Foot 1 re-triggers 0.3 s after three of its contacts (then the stride's remaining 0.8 s follows).
        contacts[0] += [5.4, 12.0, 20.8]
        contacts[0].sort()
        let reference = FootContactReference(contacts: contacts)
        #expect(reference.recordedSteps == 83)
        #expect(reference.retriggers == [3, 0])
        #expect(reference.correctedSteps == 80)
    }

    @Test func aContactMissedWhileTheOtherFootKeptWalkingIsPutBack() {
        var contacts = Self.walk(strides: 40)
        // Foot 1's switch misses two separate contacts; foot 2 lands in rhythm throughout.
        contacts[0].removeAll { $0 == 1.0 + 1.1 * 10 || $0 == 1.0 + 1.1 * 25 }
        let reference = FootContactReference(contacts: contacts)
        #expect(reference.recordedSteps == 78)
        #expect(reference.missed == [2, 0])
        #expect(reference.correctedSteps == 80)
    }

    @Test func aPauseIsNotAMissedContact() {
        // Both feet stop for 3.3 s (three strides) half way: nobody landed, nothing is added.
        let contacts = Self.walk(strides: 40).map { foot in foot.map { $0 > 20 ? $0 + 3.3 : $0 } }
        let reference = FootContactReference(contacts: contacts)
        #expect(reference.correctedSteps == 80)
        // One foot shuffling while the other stands (irregular, fewer landings) adds nothing either.
        var shuffling = Self.walk(strides: 20)
        shuffling[0] += [24.0, 26.5, 27.1]
        shuffling[1] += [30.0]
        #expect(FootContactReference(contacts: shuffling).missed == [0, 0])
    }
}
