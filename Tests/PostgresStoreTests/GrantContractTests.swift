import ClientThreads
import Foundation
import HealthModel
import HealthStore
import PostgresStore
import PostgresTestSupport
import SQLiteStore
import Synchronization
import Testing

/// Permissions belong to the person and the app (docs/decisions.md, "People and sign-in"): every
/// token of an app reads its access from the person's grant, a change reaches every token and what
/// it has in flight, and a permission request's poll issues its token once. On both backends.
enum GrantContract {
    static let t0: Int64 = 1_700_000_000_000

    /// Two tokens of one app, made by the admin with different lists: both follow one grant, the
    /// union of what was named; narrowing it narrows both (in the caches too) and tells the
    /// observers about each; revoking the app revokes both and forgets the switches.
    static func everyTokenOfTheAppFollowsTheGrant(_ t: TestStore) throws {
        let alice = try t.store.createUser(name: "alice")
        let (first, firstToken) = try t.store.createAuthorization(user: alice, app: "runner", read: ["stepCount"], share: ["stepCount"])
        let (second, secondToken) = try t.store.createAuthorization(user: alice, app: "runner", read: ["heartRate"], share: [])
        let other = try t.store.createAuthorization(user: alice, app: "scale", read: [], share: ["bodyMass"]).authorization
        for token in [firstToken, secondToken] {
            let found = try #require(try t.store.authorization(tokenHash: TokenHashing.hash(token)))
            #expect(found.read == ["stepCount", "heartRate"] && found.share == ["stepCount"])
        }
        let ended = Mutex<[String]>([])
        t.store.addAuthorizationObserver { id in ended.withLock { $0.append(id) } }

        let narrowed = try #require(try t.store.updateAppGrant(userRowID: alice.rowID, app: "runner") { grant in
            try grant.setSwitches(read: ["heartRate"], share: [])
        })
        #expect(narrowed.read == ["heartRate"] && narrowed.share.isEmpty)
        #expect(narrowed.decidedRead == ["stepCount", "heartRate"] && narrowed.decidedShare == ["stepCount"])
        #expect(Set(ended.withLock { $0 }) == [first.id, second.id], "the other app's token is not ended")
        for token in [firstToken, secondToken] {
            #expect(t.store.cachedAuthorization(tokenHash: TokenHashing.hash(token)) == nil)
            let found = try #require(try t.store.authorization(tokenHash: TokenHashing.hash(token)))
            #expect(found.read == ["heartRate"] && found.share.isEmpty)
        }
        // The in-flight sweep's read sees the narrowed access: a stream opened before differs from it.
        let live = try t.store.liveAuthorizations(ids: [first.id, second.id, other.id])
        #expect(live[first.id]?.read == ["heartRate"] && live[other.id] == other)
        // A switch the app never asked for cannot be turned on.
        #expect(throws: AppGrant.UnknownSwitch.self) {
            _ = try t.store.updateAppGrant(userRowID: alice.rowID, app: "runner") { try $0.setSwitches(read: ["bodyMass"], share: []) }
        }
        #expect(try t.store.updateAppGrant(userRowID: alice.rowID, app: "nobody") { _ in } == nil)
        // The admin turns on what it names and leaves the person's other switches alone.
        _ = try t.store.createAuthorization(user: alice, app: "runner", read: [], share: ["stepCount"])
        let grants = try t.store.appGrants(userRowID: alice.rowID)
        #expect(grants.map(\.app) == ["runner", "scale"])
        #expect(grants.first?.read == ["heartRate"] && grants.first?.share == ["stepCount"])

        ended.withLock { $0.removeAll() }
        #expect(try t.store.revokeApp(userRowID: alice.rowID, app: "runner"))
        #expect(try !t.store.revokeApp(userRowID: alice.rowID, app: "runner"))
        #expect(Set(ended.withLock { $0 }).count == 3)
        for token in [firstToken, secondToken] { #expect(try t.store.authorization(tokenHash: TokenHashing.hash(token)) == nil) }
        #expect(try t.store.appGrants(userRowID: alice.rowID).map(\.app) == ["scale"])
        #expect(try t.store.appPermissions(userRowID: alice.rowID).map(\.app) == ["scale"])
    }

    /// A token's use is written as the app's `lastUsed`, at most once a minute per token.
    static func lastUsedIsWrittenOnceAMinute(_ t: TestStore) throws {
        let alice = try t.store.createUser(name: "alice")
        let (_, token) = try t.store.createAuthorization(user: alice, app: "runner", read: [], share: ["stepCount"])
        #expect(try t.store.appGrants(userRowID: alice.rowID).first?.lastUsed == nil)
        let before = StoreClock.nowMilliseconds()
        _ = try t.store.authorization(tokenHash: TokenHashing.hash(token))
        waitForUsage(t)
        let first = try #require(try t.store.appGrants(userRowID: alice.rowID).first?.lastUsed)
        #expect(first >= before)
        usleep(20_000)
        for _ in 0..<5 { _ = t.store.cachedAuthorization(tokenHash: TokenHashing.hash(token)) }
        waitForUsage(t)
        #expect(try t.store.appGrants(userRowID: alice.rowID).first?.lastUsed == first, "written again within the minute")
    }

    static func waitForUsage(_ t: TestStore) {
        if let store = t.store as? SQLiteHealthStore { store.waitForUsageWrites() }
        if let store = t.store as? PostgresHealthStore { store.waitForUsageWrites() }
    }

    static func request(_ code: String, created: Int64 = t0) -> AuthorizationRequestRecord {
        AuthorizationRequestRecord(id: UUID().uuidString, userCode: code, app: "runner", displayName: "Runner <b>", reason: "to count",
                                   share: ["stepCount", "heartRate"], read: ["stepCount"], created: created, interval: 5)
    }

    /// A request is stored once per user code; the person's answer updates their grant; the poll
    /// that issues makes one token following the grant, and the code is spent afterwards.
    static func aRequestIssuesItsTokenOnce(_ t: TestStore) throws {
        let alice = try t.store.createUser(name: "alice")
        let hash = Array(repeating: UInt8(7), count: 32)
        #expect(try t.store.createAuthorizationRequest(request("BCDFGHJK"), deviceCodeHash: hash))
        #expect(try !t.store.createAuthorizationRequest(request("BCDFGHJK"), deviceCodeHash: Array(repeating: 8, count: 32)))
        let stored = try #require(try t.store.authorizationRequest(userCode: "BCDFGHJK"))
        #expect(stored.displayName == "Runner <b>" && stored.share == ["stepCount", "heartRate"] && stored.state == .pending)
        if case .unknown = try t.store.pollAuthorizationRequest(deviceCodeHash: Array(repeating: 9, count: 32), { _ in true }) {} else {
            Issue.record("an unknown device code polled")
        }
        let answered = try #require(try t.store.answerAuthorizationRequest(userCode: "BCDFGHJK", user: alice) { record, grant in
            grant.answer(shown: grant.undecided(share: record.share, read: record.read), allow: true, share: ["stepCount"], read: [])
            record.state = .allowed
            record.userRowID = alice.rowID
            record.grantedShare = ["stepCount"]
        })
        #expect(answered.state == .allowed)
        let grant = try #require(try t.store.appGrants(userRowID: alice.rowID).first)
        #expect(grant.share == ["stepCount"] && grant.read.isEmpty && grant.decidedShare == ["stepCount", "heartRate"]
                && grant.decidedRead == ["stepCount"] && grant.displayName == "Runner <b>")
        guard case .issued(let record, let authorization, let token) = try t.store.pollAuthorizationRequest(deviceCodeHash: hash, { _ in true })
        else { Issue.record("no token"); return }
        #expect(record.state == .issued && authorization.share == ["stepCount"] && authorization.read.isEmpty)
        #expect(try t.store.authorization(tokenHash: TokenHashing.hash(token)) == authorization)
        // Spent: the store says so, and no second token is made whatever the poll answers.
        guard case .polled(let spent) = try t.store.pollAuthorizationRequest(deviceCodeHash: hash, { record in
            record.state == .allowed
        }) else { Issue.record("a spent code issued again"); return }
        #expect(spent.state == .issued)
    }

    /// Polls racing on one allowed request (two threads, on PostgreSQL two nodes) make one token.
    static func racingPollsIssueOneToken(_ t: TestStore, other: (any HealthDataStore)?) throws {
        let alice = try t.store.createUser(name: "alice")
        for round in 0..<4 {
            let hash = Array(repeating: UInt8(round + 1), count: 32)
            let code = "BCDFGHJ" + ["K", "L", "M", "N"][round]
            #expect(try t.store.createAuthorizationRequest(request(code), deviceCodeHash: hash))
            _ = try t.store.answerAuthorizationRequest(userCode: code, user: alice) { record, grant in
                grant.answer(shown: (record.share, record.read), allow: true, share: ["stepCount"], read: ["stepCount"])
                record.state = .allowed
                record.userRowID = alice.rowID
            }
            let stores: [any HealthDataStore] = [t.store, other ?? t.store, t.store, other ?? t.store]
            let issued = Atomic<Int>(0)
            let failures = Atomic<Int>(0)
            let racing = stores.map { UncheckedStore(store: $0) }
            onThreads(racing.count) { index in
                do {
                    let outcome = try racing[index].store.pollAuthorizationRequest(deviceCodeHash: hash) { record in
                        guard record.state == .allowed else { return false }
                        record.state = .issued
                        return true
                    }
                    if case .issued = outcome { issued.add(1, ordering: .relaxed) }
                } catch {
                    failures.add(1, ordering: .relaxed)
                }
            }
            #expect(failures.load(ordering: .relaxed) == 0)
            #expect(issued.load(ordering: .relaxed) == 1, "round \(round)")
        }
    }

    /// The person's revocation, narrowing and sign-out, and the admin's revocation, end what is in
    /// flight before they wait for the writer: the observers (the streams) hear of each while
    /// another write still holds the app's grant (SQLite's one writer; PostgreSQL's row lock), as a
    /// write with a slow fsync would. The change itself then lands as usual.
    static func revocationsEndInFlightBeforeWaitingForTheWriter(_ t: TestStore) throws {
        let data = HealthData(t.store)
        let alice = try t.store.createUser(name: "alice")
        let runner = try t.store.createAuthorization(user: alice, app: "runner", read: ["stepCount"], share: ["stepCount"]).authorization
        let scale = try t.store.createAuthorization(user: alice, app: "scale", read: ["bodyMass"], share: ["bodyMass"]).authorization
        let watch = try t.store.createAuthorization(user: alice, app: "watch", read: ["heartRate"], share: []).authorization
        let sessionHash = Array(repeating: UInt8(7), count: 32)
        try t.store.createSession(userRowID: alice.rowID, tokenHash: sessionHash, nowMs: StoreClock.nowMilliseconds())
        let ownReads = AppAuthorization.personsOwnReads(user: alice, sessionTokenHash: sessionHash).id
        let ended = Mutex<[String]>([])
        t.store.addAuthorizationObserver { id in ended.withLock { $0.append(id) } }
        let store = UncheckedStore(store: t.store)
        let person = data.person(alice)

        /// Runs `change` while another transaction holds `app`'s grant; true when `id` was ended
        /// before that transaction let go.
        func endsWhileTheWriterIsHeld(app: String, id: String, _ change: @escaping @Sendable () throws -> Void) -> Bool {
            let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
            let held = DispatchSemaphore(value: 0), changed = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                _ = try? store.store.updateAppGrant(userRowID: alice.rowID, app: app) { _ in
                    holding.signal()
                    release.wait()
                }
                held.signal()
            }
            holding.wait()
            ended.withLock { $0.removeAll() }
            DispatchQueue.global().async {
                do { try change() } catch { Issue.record("the change failed: \(error)") }
                changed.signal()
            }
            let heard = eventually(within: 10) { ended.withLock { $0.contains(id) } }
            release.signal()
            held.wait()
            changed.wait()
            return heard
        }

        #expect(endsWhileTheWriterIsHeld(app: "scale", id: scale.id) {
            _ = try person.updateAppGrant(app: "scale") { try $0.setSwitches(read: [], share: ["bodyMass"]) }
        }, "a narrowing")
        #expect(endsWhileTheWriterIsHeld(app: "runner", id: runner.id) { _ = try person.revokeApp("runner") }, "the person's revocation")
        #expect(endsWhileTheWriterIsHeld(app: "watch", id: watch.id) { _ = try data.revokeAuthorization(id: watch.id) }, "the admin's")
        #expect(endsWhileTheWriterIsHeld(app: "scale", id: ownReads) { _ = try data.people.deleteSession(tokenHash: sessionHash) },
                "a sign-out")
        // Each change landed once the writer was free.
        #expect(try t.store.appGrants(userRowID: alice.rowID).first { $0.app == "scale" }?.read == [])
        #expect(try t.store.liveAuthorizations(ids: [runner.id, watch.id, scale.id]).keys.sorted() == [scale.id])
        #expect(try t.store.session(tokenHash: sessionHash) == nil)
        // Widening ends nothing, and an unknown app asks nothing of the observers.
        ended.withLock { $0.removeAll() }
        _ = try person.updateAppGrant(app: "scale") { try $0.setSwitches(read: ["bodyMass"], share: ["bodyMass"]) }
        #expect(try person.revokeApp("nobody") == false)
        #expect(Set(ended.withLock { $0 }) == [scale.id], "the widening ends the tokens in the write only (they pick up the new access)")
    }
}

