import Foundation

/// Streaming step detector over the acceleration magnitude.
///
/// Chain: linear resampling onto a fixed grid → magnitude (orientation-free) →
/// minus a running gravity estimate → low-pass → peaks whose prominence exceeds
/// an adaptive threshold → minimum step spacing (adapted to the step period) →
/// bout confirmation (several regular candidates before any of them counts) → in a walk, a
/// candidate between two on-rhythm ones is dropped as a bump (on-rhythm by the step period, or by
/// the stride where steps alternate long and short), and a period that keeps hiding a candidate in
/// its middle is halved (a stride taken for a step).
/// Everything is processed sample by sample, so batch boundaries do not matter.
struct StepDetector: Sendable, Codable, Equatable {
    let parameters: StepDetectionParameters

    // Resampler: grid time = gridOrigin + gridIndex / sampleRate (no accumulated rounding).
    var gridOrigin: Double = 0
    var gridIndex: Int = 0
    var hasPrevious = false
    var previousTime: Double = 0
    var previousX: Double = 0
    var previousY: Double = 0
    var previousZ: Double = 0

    // Filters.
    var filtersStarted = false
    var gravity: Double = 0
    var lowPass: Biquad
    var meanSquare: Double = 0

    // Peak/trough search: the running extreme of the current half-cycle.
    var searchingPeak = false
    var extremeValue: Double = 0
    var extremeTime: Double = 0

    // Candidate and bout tracking.
    var hasLastCandidate = false
    var lastCandidateTime: Double = 0
    var lastCandidateValue: Double = 0
    /// Candidates of a bout not yet confirmed; at most `stepsToConfirmBout` entries.
    var pendingTimes: [Double] = []
    var boutActive = false
    var hasAcceptedStep = false
    var lastAcceptedTime: Double = 0
    /// Running estimate of the step period (s) in the current bout; 0 when unknown.
    var stepPeriod: Double = 0
    /// Consecutive steps in an active bout whose interval broke the rhythm.
    var irregularIntervals = 0
    /// Candidates that slid out of `pendingTimes` unconfirmed since the last counted step or pause
    /// (oldest first, at most `preludeCapacity`): the first steps of a walk whose confirmation came
    /// later. Back-filled when a bout is confirmed, if they keep its rhythm.
    var preludeTimes: [Double] = []
    /// Since the last counted step, the spacing rule merged away a candidate near the middle of a
    /// stride-long step period.
    var midStrideCandidateMerged = false
    /// Consecutive such intervals (see `StepDetectionParameters.strideLockStrides`).
    var midStrideMerges = 0
    /// The counted step before `lastAcceptedTime` (the same foot as the next step) and the height
    /// of the last counted step's peak, for the stride look-ahead.
    var hasPreviousAccepted = false
    var previousAcceptedTime: Double = 0
    var lastAcceptedValue: Double = 0
    /// Running estimate of the stride (two steps, s) in the current walk; 0 when unknown. Stays
    /// regular where the step intervals alternate (a pocket on one hip sees the two feet differently).
    var stridePeriod: Double = 0

    private let gravityAlpha: Double
    private let amplitudeAlpha: Double
    private let gridStep: Double
    private static let periodAlpha = 0.3
    /// Enough for the candidates (steps and stray bumps) of a walk's first ~10 s.
    static let preludeCapacity = 24

    /// The fields of the Foundation JSON form that sessions were stored in before the compact
    /// format (`SessionEncoding.swift`); that form is only read now. State added since starts
    /// empty when such a session is restored, as after a pause.
    enum CodingKeys: String, CodingKey {
        case parameters, gridOrigin, gridIndex, hasPrevious, previousTime, previousX, previousY, previousZ
        case filtersStarted, gravity, lowPass, meanSquare, searchingPeak, extremeValue, extremeTime
        case hasLastCandidate, lastCandidateTime, lastCandidateValue, pendingTimes, boutActive
        case hasAcceptedStep, lastAcceptedTime, stepPeriod, irregularIntervals
        case gravityAlpha, amplitudeAlpha, gridStep
    }

    init(parameters: StepDetectionParameters) {
        self.parameters = parameters
        let step = 1 / parameters.sampleRateHz
        gridStep = step
        gravityAlpha = step / (parameters.gravityTimeConstantSeconds + step)
        amplitudeAlpha = step / (parameters.amplitudeTimeConstantSeconds + step)
        lowPass = .lowPass(cutoffHz: parameters.lowPassCutoffHz, sampleRateHz: parameters.sampleRateHz)
        pendingTimes.reserveCapacity(parameters.stepsToConfirmBout)
        preludeTimes.reserveCapacity(Self.preludeCapacity)
    }

