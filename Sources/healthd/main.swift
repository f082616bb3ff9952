import Foundation
import HealthAPI
import HealthdCommandLine

// The healthd executable: parses the command line and hands over to the command.
// Errors a person can fix are one clear line on standard error and exit status 1 (2 for usage).

/// Writes a line to standard output at once (print() is block-buffered when stdout is a pipe, and
/// scripts wait for the "listening on" line).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("healthd: \(message)\n".utf8))
    exit(status)
}

// Everything healthd creates (the database, its journal files, the admin token, backups written with
// --output) is its owner's alone.
umask(DataDirectory.umaskBits)

let command: HealthdCommand
do {
    command = try CommandLineParser.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    fail(error.description, status: 2)
}

switch command {
case .help(let topic):
    say(HelpText.text(for: topic))
case .usage:
    FileHandle.standardError.write(Data((HelpText.overview + "\n").utf8))
    exit(2)
case .version:
    say("healthd \(HealthdVersion.string)")
case .serve(let options):
    runServe(options)
case .seed(let options):
    runSeed(options)
case .importFile(let options):
    runImport(options)
case .export(let options):
    runExport(options)
case .invite(let options):
    runInvite(options)
case .users(let options):
    runUsers(options)
}
