import Foundation
import HealthModel
import Primitives

// Realistic, deterministic demo data (`healthd seed`, `healthd serve --demo`). Pure: the same user,
// time zone and day give the same samples, uuids included, on every machine and every run, so
// saving them again stores nothing twice. Days are calendar days in the generator's time zone and
// the plan is in wall-clock minutes, so the person wakes at 07:00 local time wherever the server
// is; the night that ends on a day's morning belongs to that day (its `inBed` starts the evening
// before).

/// The two apps demo data comes from, with the devices they report.
public enum DemoSource {
    public static let phoneApp = "phone"
    public static let watchApp = "watch"
    public static let phoneDevice = SampleDevice(name: "iPhone", manufacturer: "Apple Inc.", model: "iPhone",
                                                 hardwareVersion: "iPhone15,2", softwareVersion: "17.4")
    public static let watchDevice = SampleDevice(name: "Apple Watch", manufacturer: "Apple Inc.", model: "Watch",
                                                 hardwareVersion: "Watch6,14", softwareVersion: "10.4")
    /// What each app writes (its share permissions).
    public static let phoneTypes: Set<String> = ["stepCount", "distanceWalkingRunning", "sleepAnalysis", "bodyMass"]
    public static let watchTypes: Set<String> = [
        "stepCount", "distanceWalkingRunning", "distanceCycling", "activeEnergyBurned", "appleExerciseTime",
        "appleStandTime", "appleStandHour", "heartRate", "restingHeartRate", "sleepAnalysis", "workout",
    ]
}

/// One day of demo samples, by the app that saves them.
public struct DemoDay: Sendable {
    /// The local calendar day, as days since 1970-01-01.
    public let day: Int64
    public var phone: [HealthSample] = []
    public var watch: [HealthSample] = []
}

/// The demo's draws over `SplitMix64`, whose output is fixed by its definition, so reruns after
/// a Swift upgrade still produce identical samples.
struct DemoRandom {
    private var generator: SplitMix64
    init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    mutating func next() -> UInt64 { generator.next() }

    static func mix(_ value: UInt64) -> UInt64 { SplitMix64.mix(value) }

    /// Uniform in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) * 0x1p-53 }
    mutating func double(_ range: ClosedRange<Double>) -> Double {
        range.lowerBound + unit() * (range.upperBound - range.lowerBound)
    }
    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.upperBound - range.lowerBound + 1))
    }
    mutating func chance(_ probability: Double) -> Bool { unit() < probability }
}

