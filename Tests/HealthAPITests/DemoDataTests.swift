import Foundation
import Testing
import HealthModel
import JSON
@testable import DemoData
@testable import HealthAPI
@testable import HealthStore
@testable import SQLiteStore

/// 2026-03-02 (a Monday) and the 13 days after: two full weeks.
private let firstDay: Int64 = GregorianCalendarMath.daysSinceEpoch(year: 2026, month: 3, day: 2)
private let twoWeeks = firstDay..<(firstDay + 14)

/// Generated once for the whole suite (a debug build takes a moment).
private let aliceTwoWeeks = DemoDataGenerator(userName: "alice").days(twoWeeks)

@Suite struct DemoDataGeneratorTests {
    var days: [DemoDay] { aliceTwoWeeks }

    private func all(_ day: DemoDay) -> [HealthSample] { day.phone + day.watch }

    @Test func everySampleSurvivesTheSampleCodecUnchanged() throws {
        // What an app would send: the codec's output without the server's fields, decoded again.
        for day in days {
            for sample in all(day) {
                var writer = JSONWriter()
                SampleCodec.write(StoredSample(sample: sample, source: SampleSource(app: "a", user: "u"), created: 0),
                                  into: &writer)
                guard case .object(let written) = try JSONParser.parse(writer.bytes) else {
                    Issue.record("not an object"); continue
                }
                let sent = JSONObject(written.members.filter { $0.key != "source" && $0.key != "created" })
                var reader = JSONFieldReader(sent)
                let decoded = try SampleCodec.decode(&reader, newUUID: HealthUUID.timeOrdered)
                try reader.finish()
                #expect(decoded == sample)
            }
        }
    }

    @Test func sameUserAndDayGiveTheSameSamples() {
        let again = DemoDataGenerator(userName: "alice").days(twoWeeks)
        #expect(zip(days, again).allSatisfy { $0.phone == $1.phone && $0.watch == $1.watch })
        // A day does not depend on the range it was generated in.
        #expect(DemoDataGenerator(userName: "alice").day(firstDay + 5).watch == days[5].watch)
        let bob = DemoDataGenerator(userName: "bob").day(firstDay)
        #expect(bob.watch.first?.uuid != days[0].watch.first?.uuid)
    }