    /// RMS (m/s²) of the band-limited acceleration magnitude over the last few seconds.
    var signalRMS: Double { meanSquare.squareRoot() }

    /// Feeds samples already in m/s² (after multiplying by `scale`), appending counted step times.
    mutating func ingest(timestamps: UnsafeBufferPointer<Double>, x: UnsafeBufferPointer<Double>,
                         y: UnsafeBufferPointer<Double>, z: UnsafeBufferPointer<Double>,
                         scale: Double, steps: inout [Double]) {
        for index in 0..<timestamps.count {
            ingest(time: timestamps[index], x: x[index] * scale, y: y[index] * scale, z: z[index] * scale,
                   steps: &steps)
        }
    }

    @inline(__always)
    mutating func ingest(time: Double, x: Double, y: Double, z: Double, steps: inout [Double]) {
        if !hasPrevious || time - previousTime > parameters.maximumSampleGapSeconds {
            if hasPrevious { restartAfterGap(steps: &steps) }
            gridOrigin = time
            gridIndex = 0
        } else {
            let span = time - previousTime
            while true {
                let gridTime = gridOrigin + Double(gridIndex) * gridStep
                if gridTime > time { break }
                let fraction = (gridTime - previousTime) / span
                let gx = previousX + fraction * (x - previousX)
                let gy = previousY + fraction * (y - previousY)
                let gz = previousZ + fraction * (z - previousZ)
                processGridSample(time: gridTime, magnitude: (gx * gx + gy * gy + gz * gz).squareRoot(),
                                  steps: &steps)
                gridIndex += 1
            }
        }
        if gridIndex == 0 {
            // First sample of a stream: it lies exactly on the grid origin.
            processGridSample(time: time, magnitude: (x * x + y * y + z * z).squareRoot(), steps: &steps)
            gridIndex = 1
        }
        hasPrevious = true
        previousTime = time
        previousX = x
        previousY = y
        previousZ = z
    }

    /// After a gap the interpolated signal would be fiction: settle the held step,
    /// drop unconfirmed ones and the filter history.
    private mutating func restartAfterGap(steps: inout [Double]) {
        if hasLastCandidate { accept(time: lastCandidateTime, value: lastCandidateValue, steps: &steps) }
        filtersStarted = false
        searchingPeak = false
        extremeValue = 0
        endBout()
    }

    @inline(__always)
    private mutating func processGridSample(time: Double, magnitude: Double, steps: inout [Double]) {
        if !filtersStarted {
            filtersStarted = true
            gravity = magnitude
            lowPass.settle(at: 0)
            searchingPeak = false
            extremeValue = 0
        }
        gravity += gravityAlpha * (magnitude - gravity)
        let filtered = lowPass.filter(magnitude - gravity)
        meanSquare += amplitudeAlpha * (filtered * filtered - meanSquare)

        // Peak/trough alternation with an adaptive prominence: a peak counts once the
        // signal has dropped `delta` below it, so slow (stride-rate) swings of the
        // baseline cannot merge two steps into one lobe or hide a step above zero.
        let delta = max(parameters.minimumProminence, parameters.relativeProminence * meanSquare.squareRoot())
        if searchingPeak {
            if filtered > extremeValue {
                extremeValue = filtered
                extremeTime = time
            } else if filtered < extremeValue - delta {
                considerCandidate(time: extremeTime, value: extremeValue, steps: &steps)
                searchingPeak = false
                extremeValue = filtered
            }
        } else if filtered < extremeValue {
            extremeValue = filtered
        } else if filtered > extremeValue + delta {
            searchingPeak = true
            extremeValue = filtered
            extremeTime = time
        }

        if hasLastCandidate && time - lastCandidateTime > parameters.maximumStepIntervalSeconds {
            // Pause: the held candidate is settled, then the bout ends and unconfirmed
            // candidates (too few to be walking) are dropped.
            accept(time: lastCandidateTime, value: lastCandidateValue, steps: &steps)
            endBout()
        }
    }

    private mutating func endBout() {
        hasLastCandidate = false
        boutActive = false
        hasAcceptedStep = false
        irregularIntervals = 0
        stepPeriod = 0
        stridePeriod = 0
        hasPreviousAccepted = false
        midStrideCandidateMerged = false
        midStrideMerges = 0
        pendingTimes.removeAll(keepingCapacity: true)
        preludeTimes.removeAll(keepingCapacity: true)
    }