/// A store handed to the racing threads (the stores are thread-safe; the protocol existential is Sendable).
struct UncheckedStore: Sendable {
    let store: any HealthDataStore
}

@Suite struct SQLiteGrantContractTests {
    @Test func everyTokenOfTheAppFollowsTheGrant() throws { try GrantContract.everyTokenOfTheAppFollowsTheGrant(TestStore(.sqlite)) }
    @Test func lastUsedIsWrittenOnceAMinute() throws { try GrantContract.lastUsedIsWrittenOnceAMinute(TestStore(.sqlite)) }
    @Test func aRequestIssuesItsTokenOnce() throws { try GrantContract.aRequestIssuesItsTokenOnce(TestStore(.sqlite)) }
    @Test func racingPollsIssueOneToken() throws { try GrantContract.racingPollsIssueOneToken(TestStore(.sqlite), other: nil) }
    @Test func revocationsEndInFlightBeforeWaitingForTheWriter() throws {
        try GrantContract.revocationsEndInFlightBeforeWaitingForTheWriter(TestStore(.sqlite))
    }
}

@Suite(.enabled(if: TestPostgres.isAvailable, "set HEALTHD_TEST_POSTGRES_URL to run the grant contract on the PostgreSQL store"))
struct PostgresGrantContractTests {
    @Test func everyTokenOfTheAppFollowsTheGrant() throws { try GrantContract.everyTokenOfTheAppFollowsTheGrant(TestStore(.postgres)) }
    @Test func lastUsedIsWrittenOnceAMinute() throws { try GrantContract.lastUsedIsWrittenOnceAMinute(TestStore(.postgres)) }
    @Test func aRequestIssuesItsTokenOnce() throws { try GrantContract.aRequestIssuesItsTokenOnce(TestStore(.postgres)) }
    @Test func revocationsEndInFlightBeforeWaitingForTheWriter() throws {
        try GrantContract.revocationsEndInFlightBeforeWaitingForTheWriter(TestStore(.postgres))
    }
    @Test func racingPollsOnTwoNodesIssueOneToken() throws {
        let t = try TestStore(.postgres)
        try GrantContract.racingPollsIssueOneToken(t, other: try t.secondNode())
    }

