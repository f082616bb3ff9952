import Testing
import HealthModel
@testable import HealthAPI

@Suite struct HeartRateZoneFormulaTests {
    @Test func tanakaMaximum() {
        #expect(HeartRateZones.maximumTenths(age: 30) == 1870)   // 208 - 21
        #expect(HeartRateZones.maximumTenths(age: 35) == 1835)   // 183.5, exactly
        #expect(HeartRateZones.maximumTenths(age: 40) == 1800)
    }

    @Test func percentOfMaximumBands() {
        // Age 40: maximum 180.
        #expect(HeartRateZones.zone(age: 40, goal: .fatBurn, restingHeartRate: nil)
                == .init(maxHeartRate: 180, low: 90, high: 126, method: .percentOfMaximum))
        #expect(HeartRateZones.zone(age: 40, goal: .cardio, restingHeartRate: nil)
                == .init(maxHeartRate: 180, low: 126, high: 153, method: .percentOfMaximum))
        #expect(HeartRateZones.zone(age: 40, goal: .peak, restingHeartRate: nil)
                == .init(maxHeartRate: 180, low: 153, high: 180, method: .percentOfMaximum))
        // Age 35: maximum 183.5 rounds half up to 184; 50 % is 91.75 -> 92, 70 % is 128.45 -> 128.
        #expect(HeartRateZones.zone(age: 35, goal: .fatBurn, restingHeartRate: nil)
                == .init(maxHeartRate: 184, low: 92, high: 128, method: .percentOfMaximum))
    }

    @Test func karvonenBands() {
        // Age 30, rest 60: maximum 187, reserve 127. 50 %: 60 + 63.5 = 123.5 -> 124; 70 %: 60 + 88.9 -> 149.
        #expect(HeartRateZones.zone(age: 30, goal: .fatBurn, restingHeartRate: 60)
                == .init(maxHeartRate: 187, low: 124, high: 149, method: .karvonen))
        // 85 %: 60 + 107.95 = 167.95 -> 168; 100 % is the maximum.
        #expect(HeartRateZones.zone(age: 30, goal: .peak, restingHeartRate: 60)
                == .init(maxHeartRate: 187, low: 168, high: 187, method: .karvonen))
        // A fractional resting rate (58.5): reserve 128.5, cardio 70 % -> 148.45 -> 148, 85 % -> 167.725 -> 168.
        #expect(HeartRateZones.zone(age: 30, goal: .cardio, restingHeartRate: 58.5)
                == .init(maxHeartRate: 187, low: 148, high: 168, method: .karvonen))
        #expect(HeartRateZones.zone(age: 100, goal: .cardio, restingHeartRate: 140) == nil)
        // A stored reading no heart gives names no zone, never a trap.
        #expect(HeartRateZones.zone(age: 30, goal: .cardio, restingHeartRate: 1e300) == nil)
        #expect(HeartRateZones.zone(age: 30, goal: .cardio, restingHeartRate: -5) == nil)
    }

    @Test func completedYears() throws {
        let born = try #require(HealthDay(year: 1990, month: 6, day: 15))
        #expect(HeartRateZones.age(born: born, on: try #require(HealthDay(year: 2026, month: 6, day: 14))) == 35)
        #expect(HeartRateZones.age(born: born, on: try #require(HealthDay(year: 2026, month: 6, day: 15))) == 36)
        let leap = try #require(HealthDay(year: 2000, month: 2, day: 29))
        #expect(HeartRateZones.age(born: leap, on: try #require(HealthDay(year: 2026, month: 2, day: 28))) == 25)
        #expect(HeartRateZones.age(born: leap, on: try #require(HealthDay(year: 2026, month: 3, day: 1))) == 26)
    }
}

