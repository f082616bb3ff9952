/// Tunable constants of the step detector. They are physically motivated (human
/// step frequency 1-3.5 Hz, gait regularity), not fitted per carry position, and
/// stored with the session so a restored session behaves exactly as before.
public struct StepDetectionParameters: Sendable, Codable, Equatable {
    /// Fixed rate the uneven input is resampled to; 50 Hz is well above the 3 Hz band of interest.
    public var sampleRateHz: Double = 50
    /// Time constant of the running gravity (mean magnitude) estimate that is subtracted.
    public var gravityTimeConstantSeconds: Double = 1.0
    /// Low-pass corner: keeps the step fundamental (up to 3.5 Hz), drops impact ringing and jitter.
    public var lowPassCutoffHz: Double = 3.0
    /// Time constant of the running RMS that scales the adaptive peak threshold.
    public var amplitudeTimeConstantSeconds: Double = 2.0
    /// A peak must exceed this fraction of the running RMS of the filtered signal.
    public var relativePeakThreshold: Double = 0.6
    /// Absolute floor for a peak (m/s²): below it the phone is still or barely moving.
    public var minimumPeakAmplitude: Double = 0.35
    /// The signal must fall below -fraction × RMS after a peak before the next one (hysteresis).
    public var hysteresisFraction: Double = 0.1
    /// 3.5 Hz: the fastest human step rate counted.
    public var minimumStepIntervalSeconds: Double = 0.28
    /// Longer pauses end a walking bout.
    public var maximumStepIntervalSeconds: Double = 2.0
    /// Candidate steps needed, regularly spaced, before a bout counts (then all of them count).
    public var stepsToConfirmBout: Int = 4
    /// Largest allowed ratio between the longest and shortest interval of a confirming run.
    public var maximumIntervalRatio: Double = 2.2
    /// A gap between samples longer than this restarts the filters instead of interpolating across it.
    public var maximumSampleGapSeconds: Double = 1.0

    public init() {}

    public static let standard = StepDetectionParameters()
}
