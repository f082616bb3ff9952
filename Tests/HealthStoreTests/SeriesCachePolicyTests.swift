import Testing
@testable import HealthStore
@testable import SQLiteStore

@Suite struct SeriesCachePolicyTests {
    /// Asks for `key` and stores it at `bytes` after a miss, as the cache does after a query.
    @discardableResult
    static func query(_ policy: inout SeriesCachePolicy<Int>, _ key: Int, bytes: Int = 10) -> Bool {
        let hit = policy.ask(key)
        _ = policy.store(key, bytes: bytes)
        return hit
    }

    /// Polling more series than fit, in turn: LRU would miss every time; this policy keeps the
    /// first ones that fit and hits them on every later round.
    @Test(arguments: [(20, 30), (70, 96), (64, 192), (10, 11)])
    func roundRobinHitsWhatFits(capacity: Int, polled: Int) {
        var policy = SeriesCachePolicy<Int>(budget: capacity * 10)
        for key in 0..<polled { Self.query(&policy, key) }
        #expect(policy.hits == 0 && policy.residentCount == capacity && policy.bytes == capacity * 10)
        let rounds = 20
        for _ in 0..<rounds {
            for key in 0..<polled { Self.query(&policy, key) }
        }
        #expect(policy.hits == rounds * capacity, "hits \(policy.hits) of \(rounds * polled)")
        #expect(policy.evictions == 0)
        #expect(policy.bytes <= policy.budget)
    }

    /// A working set that fits is all hits after the first round, whatever the order.
    @Test func aFittingWorkingSetAlwaysHits() {
        var policy = SeriesCachePolicy<Int>(budget: 100)
        var generator = SystemRandomNumberGenerator()
        for key in 0..<10 { Self.query(&policy, key) }
        for _ in 0..<1_000 { #expect(Self.query(&policy, Int.random(in: 0..<10, using: &generator))) }
        #expect(policy.evictions == 0 && policy.rejections == 0)
    }

    /// A series asked for more often than the resident ones displaces the least recently used of
    /// them; one asked for as often does not.
    @Test func frequencyDecidesAdmissionAndRecencyTheVictim() {
        var policy = SeriesCachePolicy<String>(budget: 20)
        for key in ["a", "b"] { _ = policy.ask(key); _ = policy.store(key, bytes: 10) }
        _ = policy.ask("c")
        #expect(policy.store("c", bytes: 10) == (keep: false, evicted: []))
        _ = policy.ask("a")  // a: 2 asks, b: 1, c: 1
        _ = policy.ask("c")  // c: 2 asks, more than b (the least recently used)
        let decision = policy.store("c", bytes: 10)
        #expect(decision.keep && decision.evicted == ["b"])
        #expect(policy.isResident("a") && policy.isResident("c") && !policy.isResident("b"))
        #expect(policy.evictions == 1 && policy.rejections == 1 && policy.bytes == 20)
    }

    /// The budget holds at every step, whatever the sizes and order; a series larger than the
    /// whole budget is answered but never kept.
    @Test(arguments: 1...20)
    func theBudgetAlwaysHolds(seed: UInt64) {
        var state = seed &* 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        var policy = SeriesCachePolicy<Int>(budget: 1_000)
        var sizes: [Int: Int] = [:]
        var resident = Set<Int>()
        for _ in 0..<3_000 {
            let key = next(next(2) == 0 ? 8 : 60)  // a few hot keys and many cold ones
            let hit = policy.ask(key)
            #expect(hit == resident.contains(key))
            let size = next(10) == 0 ? 50 + next(1_200) : 20 + next(80)  // sometimes larger than the budget
            sizes[key] = size
            let decision = policy.store(key, bytes: size)
            for victim in decision.evicted { resident.remove(victim) }
            if decision.keep { resident.insert(key) } else { resident.remove(key) }
            #expect(policy.bytes <= policy.budget)
            #expect(policy.bytes == resident.reduce(0) { $0 + (sizes[$1] ?? 0) })
            #expect(!decision.keep || size <= policy.budget)
        }
        #expect(policy.hits + policy.misses == 3_000)
    }

    /// Counts are halved every aging period: yesterday's busy series loses its lead.
    @Test func countsAge() {
        var policy = SeriesCachePolicy<Int>(budget: 10)
        for _ in 0..<100 { _ = policy.ask(1) }
        let period = policy.agingPeriod
        for key in 0..<period { _ = policy.ask(1_000 + key % 7) }
        #expect(policy.frequency(of: 1) <= 50)
        policy.removeAll()
        #expect(policy.residentCount == 0 && policy.bytes == 0)
    }
}
