import Foundation
import HealthClient

// The server and an app token (POST /v1/authorizations, or the permission sheet): from the
// arguments, or HEALTHD_URL and HEALTHD_TOKEN.
let arguments = CommandLine.arguments.dropFirst()
let environment = ProcessInfo.processInfo.environment
guard let serverURL = URL(string: arguments.first ?? environment["HEALTHD_URL"] ?? "http://127.0.0.1:8080"),
      let token = arguments.dropFirst().first ?? environment["HEALTHD_TOKEN"] else {
    print("usage: HealthClientExample [SERVER_URL] TOKEN (or set HEALTHD_URL and HEALTHD_TOKEN)")
    exit(2)
}
let health = HealthClient(baseURL: serverURL, token: token)

// This morning's walk in three 10-minute samples, and the day around it (UTC).
let calendar = Calendar(identifier: .gregorian)
let dayStart = calendar.startOfDay(for: Date())
let dayEnd = dayStart.addingTimeInterval(24 * 3600)
let walkStart = dayStart.addingTimeInterval(8 * 3600)
let samples = (0..<3).map { part in
    HealthSample.quantity("stepCount", 1200, unit: "count",
                          start: walkStart.addingTimeInterval(Double(part) * 600),
                          end: walkStart.addingTimeInterval(Double(part + 1) * 600))
}

do {
    let saved = try await health.save(samples)
    print("saved \(saved.count) samples")
    let page = try await health.samples(type: "stepCount", start: dayStart, end: dayEnd)
    print("read \(page.samples.count) samples")
    let steps = try await health.statistics(type: "stepCount", start: dayStart, end: dayEnd, options: .cumulativeSum)
    print("steps today: \(steps.sum ?? 0)")
    let changes = try await health.changes(types: ["stepCount"])  // keep changes.anchor for the next call
    print("changes: \(changes.added.count) added, anchor \(changes.anchor.prefix(8))…")
    // A sample the server refuses (its end before its start) comes back as a problem with a code.
    try await health.save([.quantity("stepCount", 10, unit: "count", start: dayEnd, end: dayStart)])
} catch HealthClientError.problem(let status, let code, let detail, _) {
    print("refused: \(status) \(code): \(detail)")
} catch {
    // Every other HealthClientError: the server could not be reached, or answered unexpectedly.
    print("failed: \(error)")
    exit(1)
}

// Why the last `catch { ... }` above must stay: Swift 6.3.1 crashes ("Found outside of lifetime
// use?!", signal 6) compiling a top-level `do` whose `catch` clauses do not cover every error of a
// typed-throws async call, when the matched case has a payload that is not trivial (a String).
// Smallest reproduction, as main.swift, `swiftc main.swift`:
//
//     enum E: Error { case a(String), b }
//     func f() async throws(E) {}
//     do { try await f() } catch E.a(let x) { print(x) }
//
// It compiles with a final `catch { }`, inside a function, without `async`, with untyped `throws`,
// or with a trivial payload (`case a(Int)`).
