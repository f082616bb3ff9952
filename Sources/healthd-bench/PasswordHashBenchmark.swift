import Foundation
import Identity

/// `healthd-bench password-hash [--runs N]`: one Argon2id hash at the configured parameters (what
/// a sign-in costs), the median of N, beside OWASP's minimum parameters measured in the same run.
/// Wall time and the thread's CPU time: on a shared machine the CPU time is the hash's own cost.
enum PasswordHashBenchmark {
    static func run(_ arguments: [String]) -> Int32 {
        var runs = 9
        if let index = arguments.firstIndex(of: "--runs"), index + 1 < arguments.count, let value = Int(arguments[index + 1]), value > 0 {
            runs = value
        }
        func median(_ parameters: Argon2Parameters) -> (wall: Double, cpu: Double)? {
            var wall: [Double] = [], cpu: [Double] = []
            for run in 0 ..< runs {
                let start = DispatchTime.now().uptimeNanoseconds, startCPU = threadCPUMilliseconds()
                guard (try? PasswordHashing.hash("correct horse battery \(run)", parameters: parameters)) != nil else { return nil }
                wall.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
                cpu.append(threadCPUMilliseconds() - startCPU)
            }
            return (wall.sorted()[runs / 2], cpu.sorted()[runs / 2])
        }
        guard let current = median(.current), let floor = median(.owaspMinimum) else {
            print("password-hash: libargon2 failed")
            return 1
        }
        let cores = ProcessInfo.processInfo.activeProcessorCount
        print("password-hash: Argon2id (libargon2), median of \(runs), \(cores) cores, load \(loadAverage())")
        for (label, parameters, time) in [("configured ", Argon2Parameters.current, current), ("OWASP floor", .owaspMinimum, floor)] {
            print("  \(label) \(parameters): " + String(format: "%.1f ms per hash (CPU %.1f ms)", time.wall, time.cpu))
        }
        return 0
    }

    private static func threadCPUMilliseconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) * 1e3 + Double(time.tv_nsec) / 1e6
    }

    private static func loadAverage() -> String {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
    }
}