/// FNV-1a: a stable hash (Swift's `Hasher` is seeded per process).
func demoStableHash(_ text: String, _ numbers: [Int64] = []) -> UInt64 {
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    func add(_ byte: UInt8) { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
    for byte in text.utf8 { add(byte) }
    for number in numbers {
        add(0xFF)
        for shift in stride(from: 0, to: 64, by: 8) { add(UInt8(truncatingIfNeeded: number >> Int64(shift))) }
    }
    return DemoRandom.mix(hash)
}

/// sin(x) by range reduction and a Taylor polynomial: plain IEEE arithmetic, so the demo data
/// does not depend on the C library's `sin`. Accurate to about 1e-7, far below what it shapes.
func demoSine(_ x: Double) -> Double {
    let twoPi = 2 * Double.pi
    var r = x - twoPi * (x / twoPi).rounded()
    if r > Double.pi / 2 { r = Double.pi - r } else if r < -Double.pi / 2 { r = -Double.pi - r }
    let r2 = r * r
    var term = r, sum = r
    for n in stride(from: 2, through: 12, by: 2) {
        term *= -r2 / Double(n * (n + 1))
        sum += term
    }
    return sum
}

/// What a person is doing in a minute of their waking day.
enum DemoActivity: Equatable {
    case sedentary
    /// A few steps (kitchen, stairs), at a slower cadence.
    case pottering
    case walking
    case briskWalking
    case workout(DemoWorkoutKind)

    var countsAsExercise: Bool {
        switch self {
        case .briskWalking, .workout: return true
        default: return false
        }
    }
}

enum DemoWorkoutKind: String, CaseIterable {
    case running, cycling, hiking, traditionalStrengthTraining, highIntensityIntervalTraining

    var isIndoor: Bool { self == .traditionalStrengthTraining || self == .highIntensityIntervalTraining }
}

/// The series a uuid belongs to; part of the uuid's derivation, so never renumber these.
enum DemoSeries: UInt64 {
    case phoneSteps = 1, watchSteps, phoneDistance, watchDistance, watchCyclingDistance, activeEnergy, exerciseTime
    case standTime, standHour, heartRate, restingHeartRate, inBed, sleepStage, workout, bodyMass
}

public struct DemoDataGenerator: Sendable {
    public let userName: String
    /// The zone whose calendar days and wall clock the person lives by.
    public let timeZone: TimeZone
    private let userHash: UInt64

    public init(userName: String, timeZone: TimeZone = DemoDataGenerator.utc) {
        self.userName = userName
        self.timeZone = timeZone
        userHash = demoStableHash(userName)
    }

    public static let utc = TimeZone(secondsFromGMT: 0) ?? TimeZone.current

    // MARK: Local time

    /// The zone's offset from UTC at an instant, in milliseconds.
    func offset(at instant: Int64) -> Int64 {
        Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant) / 1000))) * 1000
    }

    /// The local calendar day (days since 1970-01-01) holding an instant.
    public func localDay(of instant: Int64) -> Int64 {
        GregorianCalendarMath.floorDivide(instant + offset(at: instant), GregorianCalendarMath.millisecondsPerDay)
    }

    /// The offset in force for the whole of `day` (from the evening before to the morning after),
    /// or nil when the clocks change around it.
    func constantOffset(around day: Int64) -> Int64? {
        let before = offset(at: (day - 2) * GregorianCalendarMath.millisecondsPerDay)
        let after = offset(at: (day + 3) * GregorianCalendarMath.millisecondsPerDay)
        return before == after ? before : nil
    }

    /// The instant a wall-clock time names (`wall`: milliseconds since 1970 read as local time).
    /// When the clocks go back, the earlier of the two instants; in the hour skipped when they go
    /// forward, the moment of the change. So later wall times never map to earlier instants, and
    /// a sample never ends before it starts.
    func instant(wall: Int64) -> Int64 {
        let day = GregorianCalendarMath.millisecondsPerDay
        let before = offset(at: wall - day), after = offset(at: wall + day)
        let early = wall - before
        if offset(at: early) == before { return early }
        let late = wall - after
        if offset(at: late) == after { return late }
        // In the gap: `late` still has the old offset and `early` the new one; find the change.
        var low = min(early, late), high = max(early, late)
        while high - low > 1 {
            let middle = low + (high - low) / 2
            if offset(at: middle) == offset(at: low) { low = middle } else { high = middle }
        }
        return high
    }

    static let minute: Int64 = 60_000

    // MARK: Person-level constants (fixed per user)

    /// 66-84 kg before the slow drift.
    var baseBodyMass: Double { 66 + Double(userHash % 180) / 10 }
    /// 56-63 bpm before the daily drift.
    var baseRestingHeartRate: Double { 56 + Double((userHash >> 8) % 8) }
    /// Walking stride 0.72-0.78 m.
    var walkingStride: Double { 0.72 + Double((userHash >> 16) % 7) / 100 }

    /// A birthday 30-49 years before 2026, so heart-rate zones have an age to work with.
    public var dateOfBirth: HealthDay {
        let year = 1977 + Int((userHash >> 24) % 20)
        let month = 1 + Int((userHash >> 32) % 12)
        let day = 1 + Int((userHash >> 40) % 28)
        return HealthDay(year: year, month: month, day: day) ?? HealthDay(daysSinceEpoch: 0)
    }

    private func random(_ day: Int64, _ stream: UInt64) -> DemoRandom {
        DemoRandom(seed: DemoRandom.mix(userHash ^ DemoRandom.mix(UInt64(bitPattern: day) &* 0x9E37_79B9 &+ stream)))
    }

    /// 0 = Sunday ... 6 = Saturday (1970-01-01 was a Thursday).
    static func weekday(_ day: Int64) -> Int { Int(((day % 7) + 7 + 4) % 7) }

    /// The uuid of the `index`th sample of `series` on `day`: version 8 (RFC 9562, custom). The low
    /// half is a bijection of (day, series, index) on 62 bits, so no two demo samples of a user
    /// ever share a uuid; the high half comes from the user's name.
    func uuid(day: Int64, series: DemoSeries, index: Int) -> HealthUUID {
        let mask62: UInt64 = (1 << 62) - 1
        var packed = (UInt64(bitPattern: day) & 0x3F_FFFF) << 40 | series.rawValue << 32 | UInt64(index & 0xFFFF_FFFF)
        packed = (packed &* 0x9E37_79B9_7F4A_7C15) & mask62
        packed ^= packed >> 29
        packed = (packed &* 0xBF58_476D_1CE4_E5B9) & mask62
        packed ^= packed >> 31
        let high = (DemoRandom.mix(userHash ^ 0x5EED) & ~UInt64(0xF000)) | 0x8000
        return HealthUUID(high: high, low: packed | (UInt64(0b10) << 62))
    }

    // MARK: Nights

    /// Bedtime of the night ending on `day`'s morning, in minutes from `day`'s midnight (negative:
    /// the evening before), and the wake-up minute.
    func night(endingOn day: Int64) -> (bed: Int, wake: Int) {
        var rng = random(day, 1)
        let weekendMorning = [0, 6].contains(Self.weekday(day))
        let bed = weekendMorning ? rng.int(-60 ... -5) : rng.int(-95 ... -20)
        let wake = weekendMorning ? rng.int(465...540) : rng.int(385...440)
        return (bed, wake)
    }

    /// Resting heart rate of a day: a slow wave around the person's base plus a little noise.
    func restingHeartRate(_ day: Int64) -> Double {
        var rng = random(day, 2)
        let wave = 2.5 * demoSine(2 * Double.pi * Double(day) / 17)
        return (baseRestingHeartRate + wave + rng.double(-1.5...1.5)).rounded()
    }

    /// Morning weight: two slow waves (weeks and months) plus scale noise, to 0.1 kg.
    func bodyMass(_ day: Int64) -> Double {
        var rng = random(day, 3)
        let drift = 1.2 * demoSine(2 * Double.pi * Double(day) / 61) + 0.5 * demoSine(2 * Double.pi * Double(day) / 13 + 1)
        return ((baseBodyMass + drift + rng.double(-0.25...0.25)) * 10).rounded() / 10
    }

    // MARK: Days

    public func days(_ range: Range<Int64>) -> [DemoDay] { range.map { day($0) } }

    public func day(_ day: Int64) -> DemoDay {
        var builder = DemoDayBuilder(generator: self, day: day, rng: random(day, 4))
        builder.build()
        return builder.result
    }
}