    @Test func uuidsAreUniqueAcrossDaysAndApps() {
        let uuids = days.flatMap { all($0).map(\.uuid) }
        #expect(Set(uuids).count == uuids.count)
        #expect(uuids.count > 5_000)
        // Version 8 (RFC 9562 custom) with the RFC 4122 variant.
        #expect(uuids.allSatisfy { uuid in
            let text = Array(uuid.lowercasedString)
            return text[14] == "8" && "89ab".contains(text[19])
        })
    }

    @Test func samplesLieInTheirDayOrTheNightBeforeIt() {
        for day in days {
            let dayStart = day.day * GregorianCalendarMath.millisecondsPerDay
            for sample in all(day) {
                #expect(sample.start >= dayStart - 3 * 3_600_000 && sample.end <= dayStart + GregorianCalendarMath.millisecondsPerDay,
                        "\(sample.type) \(sample.start)")
            }
        }
    }

    @Test func phoneAndWatchBothCountStepsAndTheirSamplesOverlap() {
        for day in days {
            let phoneSteps = day.phone.filter { $0.type == "stepCount" }
            let watchSteps = day.watch.filter { $0.type == "stepCount" }
            let phoneTotal = phoneSteps.reduce(0) { $0 + ($1.quantity ?? 0) }
            let watchTotal = watchSteps.reduce(0) { $0 + ($1.quantity ?? 0) }
            #expect((3_000...30_000).contains(watchTotal))
            #expect(phoneTotal > 0.4 * watchTotal && phoneTotal <= 1.1 * watchTotal)
            #expect(phoneSteps.allSatisfy { $0.end - $0.start <= 10 * 60_000 && $0.end > $0.start })
            let overlapping = phoneSteps.contains { p in watchSteps.contains { $0.start < p.end && p.start < $0.end } }
            #expect(overlapping)
        }
    }

    @Test func distanceMatchesStepsWithAPlausibleStride() {
        for day in days {
            for app in [day.phone, day.watch] {
                let steps = app.filter { $0.type == "stepCount" }
                let distances = app.filter { $0.type == "distanceWalkingRunning" }
                #expect(steps.count == distances.count)
                for (step, distance) in zip(steps, distances) {
                    #expect(step.start == distance.start && step.end == distance.end)
                    let stride = (distance.quantity ?? 0) / (step.quantity ?? 1)
                    #expect((0.55...1.2).contains(stride), "stride \(stride)")
                }
                // Outside workouts people walk: about 0.72-0.80 m a step.
                let workouts = day.watch.filter { $0.type == "workout" }
                let walking = zip(steps, distances).filter { pair in
                    !workouts.contains { $0.start < pair.0.end && pair.0.start < $0.end }
                }.map { ($0.1.quantity ?? 0) / ($0.0.quantity ?? 1) }.sorted()
                if !walking.isEmpty { #expect((0.68...0.82).contains(walking[walking.count / 2])) }
            }
        }
    }

    @Test func heartRateFollowsActivity() {
        var sleeping: [Double] = [], inWorkouts: [Double] = []
        for day in days {
            let readings = day.watch.filter { $0.type == "heartRate" }
            #expect(readings.allSatisfy { $0.start == $0.end })
            let stages = day.watch.filter { $0.type == "sleepAnalysis" }
            let workouts = day.watch.filter { $0.type == "workout" }
            for reading in readings {
                let value = reading.quantity ?? 0
                if stages.contains(where: { $0.start <= reading.start && reading.start < $0.end }) { sleeping.append(value) }
                if workouts.contains(where: { $0.start <= reading.start && reading.start < $0.end }) {
                    inWorkouts.append(value)
                }
            }
            let rest = day.watch.first { $0.type == "restingHeartRate" }?.quantity ?? 0
            #expect((50...72).contains(rest))
        }
        let meanSleeping = sleeping.reduce(0, +) / Double(sleeping.count)
        let meanWorkout = inWorkouts.reduce(0, +) / Double(inWorkouts.count)
        #expect((45...70).contains(meanSleeping))
        #expect((115...165).contains(meanWorkout))
        #expect(sleeping.allSatisfy { (40...85).contains($0) })
        #expect(inWorkouts.allSatisfy { $0 <= 170 })
    }

    @Test func nightsHaveInBedFromThePhoneAndStageCyclesFromTheWatch() throws {
        for day in days {
            let inBed = try #require(day.phone.first { $0.type == "sleepAnalysis" })
            #expect(inBed.content == .category("inBed"))
            let stages = day.watch.filter { $0.type == "sleepAnalysis" }
            #expect(zip(stages, stages.dropFirst()).allSatisfy { $0.end <= $1.start })
            #expect(stages.allSatisfy { $0.start >= inBed.start && $0.end <= inBed.end })
            var minutes: [String: Int64] = [:]
            for stage in stages {
                if case .category(let name) = stage.content { minutes[name, default: 0] += (stage.end - stage.start) / 60_000 }
            }
            let asleep = (minutes["asleepCore"] ?? 0) + (minutes["asleepDeep"] ?? 0) + (minutes["asleepREM"] ?? 0)
            #expect((360...600).contains(asleep))
            #expect((minutes["asleepDeep"] ?? 0) > 20 && (minutes["asleepREM"] ?? 0) > 45)
            // Deep sleep comes early in the night.
            let firstDeep = try #require(stages.first { $0.content == .category("asleepDeep") })
            #expect(firstDeep.start - inBed.start < 3 * 3_600_000)
        }
    }

    @Test func workoutsAFewTimesAWeekWithConsistentTotals() throws {
        let workouts = days.flatMap { day in day.watch.filter { $0.type == "workout" } }
        #expect((3...10).contains(workouts.count))
        for day in days {
            for workout in day.watch where workout.type == "workout" {
                guard case .workout(let details) = workout.content else { Issue.record("not a workout"); continue }
                let energy = day.watch.filter { $0.type == "activeEnergyBurned" && $0.start >= workout.start && $0.end <= workout.end }
                    .reduce(0) { $0 + ($1.quantity ?? 0) }
                #expect(abs((details.totalEnergyBurned ?? 0) - energy) < 0.1)
                let distanceType = details.activityType == "cycling" ? "distanceCycling" : "distanceWalkingRunning"
                let distance = day.watch.filter { $0.type == distanceType && $0.start >= workout.start && $0.end <= workout.end }
                    .reduce(0) { $0 + ($1.quantity ?? 0) }
                if let total = details.totalDistance {
                    #expect(total > 1_000 && abs(total - distance) < 0.1, "\(details.activityType)")
                } else {
                    #expect(["traditionalStrengthTraining", "highIntensityIntervalTraining"].contains(details.activityType))
                }
                #expect(details.events.allSatisfy { $0.date >= workout.start && $0.date <= workout.end })
                let exercise = day.watch.filter { $0.type == "appleExerciseTime" && $0.start >= workout.start && $0.end <= workout.end }
                    .reduce(0) { $0 + ($1.quantity ?? 0) }
                #expect(Int64(exercise) == (workout.end - workout.start) / 60_000)
            }
        }
    }

    @Test func bodyMassDriftsSlowly() {
        let masses = days.compactMap { $0.phone.first { $0.type == "bodyMass" }?.quantity }
        #expect(masses.count == days.count)
        #expect(zip(masses, masses.dropFirst()).allSatisfy { abs($0 - $1) <= 1.0 })
        #expect((masses.max() ?? 0) - (masses.min() ?? 0) < 4)
    }

    @Test func demoSineMatchesTheCLibrary() {
        for x in stride(from: -40.0, through: 40.0, by: 0.37) {
            #expect(abs(demoSine(x) - sin(x)) < 1e-6)
        }
    }
}

