import Foundation
import HealthAPI
import HealthdCommandLine
import HealthStore
import Identity

/// `healthd import FILE --user NAME`: an Apple Health export (zip or XML), or healthd's own NDJSON
/// export, into the user's samples.
func runImport(_ options: ImportOptions) {
    let configuration = loadConfiguration(options.common)
    let source: any AppleHealthByteSource
    let format: ImportFormat
    do {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: options.file, isDirectory: &isDirectory), !isDirectory.boolValue else {
            fail("no such file: \(options.file)")
        }
        let first = try head(options.file)
        // The whole file (shorter than the head) and nothing but white space in it.
        guard first.count == 512 || first.contains(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) else {
            fail("\(options.file) is empty: nothing to import (an Apple Health export.zip or export.xml, or healthd's NDJSON export)")
        }
        guard let detected = ImportFormat.detect(head: first) else {
            fail("\(options.file) is neither an Apple Health export (export.zip or export.xml) nor healthd's NDJSON export")
        }
        format = detected
        source = format == .appleHealthZip ? try ZipExportSource(path: options.file) : try FileByteSource(path: options.file)
    } catch {
        fail("\(options.file): \(error)")
    }
    let store = openStore(configuration)
    defer { store.close() }
    let user: User
    do { user = try store.userCreatingIfNeeded(name: options.user) } catch { fail("cannot create user \(options.user): \(error)") }
    let meter = ProgressMeter(interactive: isatty(2) == 1)
    let report: AppleHealthImportReport
    do {
        switch format {
        case .appleHealthZip, .appleHealthXML:
            report = try AppleHealthImporter(store: store, userRowID: user.rowID).run(source) { meter.show($0) }
        case .healthdNDJSON:
            report = try HealthdExportImporter(store: store, user: user).run(source) { meter.show($0) }
        }
    } catch {
        meter.end()
        fail("import stopped: \(error). Samples saved before this point are kept; running the import again saves nothing twice.")
    }
    meter.end()
    say(summary(report, user: options.user, seconds: meter.elapsed))
}

/// The file's first bytes, enough to tell its format.
private func head(_ path: String) throws -> [UInt8] {
    guard let handle = FileHandle(forReadingAtPath: path) else { throw AppleHealthImportError.unreadable("cannot open \(path)") }
    defer { try? handle.close() }
    return [UInt8](try handle.read(upToCount: 512) ?? Data())
}

private func summary(_ report: AppleHealthImportReport, user: String, seconds: Double) -> String {
    var lines: [String] = []
    let rate = seconds > 0 ? Int(Double(report.records) / seconds) : report.records
    lines.append("imported \(report.insertedCount) new samples for \(user) from \(report.records) records "
                 + "in \(String(format: "%.1f", seconds)) s (\(rate) records/s); \(report.alreadyStoredCount) already stored, "
                 + "\(report.skippedCount) skipped, \(report.activitySummaries) activity summaries")
    let types = Set(report.inserted.keys).union(report.alreadyStored.keys).sorted()
    for type in types {
        lines.append("  \(type): \(report.inserted[type] ?? 0) new, \(report.alreadyStored[type] ?? 0) already stored")
    }
    if !report.characteristics.isEmpty {
        lines.append("  characteristics: " + report.characteristics.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            .joined(separator: ", "))
    }
    if !report.skipped.isEmpty {
        lines.append("skipped:")
        for (reason, count) in report.skipped.sorted(by: { ($1.value, $0.key) < ($0.value, $1.key) }) {
            lines.append("  \(count) × \(reason)")
        }
    }
    if let restored = report.settingsRestored {
        lines.append("settings: " + (restored.isEmpty ? "as in the backup already" : "restored " + restored.joined(separator: "; ")))
    }
    if report.removedDoctype { lines.append("note: the export's DOCTYPE was ignored") }
    if report.droppedControlCharacters > 0 {
        lines.append("note: \(report.droppedControlCharacters) control characters invalid in XML were removed")
    }
    return lines.joined(separator: "\n")
}

/// Progress on standard error: a redrawn bar on a terminal, a plain line every few seconds otherwise.
final class ProgressMeter {
    let interactive: Bool
    private let started = Date()
    private var lastShown = Date.distantPast
    private var drewBar = false