/// Builds one day: a minute-by-minute plan, then each app's samples from it.
struct DemoDayBuilder {
    let generator: DemoDataGenerator
    let day: Int64
    var rng: DemoRandom
    var result: DemoDay
    private var counters: [DemoSeries: Int] = [:]

    /// Minute of the day -> activity while awake; nil while asleep.
    private var activity = [DemoActivity?](repeating: nil, count: 1440)
    private var cadence = [Double](repeating: 0, count: 1440)
    private var metresPerStep = [Double](repeating: 0, count: 1440)
    /// Metres ridden in a minute on the bike.
    private var wheelMetres = [Double](repeating: 0, count: 1440)
    private var energy = [Double](repeating: 0, count: 1440)
    private var heartRate = [Double](repeating: 0, count: 1440)
    /// Whether the phone is in a pocket (it misses steps while it lies on a desk or in a locker).
    private var phoneCarried = [Bool](repeating: true, count: 1440)
    private var workouts: [(kind: DemoWorkoutKind, start: Int, end: Int)] = []
    private let wake: Int
    private let bedtime: Int
    private let rest: Double
    private let nightBed: Int
    /// The zone's offset when it does not change around this day (nearly always), which spares
    /// a zone lookup per instant.
    private let fixedOffset: Int64?

    init(generator: DemoDataGenerator, day: Int64, rng: DemoRandom) {
        self.generator = generator
        self.day = day
        fixedOffset = generator.constantOffset(around: day)
        self.rng = rng
        result = DemoDay(day: day)
        let thisNight = generator.night(endingOn: day)
        wake = thisNight.wake
        nightBed = thisNight.bed
        bedtime = 1440 + generator.night(endingOn: day + 1).bed
        rest = generator.restingHeartRate(day)
    }

