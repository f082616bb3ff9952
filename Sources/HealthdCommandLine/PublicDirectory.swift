import Foundation

/// Finds the dashboard's folder (`Public/`: index.html and openapi.json) when no setting names one,
/// so the server works from any working directory: next to the binary in a checkout
/// (`.build/<triple>/debug/healthd` → the repository's `Public/`), in an installed
/// `PREFIX/share/healthd/Public` beside `PREFIX/bin/healthd`, then in the working directory.
public enum PublicDirectory {
    /// What was looked for where, and what was found.
    public struct Search: Equatable, Sendable {
        /// The folder holding the dashboard, or nil.
        public var found: String?
        /// Every folder tried, in order (for the warning when none fits).
        public var tried: [String]
    }

    /// A folder is the dashboard when it holds both the page and the API document.
    public static func isDashboard(_ path: String) -> Bool {
        let manager = FileManager.default
        return manager.fileExists(atPath: path + "/index.html") && manager.fileExists(atPath: path + "/openapi.json")
    }

    /// The candidates for a binary at `executablePath` (symlinks already resolved) run in `workingDirectory`:
    /// each ancestor's `Public` and `share/healthd/Public`, nearest first, then `./Public`.
    public static func candidates(executablePath: String?, workingDirectory: String) -> [String] {
        var list: [String] = []
        if let executablePath {
            var directory = URL(fileURLWithPath: executablePath).deletingLastPathComponent().standardizedFileURL
            // A checkout puts the binary four levels under its root; an install two. Six is plenty and
            // never reaches far into unrelated folders.
            for _ in 0 ..< 6 {
                list.append(directory.appendingPathComponent("Public").path)
                list.append(directory.appendingPathComponent("share/healthd/Public").path)
                let parent = directory.deletingLastPathComponent()
                if parent.path == directory.path { break }
                directory = parent
            }
        }
        list.append(URL(fileURLWithPath: workingDirectory).appendingPathComponent("Public").standardizedFileURL.path)
        var seen = Set<String>()
        return list.filter { seen.insert($0).inserted }
    }

    public static func search(executablePath: String?, workingDirectory: String,
                              isDashboard: (String) -> Bool = isDashboard) -> Search {
        let tried = candidates(executablePath: executablePath, workingDirectory: workingDirectory)
        return Search(found: tried.first(where: isDashboard), tried: tried)
    }

    /// This process's binary, symlinks resolved (`/proc/self/exe` on Linux), or nil.
    public static func currentExecutable() -> String? {
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return path }
        let argument = CommandLine.arguments.first ?? ""
        return argument.contains("/") ? URL(fileURLWithPath: argument).resolvingSymlinksInPath().path : nil
    }
}