    /// A narrowing on one node reaches the other node's observers (its streams) through NOTIFY.
    @Test func aNarrowingOnOneNodeEndsTheOthersTokens() throws {
        let t = try TestStore(.postgres)
        let nodeB = try t.secondNode()
        let alice = try t.store.createUser(name: "alice")
        let (authorization, token) = try t.store.createAuthorization(user: alice, app: "runner", read: ["stepCount"], share: [])
        #expect(try nodeB.authorization(tokenHash: TokenHashing.hash(token))?.read == ["stepCount"])
        let ended = Mutex<[String]>([])
        nodeB.addAuthorizationObserver { id in ended.withLock { $0.append(id) } }
        _ = try t.store.updateAppGrant(userRowID: alice.rowID, app: "runner") { try $0.setSwitches(read: [], share: []) }
        let deadline = Date().addingTimeInterval(30)
        while ended.withLock({ $0.isEmpty }) && Date() < deadline { usleep(5_000) }
        #expect(ended.withLock { $0 } == [authorization.id])
        #expect(try nodeB.authorization(tokenHash: TokenHashing.hash(token))?.read == [])
    }

    /// An existing database's live tokens become grants (the union per app) when 011 runs: a schema
    /// migrated to just before it, with the tokens as that schema kept them, is opened by the store.
    @Test func existingTokensBecomeGrants() throws {
        let schema = try TestSchema(prefix: "hd_grants_")
        let connection = try schema.connect()
        defer { connection.close() }
        try PostgresHealthStore.migrator().registered(before: "011-people-grants").migrate(connection)
        try connection.execute("""
            INSERT INTO users (id, external_id, name, created_ms) VALUES (7, 'alice-id', 'alice', 1);
            INSERT INTO sources (user_id, id, app) VALUES (7, 1, 'runner'), (7, 2, 'gone');
            INSERT INTO authorizations (id, user_id, app, source_id, token_hash, read_types, share_types, created_ms, revoked_ms) VALUES
                ('first', 7, 'runner', 1, '\\x01', 'stepCount', 'stepCount', 10, NULL),
                ('second', 7, 'runner', 1, '\\x02', 'heartRate', '', 20, NULL),
                ('gone', 7, 'gone', 2, '\\x03', 'bodyMass', '', 30, 40);
            """)
        let store = try PostgresHealthStore(configuration: schema.configuration, maxConnections: 2, listen: false)
        defer { store.close() }
        let grants = try store.appGrants(userRowID: 7)
        #expect(grants.map(\.app) == ["runner"])
        #expect(grants.first?.read == ["stepCount", "heartRate"] && grants.first?.share == ["stepCount"])
        #expect(grants.first?.decidedRead == ["stepCount", "heartRate"] && grants.first?.created == 10)
        let live = try store.liveAuthorizations(ids: ["first", "second", "gone"])
        #expect(live.keys.sorted() == ["first", "second"])
        #expect(live.values.allSatisfy { $0.read == ["stepCount", "heartRate"] && $0.share == ["stepCount"] })
    }
}
