import Foundation
import HealthStore
import SQLiteStore

/// A real `healthd serve` child process on a free port with its own data directory.
final class ServerProcess {
    /// The admin token every benchmark server starts with.
    static let adminToken = "hda_bench_admin_token_not_used_for_samples_0123456789"
    let process = Process()
    let port: Int
    let logPath: String

    /// Starts `healthd serve --port 0` and waits for its "listening on" line.
    /// `extraArguments` go after the defaults (e.g. `--database postgres://…`).
    init(executable: String, dataDirectory: String, extraArguments: [String] = []) throws {
        try? FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        logPath = dataDirectory + "/healthd.log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        guard let log = FileHandle(forWritingAtPath: logPath) else { throw BenchError("cannot write \(logPath)") }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["serve", "--port", "0", "--data-dir", dataDirectory] + extraArguments
        var environment = ProcessInfo.processInfo.environment
        environment["HEALTHD_ADMIN_TOKEN"] = Self.adminToken
        process.environment = environment
        process.standardOutput = log
        process.standardError = log
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while true {
            let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            if let range = text.range(of: "listening on http://127.0.0.1:") {
                let digits = text[range.upperBound...].prefix { $0.isNumber }
                if let port = Int(digits), text[range.upperBound...].dropFirst(digits.count).first == "\n" {
                    self.port = port
                    break
                }
            }
            guard process.isRunning, Date() < deadline else {
                process.terminate()
                throw BenchError("healthd did not start; its log:\n\(text)")
            }
            usleep(20_000)
        }
    }

    /// Resident and peak resident memory of the server, from /proc (KiB).
    func memory() -> (residentKiB: Int, peakKiB: Int) { processMemory(process.processIdentifier) }

    /// SIGTERM and wait: the server checkpoints and exits.
    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

/// Resident and peak resident memory of a process, from /proc (KiB).
func processMemory(_ processIdentifier: Int32) -> (residentKiB: Int, peakKiB: Int) {
    let status = (try? String(contentsOfFile: "/proc/\(processIdentifier)/status", encoding: .utf8)) ?? ""
    func field(_ name: String) -> Int {
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            return Int(line.dropFirst(name.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") ?? 0
        }
        return 0
    }
    return (field("VmRSS"), field("VmHWM"))
}

/// Creates the benchmark user and an app token for it directly in the store (before the server
/// opens it), so the samples benchmark needs no admin round trips.
func prepareUser(dataDirectory: String) throws -> (store: SQLiteHealthStore, app: AppAuthorization, token: String) {
    let store = try SQLiteHealthStore(directory: dataDirectory, readers: 1)
    let user = try store.userCreatingIfNeeded(name: "bench")
    let types: Set<String> = ["stepCount", "heartRate"]
    let (app, token) = try store.createAuthorization(user: user, app: "bench-phone", read: types, share: types)
    return (store, app, token)
}

/// CPU seconds (user + system) a process has used so far, from /proc/PID/stat. On a shared
/// machine this is steadier than wall time: it counts only the server's own work.
func processCPUSeconds(_ processIdentifier: Int32) -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/\(processIdentifier)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return 0 }
    // Fields after the command name: state is field 3, utime 14, stime 15.
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
    return (user + system) / ticks
}