    init(interactive: Bool) { self.interactive = interactive }

    var elapsed: Double { Date().timeIntervalSince(started) }

    func show(_ progress: AppleHealthImportProgress) {
        let now = Date()
        guard now.timeIntervalSince(lastShown) >= (interactive ? 0.2 : 5) else { return }
        lastShown = now
        let seconds = max(elapsed, 0.001)
        let rate = Double(progress.records) / seconds
        let megabytes = Double(progress.bytesRead) / 1_048_576
        var text = String(format: "%.0f MB, %d records, %.0f records/s", megabytes, progress.records, rate)
        if let total = progress.totalBytes, total > 0 {
            let fraction = min(1, Double(progress.bytesRead) / Double(total))
            let remaining = fraction > 0 ? seconds * (1 - fraction) / fraction : 0
            text = String(format: "%3.0f%% ", fraction * 100) + text + String(format: ", ETA %.0f s", remaining)
            if interactive {
                let width = 30
                let filled = Int(fraction * Double(width))
                text = "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] " + text
            }
        }
        if interactive {
            FileHandle.standardError.write(Data(("\r\u{1B}[K" + text).utf8))
            drewBar = true
        } else {
            FileHandle.standardError.write(Data(("import: " + text + "\n").utf8))
        }
    }

    func end() {
        if drewBar { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }
}

/// `healthd export --user NAME [--output FILE]`: the person's backup, their settings line then every
/// sample as NDJSON, oldest first.
func runExport(_ options: ExportOptions) {
    let configuration = loadConfiguration(options.common)
    let store = openStore(configuration)
    defer { store.close() }
    let found: User?
    do { found = try store.user(idOrName: options.user) } catch { fail("cannot read users: \(error)") }
    guard let user = found else { fail("no user '\(options.user)'") }
    let output: FileHandle
    if let path = options.output {
        guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
            fail("cannot write \(path)")
        }
        output = handle
    } else {
        output = FileHandle.standardOutput
    }
    var count = -1  // the settings line is not a sample
    do {
        try PersonBackup(user: user).forEachPage(from: store) { bytes in
            try output.write(contentsOf: bytes)
            count += bytes.reduce(0) { $1 == 0x0A ? $0 + 1 : $0 }
            return true
        }
        if options.output != nil { try output.synchronize(); try output.close() }
    } catch {
        fail("export stopped: \(error)")
    }
    if let path = options.output { say("exported \(count) samples of \(user.name) and their settings to \(path)") }
}

/// `healthd invite NAME`: a new invitation code for the person (made if missing), as the admin's
/// `POST /v1/users` answers it.
func runInvite(_ options: InviteOptions) {
    let configuration = loadConfiguration(options.common)
    let store = openStore(configuration)
    defer { store.close() }
    // A new account's name follows the rules POST /v1/users keeps; an existing one is invited again as it is.
    let existing: User?
    do { existing = try store.user(named: options.user) } catch { fail("cannot read users: \(error)") }
    if existing == nil, let problem = UserName.problem(options.user) { fail("the name \(problem)") }
    let user: User
    do { user = try store.userCreatingIfNeeded(name: options.user) } catch { fail("cannot create user \(options.user): \(error)") }
    let invitation: Invitations.Issued
    do { invitation = try Invitations.issue(for: user, in: HealthData(store)) } catch { fail("cannot make an invitation: \(error)") }
    say("invitation for \(user.name) (user \(user.id)), valid until \(invitation.expires):")
    say(invitation.code)
}

/// `healthd users [--json]`: the users as the admin's `GET /v1/users` lists them. Like `invite`, it
/// takes no data-directory lock: SQLite's WAL lets it read beside a running server.
func runUsers(_ options: UsersOptions) {
    let configuration = loadConfiguration(options.common)
    let store = openStore(configuration)
    defer { store.close() }
    let users: [UserListing]
    do { users = try HealthData(store).users() } catch { fail("cannot read users: \(error)") }
    if options.json {
        FileHandle.standardOutput.write(Data(UserListJSON.bytes(users) + [0x0A]))
    } else {
        for line in UserListText.lines(users) { say(line) }
    }
}
