import Foundation
import Pedometer

/// `healthd-bench pedometer-accuracy [--traces DIR] [--ground-truth CSV] [--set name=value ...]
/// [--time-scale F] [--quick]`
///
/// Runs the step detector over the Oxford step-counter traces in 5 s batches and
/// prints per-trace, per-position and overall step-count errors, a leave-one-user-out
/// check of the tuned parameters (per carry position too), and the throughput of the detector.
/// `--time-scale 1.3` plays every trace 1.3 times slower (a slower walker, same gait), to see how
/// the detector holds up away from these walkers' cadences.
public enum PedometerAccuracyReport {
    struct Trace {
        let name: String
        let user: String
        let position: String
        let truth: Int
        let timestamps: [Double]
        let x: [Double]
        let y: [Double]
        let z: [Double]
        /// Contact times (s) of each foot sensor (0→1 transitions), when `stepcounter.csv` is present.
        let footContacts: [[Double]]
        /// The foot sensors' count with their faults corrected; nil without `stepcounter.csv`.
        let reference: FootContactReference?
    }

    static let batchSeconds = 5.0

    /// The data set relative to a worktree's parent, else where the team keeps it.
    static var defaultTracesDirectory: String {
        let relative = "../shared/datasets/oxford-steps/traces"
        let shared = "/work/shared/datasets/oxford-steps/traces"
        return FileManager.default.fileExists(atPath: relative) || !FileManager.default.fileExists(atPath: shared)
            ? relative : shared
    }

    public static func run(arguments: [String]) -> Int32 {
        var tracesDirectory = defaultTracesDirectory
        var groundTruthPath: String?
        var parameters = StepDetectionParameters.standard
        var quick = false
        var stepsDirectory: String?
        var timeScale = 1.0
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let value = index + 1 < arguments.count ? arguments[index + 1] : nil
            switch argument {
            case "--traces":
                guard let value else { return usage("--traces needs a directory") }
                tracesDirectory = value
                index += 1
            case "--ground-truth":
                guard let value else { return usage("--ground-truth needs a file") }
                groundTruthPath = value
                index += 1
            case "--time-scale":
                guard let value, let scale = Double(value), (0.25...4).contains(scale) else {
                    return usage("--time-scale needs a factor between 0.25 and 4")
                }
                timeScale = scale
                index += 1
            case "--quick":
                quick = true
            case "--steps-out":
                guard let value else { return usage("--steps-out needs a directory") }
                stepsDirectory = value
                index += 1
            case "--set":
                guard let value, let updated = setting(value, in: parameters) else {
                    return usage("--set needs name=value with a known parameter name")
                }
                parameters = updated
                index += 1
            default:
                return usage("unknown argument \(argument)")
            }
            index += 1
        }
        let truthPath = groundTruthPath
            ?? URL(fileURLWithPath: tracesDirectory).deletingLastPathComponent()
                .appendingPathComponent("ground-truth.csv").path

        let traces: [Trace]
        do {
            traces = try loadTraces(directory: tracesDirectory, groundTruthPath: truthPath, timeScale: timeScale)
        } catch {
            print("pedometer-accuracy: \(error)")
            return 1
        }
        guard !traces.isEmpty else {
            print("pedometer-accuracy: no traces found in \(tracesDirectory)")
            return 1
        }