    /// The instant of a wall-clock minute of this day (negative: the evening before).
    private func instant(_ minute: Int, second: Int = 0) -> Int64 {
        let wall = day * GregorianCalendarMath.millisecondsPerDay + Int64(minute) * DemoDataGenerator.minute + Int64(second) * 1000
        if let fixedOffset { return wall - fixedOffset }
        return generator.instant(wall: wall)
    }

    private mutating func nextUUID(_ series: DemoSeries) -> HealthUUID {
        let index = counters[series, default: 0]
        counters[series] = index + 1
        return generator.uuid(day: day, series: series, index: index)
    }

    /// `end` nil: an instantaneous sample (a reading), ending when it starts.
    private mutating func add(_ series: DemoSeries, watch: Bool, type: String, start: Int64, end: Int64? = nil,
                              _ content: SampleContent, metadata: [MetadataEntry] = []) {
        let sample = HealthSample(uuid: nextUUID(series), type: type, start: start, end: end ?? start, content: content,
                                  metadata: metadata, device: watch ? DemoSource.watchDevice : DemoSource.phoneDevice)
        if watch { result.watch.append(sample) } else { result.phone.append(sample) }
    }

    mutating func build() {
        planWakingDay()
        fillMinuteSeries()
        writeSleep()
        writeMovement()
        writeEnergyAndExercise()
        writeStand()
        writeHeartRate()
        writeWorkouts()
        add(.restingHeartRate, watch: true, type: "restingHeartRate", start: instant(wake), end: instant(bedtime),
            .quantity(rest))
        add(.bodyMass, watch: false, type: "bodyMass", start: instant(wake + rng.int(8...20), second: rng.int(0...59)),
            .quantity(generator.bodyMass(day)))
    }

    // MARK: Plan

    private mutating func place(_ kind: DemoActivity, at start: Int, length: Int) {
        let first = max(start, wake + 5)
        let last = min(start + length, bedtime - 5)
        guard first < last else { return }
        for minute in first..<last { activity[minute] = kind }
    }

    private mutating func planWakingDay() {
        for minute in wake..<bedtime { activity[minute] = .sedentary }
        // Short bursts of steps through the day.
        var minute = wake + rng.int(5...20)
        while minute < bedtime - 10 {
            let length = rng.int(1...3)
            place(.pottering, at: minute, length: length)
            if rng.chance(0.35) { for m in minute..<min(minute + length, 1440) { phoneCarried[m] = false } }
            minute += length + rng.int(20...55)
        }
        let weekday = DemoDataGenerator.weekday(day)
        let weekend = weekday == 0 || weekday == 6
        if weekend {
            place(.walking, at: rng.int(600...690), length: rng.int(40...80))
            place(.walking, at: rng.int(900...990), length: rng.int(20...40))
        } else {
            place(.briskWalking, at: wake + rng.int(50...75), length: rng.int(12...22))
            place(.walking, at: rng.int(735...765), length: rng.int(10...25))
            place(.briskWalking, at: rng.int(1035...1065), length: rng.int(12...22))
            if rng.chance(0.4) { place(.walking, at: rng.int(1170...1230), length: rng.int(15...30)) }
        }
        // Workouts a few times a week, on a loose weekly pattern.
        let plan: (DemoWorkoutKind, Double)?
        switch weekday {
        case 2: plan = (.running, 0.85)
        case 4: plan = (rng.chance(0.5) ? .cycling : .highIntensityIntervalTraining, 0.8)
        case 6: plan = (rng.chance(0.6) ? .running : .hiking, 0.8)
        case 1, 3, 5: plan = (.traditionalStrengthTraining, 0.35)
        default: plan = nil
        }
        if let (kind, probability) = plan, rng.chance(probability) {
            let start = max(weekend ? rng.int(540...570) : rng.int(1095...1125), wake + 30)
            let length: Int
            switch kind {
            case .running: length = weekend ? rng.int(50...80) : rng.int(30...50)
            case .cycling: length = rng.int(40...70)
            case .hiking: length = rng.int(90...150)
            case .traditionalStrengthTraining: length = rng.int(35...55)
            case .highIntensityIntervalTraining: length = rng.int(20...30)
            }
            let end = min(start + length, bedtime - 5)
            if end - start >= 15 {
                place(.workout(kind), at: start, length: end - start)
                // The phone stays in the locker except on runs and hikes (and not always then).
                let carried = (kind == .running && rng.chance(0.7)) || kind == .hiking
                for m in start..<end { phoneCarried[m] = carried }
                workouts.append((kind, start, end))
            }
        }
    }