/// Demo data in a zone with daylight saving time: 2026-03-08 (clocks forward) and 2026-11-01 (back) in New York.
@Suite struct DemoDataTimeZoneTests {
    static let newYork = TimeZone(identifier: "America/New_York")
    static let springForward = GregorianCalendarMath.daysSinceEpoch(year: 2026, month: 3, day: 8)
    static let fallBack = GregorianCalendarMath.daysSinceEpoch(year: 2026, month: 11, day: 1)

    private func generator() throws -> DemoDataGenerator {
        DemoDataGenerator(userName: "alice", timeZone: try #require(Self.newYork))
    }

    /// Local wall-clock minutes since local midnight of `day`.
    private func localMinute(_ instant: Int64, day: Int64, zone: TimeZone) -> Int64 {
        let offset = Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant) / 1000))) * 1000
        return (instant + offset - day * GregorianCalendarMath.millisecondsPerDay) / 60_000
    }

    /// The dashboard link opens on today from local noon on, else on yesterday: at any hour a whole
    /// day or a day with its morning, on clock-change days too (the hour is the wall clock's).
    @Test func theDemoLinkOpensOnYesterdayBeforeLocalNoonAndTodayFromIt() throws {
        let zone = try #require(Self.newYork)
        func opening(_ day: Int64, hour: Int64, minute: Int64 = 0) -> Int64 {
            // New York wall time on `day`, as an instant (EST or EDT as the day has it at that hour).
            let generator = DemoDataGenerator(userName: "", timeZone: zone)
            let wall = day * GregorianCalendarMath.millisecondsPerDay + (hour * 60 + minute) * 60_000
            return DemoSeeder.openingDay(nowMilliseconds: generator.instant(wall: wall), timeZone: zone).daysSinceEpoch
        }
        let day = GregorianCalendarMath.daysSinceEpoch(year: 2026, month: 11, day: 27)
        #expect(opening(day, hour: 0, minute: 1) == day - 1)
        #expect(opening(day, hour: 5) == day - 1)
        #expect(opening(day, hour: 11, minute: 59) == day - 1)
        #expect(opening(day, hour: 12) == day)
        #expect(opening(day, hour: 23, minute: 59) == day)
        for change in [Self.springForward, Self.fallBack] {
            #expect(opening(change, hour: 11, minute: 59) == change - 1)
            #expect(opening(change, hour: 12) == change)
        }
        // 03:00 UTC is still the evening before in New York: that day from its noon.
        let utcMorning = day * GregorianCalendarMath.millisecondsPerDay + 3 * 3_600_000
        #expect(DemoSeeder.openingDay(nowMilliseconds: utcMorning, timeZone: zone).daysSinceEpoch == day - 1)
        #expect(DemoSeeder.openingDay(nowMilliseconds: utcMorning).daysSinceEpoch == day - 1)
        #expect(DemoSeeder.openingDay(nowMilliseconds: utcMorning + 9 * 3_600_000).daysSinceEpoch == day)
    }

    @Test func theDayRunsOnLocalWallClockTime() throws {
        let generator = try generator()
        let zone = generator.timeZone
        for day in (Self.springForward - 3)...(Self.springForward + 3) {
            let demo = generator.day(day)
            let steps = (demo.phone + demo.watch).filter { $0.type == "stepCount" }
            let firstStep = try #require(steps.map(\.start).min())
            let lastStep = try #require(steps.map(\.end).max())
            // Up at about 06:25-09:00 local time, in bed by midnight: as in UTC, now in New York.
            #expect((6 * 60...9 * 60 + 30).contains(localMinute(firstStep, day: day, zone: zone)), "day \(day)")
            #expect(localMinute(lastStep, day: day, zone: zone) < 24 * 60, "day \(day)")
            let inBed = try #require(demo.phone.first { $0.type == "sleepAnalysis" })
            #expect((-100 ... -4).contains(localMinute(inBed.start, day: day, zone: zone)), "bed the evening before, day \(day)")
            #expect(generator.localDay(of: firstStep) == day)
        }
    }

    @Test func clockChangesNeverMakeASampleEndBeforeItStartsOrNightsOverlap() throws {
        let generator = try generator()
        for day in [Self.springForward, Self.springForward + 1, Self.fallBack, Self.fallBack + 1] {
            let demo = generator.day(day)
            for sample in demo.phone + demo.watch {
                #expect(sample.end >= sample.start, "\(sample.type) on day \(day)")
            }
            let stages = demo.watch.filter { $0.type == "sleepAnalysis" }
            #expect(zip(stages, stages.dropFirst()).allSatisfy { $0.end <= $1.start })
            // Yesterday's waking day ends before this night begins.
            let yesterday = generator.day(day - 1)
            let lastAwake = try #require((yesterday.phone + yesterday.watch).filter { $0.type == "stepCount" }.map(\.end).max())
            let inBed = try #require(demo.phone.first { $0.type == "sleepAnalysis" })
            #expect(lastAwake <= inBed.start)
        }
    }

    @Test func wallClockTimesInTheSkippedAndRepeatedHours() throws {
        let generator = try generator()
        let hour: Int64 = 3_600_000
        let spring = Self.springForward * GregorianCalendarMath.millisecondsPerDay
        // 01:59 EST, then 02:00-02:59 do not exist: the change itself (07:00Z), then 03:00 EDT (07:00Z).
        #expect(generator.instant(wall: spring + 2 * hour - 60_000) == spring + 7 * hour - 60_000)
        #expect(generator.instant(wall: spring + 2 * hour + 30 * 60_000) == spring + 7 * hour)
        #expect(generator.instant(wall: spring + 3 * hour) == spring + 7 * hour)
        let autumn = Self.fallBack * GregorianCalendarMath.millisecondsPerDay
        // 01:30 happens twice: the first time (EDT, 05:30Z); 02:00 is EST (07:00Z).
        #expect(generator.instant(wall: autumn + hour + 30 * 60_000) == autumn + 5 * hour + 30 * 60_000)
        #expect(generator.instant(wall: autumn + 2 * hour) == autumn + 7 * hour)
    }

    @Test func utcIsTheDefaultAndGivesTheSameSamplesAsBefore() throws {
        let utc = DemoDataGenerator(userName: "alice", timeZone: try #require(TimeZone(identifier: "UTC")))
        #expect(utc.day(firstDay).watch == aliceTwoWeeks[0].watch)
        #expect(utc.day(firstDay).phone == aliceTwoWeeks[0].phone)
    }

    @Test func todaySoFarInNewYorkHoldsLastNightAndTheMorning() throws {
        let zone = try #require(Self.newYork)
        let server = try TestServer()
        // 2026-03-04 14:00 in New York (19:00Z): the local day is the 4th; at 19:00Z a UTC seed
        // would hold the whole night but not an evening. Here the night ended this local morning.
        let now = GregorianCalendarMath.daysSinceEpoch(year: 2026, month: 3, day: 4) * GregorianCalendarMath.millisecondsPerDay
            + 19 * 3_600_000
        let today = DemoSeeder.today(nowMilliseconds: now, timeZone: zone)
        #expect(HealthDay(daysSinceEpoch: today).description == "2026-03-04")
        let report = try DemoSeeder.seed(store: server.store, userName: "nyc", days: 1, today: today, now: now, timeZone: zone)
        #expect(report.lastDay.description == "2026-03-04")
        let generated = DemoDataGenerator(userName: "nyc", timeZone: zone).day(today)
        let night = generated.watch.filter { $0.type == "sleepAnalysis" }
        #expect(!night.isEmpty && night.allSatisfy { $0.end <= now })
        #expect(report.added == DemoDataGenerator(userName: "nyc", timeZone: zone).day(today - 1).phone.count
                    + DemoDataGenerator(userName: "nyc", timeZone: zone).day(today - 1).watch.count
                    + (generated.phone + generated.watch).filter { $0.end <= now }.count)
        // Nothing from later this afternoon.
        #expect((generated.phone + generated.watch).contains { $0.end > now })
    }

    @Test func seedingAUserAgainInAnotherZoneStopsWithAClearError() throws {
        let server = try TestServer()
        _ = try DemoSeeder.seed(store: server.store, userName: "traveller", days: 1, today: firstDay + 1)
        let zone = try #require(Self.newYork)
        #expect(throws: DemoSeeder.OtherTimeZone.self) {
            _ = try DemoSeeder.seed(store: server.store, userName: "traveller", days: 1, today: firstDay + 1, timeZone: zone)
        }
    }
}