    /// The newest candidate is held back until the next one is far enough away to
    /// be a separate step; until then a stronger, closer peak replaces it. The
    /// minimum spacing adapts to the walker's step period (a second bump of the
    /// same step comes much sooner than the next step).
    private mutating func considerCandidate(time: Double, value: Double, steps: inout [Double]) {
        if hasLastCandidate {
            let minimumGap = max(parameters.minimumStepIntervalSeconds,
                                 parameters.minimumIntervalFractionOfPeriod * stepPeriod)
            if time - lastCandidateTime < minimumGap {
                if boutActive && stepPeriod > parameters.longestStepPeriodSeconds
                    && abs((time - lastCandidateTime) / stepPeriod - 0.5) <= Self.midStrideTolerance {
                    midStrideCandidateMerged = true
                }
                if value > lastCandidateValue {
                    lastCandidateTime = time
                    lastCandidateValue = value
                }
                return
            }
            if !isBumpBetweenSteps(next: time, nextValue: value) {
                accept(time: lastCandidateTime, value: lastCandidateValue, steps: &steps)
            }
        }
        hasLastCandidate = true
        lastCandidateTime = time
        lastCandidateValue = value
    }

    /// In a walk, the candidate after the held one lands on the rhythm (about one period after the
    /// last step), so the held one, at least the minimum spacing away from both, is off it: a bump
    /// of the phone between two steps (a slow walk with the phone in hand has one near the middle
    /// of many steps), not a step.
    ///
    /// Where the steps alternate long and short (a phone in a pocket sways with one hip, so one
    /// foot's step shows later than the other's), the next step lands a stride after the step
    /// before last, not a step period after the last one; a second peak of a step in the long
    /// interval then passes the spacing rule and the period check alike. So the stride is checked
    /// too: the next candidate lands on it, the held one is off it, and the held peak is lower than
    /// half the weaker of the two steps around it (a sway of the pocket, not a heel strike: a real
    /// step of the weaker foot keeps the stride, and a step rhythm built on a missed step must not
    /// drop comparable peaks).
    @inline(__always)
    private func isBumpBetweenSteps(next: Double, nextValue: Double) -> Bool {
        guard boutActive, hasAcceptedStep, stepPeriod > 0,
              stepPeriod <= parameters.longestStepPeriodSeconds else { return false }
        if abs((next - lastAcceptedTime) / stepPeriod - 1) <= parameters.bumpRhythmTolerance { return true }
        let tolerance = parameters.strideRhythmTolerance
        // The stride must agree with the step period (two steps), or one of them is off (a stride
        // lock just broken, a missed step), and the weaker foot's real steps would look off-stride.
        guard tolerance > 0, hasPreviousAccepted, abs(stridePeriod - 2 * stepPeriod) <= 2 * tolerance * stridePeriod,
              lastCandidateValue < Self.bumpHeightFraction * min(lastAcceptedValue, nextValue) else { return false }
        return abs((next - previousAcceptedTime) / stridePeriod - 1) <= tolerance
            && abs((lastCandidateTime - previousAcceptedTime) / stridePeriod - 1) > tolerance
    }

    /// A bump off the stride is lower than this fraction of the lower of the two steps' peaks.
    static let bumpHeightFraction = 0.5