    private mutating func fillMinuteSeries() {
        var current = rest + 8
        for minute in wake..<bedtime {
            guard let kind = activity[minute] else { continue }
            let steps: Double, strideLength: Double, kcal: Double, target: Double
            switch kind {
            case .sedentary:
                (steps, strideLength, kcal, target) = (0, 0, rng.double(0.15...0.35), rest + rng.double(6...16))
            case .pottering:
                (steps, strideLength, kcal, target) = (rng.double(40...90), generator.walkingStride - 0.05,
                                                       rng.double(1.5...2.5), rng.double(80...95))
            case .walking:
                (steps, strideLength, kcal, target) = (rng.double(95...115), generator.walkingStride,
                                                       rng.double(3.2...4.5), rng.double(90...110))
            case .briskWalking:
                (steps, strideLength, kcal, target) = (rng.double(115...128), generator.walkingStride + 0.04,
                                                       rng.double(4.8...6), rng.double(100...115))
            case .workout(let workout):
                switch workout {
                case .running:
                    (steps, strideLength, kcal, target) = (rng.double(155...172), rng.double(1.0...1.15),
                                                           rng.double(10...13), rng.double(140...165))
                case .cycling:
                    // Distance comes from the wheel (distanceCycling), not from steps.
                    wheelMetres[minute] = rng.double(330...450)
                    (steps, strideLength, kcal, target) = (0, 0, rng.double(7...10), rng.double(125...150))
                case .hiking:
                    (steps, strideLength, kcal, target) = (rng.double(95...115), generator.walkingStride - 0.04,
                                                           rng.double(5...7), rng.double(120...135))
                case .traditionalStrengthTraining:
                    (steps, strideLength, kcal, target) = (rng.double(2...10), 0.6, rng.double(4.5...7), rng.double(120...140))
                case .highIntensityIntervalTraining:
                    (steps, strideLength, kcal, target) = (rng.double(40...90), 0.8, rng.double(9...12), rng.double(130...165))
                }
            }
            cadence[minute] = steps.rounded()
            metresPerStep[minute] = strideLength
            energy[minute] = kcal
            // The heart follows effort with a lag of a couple of minutes.
            current += 0.45 * (target - current)
            heartRate[minute] = current
        }
    }

    // MARK: Samples

    /// Splits [start, end) into pieces of `lengths` minutes, as devices batch their samples.
    private mutating func chunks(_ start: Int, _ end: Int, lengths: ClosedRange<Int>) -> [(Int, Int)] {
        var pieces: [(Int, Int)] = []
        var cursor = start
        while cursor < end {
            let next = min(end, cursor + rng.int(lengths))
            pieces.append((cursor, next))
            cursor = next
        }
        return pieces
    }

    /// Maximal runs of minutes where `include` holds and the activity stays the same.
    private func runs(_ include: (Int) -> Bool) -> [(Int, Int)] {
        var result: [(Int, Int)] = []
        var minute = wake
        while minute < bedtime {
            guard include(minute) else { minute += 1; continue }
            let start = minute
            while minute < bedtime, include(minute), activity[minute] == activity[start] { minute += 1 }
            result.append((start, minute))
        }
        return result
    }