@Suite struct DemoSeederTests {
    @Test func seedingTwiceStoresNothingTwice() throws {
        let server = try TestServer()
        let today = firstDay + 3
        let first = try DemoSeeder.seed(store: server.store, userName: "carol", days: 3, today: today, batchSize: 500)
        #expect(first.added == first.generated && first.generated > 1_000)
        #expect(first.types.first { $0.type == "stepCount" }.map { $0.phone > 0 && $0.watch > 0 } == true)
        let second = try DemoSeeder.seed(store: server.store, userName: "carol", days: 3, today: today)
        #expect(second.added == 0 && second.generated == first.generated)
        #expect(second.user == first.user)
        // A longer rerun adds only the new days.
        let longer = try DemoSeeder.seed(store: server.store, userName: "carol", days: 4, today: today)
        let oneDay = DemoDataGenerator(userName: "carol").day(firstDay - 1)
        #expect(longer.added == oneDay.phone.count + oneDay.watch.count)
        var stored = 0
        for type in DemoSource.phoneTypes.union(DemoSource.watchTypes) {
            stored += try server.store.sampleCount(userRowID: first.user.rowID, type: type, app: "phone")
                + server.store.sampleCount(userRowID: first.user.rowID, type: type, app: "watch")
        }
        #expect(stored == longer.generated)
        let dateOfBirth = try server.store.characteristics(userRowID: first.user.rowID).first { $0.0 == "dateOfBirth" }?.1
        #expect(dateOfBirth == DemoDataGenerator(userName: "carol").dateOfBirth.description)
    }

