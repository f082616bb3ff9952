import Testing
import JSON
@testable import HealthAPI

/// Mistakes a person makes by hand get a problem+json that says what to fix, with an `errors` array.
@Suite struct BadInputMessageTests {
    private func issues(_ reply: TestServer.Reply) -> [(field: String, detail: String)] {
        (reply["errors"]?.arrayValue ?? []).compactMap { item in
            guard let object = item.objectValue, let field = object["field"]?.stringValue,
                  let detail = object["detail"]?.stringValue else { return nil }
            return (field, detail)
        }
    }

    @Test func aBrokenPercentEscapeInTheQueryIsNamedWithoutSwiftSyntax() throws {
        let f = try Fixture()
        let reply = f.server.request(.get, "/v1/samples?type=step%FFCount", token: f.phone)
        #expect(reply.status == 400 && reply.code == "errorInvalidArgument")
        let found = issues(reply)
        #expect(found.count == 1 && found.first?.field == "query", "\(reply.text)")
        #expect(found.first?.detail.contains("'step%FFCount'") == true && found.first?.detail.contains("%25") == true)
        #expect(!reply.text.contains("invalidPercentEncoding"), "\(reply.text)")
    }

    /// A JSON body with a byte-order mark, and an empty one, each get a 400 that names the mistake.
    private func expectMarkAndEmptyNamed(_ f: Fixture, _ path: String, body: String) {
        let marked = f.server.request(.post, path, token: f.phone, json: "\u{FEFF}" + body)
        #expect(marked.status == 400 && issues(marked).first?.detail.contains("byte-order mark") == true, "\(marked.text)")
        let empty = f.server.request(.post, path, token: f.phone, json: " ")
        #expect(empty.status == 400 && issues(empty).first?.detail.contains("the text is empty") == true, "\(empty.text)")
    }

    @Test func aByteOrderMarkAnEmptyBodyAndYear10000SayWhatToFix() throws {
        let f = try Fixture()
        expectMarkAndEmptyNamed(f, "/v1/samples", body: #"{"samples":[]}"#)
        let future = f.save(f.phone, Fixture.steps(1, "10000-01-01T00:00:00Z", "10000-01-01T00:01:00Z"))
        #expect(future.status == 400, "\(future.text)")
        #expect(issues(future).first?.field == "start" && issues(future).first?.detail.contains("0000 to 9999") == true, "\(future.text)")
    }

    /// HealthKit calls a sample's times startDate and endDate: the 400 says which field to rename.
    @Test func healthKitFieldNamesAreNamedInTheMissingFieldError() throws {
        let f = try Fixture()
        let reply = f.save(f.phone, #"{"type":"stepCount","value":10,"unit":"count","startDate":"2026-03-08T09:00:00Z","endDate":"2026-03-08T09:01:00Z"}"#)
        #expect(reply.status == 400, "\(reply.text)")
        #expect(issues(reply).first?.field == "start", "\(reply.text)")
        #expect(issues(reply).first?.detail.contains("found 'startDate': did you mean 'start'?") == true, "\(reply.text)")
    }

    @Test func theHealthAutoExportBodySaysTheSame() throws {
        expectMarkAndEmptyNamed(try Fixture(), "/v1/ingest/health-auto-export", body: #"{"data":{}}"#)
    }
}
