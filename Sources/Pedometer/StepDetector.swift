import Foundation

/// Streaming step detector over the acceleration magnitude.
///
/// Chain: linear resampling onto a fixed grid → magnitude (orientation-free) →
/// minus a running gravity estimate → low-pass → peaks whose prominence exceeds
/// an adaptive threshold → minimum step spacing (adapted to the step period) →
/// bout confirmation (several regular candidates before any of them counts).
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

    private let gravityAlpha: Double
    private let amplitudeAlpha: Double
    private let gridStep: Double
    private static let periodAlpha = 0.3

    init(parameters: StepDetectionParameters) {
        self.parameters = parameters
        let step = 1 / parameters.sampleRateHz
        gridStep = step
        gravityAlpha = step / (parameters.gravityTimeConstantSeconds + step)
        amplitudeAlpha = step / (parameters.amplitudeTimeConstantSeconds + step)
        lowPass = .lowPass(cutoffHz: parameters.lowPassCutoffHz, sampleRateHz: parameters.sampleRateHz)
        pendingTimes.reserveCapacity(parameters.stepsToConfirmBout)
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
        if hasLastCandidate { accept(time: lastCandidateTime, steps: &steps) }
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
            accept(time: lastCandidateTime, steps: &steps)
            endBout()
        }
    }

    private mutating func endBout() {
        hasLastCandidate = false
        boutActive = false
        hasAcceptedStep = false
        irregularIntervals = 0
        stepPeriod = 0
        pendingTimes.removeAll(keepingCapacity: true)
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
                if value > lastCandidateValue {
                    lastCandidateTime = time
                    lastCandidateValue = value
                }
                return
            }
            accept(time: lastCandidateTime, steps: &steps)
        }
        hasLastCandidate = true
        lastCandidateTime = time
        lastCandidateValue = value
    }

    /// A settled candidate: counted at once inside a bout, otherwise pending confirmation.
    private mutating func accept(time: Double, steps: inout [Double]) {
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
        }
        hasAcceptedStep = true
        lastAcceptedTime = time
        if boutActive {
            irregularIntervals = regular ? 0 : irregularIntervals + 1
            if irregularIntervals < parameters.irregularIntervalsToEndBout {
                steps.append(time)
                return
            }
            // The rhythm is gone (handling, shaking): walking must be confirmed afresh.
            boutActive = false
            irregularIntervals = 0
            stepPeriod = 0
            pendingTimes.removeAll(keepingCapacity: true)
        }
        pendingTimes.append(time)
        if pendingTimes.count >= parameters.stepsToConfirmBout {
            if pendingAreRegular() {
                steps.append(contentsOf: pendingTimes)
                pendingTimes.removeAll(keepingCapacity: true)
                boutActive = true
            } else {
                pendingTimes.removeFirst()
            }
        }
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
        if hasLastCandidate { accept(time: lastCandidateTime, steps: &steps) }
        endBout()
    }
}
