import Foundation
import Pedometer

/// `healthd-bench pedometer-accuracy [--traces DIR] [--ground-truth CSV] [--set name=value ...] [--quick]`
///
/// Runs the step detector over the Oxford step-counter traces in 5 s batches and
/// prints per-trace, per-position and overall step-count errors, a leave-one-user-out
/// check of the tuned parameters, and the throughput of the detector.
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
            traces = try loadTraces(directory: tracesDirectory, groundTruthPath: truthPath)
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
            printReferenceCheck(traces: traces, parameters: parameters)
            printLeaveOneUserOut(traces: traces, base: parameters)
            printThroughput(traces: traces, parameters: parameters)
        }
        return 0
    }

    static func usage(_ problem: String) -> Int32 {
        print("pedometer-accuracy: \(problem)")
        print("usage: healthd-bench pedometer-accuracy [--traces DIR] [--ground-truth CSV] [--set name=value] [--quick]")
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

    static func meanAbsoluteError(_ traces: [Trace], parameters: StepDetectionParameters) -> (mean: Double, worst: Double) {
        var sum = 0.0
        var worst = 0.0
        for trace in traces {
            let error = abs(relativeError(detected: countSteps(trace, parameters: parameters), truth: trace.truth))
            sum += error
            worst = max(worst, error)
        }
        return (sum / Double(max(traces.count, 1)), worst)
    }

    static func percent(_ value: Double) -> String { String(format: "%6.2f%%", value * 100) }

    static func printPerTrace(traces: [Trace], parameters: StepDetectionParameters) {
        print("Per trace (5 s batches):")
        print("  trace                                     detected  truth    error")
        var byPosition: [String: [Double]] = [:]
        var all: [(name: String, error: Double)] = []
        for trace in traces {
            let detected = countSteps(trace, parameters: parameters)
            let error = relativeError(detected: detected, truth: trace.truth)
            byPosition[trace.position, default: []].append(abs(error))
            all.append((trace.name, abs(error)))
            let name = trace.name.padding(toLength: 40, withPad: " ", startingAt: 0)
            print("  \(name) \(String(format: "%8d %6d", detected, trace.truth)) \(percent(error))")
        }
        print("Per position (mean / worst absolute error):")
        for (position, errors) in byPosition.sorted(by: { $0.key < $1.key }) {
            let mean = errors.reduce(0, +) / Double(errors.count)
            let name = position.padding(toLength: 12, withPad: " ", startingAt: 0)
            print("  \(name) n=\(String(format: "%2d", errors.count))  \(percent(mean)) / \(percent(errors.max() ?? 0))")
        }
        let mean = all.map(\.error).reduce(0, +) / Double(all.count)
        let sortedErrors = all.map(\.error).sorted()
        let median = sortedErrors[sortedErrors.count / 2]
        if let worst = all.max(by: { $0.error < $1.error }) {
            print("Overall: mean absolute error \(percent(mean)), median \(percent(median)), worst \(percent(worst.error)) (\(worst.name))")
        }
    }

    // MARK: Reference check

    /// Contacts of one foot that follow that foot's previous contact by less than half its
    /// median contact interval (half a stride): a foot cannot land twice that fast while
    /// walking, so these are the foot sensor re-triggering, and the file's count includes them.
    static func footRetriggers(_ contacts: [Double]) -> Int {
        guard contacts.count > 2 else { return 0 }
        let intervals = zip(contacts.dropFirst(), contacts).map { $0 - $1 }
        let median = intervals.sorted()[intervals.count / 2]
        return intervals.filter { $0 < 0.5 * median }.count
    }

    /// Diagnostic only (the targets are measured against the file's counts): how far the
    /// detector is from each reference once the foot sensors' re-triggers are taken out.
    static func printReferenceCheck(traces: [Trace], parameters: StepDetectionParameters) {
        let withFeet = traces.filter { !$0.footContacts.isEmpty }
        guard !withFeet.isEmpty else { return }
        print("Reference check (foot contacts < half a stride after the same foot's previous one are re-triggers):")
        var correctedErrors: [Double] = []
        var worstName = ""
        for trace in withFeet {
            let retriggers = trace.footContacts.map(footRetriggers).reduce(0, +)
            let detected = countSteps(trace, parameters: parameters)
            let corrected = trace.truth - retriggers
            let correctedError = relativeError(detected: detected, truth: max(corrected, 1))
            if abs(correctedError) > (correctedErrors.max() ?? -1) { worstName = trace.name }
            correctedErrors.append(abs(correctedError))
            guard retriggers >= 3 else { continue }
            let feet = trace.footContacts.map { String($0.count) }.joined(separator: "/")
            let name = trace.name.padding(toLength: 40, withPad: " ", startingAt: 0)
            print("  \(name) file \(trace.truth), contacts per foot \(feet), re-triggers \(retriggers) → \(corrected); detected \(detected): \(percent(relativeError(detected: detected, truth: trace.truth))) vs file, \(percent(correctedError)) vs corrected")
        }
        let mean = correctedErrors.reduce(0, +) / Double(correctedErrors.count)
        print("  against corrected counts (all \(withFeet.count) traces): mean \(percent(mean)), worst \(percent(correctedErrors.max() ?? 0)) (\(worstName))")
    }

    // MARK: Leave one user out

    /// Candidate values for the two parameters that most affect the count; everything
    /// else stays physically fixed (step frequency limits, bout rules).
    static let prominenceCandidates = [0.8, 1.0, 1.2]
    /// Corners below ~3 Hz would cut running cadences, so they are not candidates.
    static let cutoffCandidates = [3.0, 3.5, 4.0]

    static func printLeaveOneUserOut(traces: [Trace], base: StepDetectionParameters) {
        let users = Array(Set(traces.map(\.user))).sorted()
        guard users.count > 1 else { return }
        print("Leave one user out (tune relativeProminence × lowPassCutoffHz on the others, test on the user):")
        var heldOutErrors: [Double] = []
        for user in users {
            let training = traces.filter { $0.user != user }
            let testing = traces.filter { $0.user == user }
            var best = base
            var bestScore = Double.infinity
            for prominence in prominenceCandidates {
                for cutoff in cutoffCandidates {
                    var candidate = base
                    candidate.relativeProminence = prominence
                    candidate.lowPassCutoffHz = cutoff
                    let score = meanAbsoluteError(training, parameters: candidate).mean
                    if score < bestScore {
                        bestScore = score
                        best = candidate
                    }
                }
            }
            let tested = meanAbsoluteError(testing, parameters: best)
            let asShipped = meanAbsoluteError(testing, parameters: base)
            for trace in testing {
                heldOutErrors.append(abs(relativeError(detected: countSteps(trace, parameters: best), truth: trace.truth)))
            }
            let name = user.padding(toLength: 8, withPad: " ", startingAt: 0)
            print("  held out \(name) (n=\(String(format: "%2d", testing.count))): tuned prominence \(best.relativeProminence), cutoff \(best.lowPassCutoffHz) Hz; train \(percent(bestScore)), held-out mean \(percent(tested.mean)) worst \(percent(tested.worst)); shipped parameters on this user \(percent(asShipped.mean))")
        }
        let mean = heldOutErrors.reduce(0, +) / Double(heldOutErrors.count)
        print("  held-out overall: mean \(percent(mean)), worst \(percent(heldOutErrors.max() ?? 0))")
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
        default: return nil
        }
        return updated
    }

    // MARK: Loading

    struct LoadError: Error, CustomStringConvertible {
        let description: String
    }

    static func loadTraces(directory: String, groundTruthPath: String) throws -> [Trace] {
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
            let columns = parseAccelerometerCSV(data)
            let footContacts = FileManager.default.contents(atPath: directory + "/" + fields[0] + "/stepcounter.csv")
                .map { parseFootContacts($0, originNanoseconds: columns.originNanoseconds) } ?? []
            // Position labels are spelled inconsistently in the data set (ArmBand, Backpocket).
            let position = ["InHand", "FrontPocket", "BackPocket", "NeckPouch", "Armband", "Purse", "SwingingArm"]
                .first { $0.lowercased() == fields[3].lowercased() } ?? fields[3]
            traces.append(Trace(name: fields[0], user: fields[1], position: position, truth: truth,
                                timestamps: columns.timestamps, x: columns.x, y: columns.y, z: columns.z,
                                footContacts: footContacts))
        }
        return traces
    }

    /// `timestamp_ns,accuracy,x,y,z` → absolute seconds (shifted to 2026 as the API would send)
    /// and m/s². Rows with non-increasing timestamps or missing fields are skipped.
    static func parseAccelerometerCSV(_ data: Data)
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
            let time = epochOffset + Double(nanoseconds - origin) / 1e9
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
    static func parseFootContacts(_ data: Data, originNanoseconds: Int64) -> [[Double]] {
        var contacts: [[Double]] = [[], []]
        var previous: [Int]?
        for line in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline) {
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard fields.count >= 3, let nanoseconds = Int64(fields[0]),
                  let foot1 = Int(fields[1]), let foot2 = Int(fields[2]) else { continue }
            let states = [foot1, foot2]
            if let previous {
                for foot in 0..<2 where previous[foot] == 0 && states[foot] == 1 {
                    contacts[foot].append(Double(nanoseconds - originNanoseconds) / 1e9)
                }
            }
            previous = states
        }
        return contacts
    }
}
