import Foundation
import HealthStore
import Identity

/// `healthd-bench password-hash [--runs N] [--sign-ins N]`: one Argon2id hash at the configured
/// parameters (what a sign-in costs), the median of N, beside OWASP's minimum parameters measured
/// in the same run; then N sign-ins over HTTP (`POST /v1/session` to an in-process server, one
/// after another on one connection), median and p99. Wall time and CPU time: on a shared machine
/// the CPU time is the work's own cost (the hash's thread; for a sign-in, the whole process).
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
        var signIns = 30
        if let index = arguments.firstIndex(of: "--sign-ins"), index + 1 < arguments.count, let value = Int(arguments[index + 1]), value > 0 {
            signIns = value
        }
        do {
            let (wall, cpu) = try signInsOverHTTP(signIns)
            func percentile(_ values: [Double], _ p: Double) -> Double { values.sorted()[min(values.count - 1, Int(Double(values.count) * p))] }
            print("  sign-in over HTTP (POST /v1/session, \(signIns) in a row): "
                  + String(format: "median %.1f ms, p99 %.1f ms (CPU median %.1f ms, p99 %.1f ms)",
                           percentile(wall, 0.5), percentile(wall, 0.99), percentile(cpu, 0.5), percentile(cpu, 0.99)))
        } catch {
            print("password-hash: the sign-ins failed: \(error)")
            return 1
        }
        return 0
    }

    /// `count` sign-ins of one person, each timed from sending the request to reading the 204:
    /// wall time, and the process's CPU time (the server's work and this client's, which is small).
    static func signInsOverHTTP(_ count: Int) throws -> (wall: [Double], cpu: [Double]) {
        let server = try InProcessServer(name: "sign-in")
        defer { server.stop() }
        let people = HealthData(server.store).people
        let user = try server.store.createUser(name: "bench")
        try people.setPassword(userRowID: user.rowID, hash: try PasswordHashing.hash("correct horse battery staple").phc)
        let client = try BenchHTTPClient(port: server.port)
        let body = Array(#"{"name":"bench","password":"correct horse battery staple"}"#.utf8)
        var wall: [Double] = [], cpu: [Double] = []
        for _ in 0 ..< count {
            let start = DispatchTime.now().uptimeNanoseconds, startCPU = processCPUMilliseconds()
            let (status, answer) = try client.request("POST", "/v1/session", token: nil, body: body)
            guard status == 204 else { throw BenchError("sign-in answered \(status): \(String(decoding: answer, as: UTF8.self))") }
            wall.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            cpu.append(processCPUMilliseconds() - startCPU)
        }
        return (wall, cpu)
    }

    private static func processCPUMilliseconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e3 + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e3
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
