/// Tunable constants of the step detector. They are physically motivated (human
/// step frequency 1-3.5 Hz, gait regularity), not fitted per carry position, and
/// stored with the session so a restored session behaves exactly as before.
public struct StepDetectionParameters: Sendable, Codable, Equatable {
    /// Fixed rate the uneven input is resampled to; 50 Hz is well above the 3 Hz band of interest.
    public var sampleRateHz: Double = 50
    /// Time constant of the running gravity (mean magnitude) estimate that is subtracted.
    public var gravityTimeConstantSeconds: Double = 1.0
    /// Low-pass corner: keeps the step fundamental up to running cadences (3.5 Hz),
    /// drops impact ringing and jitter. Much lower corners let the stride (half the
    /// step rate) dominate in pockets and halve the count.
    public var lowPassCutoffHz: Double = 4.0
    /// Time constant of the running RMS that scales the adaptive peak threshold.
    public var amplitudeTimeConstantSeconds: Double = 2.0
    /// A peak counts when the signal rises and then falls by this fraction of the running RMS.
    public var relativeProminence: Double = 1.2
    /// Absolute floor of that rise and fall (m/s²): below it the phone is still or barely moving.
    public var minimumProminence: Double = 0.35
    /// 3.5 Hz: the fastest human step rate counted.
    public var minimumStepIntervalSeconds: Double = 0.28
    /// Within a bout, peaks closer than this fraction of the current step period are
    /// parts of one step (heel strike and push-off), not two steps.
    public var minimumIntervalFractionOfPeriod: Double = 0.5
    /// Within a walk, a candidate is a bump of the phone between two steps, not a step, when the
    /// candidate after it lands within this fraction of a step period of one period after the last
    /// step (the same ±15 % the walk-start back-fill allows). 0 turns the look-ahead off.
    public var bumpRhythmTolerance: Double = 0.15
    /// The same look-ahead by the stride: a low candidate is a bump, not a step, when the candidate
    /// after it lands within this fraction of a stride of one stride after the step before last,
    /// and it does not. Catches a step's second peak where steps alternate long and short (a phone
    /// in a back pocket). 0 turns it off.
    public var strideRhythmTolerance: Double = 0.15
    /// The longest step period (s) taken at face value. A longer "period" may be a stride (two
    /// steps), whose mid-point candidates are the other foot's steps: the bump look-ahead is off
    /// there, and the stride-lock check below is on.
    public var longestStepPeriodSeconds: Double = 0.9
    /// Strides in a row, each with a candidate near its middle merged away by the spacing rule,
    /// after which a step period longer than `longestStepPeriodSeconds` is taken for a stride and
    /// halved: the weaker foot's steps were being merged into the stronger foot's. 0 turns it off.
    public var strideLockStrides: Int = 3
    /// Longer pauses end a walking bout.
    public var maximumStepIntervalSeconds: Double = 2.0
    /// Candidate steps needed, regularly spaced, before a bout counts (then all of them count).
    public var stepsToConfirmBout: Int = 8
    /// Largest allowed ratio between the longest and shortest interval of a confirming run.
    public var maximumIntervalRatio: Double = 2.2
    /// Largest allowed ratio between the longest and shortest stride (two steps) of that run.
    public var maximumStrideRatio: Double = 1.3
    /// Consecutive off-rhythm intervals (not near the step period or twice it) that end a bout.
    public var irregularIntervalsToEndBout: Int = 3
    /// A gap between samples longer than this restarts the filters instead of interpolating across it.
    public var maximumSampleGapSeconds: Double = 1.0

    public init() {}

    /// Sessions stored as JSON before the bump look-ahead, the stride-lock check and the stride
    /// look-ahead existed restore with them off, as they ran.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        sampleRateHz = try container.decode(Double.self, forKey: .sampleRateHz)
        gravityTimeConstantSeconds = try container.decode(Double.self, forKey: .gravityTimeConstantSeconds)
        lowPassCutoffHz = try container.decode(Double.self, forKey: .lowPassCutoffHz)
        amplitudeTimeConstantSeconds = try container.decode(Double.self, forKey: .amplitudeTimeConstantSeconds)
        relativeProminence = try container.decode(Double.self, forKey: .relativeProminence)
        minimumProminence = try container.decode(Double.self, forKey: .minimumProminence)
        minimumStepIntervalSeconds = try container.decode(Double.self, forKey: .minimumStepIntervalSeconds)
        minimumIntervalFractionOfPeriod = try container.decode(Double.self, forKey: .minimumIntervalFractionOfPeriod)
        maximumStepIntervalSeconds = try container.decode(Double.self, forKey: .maximumStepIntervalSeconds)
        stepsToConfirmBout = try container.decode(Int.self, forKey: .stepsToConfirmBout)
        maximumIntervalRatio = try container.decode(Double.self, forKey: .maximumIntervalRatio)
        maximumStrideRatio = try container.decode(Double.self, forKey: .maximumStrideRatio)
        irregularIntervalsToEndBout = try container.decode(Int.self, forKey: .irregularIntervalsToEndBout)
        maximumSampleGapSeconds = try container.decode(Double.self, forKey: .maximumSampleGapSeconds)
        bumpRhythmTolerance = try container.decodeIfPresent(Double.self, forKey: .bumpRhythmTolerance) ?? 0
        longestStepPeriodSeconds = try container.decodeIfPresent(
            Double.self, forKey: .longestStepPeriodSeconds) ?? longestStepPeriodSeconds
        strideLockStrides = try container.decodeIfPresent(Int.self, forKey: .strideLockStrides) ?? 0
        strideRhythmTolerance = try container.decodeIfPresent(Double.self, forKey: .strideRhythmTolerance) ?? 0
    }

    public static let standard = StepDetectionParameters()
}
