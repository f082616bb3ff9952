import DemoData
import Foundation
import HealthAPI
import HealthdCommandLine
import HealthStore

/// `healthd seed --user NAME --days N`: the last N full local days of demo data and today so far, idempotent.
func runSeed(_ options: SeedOptions) {
    let configuration = loadConfiguration(options.common)
    let store = openStore(configuration)
    defer { store.close() }
    let report: DemoSeeder.Report
    do {
        let zone = demoTimeZone(options.timeZone)
        let now = StoreClock.nowMilliseconds()
        report = try DemoSeeder.seed(store: store, userName: options.user, days: options.days,
                                     today: DemoSeeder.today(nowMilliseconds: now, timeZone: zone), now: now, timeZone: zone)
    } catch {
        fail("seeding \(options.user) failed: \(error)")
    }
    for line in report.lines { say(line) }
    say("seeded user \(report.user.name) (\(report.user.id)), \(report.firstDay) to \(report.lastDay) \(report.timeZone.identifier): "
        + "\(report.generated) samples, \(report.added) new")
}

/// The demo person's zone: `--time-zone`, else the server's local zone (TZ, /etc/localtime).
func demoTimeZone(_ identifier: String?) -> TimeZone {
    guard let identifier else { return TimeZone.current }
    guard let zone = TimeZone(identifier: identifier) else {
        fail("--time-zone: unknown time zone '\(identifier)' (an IANA name such as America/New_York)")
    }
    return zone
}