    /// Steps and walking distance from both devices: each batches on its own rhythm and counts a
    /// little differently, so their samples overlap and disagree slightly, as in real life.
    private mutating func writeMovement() {
        for watch in [false, true] {
            let movingRuns = runs { cadence[$0] > 0 && (watch || phoneCarried[$0]) }
            for (runStart, runEnd) in movingRuns {
                for (start, end) in chunks(runStart, runEnd, lengths: 1...10) {
                    let factor = rng.double(0.96...1.04)
                    let steps = ((start..<end).reduce(0) { $0 + cadence[$1] } * factor).rounded()
                    guard steps > 0 else { continue }
                    let metres = (start..<end).reduce(0) { $0 + cadence[$1] * metresPerStep[$1] } * factor
                    add(watch ? .watchSteps : .phoneSteps, watch: watch, type: "stepCount",
                        start: instant(start), end: instant(end), .quantity(steps))
                    add(watch ? .watchDistance : .phoneDistance, watch: watch, type: "distanceWalkingRunning",
                        start: instant(start), end: instant(end), .quantity((metres * 10).rounded() / 10))
                }
            }
        }
        for workout in workouts where workout.kind == .cycling {
            for (start, end) in chunks(workout.start, workout.end, lengths: 1...10) {
                let metres = (start..<end).reduce(0) { $0 + wheelMetres[$1] }
                add(.watchCyclingDistance, watch: true, type: "distanceCycling", start: instant(start), end: instant(end),
                    .quantity(metres.rounded()))
            }
        }
    }

    /// Active energy all day in short pieces; exercise minutes for brisk walks and workouts.
    private mutating func writeEnergyAndExercise() {
        for (runStart, runEnd) in runs({ activity[$0] != nil }) {
            let lengths = activity[runStart] == .sedentary ? 5...15 : 1...10
            for (start, end) in chunks(runStart, runEnd, lengths: lengths) {
                let kcal = (start..<end).reduce(0) { $0 + energy[$1] }
                add(.activeEnergy, watch: true, type: "activeEnergyBurned", start: instant(start), end: instant(end),
                    .quantity((kcal * 100).rounded() / 100))
            }
        }
        for (runStart, runEnd) in runs({ activity[$0]?.countsAsExercise ?? false }) {
            for (start, end) in chunks(runStart, runEnd, lengths: 1...10) {
                add(.exerciseTime, watch: true, type: "appleExerciseTime", start: instant(start), end: instant(end),
                    .quantity(Double(end - start)))
            }
        }
    }

    /// An Apple Watch stand hour: stood when the wearer moved for a minute or more in the hour.
    private mutating func writeStand() {
        for hour in 0..<24 {
            let start = hour * 60, end = start + 60
            guard start >= wake, end <= bedtime else { continue }
            let moving = (start..<end).filter { cadence[$0] > 0 }.count
            let stood = moving > 0 || rng.chance(0.3)
            add(.standHour, watch: true, type: "appleStandHour", start: instant(start), end: instant(end),
                .category(stood ? "stood" : "idle"))
            let minutes = stood ? min(60, moving + rng.int(1...4)) : 0
            if minutes > 0 {
                add(.standTime, watch: true, type: "appleStandTime", start: instant(start), end: instant(end),
                    .quantity(Double(minutes)))
            }
        }
    }

    /// Readings every few minutes at rest, more often on the move, every minute in workouts.
    private mutating func writeHeartRate() {
        var minute = wake
        while minute < bedtime {
            let value = (heartRate[minute] + rng.double(-2...2)).rounded()
            add(.heartRate, watch: true, type: "heartRate", start: instant(minute, second: rng.int(0...59)),
                .quantity(value))
            switch activity[minute] {
            case .workout?: minute += 1
            case .walking?, .briskWalking?: minute += rng.int(2...3)
            default: minute += rng.int(4...7)
            }
        }
    }