@Suite struct HeartRateZoneAPITests {
    @Test func parametersAndMethods() throws {
        let server = try TestServer()
        let user = server.createUser("erin")
        let token = server.token(user: user, app: "coach", read: ["restingHeartRate"], share: ["restingHeartRate"])
        let plain = server.request(.get, "/v1/heart-rate/zones?age=40&goal=cardio", token: token)
        #expect(plain.status == 200)
        #expect(plain["maxHeartRate"]?.numberValue == 180 && plain["low"]?.numberValue == 126 && plain["high"]?.numberValue == 153)
        #expect(plain["method"]?.stringValue == "percentOfMaximum" && plain["restingHeartRate"]?.isNull == true)
        let given = server.request(.get, "/v1/heart-rate/zones?age=30&goal=fatBurn&restingHeartRate=60", token: token)
        #expect(given["method"]?.stringValue == "karvonen" && given["low"]?.numberValue == 124 && given["high"]?.numberValue == 149)

        // A stored resting rate switches to Karvonen; the latest one counts.
        let saved = server.request(.post, "/v1/samples", token: token, json: """
            {"samples":[{"type":"restingHeartRate","value":70,"unit":"count/min","start":"2026-03-01T08:00:00Z"},
                        {"type":"restingHeartRate","value":60,"unit":"count/min","start":"2026-03-02T08:00:00Z"}]}
            """)
        #expect(saved.status == 201)
        let stored = server.request(.get, "/v1/heart-rate/zones?age=30&goal=fatBurn", token: token)
        #expect(stored["method"]?.stringValue == "karvonen" && stored["restingHeartRate"]?.numberValue == 60 && stored["low"]?.numberValue == 124)

        for bad in ["goal=cardio", "age=40", "age=40&goal=sprint", "age=0&goal=cardio", "age=x&goal=cardio",
                    "age=40&goal=cardio&restingHeartRate=abc", "age=40&goal=cardio&restingHeartRate=10",
                    "age=40&goal=cardio&extra=1", "age=110&goal=cardio&restingHeartRate=140"] {
            let reply = server.request(.get, "/v1/heart-rate/zones?\(bad)", token: token)
            #expect(reply.status == 400 && reply.code == "errorInvalidArgument", "\(bad)")
        }
        #expect(server.request(.get, "/v1/heart-rate/zones?age=40&goal=cardio").status == 401)
    }

    @Test func readPrivacyForRestingRateAndDateOfBirth() throws {
        let server = try TestServer()
        let user = server.createUser("fay")
        let watch = server.token(user: user, app: "watch", read: [], share: ["restingHeartRate"])
        let other = server.token(user: user, app: "other", read: [], share: [])
        let reader = server.token(user: user, app: "reader", read: ["restingHeartRate", "dateOfBirth"], share: [])
        #expect(server.request(.post, "/v1/samples", token: watch,
                               json: #"{"samples":[{"type":"restingHeartRate","value":55,"unit":"count/min","start":"2026-03-02T08:00:00Z"}]}"#).status == 201)
        // Neither readable nor its own: as if there were none.
        let hidden = server.request(.get, "/v1/heart-rate/zones?age=40&goal=peak", token: other)
        #expect(hidden["method"]?.stringValue == "percentOfMaximum")
        // Its own sample is visible to the app that saved it, even without read permission.
        #expect(server.request(.get, "/v1/heart-rate/zones?age=40&goal=peak", token: watch)["method"]?.stringValue == "karvonen")

        // Age from dateOfBirth only with read permission for it.
        let put = server.request(.put, "/v1/characteristics", token: TestServer.adminToken,
                                 json: #"{"user":"fay","dateOfBirth":"1986-01-01"}"#)
        #expect(put.status == 200)
        let withBirth = server.request(.get, "/v1/heart-rate/zones?goal=peak", token: reader)
        #expect(withBirth.status == 200 && (39...41).contains(withBirth["age"]?.numberValue ?? 0))
        #expect(withBirth["method"]?.stringValue == "karvonen")
        #expect(server.request(.get, "/v1/heart-rate/zones?goal=peak", token: other).status == 400)
    }
}