    @Test func todaySoFarHoldsWhatHasEndedAndALaterRunAddsTheRest() throws {
        let server = try TestServer()
        let today = firstDay + 2
        let whole = DemoDataGenerator(userName: "dora").day(today)
        let noon = today * 86_400_000 + 12 * 3_600_000
        func endedBy(_ instant: Int64) -> Int { (whole.phone + whole.watch).filter { $0.end <= instant }.count }
        let morning = try DemoSeeder.seed(store: server.store, userName: "dora", days: 1, today: today, now: noon)
        let yesterday = DemoDataGenerator(userName: "dora").day(today - 1)
        #expect(morning.lastDay == HealthDay(daysSinceEpoch: today))
        #expect(morning.added == yesterday.phone.count + yesterday.watch.count + endedBy(noon))
        #expect(endedBy(noon) > 0 && endedBy(noon) < whole.phone.count + whole.watch.count, "noon is part way through the day")
        // Last night's sleep ended this morning: it is there.
        #expect(whole.phone.contains { $0.type == "sleepAnalysis" && $0.end <= noon }
                    || whole.watch.contains { $0.type == "sleepAnalysis" && $0.end <= noon })
        let evening = try DemoSeeder.seed(store: server.store, userName: "dora", days: 1, today: today, now: noon + 8 * 3_600_000)
        #expect(evening.added == endedBy(noon + 8 * 3_600_000) - endedBy(noon))
        // `now` on another day than `today` adds no partial day.
        let stale = try DemoSeeder.seed(store: server.store, userName: "dora", days: 1, today: today + 1, now: noon)
        #expect(stale.lastDay == HealthDay(daysSinceEpoch: today))
    }

    @Test func theDashboardTokenReadsWhatWasSeeded() throws {
        let server = try TestServer()
        let report = try DemoSeeder.seed(store: server.store, userName: "demo", days: 2, today: firstDay + 2)
        let token = try DemoSeeder.dashboardToken(store: server.store, user: report.user)
        let steps = server.request(.get, "/v1/samples?type=stepCount&limit=10000", token: token)
        #expect(steps.status == 200)
        #expect(steps["samples"]?.arrayValue?.count == report.types.first { $0.type == "stepCount" }.map { $0.phone + $0.watch })
        let sources = server.request(.get, "/v1/sources?type=stepCount", token: token)
        #expect(sources["sources"]?.arrayValue?.compactMap { $0.objectValue?["app"]?.stringValue } == ["phone", "watch"])
        // Read-only: the dashboard may not write.
        let write = server.request(.post, "/v1/samples", token: token,
                                   json: #"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-02T10:00:00Z"}]}"#)
        #expect(write.status == 403)
        let zones = server.request(.get, "/v1/heart-rate/zones?goal=cardio", token: token)
        #expect(zones.status == 200 && zones["method"]?.stringValue == "karvonen")
    }

    @Test func anExistingAuthorizationIsReused() throws {
        let server = try TestServer()
        let user = try server.store.userCreatingIfNeeded(name: "dave")
        let first = try server.store.appAuthorizationCreatingIfNeeded(user: user, app: "watch", read: [], share: ["heartRate"])
        let again = try server.store.appAuthorizationCreatingIfNeeded(user: user, app: "watch", read: [], share: ["heartRate"])
        #expect(first.id == again.id)
        // Asking for more turns the switches on for the app (its tokens follow the person's grant).
        let wider = try server.store.appAuthorizationCreatingIfNeeded(user: user, app: "watch", read: [], share: ["heartRate", "stepCount"])
        #expect(wider.id == first.id && wider.share == ["heartRate", "stepCount"])
        #expect(try server.store.revokeAuthorization(id: wider.id))
        let afterRevoke = try server.store.appAuthorizationCreatingIfNeeded(user: user, app: "watch", read: [], share: ["stepCount"])
        #expect(afterRevoke.id != wider.id && afterRevoke.sourceRowID == first.sourceRowID)
    }
}
