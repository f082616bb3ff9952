/// A reference step count from two foot-mounted contact sensors, with the sensors' own faults
/// taken out by two mechanical rules. Used to judge the detector (the accuracy report); it never
/// runs on a phone's data.
///
/// Foot sensors (force switches under each shoe) fail in two recognisable ways, and both break a
/// physical law of walking that no parameter choice could explain:
/// 1. **Re-triggers.** A switch bounces and reports a second contact of the same foot shortly after
///    the first. A foot cannot land twice within half a stride, so a contact less than
///    `retriggerFractionOfStride` of that foot's median contact interval after its previous kept
///    contact is dropped. (In the Oxford data these come 0.18-0.45 s after a real contact and are
///    followed by the rest of the stride, 0.6-0.9 s: the two add up to one stride.)
/// 2. **Missed contacts.** A switch fails to close. Feet alternate while walking, so where one foot's
///    interval spans k ≥ 2 of its median strides (within `missedStrideTolerance` of a whole number)
///    and the other foot landed exactly k times in it, regularly, the first foot landed k − 1 times
///    unseen. Pauses (the other foot not landing k times, or irregularly) are left alone.
public struct FootContactReference: Sendable, Equatable {
    /// Contacts dropped by rule 1, per foot.
    public let retriggers: [Int]
    /// Contacts added by rule 2, per foot.
    public let missed: [Int]
    /// Steps in the file as recorded: every contact of either foot.
    public let recordedSteps: Int

    public static let retriggerFractionOfStride = 0.5
    public static let missedStrideTolerance = 0.25
    /// How far (as a fraction of the median stride) the other foot's strides may vary for rule 2.
    public static let regularStrideTolerance = 0.25

    /// The corrected step count.
    public var correctedSteps: Int { recordedSteps - retriggers.reduce(0, +) + missed.reduce(0, +) }

    /// `contacts`: each foot's contact times (seconds, increasing), as 0→1 transitions of its switch.
    public init(contacts: [[Double]]) {
        recordedSteps = contacts.reduce(0) { $0 + $1.count }
        let kept = contacts.map(Self.withoutRetriggers)
        retriggers = zip(contacts, kept).map { $0.count - $1.count }
        missed = kept.indices.map { foot in
            kept.count == 2 ? Self.missedContacts(of: kept[foot], other: kept[1 - foot]) : 0
        }
    }

    static func medianInterval(_ times: [Double]) -> Double? {
        guard times.count > 2 else { return nil }
        let intervals = zip(times.dropFirst(), times).map { $0 - $1 }.sorted()
        return intervals[intervals.count / 2]
    }

    static func withoutRetriggers(_ times: [Double]) -> [Double] {
        guard let stride = medianInterval(times), let first = times.first else { return times }
        var kept = [first]
        for time in times.dropFirst() where time - (kept.last ?? first) >= retriggerFractionOfStride * stride {
            kept.append(time)
        }
        return kept
    }

    static func missedContacts(of foot: [Double], other: [Double]) -> Int {
        guard let stride = medianInterval(foot), let otherStride = medianInterval(other) else { return 0 }
        var added = 0
        for (start, end) in zip(foot, foot.dropFirst()) {
            let strides = (end - start) / stride
            let whole = strides.rounded()
            guard whole >= 2, abs(strides - whole) <= missedStrideTolerance else { continue }
            let landings = other.filter { $0 > start && $0 < end }
            guard landings.count == Int(whole) else { continue }
            let regular = zip(landings.dropFirst(), landings).allSatisfy {
                abs(($0 - $1) / otherStride - 1) <= regularStrideTolerance
            }
            if regular { added += landings.count - 1 }
        }
        return added
    }
}
