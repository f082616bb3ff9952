import Dispatch
import Synchronization
import Testing
@testable import HTTP
@testable import HealthAPI

/// Authentication at the head charges failed guesses to the same address budget as `respond`:
/// IPv6 by its /64, so a client with a body cannot rotate through its /64 to guess for free.
@Suite struct HeadAdmissionBudgetTests {
    /// The status a POST with a body and a guessed token is refused with at the head (0: admitted).
    private func guessAtHead(_ server: TestServer, remote: String) -> Int {
        var headers = HTTPHeaders()
        headers.add("Host", "test")
        headers.add("Authorization", "Bearer guess-\(remote)")
        headers.add("Content-Type", "application/json")
        let head = HTTPRequestHead(method: .post, target: "/v1/samples", version: .http1_1, headers: headers,
                                   framing: .contentLength(1_000), keepAlive: true, expectsContinue: true)
        let status = Mutex(-1)
        let done = DispatchSemaphore(value: 0)
        server.application.admit(head, connection: ConnectionInfo(id: 1, remoteAddress: remote)) { admission in
            switch admission {
            case .admit: status.withLock { $0 = 0 }
            case .refuse(let response): status.withLock { $0 = response.status.code }
            }
            done.signal()
        }
        done.wait()
        return status.withLock { $0 }
    }

    @Test("guesses refused at the head spend one budget across an IPv6 /64, and the next /64 is another client")
    func rotatingIPv6AddressesShareTheBudgetAtTheHead() throws {
        let server = try TestServer {
            $0.rateLimitPerAddressPerSecond = 0.01
            $0.rateLimitPerAddressBurst = 100
            $0.authenticationFailureCost = 60
        }
        // Each guess costs 61 of 100: two from anywhere in the /64 spend it.
        #expect(guessAtHead(server, remote: "2001:db8:5:6::1") == 401)
        #expect(guessAtHead(server, remote: "2001:db8:5:6:1234:5678:9abc:def0") == 401)
        #expect(guessAtHead(server, remote: "2001:db8:5:6::ffff") == 429)
        // The head and `respond` share the budget.
        #expect(server.request(.get, "/v1/samples?type=stepCount", token: "guess", remote: "2001:db8:5:6::abcd").status == 429)
        #expect(guessAtHead(server, remote: "2001:db8:5:7::1") == 401)
    }
}