    /// A settled candidate: counted at once inside a bout, otherwise pending confirmation.
    private mutating func accept(time: Double, value: Double, steps: inout [Double]) {
        var regular = true
        if hasAcceptedStep {
            let interval = time - lastAcceptedTime
            if stepPeriod > 0 {
                let ratio = interval / stepPeriod
                // A gait keeps its rhythm; one missed step doubles an interval.
                regular = (0.6...1.6).contains(ratio) || (1.7...2.3).contains(ratio)
            }
            if interval <= parameters.maximumStepIntervalSeconds {
                stepPeriod = stepPeriod == 0 ? interval : stepPeriod + Self.periodAlpha * (interval - stepPeriod)
            }
            if boutActive && hasPreviousAccepted && stridePeriod > 0 {
                let stride = time - previousAcceptedTime
                if stride <= 2 * parameters.maximumStepIntervalSeconds {
                    stridePeriod += Self.periodAlpha * (stride - stridePeriod)
                }
            }
            hasPreviousAccepted = true
            previousAcceptedTime = lastAcceptedTime
        }
        lastAcceptedValue = value
        hasAcceptedStep = true
        lastAcceptedTime = time
        if boutActive {
            midStrideMerges = midStrideCandidateMerged ? midStrideMerges + 1 : 0
            midStrideCandidateMerged = false
            if parameters.strideLockStrides > 0 && midStrideMerges >= parameters.strideLockStrides {
                // Locked onto the stride: with half the period the spacing rule lets both feet through.
                stepPeriod /= 2
                stridePeriod /= 2
                midStrideMerges = 0
            }
            irregularIntervals = regular ? 0 : irregularIntervals + 1
            if irregularIntervals < parameters.irregularIntervalsToEndBout {
                steps.append(time)
                return
            }
            // The rhythm is gone (handling, shaking): walking must be confirmed afresh.
            boutActive = false
            irregularIntervals = 0
            stepPeriod = 0
            stridePeriod = 0
            pendingTimes.removeAll(keepingCapacity: true)
        }
        pendingTimes.append(time)
        if pendingTimes.count >= parameters.stepsToConfirmBout {
            if pendingAreRegular() {
                let period = (pendingTimes[pendingTimes.count - 1] - pendingTimes[0]) / Double(pendingTimes.count - 1)
                steps.append(contentsOf: Self.periodicPrelude(preludeTimes, before: pendingTimes[0], period: period))
                steps.append(contentsOf: pendingTimes)
                // The confirming run is regular (stride ratio bounded), so its mean gives the stride.
                stridePeriod = 2 * period
                pendingTimes.removeAll(keepingCapacity: true)
                preludeTimes.removeAll(keepingCapacity: true)
                boutActive = true
            } else {
                if preludeTimes.count == Self.preludeCapacity { preludeTimes.removeFirst() }
                preludeTimes.append(pendingTimes.removeFirst())
            }
        }
    }

    /// How far (fraction of the period) from the middle of a stride-long period a merged candidate
    /// may lie and still look like the other foot's step.
    static let midStrideTolerance = 0.15

    /// Largest deviation of a back-filled step's interval from the confirmed step period.
    static let preludeTolerance = 0.15

    /// The candidates (increasing times, all before `first`) that continue a walk's rhythm
    /// backwards from its first confirmed step at `first`: each one about `period` before the
    /// step after it, the closest to `period` where stray bumps compete. Stops at the first
    /// break, so handling before the walk is not counted.
    static func periodicPrelude(_ candidates: [Double], before first: Double, period: Double) -> [Double] {
        guard period > 0 else { return [] }
        var kept: [Double] = []
        var next = first
        var index = candidates.count - 1
        while index >= 0 {
            var best = -1
            var bestDeviation = preludeTolerance
            while index >= 0 {
                let deviation = abs((next - candidates[index]) / period - 1)
                if candidates[index] < next - (1 + preludeTolerance) * period { break }
                if deviation <= bestDeviation {
                    bestDeviation = deviation
                    best = index
                }
                index -= 1
            }
            guard best >= 0 else { break }
            kept.append(candidates[best])
            next = candidates[best]
            index = best - 1
        }
        return kept.reversed()
    }

    /// Walking is periodic: step intervals may alternate (the carrying side moves
    /// differently), but stride intervals (every second step) stay nearly equal.
    /// Random bumps and handling rarely pass both checks.
    private func pendingAreRegular() -> Bool {
        var shortest = Double.greatestFiniteMagnitude
        var longest = 0.0
        var shortestStride = Double.greatestFiniteMagnitude
        var longestStride = 0.0
        for index in 1..<pendingTimes.count {
            let interval = pendingTimes[index] - pendingTimes[index - 1]
            shortest = min(shortest, interval)
            longest = max(longest, interval)
            if index >= 2 {
                let stride = pendingTimes[index] - pendingTimes[index - 2]
                shortestStride = min(shortestStride, stride)
                longestStride = max(longestStride, stride)
            }
        }
        return longest <= parameters.maximumStepIntervalSeconds
            && longest <= parameters.maximumIntervalRatio * shortest
            && (pendingTimes.count < 3 || longestStride <= parameters.maximumStrideRatio * shortestStride)
    }

    /// Session end: the held candidate is settled; a peak still rising at the last
    /// sample is not a step (its fall was never seen).
    mutating func finish(steps: inout [Double]) {
        if hasLastCandidate { accept(time: lastCandidateTime, value: lastCandidateValue, steps: &steps) }
        endBout()
    }
}
