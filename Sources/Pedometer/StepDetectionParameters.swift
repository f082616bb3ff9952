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
    public var relativeProminence: Double = 1.0
    /// Absolute floor of that rise and fall (m/s²): below it the phone is still or barely moving.
    public var minimumProminence: Double = 0.35
    /// 3.5 Hz: the fastest human step rate counted.
    public var minimumStepIntervalSeconds: Double = 0.28
    /// Within a bout, peaks closer than this fraction of the current step period are
    /// parts of one step (heel strike and push-off), not two steps.
    public var minimumIntervalFractionOfPeriod: Double = 0.5
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

    public static let standard = StepDetectionParameters()
}
