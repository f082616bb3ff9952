import Foundation
import Testing
@testable import HealthdCommandLine

@Suite struct DemoTimeZoneChoiceTests {
    private let utc = TimeZone(identifier: "Etc/UTC") ?? .gmt

    @Test func theFlagWinsOverTZ() throws {
        let choice = try DemoTimeZoneChoice.resolve(flag: "Asia/Tokyo", environmentTZ: "America/New_York", serverLocal: utc)
        #expect(choice.zone.identifier == "Asia/Tokyo" && choice.origin == .flag && choice.warning == nil && choice.hint == nil)
    }

    @Test func anUnknownFlagStops() {
        #expect(throws: DemoTimeZoneChoice.UnknownZone(identifier: "Mars/Olympus")) {
            try DemoTimeZoneChoice.resolve(flag: "Mars/Olympus", environmentTZ: nil, serverLocal: utc)
        }
    }

    @Test func tzInEachPOSIXFormNamesTheZone() throws {
        // Foundation itself reads only the first form, and takes the others as UTC without a word.
        for text in ["America/New_York", ":America/New_York", "/usr/share/zoneinfo/America/New_York"] {
            let choice = try DemoTimeZoneChoice.resolve(flag: nil, environmentTZ: text, serverLocal: utc)
            #expect(choice.zone.identifier == "America/New_York" && choice.origin == .environment, "\(text)")
            #expect(choice.description == "America/New_York, from TZ")
        }
    }

    @Test func tzNamingNoZoneFallsBackToTheServersZoneAndSaysSo() throws {
        for text in ["America/New_Yrok", "EST5EDT,M3.2.0,M11.1.0", "/etc/localtime", ":"] {
            let choice = try DemoTimeZoneChoice.resolve(flag: nil, environmentTZ: text, serverLocal: utc)
            #expect(choice.origin == .serverLocal && choice.zone.identifier == utc.identifier, "\(text)")
            #expect(choice.warning?.contains("TZ='\(text)'") == true)
        }
    }

    @Test func noFlagNoTZIsTheServersZoneWithAHintWhenThatIsUTC() throws {
        let inUTC = try DemoTimeZoneChoice.resolve(flag: nil, environmentTZ: "", serverLocal: utc)
        #expect(inUTC.origin == .serverLocal && inUTC.warning == nil)
        #expect(inUTC.hint?.contains("--time-zone") == true)
        let london = try #require(TimeZone(identifier: "Europe/London"))
        let local = try DemoTimeZoneChoice.resolve(flag: nil, environmentTZ: nil, serverLocal: london)
        #expect(local.zone.identifier == "Europe/London" && local.hint == nil)
    }
}
