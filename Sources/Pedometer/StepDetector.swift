import Foundation

/// Streaming step detector over the acceleration magnitude.
///
/// Chain: linear resampling onto a fixed grid → magnitude (orientation-free) →
/// minus a running gravity estimate → low-pass → one candidate per positive lobe
/// (hysteresis on the way down) above an adaptive threshold → minimum step
/// interval → bout confirmation (several regular candidates before any counts).
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

    // Lobe tracking.
    var inLobe = false
    var lobeMaximum: Double = 0
    var lobeMaximumTime: Double = 0

    // Candidate and bout tracking.
    var hasLastCandidate = false
    var lastCandidateTime: Double = 0
    var lastCandidateValue: Double = 0
    /// Candidates of a bout not yet confirmed; at most `stepsToConfirmBout` entries.
    var pendingTimes: [Double] = []
    var boutActive = false

    private let gravityAlpha: Double
    private let amplitudeAlpha: Double
    private let gridStep: Double

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
            if hasPrevious { restartAfterGap() }
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

    /// After a gap the interpolated signal would be fiction: drop unconfirmed steps and filter history.
    private mutating func restartAfterGap() {
        filtersStarted = false
        inLobe = false
        hasLastCandidate = false
        pendingTimes.removeAll(keepingCapacity: true)
        boutActive = false
    }

    @inline(__always)
    private mutating func processGridSample(time: Double, magnitude: Double, steps: inout [Double]) {
        if !filtersStarted {
            filtersStarted = true
            gravity = magnitude
            lowPass.settle(at: 0)
        }
        gravity += gravityAlpha * (magnitude - gravity)
        let filtered = lowPass.filter(magnitude - gravity)
        meanSquare += amplitudeAlpha * (filtered * filtered - meanSquare)

        if filtered > 0 {
            if !inLobe {
                inLobe = true
                lobeMaximum = filtered
                lobeMaximumTime = time
            } else if filtered > lobeMaximum {
                lobeMaximum = filtered
                lobeMaximumTime = time
            }
        } else if inLobe && filtered < -parameters.hysteresisFraction * meanSquare.squareRoot() {
            inLobe = false
            considerCandidate(time: lobeMaximumTime, value: lobeMaximum, steps: &steps)
        }

        if hasLastCandidate && time - lastCandidateTime > parameters.maximumStepIntervalSeconds {
            // Pause: the bout ends; unconfirmed candidates were not walking.
            hasLastCandidate = false
            boutActive = false
            pendingTimes.removeAll(keepingCapacity: true)
        }
    }

    private mutating func considerCandidate(time: Double, value: Double, steps: inout [Double]) {
        let threshold = max(parameters.minimumPeakAmplitude, parameters.relativePeakThreshold * signalRMS)
        guard value >= threshold else { return }
        if hasLastCandidate && time - lastCandidateTime < parameters.minimumStepIntervalSeconds {
            // Too close to be another step: keep the stronger one if it is still revocable.
            if value > lastCandidateValue, !pendingTimes.isEmpty {
                pendingTimes[pendingTimes.count - 1] = time
                lastCandidateTime = time
                lastCandidateValue = value
            }
            return
        }
        hasLastCandidate = true
        lastCandidateTime = time
        lastCandidateValue = value
        if boutActive {
            steps.append(time)
            return
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

    private func pendingAreRegular() -> Bool {
        var shortest = Double.greatestFiniteMagnitude
        var longest = 0.0
        for index in 1..<pendingTimes.count {
            let interval = pendingTimes[index] - pendingTimes[index - 1]
            shortest = min(shortest, interval)
            longest = max(longest, interval)
        }
        return longest <= parameters.maximumStepIntervalSeconds
            && longest <= parameters.maximumIntervalRatio * shortest
    }

    /// Session end: a lobe still open at the last sample is judged as if the signal had come down.
    mutating func finish(steps: inout [Double]) {
        if inLobe {
            inLobe = false
            considerCandidate(time: lobeMaximumTime, value: lobeMaximum, steps: &steps)
        }
        pendingTimes.removeAll(keepingCapacity: true)
        boutActive = false
        hasLastCandidate = false
    }
}
