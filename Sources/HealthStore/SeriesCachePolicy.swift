/// Which decoded statistics series stay in memory, as a plain value: least recently used eviction
/// behind a frequency admission test (TinyLFU's idea, with exact counts).
///
/// Plain LRU fails the workload this cache exists for: a dashboard that polls every user in turn.
/// When the users' series together exceed the budget, LRU drops each series just before its turn
/// comes round again, so every poll is cold. Here a series that is not resident is kept only if
/// it was asked for more often than every resident series that would have to make room for it;
/// on a tie it is answered and then dropped. Under a round-robin poll the first series to fit
/// stay and keep hitting (hit ratio = what fits / what is polled, instead of 0), while a series
/// asked for repeatedly soon outranks idle ones. Counts are halved every `agingPeriod` asks, so
/// yesterday's busy user does not hold memory forever and the count table stays small.
public struct SeriesCachePolicy<Key: Hashable & Sendable>: Sendable {
    private struct Resident: Sendable {
        var bytes: Int
        var lastUse: UInt64
    }

    /// Bytes the resident series may hold in all.
    public let budget: Int
    private var residents: [Key: Resident] = [:]
    private var frequency: [Key: UInt32] = [:]
    private var clock: UInt64 = 0
    private var asksSinceAging = 0

    /// Resident bytes, as last stored.
    public private(set) var bytes = 0
    /// Asks answered by a resident series.
    public private(set) var hits = 0
    /// Asks that had to read and decode rows.
    public private(set) var misses = 0
    /// Resident series dropped to make room for another.
    public private(set) var evictions = 0
    /// Series answered and then not kept, because they were not asked for more often than what they would displace.
    public private(set) var rejections = 0

    public init(budget: Int) { self.budget = budget }

    /// How many asks pass between two halvings of the counts: enough for every resident series to be
    /// asked several times, so a round of polls does not forget the previous round.
    var agingPeriod: Int { 16 * max(64, residents.count) }

    public var residentCount: Int { residents.count }

    public func isResident(_ key: Key) -> Bool { residents[key] != nil }

    /// How often `key` was asked for lately (halved every `agingPeriod` asks).
    public func frequency(of key: Key) -> UInt32 { frequency[key] ?? 0 }

    /// Notes a query of `key`; true when its series is resident (a hit).
    public mutating func ask(_ key: Key) -> Bool {
        clock += 1
        frequency[key, default: 0] &+= 1
        asksSinceAging += 1
        if asksSinceAging >= agingPeriod { age() }
        guard residents[key] != nil else {
            misses += 1
            return false
        }
        residents[key]?.lastUse = clock
        hits += 1
        return true
    }

    /// After a query of `key` left its series `bytes` large: whether to keep it, and which resident
    /// series to drop. A resident series that grew stays and pushes out the least recently used
    /// others (it is in use, and it was admitted on its merits); a new one must outrank all of them.
    /// A series larger than the whole budget is never kept, so the budget holds at every step.
    public mutating func store(_ key: Key, bytes size: Int) -> (keep: Bool, evicted: [Key]) {
        if let resident = residents[key] {
            guard size <= budget else {
                residents[key] = nil
                bytes -= resident.bytes
                rejections += 1
                return (false, [])
            }
            bytes += size - resident.bytes
            residents[key]?.bytes = size
            let victims = leastRecentlyUsed(freeing: bytes - budget, sparing: key)
            drop(victims)
            return (true, victims)
        }
        guard size <= budget else {
            rejections += 1
            return (false, [])
        }
        let victims = leastRecentlyUsed(freeing: bytes + size - budget, sparing: key)
        let candidate = frequency(of: key)
        guard victims.allSatisfy({ frequency(of: $0) < candidate }) else {
            rejections += 1
            return (false, [])
        }
        drop(victims)
        residents[key] = Resident(bytes: size, lastUse: clock)
        bytes += size
        return (true, victims)
    }

    /// Forgets every resident series (the counters stay).
    public mutating func removeAll() {
        residents.removeAll()
        bytes = 0
    }

    /// The least recently used residents other than `key` whose bytes add up to at least `needed`.
    private func leastRecentlyUsed(freeing needed: Int, sparing key: Key) -> [Key] {
        guard needed > 0 else { return [] }
        var freed = 0
        var victims: [Key] = []
        for (candidate, resident) in residents.sorted(by: { $0.value.lastUse < $1.value.lastUse }) where candidate != key {
            victims.append(candidate)
            freed += resident.bytes
            if freed >= needed { break }
        }
        return victims
    }

    private mutating func drop(_ victims: [Key]) {
        for victim in victims {
            guard let resident = residents.removeValue(forKey: victim) else { continue }
            bytes -= resident.bytes
            evictions += 1
        }
    }

    private mutating func age() {
        asksSinceAging = 0
        frequency = frequency.compactMapValues { $0 > 1 ? $0 / 2 : nil }
    }
}
