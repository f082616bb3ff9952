import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import HealthClient

/// The client's pure parts: request building, date coding and answer decoding, without a server.
/// Calls against a running server live in EndToEndTests.
@Suite struct HealthClientRequestTests {
    let client = HealthClient(baseURL: URL(string: "http://127.0.0.1:8080/base")!, token: "tok-123")

    @Test func requestCarriesTokenPathAndQueryInOrderDroppingNils() throws {
        let request = try client.makeRequest("GET", "/v1/samples",
                                             query: [("type", "stepCount"), ("start", nil), ("limit", "5"), ("cursor", "abc")])
        #expect(request.httpMethod == "GET")
        #expect(request.url?.absoluteString == "http://127.0.0.1:8080/base/v1/samples?type=stepCount&limit=5&cursor=abc")
        #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer tok-123")
        #expect(request.value(forHTTPHeaderField: "Accept") == "application/json")
        #expect(request.value(forHTTPHeaderField: "Content-Type") == nil)
        #expect(request.httpBody == nil)
    }

    @Test func aPlusInAnOffsetStaysAPlus() throws {
        let request = try client.makeRequest("GET", "/v1/statistics", query: [("start", "2026-03-08T09:00:00+01:00")])
        let query = try #require(request.url?.query)
        #expect(query == "start=2026-03-08T09:00:00%2B01:00")
        #expect(URLComponents(url: try #require(request.url), resolvingAgainstBaseURL: false)?
            .queryItems?.first?.value == "2026-03-08T09:00:00+01:00")
    }

    @Test func noQueryItemsLeavesNoQuestionMark() throws {
        let request = try client.makeRequest("DELETE", "/v1/samples/u1", query: [("cursor", nil)])
        #expect(request.url?.absoluteString == "http://127.0.0.1:8080/base/v1/samples/u1")
    }

    @Test func aBodyIsJSONWithRFC3339Dates() throws {
        let start = Date(timeIntervalSince1970: 1_772_960_400.25)
        let sample = HealthSample.quantity("stepCount", 42, unit: "count", start: start, uuid: "u1")
        struct Body: Encodable { var samples: [HealthSample] }
        let request = try client.makeRequest("POST", "/v1/samples", body: Body(samples: [sample]))
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/json")
        let body = try #require(request.httpBody)
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        let first = try #require((object["samples"] as? [[String: Any]])?.first)
        #expect(first["start"] as? String == "2026-03-08T09:00:00.250Z")
        #expect(first["value"] as? Double == 42)
        #expect(first["uuid"] as? String == "u1")
        #expect(first["end"] == nil, "nil fields are left out, not sent as null")
    }

    @Test func statisticsOptionsAreNamedInAFixedOrder() {
        #expect(HealthStatisticsOptions([.mostRecent, .cumulativeSum]).queryValue == "cumulativeSum,mostRecent")
        #expect(HealthStatisticsOptions([.discreteMax, .discreteMin, .discreteAverage, .separateBySource]).queryValue
                    == "discreteAverage,discreteMin,discreteMax,separateBySource")
        #expect(HealthStatisticsOptions().queryValue == "")
    }

    @Test func datesParseWithAndWithoutFractionsAndRoundTrip() throws {
        #expect(HealthClient.parse("2026-03-08T09:00:00Z") == Date(timeIntervalSince1970: 1_772_960_400))
        #expect(HealthClient.parse("2026-03-08T10:00:00.5+01:00") == Date(timeIntervalSince1970: 1_772_960_400.5))
        #expect(HealthClient.parse("2026-03-08") == nil)
        #expect(HealthClient.parse("yesterday") == nil)
        let date = Date(timeIntervalSince1970: 1_772_960_400.125)
        #expect(HealthClient.parse(HealthClient.format(date)) == date)
    }

    @Test func metadataValuesKeepTheirJSONKind() throws {
        let values: [String: HealthMetadataValue] = ["flag": .bool(true), "n": .number(2.5), "s": .string("x")]
        let data = try HealthClient.encoder().encode(values)
        #expect(try HealthClient.decoder().decode([String: HealthMetadataValue].self, from: data) == values)
        let decoded = try JSONDecoder().decode([HealthMetadataValue].self, from: Data(#"[false, 3, "3"]"#.utf8))
        #expect(decoded == [.bool(false), .number(3), .string("3")])
    }
}

@Suite struct HealthClientResponseTests {
    @Test func aSamplePageDecodesWithItsCursor() throws {
        let body = #"""
        {"samples":[{"uuid":"u1","type":"stepCount","start":"2026-03-08T09:00:00Z","end":"2026-03-08T09:10:00.5Z",
          "value":420,"unit":"count","source":{"app":"a","user":"u"},"metadata":{"indoor":true}}],"next":"c2"}
        """#
        let page: HealthSamplePage = try HealthClient.decodeResponse(status: 200, data: Data(body.utf8))
        #expect(page.next == "c2")
        let sample = try #require(page.samples.first)
        #expect(sample.start == Date(timeIntervalSince1970: 1_772_960_400))
        #expect(sample.end == Date(timeIntervalSince1970: 1_772_961_000.5))
        #expect(sample.value == .number(420))
        #expect(sample.source == HealthSource(app: "a", user: "u"))
        #expect(sample.metadata?["indoor"] == .bool(true))

        let last: HealthSamplePage = try HealthClient.decodeResponse(status: 200, data: Data(#"{"samples":[],"next":null}"#.utf8))
        #expect(last.next == nil)
    }

    @Test func changesDecodeTheirAnchorAndDeletions() throws {
        let body = #"{"added":[],"deleted":[{"uuid":"u9","type":"heartRate"}],"anchor":"A.3","more":true}"#
        let changes: HealthChanges = try HealthClient.decodeResponse(status: 200, data: Data(body.utf8))
        #expect(changes.anchor == "A.3")
        #expect(changes.more)
        #expect(changes.deleted == [.init(uuid: "u9", type: "heartRate")])
    }

    @Test func aProblemBecomesATypedErrorWithItsFields() {
        let body = #"""
        {"type":"about:blank","title":"Bad Request","status":400,"detail":"1 sample is invalid",
         "code":"errorInvalidArgument","errors":[{"index":0,"field":"value","detail":"must not be negative"}]}
        """#
        #expect {
            let _: HealthSamplePage = try HealthClient.decodeResponse(status: 400, data: Data(body.utf8))
        } throws: { error in
            guard case .problem(let status, let code, let detail, let errors) = error as? HealthClientError else { return false }
            return status == 400 && code == "errorInvalidArgument" && detail == "1 sample is invalid"
                && errors == [.init(index: 0, field: "value", detail: "must not be negative")]
        }
    }

    @Test func authorizationDeniedIsRecognised() {
        let body = #"{"status":403,"code":"errorAuthorizationDenied","detail":"no share permission"}"#
        do {
            let _: HealthChanges = try HealthClient.decodeResponse(status: 403, data: Data(body.utf8))
            Issue.record("a 403 decoded as success")
        } catch {
            #expect(error.isAuthorizationDenied)
            #expect(error.description == "403 errorAuthorizationDenied: no share permission")
        }
    }

    @Test func aNonProblemErrorKeepsItsBody() {
        do {
            let _: HealthChanges = try HealthClient.decodeResponse(status: 502, data: Data("<html>bad gateway</html>".utf8))
            Issue.record("a 502 decoded as success")
        } catch {
            guard case .unexpectedResponse(let status, let body) = error else { Issue.record("got \(error)"); return }
            #expect(status == 502)
            #expect(body == "<html>bad gateway</html>")
            #expect(!error.isAuthorizationDenied)
        }
    }

    @Test func anUndecodableSuccessIsAnUnexpectedResponseNotACrash() {
        for body in ["", "{", #"{"samples":[{"type":"stepCount","start":"not a date"}]}"#, #"{"samples":7}"#] {
            do {
                let _: HealthSamplePage = try HealthClient.decodeResponse(status: 200, data: Data(body.utf8))
                Issue.record("\(body) decoded")
            } catch {
                guard case .unexpectedResponse(200, let text) = error else { Issue.record("got \(error)"); continue }
                #expect(text.hasPrefix("undecodable"))
            }
        }
    }

    @Test func anEmptyAnswerIsFineWhereNothingIsExpected() throws {
        let _: HealthClient.Empty = try HealthClient.decodeResponse(status: 204, data: Data())
    }
}
