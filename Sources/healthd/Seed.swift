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
        let zone = demoTimeZone(options.timeZone).zone
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

/// The demo person's zone: `--time-zone`, else TZ, else the server's local zone (/etc/localtime);
/// says so on standard error when TZ names no zone or the person lands in UTC without asking.
func demoTimeZone(_ identifier: String?) -> DemoTimeZoneChoice {
    let choice: DemoTimeZoneChoice
    do {
        choice = try DemoTimeZoneChoice.resolve(flag: identifier, environmentTZ: ProcessInfo.processInfo.environment["TZ"],
                                                serverLocal: TimeZone.current)
    } catch {
        fail(error.description)
    }
    for note in [choice.warning, choice.hint].compactMap({ $0 }) {
        FileHandle.standardError.write(Data("healthd: note: \(note)\n".utf8))
    }
    return choice
}