        printPerTrace(traces: traces, parameters: parameters)
        if let stepsDirectory { writeStepTimes(traces: traces, parameters: parameters, directory: stepsDirectory) }
        if !quick {
            printReferenceCorrections(traces: traces)
            printLeaveOneUserOut(traces: traces, base: parameters)
            printThroughput(traces: traces, parameters: parameters)
        }
        return 0
    }

    static func usage(_ problem: String) -> Int32 {
        print("pedometer-accuracy: \(problem)")
        print("usage: healthd-bench pedometer-accuracy [--traces DIR] [--ground-truth CSV] [--set name=value] [--time-scale F] [--quick]")
        return 2
    }

    // MARK: Evaluation

    /// Writes `<trace>.txt` with one detected step time per line (seconds from the trace start),
    /// for comparing against the foot sensors.
    static func writeStepTimes(traces: [Trace], parameters: StepDetectionParameters, directory: String) {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for trace in traces {
            let times = stepTimes(trace, parameters: parameters)
            let origin = trace.timestamps.first ?? 0
            let text = times.map { String(format: "%.3f", $0 - origin) }.joined(separator: "\n")
            _ = FileManager.default.createFile(atPath: directory + "/" + trace.name + ".txt", contents: Data(text.utf8))
        }
    }

    /// Counts the steps of a trace as the server would: 5 s batches, validated, then `finish()`.
    static func countSteps(_ trace: Trace, parameters: StepDetectionParameters) -> Int {
        stepTimes(trace, parameters: parameters).count
    }

    static func stepTimes(_ trace: Trace, parameters: StepDetectionParameters) -> [Double] {
        var times: [Double] = []
        var session = PedometerSession(parameters: parameters)
        var start = 0
        while start < trace.timestamps.count {
            var end = start
            let limit = trace.timestamps[start] + batchSeconds
            while end < trace.timestamps.count && trace.timestamps[end] < limit { end += 1 }
            let batch = AccelerometerBatch(
                timestamps: Array(trace.timestamps[start..<end]), x: Array(trace.x[start..<end]),
                y: Array(trace.y[start..<end]), z: Array(trace.z[start..<end]), unit: .metersPerSecondSquared)
            do {
                times += try session.process(batch).stepTimestamps
            } catch {
                print("  \(trace.name): batch refused: \(error)")
                return times
            }
            start = end
        }
        return times + session.finish().stepTimestamps
    }

    static func relativeError(detected: Int, truth: Int) -> Double {
        Double(detected - truth) / Double(truth)
    }

    /// Which reference a figure is measured against.
    enum Reference: CaseIterable {
        /// The data set's count: every contact of either foot sensor.
        case recorded
        /// The foot sensors' re-triggers taken out and missed contacts put back
        /// (`FootContactReference`); the recorded count where a trace has no sensor file.
        case corrected

        var label: String { self == .recorded ? "recorded truth" : "corrected truth" }

        func steps(_ trace: Trace) -> Int {
            switch self {
            case .recorded: trace.truth
            case .corrected: trace.reference.map { max($0.correctedSteps, 1) } ?? trace.truth
            }
        }
    }

    static func summary(_ errors: [Double]) -> (mean: Double, worst: Double) {
        (errors.reduce(0, +) / Double(max(errors.count, 1)), errors.max() ?? 0)
    }

    static func percent(_ value: Double) -> String { String(format: "%6.2f%%", value * 100) }

    static func printPerTrace(traces: [Trace], parameters: StepDetectionParameters) {
        print("Per trace (5 s batches; error = (detected - truth) / truth):")
        print("  trace                                    detected  recorded   error  corrected   error")
        var byPosition: [String: [[Double]]] = [:]
        var all: [[Double]] = [[], []]
        var worstNames = ["", ""]
        for trace in traces {
            let detected = countSteps(trace, parameters: parameters)
            let errors = Reference.allCases.map { relativeError(detected: detected, truth: $0.steps(trace)) }
            for (index, error) in errors.enumerated() {
                byPosition[trace.position, default: [[], []]][index].append(abs(error))
                if abs(error) > (all[index].max() ?? -1) { worstNames[index] = trace.name }
                all[index].append(abs(error))
            }
            let name = trace.name.padding(toLength: 40, withPad: " ", startingAt: 0)
            print("  \(name) \(String(format: "%8d %9d", detected, trace.truth)) \(percent(errors[0])) \(String(format: "%9d", Reference.corrected.steps(trace))) \(percent(errors[1]))")
        }
        print("Per position (mean / worst absolute error; recorded truth, then corrected truth):")
        for (position, errors) in byPosition.sorted(by: { $0.key < $1.key }) {
            let name = position.padding(toLength: 12, withPad: " ", startingAt: 0)
            let figures = errors.map { summary($0) }
            print("  \(name) n=\(String(format: "%2d", errors[0].count))  \(percent(figures[0].mean)) / \(percent(figures[0].worst))    \(percent(figures[1].mean)) / \(percent(figures[1].worst))")
        }
        for (index, reference) in Reference.allCases.enumerated() {
            let figures = summary(all[index])
            let sorted = all[index].sorted()
            print("Overall, \(reference.label): mean absolute error \(percent(figures.mean)), median \(percent(sorted[sorted.count / 2])), worst \(percent(figures.worst)) (\(worstNames[index]))")
        }
    }

    // MARK: Reference corrections

    /// The foot-sensor faults taken out of each trace's reference (`FootContactReference`).
    static func printReferenceCorrections(traces: [Trace]) {
        let corrected = traces.filter { $0.reference.map { $0.correctedSteps != $0.recordedSteps } ?? false }
        print("Reference corrections (re-trigger: a foot's contact < 0.5 of its median stride after its previous one; missed: one foot's interval spans k strides while the other lands k times, regularly):")
        for trace in corrected {
            guard let reference = trace.reference else { continue }
            let name = trace.name.padding(toLength: 40, withPad: " ", startingAt: 0)
            let feet = trace.footContacts.map { String($0.count) }.joined(separator: "/")
            print("  \(name) contacts per foot \(feet) = \(reference.recordedSteps); re-triggers -\(reference.retriggers.map(String.init).joined(separator: "/")), missed +\(reference.missed.map(String.init).joined(separator: "/")) → \(reference.correctedSteps)")
        }
        let withFeet = traces.filter { $0.reference != nil }.count
        print("  \(corrected.count) of \(withFeet) traces with foot-sensor files corrected; \(traces.count - withFeet) without such files keep the recorded count")
    }

    // MARK: Leave one user out

    /// Candidate values for the two parameters that most affect the count; everything
    /// else stays physically fixed (step frequency limits, bout rules).
    static let prominenceCandidates = [0.8, 1.0, 1.2]
    /// Corners below ~3 Hz would cut running cadences, so they are not candidates.
    static let cutoffCandidates = [3.0, 3.5, 4.0]

    static func candidates(base: StepDetectionParameters) -> [StepDetectionParameters] {
        var result: [StepDetectionParameters] = []
        for prominence in prominenceCandidates {
            for cutoff in cutoffCandidates {
                var candidate = base
                candidate.relativeProminence = prominence
                candidate.lowPassCutoffHz = cutoff
                result.append(candidate)
            }
        }
        return result
    }

    static func describe(_ parameters: StepDetectionParameters) -> String {
        "prominence \(parameters.relativeProminence), cutoff \(parameters.lowPassCutoffHz) Hz"
    }

    static func printLeaveOneUserOut(traces: [Trace], base: StepDetectionParameters) {
        let users = Array(Set(traces.map(\.user))).sorted()
        guard users.count > 1 else { return }
        let grid = candidates(base: base)
        // Every candidate's count on every trace, once; the folds only select among them.
        let counts = grid.map { candidate in traces.map { countSteps($0, parameters: candidate) } }
        let shipped = traces.map { countSteps($0, parameters: base) }
        for reference in Reference.allCases {
            print("Leave one user out, \(reference.label) (tune \(grid.count) candidates on the other users, test on the held-out one):")
            func errors(_ detected: [Int], _ indices: [Int]) -> [Double] {
                indices.map { abs(relativeError(detected: detected[$0], truth: reference.steps(traces[$0]))) }
            }
            var heldOut: [(name: String, error: Double)] = []
            for user in users {
                let training = traces.indices.filter { traces[$0].user != user }
                let testing = traces.indices.filter { traces[$0].user == user }
                var best = 0
                var bestScore = Double.infinity
                for index in grid.indices {
                    let score = summary(errors(counts[index], training)).mean
                    // Ties keep the earlier (listed first) candidate, so the choice is deterministic.
                    if score < bestScore - 1e-12 {
                        bestScore = score
                        best = index
                    }
                }
                let tested = errors(counts[best], testing)
                heldOut += zip(testing, tested).map { (traces[$0].name, $1) }
                let figures = summary(tested)
                let name = user.padding(toLength: 8, withPad: " ", startingAt: 0)
                print("  held out \(name) (n=\(String(format: "%2d", testing.count))): tuned \(describe(grid[best])); train \(percent(bestScore)), held-out mean \(percent(figures.mean)) worst \(percent(figures.worst)); shipped parameters on this user \(percent(summary(errors(shipped, testing)).mean))")
            }
            let figures = summary(heldOut.map(\.error))
            let worst = heldOut.max { $0.error < $1.error }?.name ?? ""
            print("  held-out overall: mean \(percent(figures.mean)), worst \(percent(figures.worst)) (\(worst))")
            let positions = Dictionary(grouping: heldOut) { entry in
                traces.first { $0.name == entry.name }?.position ?? ""
            }
            print("  held out, per carry position (mean / worst):")
            for (position, entries) in positions.sorted(by: { $0.key < $1.key }) {
                let figures = summary(entries.map(\.error))
                let worst = entries.max { $0.error < $1.error }?.name ?? ""
                print("    \(position.padding(toLength: 12, withPad: " ", startingAt: 0)) n=\(String(format: "%2d", entries.count))  \(percent(figures.mean)) / \(percent(figures.worst))  (\(worst))")
            }
        }
    }

    // MARK: Throughput

    static func printThroughput(traces: [Trace], parameters: StepDetectionParameters) {
        // Whole traces as single large batches: the per-sample detector path plus O(n) validation.
        let limits = PedometerInputLimits(maximumSamplesPerBatch: Int.max)
        let batches = traces.map {
            AccelerometerBatch(timestamps: $0.timestamps, x: $0.x, y: $0.y, z: $0.z, unit: .metersPerSecondSquared)
        }
        let sampleCount = batches.reduce(0) { $0 + $1.timestamps.count }
        var bestRate = 0.0
        var bestWallRate = 0.0
        var checksum = 0
        for _ in 0..<3 {
            let cpuStart = threadCPUSeconds()
            let wallStart = DispatchTime.now().uptimeNanoseconds
            for batch in batches {
                var session = PedometerSession(parameters: parameters)
                if let update = try? session.process(batch, limits: limits) { checksum &+= update.totalSteps }
            }
            let cpuSeconds = threadCPUSeconds() - cpuStart
            let wallSeconds = Double(DispatchTime.now().uptimeNanoseconds - wallStart) / 1e9
            bestRate = max(bestRate, Double(sampleCount) / cpuSeconds)
            bestWallRate = max(bestWallRate, Double(sampleCount) / wallSeconds)
        }
        // CPU time of this thread: on a shared machine wall time also counts other processes.
        print(String(format: "Throughput: %.1f million accelerometer samples/s per core of CPU time (%.1f million/s wall clock; %d samples, best of 3, validation included; steps %d)",
                     bestRate / 1e6, bestWallRate / 1e6, sampleCount, checksum / 3))
    }

    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    // MARK: Parameters from the command line (for exploring, not per-file tuning)

    static func setting(_ assignment: String, in parameters: StepDetectionParameters) -> StepDetectionParameters? {
        let parts = assignment.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, let value = Double(parts[1]), value.isFinite, abs(value) < 1e9 else { return nil }
        var updated = parameters
        switch parts[0] {
        case "sampleRateHz": updated.sampleRateHz = value
        case "gravityTimeConstantSeconds": updated.gravityTimeConstantSeconds = value
        case "lowPassCutoffHz": updated.lowPassCutoffHz = value
        case "amplitudeTimeConstantSeconds": updated.amplitudeTimeConstantSeconds = value
        case "relativeProminence": updated.relativeProminence = value
        case "minimumProminence": updated.minimumProminence = value
        case "minimumStepIntervalSeconds": updated.minimumStepIntervalSeconds = value
        case "minimumIntervalFractionOfPeriod": updated.minimumIntervalFractionOfPeriod = value
        case "maximumStepIntervalSeconds": updated.maximumStepIntervalSeconds = value
        case "stepsToConfirmBout": updated.stepsToConfirmBout = Int(value)
        case "maximumIntervalRatio": updated.maximumIntervalRatio = value
        case "irregularIntervalsToEndBout": updated.irregularIntervalsToEndBout = Int(value)
        case "maximumStrideRatio": updated.maximumStrideRatio = value
        case "maximumSampleGapSeconds": updated.maximumSampleGapSeconds = value
        case "bumpRhythmTolerance": updated.bumpRhythmTolerance = value
        case "longestStepPeriodSeconds": updated.longestStepPeriodSeconds = value
        case "strideLockStrides": updated.strideLockStrides = Int(value)
        case "strideRhythmTolerance": updated.strideRhythmTolerance = value
        default: return nil
        }
        return updated
    }

    // MARK: Loading

    struct LoadError: Error, CustomStringConvertible {
        let description: String
    }

    static func loadTraces(directory: String, groundTruthPath: String, timeScale: Double = 1) throws -> [Trace] {
        guard let truthText = try? String(contentsOfFile: groundTruthPath, encoding: .utf8) else {
            throw LoadError(description: "cannot read ground truth \(groundTruthPath)")
        }
        var traces: [Trace] = []
        for line in truthText.split(whereSeparator: \.isNewline).dropFirst() {
            let fields = line.split(separator: ",").map(String.init)
            guard fields.count >= 7, let truth = Int(fields[6]), truth > 0 else { continue }
            let path = directory + "/" + fields[0] + "/accelerometer.csv"
            guard let data = FileManager.default.contents(atPath: path) else {
                throw LoadError(description: "cannot read \(path)")
            }
            let columns = parseAccelerometerCSV(data, timeScale: timeScale)
            let footContacts = FileManager.default.contents(atPath: directory + "/" + fields[0] + "/stepcounter.csv")
                .map { parseFootContacts($0, originNanoseconds: columns.originNanoseconds, timeScale: timeScale) } ?? []
            // Position labels are spelled inconsistently in the data set (ArmBand, Backpocket).
            let position = ["InHand", "FrontPocket", "BackPocket", "NeckPouch", "Armband", "Purse", "SwingingArm"]
                .first { $0.lowercased() == fields[3].lowercased() } ?? fields[3]
            traces.append(Trace(name: fields[0], user: fields[1], position: position, truth: truth,
                                timestamps: columns.timestamps, x: columns.x, y: columns.y, z: columns.z,
                                footContacts: footContacts,
                                reference: footContacts.isEmpty ? nil : FootContactReference(contacts: footContacts)))
        }
        return traces
    }

    /// `timestamp_ns,accuracy,x,y,z` → absolute seconds (shifted to 2026 as the API would send)
    /// and m/s², time stretched by `timeScale`. Rows with non-increasing timestamps or missing
    /// fields are skipped.
    static func parseAccelerometerCSV(_ data: Data, timeScale: Double = 1)
        -> (timestamps: [Double], x: [Double], y: [Double], z: [Double], originNanoseconds: Int64) {
        var timestamps: [Double] = []
        var xs: [Double] = []
        var ys: [Double] = []
        var zs: [Double] = []
        let text = String(decoding: data, as: UTF8.self)
        var firstNanoseconds: Int64?
        let epochOffset = 1_790_000_000.0
        for line in text.split(whereSeparator: \.isNewline) {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            guard fields.count >= 5, let nanoseconds = Int64(fields[0]),
                  let x = Double(fields[2]), let y = Double(fields[3]),
                  let z = Double(fields[4].trimmingCharacters(in: .whitespaces)) else { continue }
            let origin = firstNanoseconds ?? nanoseconds
            firstNanoseconds = origin
            let time = epochOffset + Double(nanoseconds - origin) / 1e9 * timeScale
            if let last = timestamps.last, time <= last { continue }
            timestamps.append(time)
            xs.append(x)
            ys.append(y)
            zs.append(z)
        }
        return (timestamps, xs, ys, zs, firstNanoseconds ?? 0)
    }

    /// `timestamp_ns,foot1,foot2` (contact states) → each foot's contact times: every 0→1
    /// transition, in seconds from the accelerometer's first sample.
    static func parseFootContacts(_ data: Data, originNanoseconds: Int64, timeScale: Double = 1) -> [[Double]] {
        var contacts: [[Double]] = [[], []]
        var previous: [Int]?
        for line in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline) {
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard fields.count >= 3, let nanoseconds = Int64(fields[0]),
                  let foot1 = Int(fields[1]), let foot2 = Int(fields[2]) else { continue }
            let states = [foot1, foot2]
            if let previous {
                for foot in 0..<2 where previous[foot] == 0 && states[foot] == 1 {
                    contacts[foot].append(Double(nanoseconds - originNanoseconds) / 1e9 * timeScale)
                }
            }
            previous = states
        }
        return contacts
    }
}