    /// The night ending this morning: `inBed` from the phone, stages from the watch in cycles of
    /// about 90 minutes (deep sleep early in the night, more REM towards the morning), sleeping
    /// heart rate every five minutes.
    private mutating func writeSleep() {
        let getUp = wake + rng.int(2...8)
        add(.inBed, watch: false, type: "sleepAnalysis", start: instant(nightBed), end: instant(getUp), .category("inBed"))
        let onset = nightBed + rng.int(5...20)
        var stages: [(String, Int, Int)] = []
        func append(_ stage: String, _ start: Int, _ end: Int) {
            let end = min(end, wake)
            guard start < end else { return }
            if let last = stages.last, last.0 == stage, last.2 == start {
                stages[stages.count - 1].2 = end
            } else {
                stages.append((stage, start, end))
            }
        }
        let deepShare = [0.30, 0.22, 0.10, 0.04]
        let remShare = [0.10, 0.18, 0.25, 0.30]
        var cycleStart = onset
        var cycle = 0
        while cycleStart < wake {
            let length = Double(rng.int(85...105))
            let deep = (length * (cycle < deepShare.count ? deepShare[cycle] : 0)).rounded()
            let rem = (length * (cycle < remShare.count ? remShare[cycle] : 0.32)).rounded()
            let core = length - deep - rem
            var cursor = cycleStart
            for (stage, minutes) in [("asleepCore", (core / 2).rounded()), ("asleepDeep", deep),
                                     ("asleepCore", core - (core / 2).rounded()), ("asleepREM", rem)] where minutes > 0 {
                append(stage, cursor, cursor + Int(minutes))
                cursor += Int(minutes)
            }
            if cursor < wake - 30, rng.chance(0.35) {
                let awake = rng.int(2...6)
                append("awake", cursor, cursor + awake)
                cursor += awake
            }
            cycleStart = cursor
            cycle += 1
        }
        for (stage, start, end) in stages {
            add(.sleepStage, watch: true, type: "sleepAnalysis", start: instant(start), end: instant(end), .category(stage))
            var minute = start
            while minute < end {
                let offset: Double = stage == "asleepDeep" ? -5 : stage == "asleepREM" ? 2 : stage == "awake" ? 8 : -3
                add(.heartRate, watch: true, type: "heartRate", start: instant(minute, second: rng.int(0...59)),
                    .quantity((rest + offset + rng.double(-2...2)).rounded()))
                minute += 5
            }
        }
    }

    /// The watch's workout records: totals are the sums of its own samples in the workout, and
    /// some outdoor sessions were paused once (a traffic light, a drink).
    private mutating func writeWorkouts() {
        for workout in workouts {
            let start = instant(workout.start), end = instant(workout.end)
            let inside = result.watch.filter { $0.start >= start && $0.end <= end }
            let kcal = inside.filter { $0.type == "activeEnergyBurned" }.reduce(0) { $0 + ($1.quantity ?? 0) }
            let distanceType: String?
            switch workout.kind {
            case .running, .hiking: distanceType = "distanceWalkingRunning"
            case .cycling: distanceType = "distanceCycling"
            case .traditionalStrengthTraining, .highIntensityIntervalTraining: distanceType = nil
            }
            let metres = distanceType.map { type in inside.filter { $0.type == type }.reduce(0) { $0 + ($1.quantity ?? 0) } }
            var events: [WorkoutEvent] = []
            if !workout.kind.isIndoor, workout.end - workout.start > 20, rng.chance(0.4) {
                let pause = rng.int(workout.start + 5...workout.end - 10)
                events.append(WorkoutEvent(type: .pause, date: instant(pause, second: rng.int(0...59))))
                events.append(WorkoutEvent(type: .resume, date: instant(pause + rng.int(1...3), second: rng.int(0...59))))
            }
            let details = WorkoutDetails(activityType: workout.kind.rawValue, totalEnergyBurned: (kcal * 10).rounded() / 10,
                                         totalDistance: metres.map { ($0 * 10).rounded() / 10 }, events: events)
            add(.workout, watch: true, type: "workout", start: start, end: end, .workout(details),
                metadata: [MetadataEntry(key: "HKIndoorWorkout", value: .bool(workout.kind.isIndoor))])
        }
    }
}
