import Foundation
import HealthAPI
import HealthdCommandLine
import HealthStore

/// `healthd seed --user NAME --days N`: the last N full UTC days of demo data and today so far, idempotent.
func runSeed(_ options: SeedOptions) {
    let configuration = loadConfiguration(options.common)
    let store = openStore(configuration)
    defer { store.close() }
    let report: DemoSeeder.Report
    do {
        report = try DemoSeeder.seed(store: store, userName: options.user, days: options.days, today: currentDay(), now: currentMilliseconds())
    } catch {
        fail("seeding \(options.user) failed: \(error)")
    }
    for line in report.lines { say(line) }
    say("seeded user \(report.user.name) (\(report.user.id)), \(report.firstDay) to \(report.lastDay) UTC: "
        + "\(report.generated) samples, \(report.added) new")
}

/// Today as days since 1970 (UTC).
func currentDay() -> Int64 { DemoSeeder.today(nowMilliseconds: currentMilliseconds()) }

func currentMilliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
