import Testing
@testable import HTTP
import Primitives

/// What a byte stream parses into, independent of how it was split.
struct ParseOutcome: Equatable, CustomStringConvertible {
    struct Message: Equatable {
        var method: String
        var target: String
        var version: String
        var headerCount: Int
        var body: String
        var trailerCount: Int
        var keepAlive: Bool
        var expectsContinue: Bool
    }

    var messages: [Message] = []
    var errorStatus: Int?

    var description: String { "\(messages.count) message(s), bodies \(messages.map(\.body)), error \(errorStatus.map(String.init) ?? "none")" }
}

func parse(_ pieces: [[UInt8]], limits: HTTPLimits) -> ParseOutcome {
    var parser = HTTPRequestParser(limits: limits)
    var outcome = ParseOutcome()
    var head: HTTPRequestHead?
    var body: [UInt8] = []
    func drain() {
        while let event = parser.next() {
            switch event {
            case .head(let parsed):
                head = parsed
                body = []
            case .body(let bytes):
                body += bytes
            case .end(let trailers):
                guard let parsed = head else { return }
                outcome.messages.append(.init(method: parsed.method.rawValue, target: parsed.target, version: parsed.version.description,
                                              headerCount: parsed.headers.count, body: String(decoding: body, as: UTF8.self),
                                              trailerCount: trailers.count, keepAlive: parsed.keepAlive,
                                              expectsContinue: parsed.expectsContinue))
                head = nil
            case .error(let error):
                outcome.errorStatus = error.status.code
            }
        }
    }
    for piece in pieces {
        parser.append(contentsOf: piece)
        drain()
    }
    return outcome
}

struct ParserCase: Sendable, CustomStringConvertible {
    var name: String
    var raw: String
    /// nil: must parse without error.
    var status: Int?
    /// For valid cases: the bodies of the parsed messages, in order.
    var bodies: [String] = [""]
    /// For error cases: complete messages parsed before the error.
    var messagesBeforeError = 0
    var description: String { name }
}

/// Small limits so oversize cases stay short enough to split at every byte.
let smallLimits = HTTPLimits(maxRequestLineLength: 64, maxHeaderBlockLength: 256, maxHeaderCount: 8,
                             maxBodyLength: 64, maxChunkLineLength: 32)

let parserCases: [ParserCase] = [
    // Valid requests.
    ParserCase(name: "simple GET", raw: "GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
    ParserCase(name: "GET with query", raw: "GET /v1/s?start=2026-03-08T09:30:00+01:00 HTTP/1.1\r\nHost: a\r\n\r\n"),
    ParserCase(name: "POST with Content-Length", raw: "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello", bodies: ["hello"]),
    ParserCase(name: "Content-Length 0", raw: "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"),
    ParserCase(name: "POST without length has an empty body", raw: "POST /x HTTP/1.1\r\nHost: a\r\n\r\n"),
    ParserCase(name: "chunked body", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", bodies: ["hello world"]),
    ParserCase(name: "chunked with extensions", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value;x\r\nhello\r\n0;end\r\n\r\n", bodies: ["hello"]),
    ParserCase(name: "chunk extensions with BWS and a quoted value", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5 ; a = \"q\\\"v\"\r\nhello\r\n0\r\n\r\n", bodies: ["hello"]),
    ParserCase(name: "chunked with trailers", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Checksum: abc\r\n\r\n", bodies: ["hello"]),
    ParserCase(name: "uppercase hex chunk size", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n", bodies: ["0123456789"]),
    ParserCase(name: "Transfer-Encoding case-insensitive", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ChUnKeD\r\n\r\n1\r\nz\r\n0\r\n\r\n", bodies: ["z"]),
    ParserCase(name: "Transfer-Encoding with surrounding OWS", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \t chunked \r\n\r\n1\r\nz\r\n0\r\n\r\n", bodies: ["z"]),
    ParserCase(name: "pipelined requests", raw: "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nPOST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhiGET /3 HTTP/1.1\r\nHost: a\r\n\r\n", bodies: ["", "hi", ""]),
    ParserCase(name: "HTTP/1.0 without Host", raw: "GET / HTTP/1.0\r\n\r\n"),
    ParserCase(name: "OPTIONS asterisk", raw: "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"),
    ParserCase(name: "leading empty line tolerated", raw: "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"),
    ParserCase(name: "obs-text and HTAB in a value", raw: "GET / HTTP/1.1\r\nHost: a\r\nX-Name: caf\u{e9}\tbar\r\n\r\n"),
    ParserCase(name: "empty field value", raw: "GET / HTTP/1.1\r\nHost: a\r\nX-Empty:\r\n\r\n"),
    ParserCase(name: "exactly 8 header fields", raw: "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\nE: 1\r\nF: 1\r\nG: 1\r\n\r\n"),
    ParserCase(name: "body exactly at the limit", raw: "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 64\r\n\r\n" + String(repeating: "b", count: 64), bodies: [String(repeating: "b", count: 64)]),

    // Request smuggling patterns.
    ParserCase(name: "CL then TE", raw: "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 400),
    ParserCase(name: "TE then CL", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", status: 400),
    ParserCase(name: "TE xchunked", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n", status: 400),
    ParserCase(name: "TE chunked, identity", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n", status: 400),
    ParserCase(name: "TE chunked twice", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", status: 400),
    ParserCase(name: "TE identity", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", status: 400),
    ParserCase(name: "TE empty", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \r\n\r\n", status: 400),
    ParserCase(name: "TE gzip, chunked", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", status: 400),
    ParserCase(name: "TE with leading whitespace on the line", raw: "POST /x HTTP/1.1\r\n Transfer-Encoding: chunked\r\nHost: a\r\n\r\n", status: 400),
    ParserCase(name: "TE on HTTP/1.0", raw: "POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 400),
    ParserCase(name: "duplicate equal Content-Length", raw: "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", status: 400),
    ParserCase(name: "comma-joined Content-Length", raw: "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\nhello", status: 400),
    ParserCase(name: "signed Content-Length", raw: "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello", status: 400),
    ParserCase(name: "negative Content-Length", raw: "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", status: 400),
    ParserCase(name: "empty Content-Length", raw: "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n", status: 400),
    ParserCase(name: "overflowing Content-Length", raw: "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n", status: 400),
    ParserCase(name: "bare LF everywhere", raw: "GET / HTTP/1.1\nHost: a\n\n", status: 400),
    ParserCase(name: "bare LF in the header block", raw: "GET / HTTP/1.1\r\nHost: a\nX: 1\r\n\r\n", status: 400),
    ParserCase(name: "bare LF after chunk size", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", status: 400),
    ParserCase(name: "whitespace before colon", raw: "GET / HTTP/1.1\r\nHost : a\r\n\r\n", status: 400),
    ParserCase(name: "obs-fold", raw: "GET / HTTP/1.1\r\nHost: a\r\nX-Long: a\r\n b\r\n\r\n", status: 400),
    ParserCase(name: "NUL in a value", raw: "GET / HTTP/1.1\r\nHost: a\r\nX: a\u{0}b\r\n\r\n", status: 400),
    ParserCase(name: "CTL in a value", raw: "GET / HTTP/1.1\r\nHost: a\r\nX: a\u{1}b\r\n\r\n", status: 400),
    ParserCase(name: "DEL in a value", raw: "GET / HTTP/1.1\r\nHost: a\r\nX: a\u{7f}b\r\n\r\n", status: 400),
    ParserCase(name: "bare CR in a value", raw: "GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", status: 400),
    // Found by Fuzz/ (fuzz-http): a bad method byte in an over-long request line was 414 whole but 400 split.
    ParserCase(name: "bad method byte in an over-long request line", raw: "P\u{13}T /" + String(repeating: "a", count: 300) + " HTTP/1.1\r\nHost: a\r\n\r\n", status: 400),
    // No LF ever follows: refused at once rather than waiting for the header timeout.
    ParserCase(name: "bare CR as the line ending", raw: "GET / HTTP/1.1\rHost: a\r\r", status: 400),
    ParserCase(name: "bare CR ending a field line", raw: "GET / HTTP/1.1\r\nHost: a\rX: 1\r", status: 400),
    ParserCase(name: "bare CR after a chunk size", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\rhello", status: 400),
    ParserCase(name: "invalid method token", raw: "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", status: 400),
    ParserCase(name: "invalid field name", raw: "GET / HTTP/1.1\r\nHost: a\r\nX@Y: 1\r\n\r\n", status: 400),
    ParserCase(name: "empty field name", raw: "GET / HTTP/1.1\r\nHost: a\r\n: 1\r\n\r\n", status: 400),
    ParserCase(name: "missing colon", raw: "GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", status: 400),
    ParserCase(name: "missing Host on 1.1", raw: "GET / HTTP/1.1\r\nX: 1\r\n\r\n", status: 400),
    ParserCase(name: "repeated Host", raw: "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", status: 400),
    ParserCase(name: "HTTP/2.0", raw: "GET / HTTP/2.0\r\nHost: a\r\n\r\n", status: 400),
    ParserCase(name: "HTTP/1.2", raw: "GET / HTTP/1.2\r\nHost: a\r\n\r\n", status: 400),
    ParserCase(name: "HTTP/2 connection preface", raw: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", status: 400),
    ParserCase(name: "two Authorization fields", raw: "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer a\r\nauthorization: Bearer b\r\n\r\n", status: 400),
    ParserCase(name: "malformed version", raw: "GET / HTTP/1.10\r\nHost: a\r\n\r\n", status: 400),
    ParserCase(name: "lowercase version", raw: "GET / http/1.1\r\nHost: a\r\n\r\n", status: 400),
    ParserCase(name: "extra space in request line", raw: "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", status: 400),
    ParserCase(name: "absolute-form with a query and no path", raw: "GET http://example.com?q=1 HTTP/1.1\r\nHost: a\r\n\r\n"),
    ParserCase(name: "absolute-form with a port, a query and no path", raw: "GET http://example.com:8080?q=1 HTTP/1.1\r\nHost: a\r\n\r\n"),
    ParserCase(name: "absolute-form with a port only", raw: "GET http://example.com:8080 HTTP/1.1\r\nHost: a\r\n\r\n"),
    ParserCase(name: "absolute-form https with an IPv6 host", raw: "GET HTTPS://[::1]:8/p HTTP/1.1\r\nHost: a\r\n\r\n"),
    ParserCase(name: "absolute-form with userinfo", raw: "GET http://u@a/ HTTP/1.1\r\nHost: a\r\n\r\n", status: 400),
    ParserCase(name: "absolute-form without a host", raw: "GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", status: 400),
    ParserCase(name: "absolute-form with a non-digit port", raw: "GET http://a:8x/ HTTP/1.1\r\nHost: a\r\n\r\n", status: 400),
    ParserCase(name: "absolute-form of another scheme", raw: "GET ftp://a/ HTTP/1.1\r\nHost: a\r\n\r\n", status: 400),
    ParserCase(name: "absolute-form still needs Host on 1.1", raw: "GET http://a/ HTTP/1.1\r\n\r\n", status: 400),
    ParserCase(name: "asterisk with GET", raw: "GET * HTTP/1.1\r\nHost: a\r\n\r\n", status: 400),
    ParserCase(name: "fragment in target", raw: "GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n", status: 400),
    ParserCase(name: "unsupported expectation", raw: "GET / HTTP/1.1\r\nHost: a\r\nExpect: bananas\r\n\r\n", status: 417),

    // Limits.
    ParserCase(name: "request line too long", raw: "GET /" + String(repeating: "a", count: 80) + " HTTP/1.1\r\nHost: a\r\n\r\n", status: 414),
    ParserCase(name: "header block too large", raw: "GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "v", count: 300) + "\r\n\r\n", status: 431),
    ParserCase(name: "too many header fields", raw: "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\nE: 1\r\nF: 1\r\nG: 1\r\nH: 1\r\n\r\n", status: 431),
    ParserCase(name: "Content-Length over the body limit", raw: "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 65\r\n\r\n", status: 413),
    ParserCase(name: "chunked body over the limit", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n" + String(repeating: "c", count: 32) + "\r\n21\r\n", status: 413),

    // Chunk framing.
    ParserCase(name: "non-hex chunk size", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", status: 400),
    ParserCase(name: "empty chunk size", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", status: 400),
    ParserCase(name: "chunk size overflow", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\n", status: 400),
    ParserCase(name: "chunk data without CRLF", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloX\r\n0\r\n\r\n", status: 400),
    ParserCase(name: "chunk extension too long", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;" + String(repeating: "e", count: 40) + "\r\nhello\r\n0\r\n\r\n", status: 400),
    ParserCase(name: "space after the chunk size", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n", status: 400),
    ParserCase(name: "space after the last chunk size", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0 \r\n\r\n", status: 400),
    ParserCase(name: "chunk extension without a name", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;\r\nhello\r\n0\r\n\r\n", status: 400),
    ParserCase(name: "chunk extension with a space in its name", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;a b\r\nhello\r\n0\r\n\r\n", status: 400),
    ParserCase(name: "chunk extension with an empty value", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;a=\r\nhello\r\n0\r\n\r\n", status: 400),
    ParserCase(name: "chunk extension with an unterminated quote", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;a=\"b\r\nhello\r\n0\r\n\r\n", status: 400),
    ParserCase(name: "chunk size followed by junk", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5 x\r\nhello\r\n0\r\n\r\n", status: 400),
    ParserCase(name: "control character in chunk extension", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;a\u{1}\r\nhello\r\n0\r\n\r\n", status: 400),
    ParserCase(name: "trailer section too large", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: " + String(repeating: "t", count: 300) + "\r\n\r\n", status: 431),
    ParserCase(name: "trailers push the field count over", raw: "POST /x HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\nE: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT1: 1\r\nT2: 1\r\n\r\n", status: 431),
    ParserCase(name: "obs-fold in trailers", raw: "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: 1\r\n folded\r\n\r\n", status: 400),
    ParserCase(name: "error in a pipelined second request", raw: "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost : a\r\n\r\n", status: 400, messagesBeforeError: 1),
]

@Suite("HTTPRequestParser")
struct ParserTests {
    @Test(arguments: parserCases)
    func wholeInputAndEverySplitAgree(_ testCase: ParserCase) {
        let bytes = Array(testCase.raw.utf8)
        let whole = parse([bytes], limits: smallLimits)
        #expect(whole.errorStatus == testCase.status, "\(testCase.name): \(whole)")
        if testCase.status == nil {
            #expect(whole.messages.map(\.body) == testCase.bodies, "\(testCase.name)")
        } else {
            #expect(whole.messages.count == testCase.messagesBeforeError, "\(testCase.name)")
        }
        for split in 0 ... bytes.count {
            let pieces = [Array(bytes[..<split]), Array(bytes[split...])]
            let outcome = parse(pieces, limits: smallLimits)
            #expect(outcome == whole, "\(testCase.name) split at \(split): \(outcome)")
            if outcome != whole { break }
        }
        let byteByByte = parse(bytes.map { [$0] }, limits: smallLimits)
        #expect(byteByByte == whole, "\(testCase.name) byte by byte")
    }

    @Test func tableIsLargeEnough() {
        #expect(parserCases.count >= 40)
        #expect(parserCases.filter { $0.status != nil }.count >= 30)
    }

    @Test func headDetails() {
        var parser = HTTPRequestParser()
        parser.append(contentsOf: Array("PUT /a?b=c HTTP/1.1\r\nHost: example\r\nX-Custom:  spaced value \t\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc".utf8))
        guard case .head(let head) = parser.next() else {
            Issue.record("expected a head")
            return
        }
        #expect(head.method == .put)
        #expect(head.target == "/a?b=c")
        #expect(head.version == .http1_1)
        #expect(head.headers["x-custom"] == "spaced value")
        #expect(head.framing == .contentLength(3))
        #expect(head.expectsContinue)
        #expect(head.keepAlive)
        guard case .body(let body) = parser.next() else {
            Issue.record("expected body")
            return
        }
        #expect(body == Array("abc".utf8))
        guard case .end = parser.next() else {
            Issue.record("expected end")
            return
        }
        #expect(parser.next() == nil)
        #expect(parser.isIdle)
    }

    @Test(arguments: [
        ("http://example.com?q=1", "/?q=1", "example.com"),
        ("http://example.com:8080?q=1", "/?q=1", "example.com:8080"),
        ("http://example.com:8080", "/", "example.com:8080"),
        ("HTTP://Example.com/v1/samples?type=stepCount", "/v1/samples?type=stepCount", "Example.com"),
        ("https://[2001:db8::1]:8443/healthz", "/healthz", "[2001:db8::1]:8443"),
    ])
    func absoluteFormBecomesOriginFormAndItsAuthorityTheHost(target: String, originForm: String, host: String) {
        var parser = HTTPRequestParser()
        parser.append(contentsOf: Array("GET \(target) HTTP/1.1\r\nHost: other\r\n\r\n".utf8))
        guard case .head(let head) = parser.next() else {
            Issue.record("expected a head for \(target)")
            return
        }
        #expect(head.target == originForm)
        #expect(head.headers.values("Host") == [host])
    }

    @Test func keepAliveRules() {
        let cases: [(String, Bool)] = [
            ("GET / HTTP/1.1\r\nHost: a\r\n\r\n", true),
            ("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", false),
            ("GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, CLOSE\r\n\r\n", false),
            ("GET / HTTP/1.0\r\n\r\n", false),
            ("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true),
            ("GET / HTTP/1.0\r\nConnection: Keep-Alive, close\r\n\r\n", false),
        ]
        for (raw, expected) in cases {
            let outcome = parse([Array(raw.utf8)], limits: .default)
            #expect(outcome.messages.first?.keepAlive == expected, "\(raw)")
        }
    }

    @Test func expectContinueIgnoredOnHTTP10() {
        let outcome = parse([Array("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx".utf8)], limits: .default)
        #expect(outcome.messages.first?.expectsContinue == false)
    }

    @Test func defaultLimitsAtTheirBoundaries() {
        let limits = HTTPLimits.default
        let okTarget = "/" + String(repeating: "a", count: limits.maxRequestLineLength - "GET  HTTP/1.1".count - 1)
        let okLine = "GET \(okTarget) HTTP/1.1"
        #expect(okLine.utf8.count == limits.maxRequestLineLength)
        #expect(parse([Array("\(okLine)\r\nHost: a\r\n\r\n".utf8)], limits: limits).errorStatus == nil)
        #expect(parse([Array("GET \(okTarget)a HTTP/1.1\r\nHost: a\r\n\r\n".utf8)], limits: limits).errorStatus == 414)

        let big = String(repeating: "h", count: 17 * 1024)
        #expect(parse([Array("GET / HTTP/1.1\r\nHost: a\r\nX: \(big)\r\n\r\n".utf8)], limits: limits).errorStatus == 431)
        let manyFields = (0 ..< 100).map { "F\($0): 1\r\n" }.joined()
        #expect(parse([Array("GET / HTTP/1.1\r\nHost: a\r\n\(manyFields)\r\n".utf8)], limits: limits).errorStatus == 431)
        #expect(parse([Array("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \(16 * 1024 * 1024 + 1)\r\n\r\n".utf8)], limits: limits).errorStatus == 413)
    }

    @Test func pathOverridesSetTheBodyLimitOfRequestsWithBodies() {
        // The per-path limit is looked up only for a request with a body; a bodiless request on the
        // same connection must not leave its limit behind for the next one.
        var limits = HTTPLimits.default
        limits.maxBodyLength = 8
        limits.bodyLimitOverrides = [HTTPBodyLimitOverride(path: "/big", maxBodyLength: 32, hint: "Send less.")]
        let twenty = String(repeating: "b", count: 20)
        #expect(parse([Array("POST /big?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 20\r\n\r\n\(twenty)".utf8)], limits: limits).errorStatus == nil)
        #expect(parse([Array("POST /small HTTP/1.1\r\nHost: a\r\nContent-Length: 20\r\n\r\n\(twenty)".utf8)], limits: limits).errorStatus == 413)
        let chunked = "Transfer-Encoding: chunked\r\n\r\n14\r\n\(twenty)\r\n0\r\n\r\n"
        #expect(parse([Array("POST /big HTTP/1.1\r\nHost: a\r\n\(chunked)".utf8)], limits: limits).errorStatus == nil)
        #expect(parse([Array("GET /big HTTP/1.1\r\nHost: a\r\n\r\nPOST /small HTTP/1.1\r\nHost: a\r\n\(chunked)".utf8)], limits: limits).errorStatus == 413)
        var parser = HTTPRequestParser(limits: limits)
        parser.append(contentsOf: Array("POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: 40\r\n\r\n".utf8))
        guard case .error(let error) = parser.next() else {
            Issue.record("expected a 413")
            return
        }
        #expect(error.status == .contentTooLarge)
        #expect(error.detail.contains("32 bytes") && error.detail.contains("Send less."))
    }

    @Test func errorIsSticky() {
        var parser = HTTPRequestParser()
        parser.append(contentsOf: Array("GET / HTTP/1.1\nHost: a\r\n\r\n".utf8))
        guard case .error(let error) = parser.next() else {
            Issue.record("expected an error")
            return
        }
        #expect(error.closesConnection)
        #expect(error.status == .badRequest)
        parser.append(contentsOf: Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        #expect(parser.next() == nil)
        #expect(parser.hasFailed)
    }
}


/// A fixed-seed generator (SplitMix64) so the mutation test is reproducible.
typealias SeededGenerator = SplitMix64

@Suite("HTTPRequestParser mutations")
struct ParserMutationTests {
    /// Mutated requests must never crash the parser, and how they are split must not change the outcome.
    @Test func mutatedRequestsParseTheSameWhateverTheSplit() {
        var random = SeededGenerator(seed: 20_260_308)
        let seeds = parserCases.filter { $0.status == nil }.map { Array($0.raw.utf8) }
        let interesting: [UInt8] = Array("\r\n :;,0123456789aAfF-\t".utf8) + [0, 0x7F, 0x80, 0xFF]
        for _ in 0 ..< 300 {
            var bytes = seeds[Int.random(in: 0 ..< seeds.count, using: &random)]
            for _ in 0 ..< Int.random(in: 1 ... 3, using: &random) {
                let position = Int.random(in: 0 ..< bytes.count, using: &random)
                let byte = interesting[Int.random(in: 0 ..< interesting.count, using: &random)]
                switch Int.random(in: 0 ..< 3, using: &random) {
                case 0: bytes[position] = byte
                case 1: bytes.insert(byte, at: position)
                default: if bytes.count > 1 { bytes.remove(at: position) }
                }
            }
            let whole = parse([bytes], limits: smallLimits)
            let split = Int.random(in: 0 ... bytes.count, using: &random)
            let halves = parse([Array(bytes[..<split]), Array(bytes[split...])], limits: smallLimits)
            let single = parse(bytes.map { [$0] }, limits: smallLimits)
            #expect(halves == whole, "\(bytes) split at \(split)")
            #expect(single == whole, "\(bytes) byte by byte")
        }
    }
}

@Suite struct EarlyRejectionTests {
    /// A TLS ClientHello (or other binary) has no CRLF to wait for: the first impossible method
    /// byte must fail the request at once, not after the header timeout.
    @Test(arguments: [[0x16, 0x03, 0x01, 0x02, 0x00], [0x47, 0x45, 0x00], [0x0D, 0x0A, 0x7B]] as [[UInt8]])
    func impossibleMethodBytesFailBeforeTheLineEnds(bytes: [UInt8]) {
        var parser = HTTPRequestParser()
        parser.append(contentsOf: bytes)
        guard case .error(let error)? = parser.next() else {
            Issue.record("expected an immediate error")
            return
        }
        #expect(error.status == .badRequest)
    }

    /// The first bytes of a ClientHello (record type 0x16, version 3.x) get a 400 that says the port
    /// is plain HTTP, however the bytes arrive; other binary keeps the generic detail.
    /// Not a 505: the API's only 5xx are 503 and 507. The answer says what to send instead.
    @Test func otherHTTPVersionsAndTheHTTP2PrefaceAreA400ThatSaysSo() {
        let preface = Self.errorDetail([Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)])
        #expect(preface?.status == .badRequest)
        #expect(preface?.detail.contains("HTTP/2 connection preface") == true)
        let version = Self.errorDetail([Array("GET / HTTP/2.0\r\nHost: a\r\n\r\n".utf8)])
        #expect(version?.status == .badRequest)
        #expect(version?.detail.hasPrefix("HTTP/2.0 is not supported") == true)
        let twice = Self.errorDetail([Array("POST / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer a\r\nAuthorization: Bearer a\r\nContent-Length: 0\r\n\r\n".utf8)])
        #expect(twice?.status == .badRequest)
        #expect(twice?.detail == "More than one Authorization header field; send one.")
    }

    @Test func aTLSHandshakeIsToldThePortIsPlainHTTP() {
        let clientHello: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03] + Array(repeating: 0x2A, count: 32)
        let tlsDetail = "This port speaks plain HTTP/1.1, not TLS: use http://, or put a TLS-terminating proxy in front."
        for split in 0 ... clientHello.count {
            let detail = Self.errorDetail([Array(clientHello[..<split]), Array(clientHello[split...])])
            #expect(detail?.status == .badRequest, "split at \(split)")
            #expect(detail?.detail == tlsDetail, "split at \(split)")
        }
        #expect(Self.errorDetail([Array("\r\n".utf8) + clientHello])?.detail == tlsDetail, "after leading empty lines")
        #expect(Self.errorDetail([[0x16, 0x41, 0x20]])?.detail == "The method contains an invalid character.")
        #expect(Self.errorDetail([[0x47, 0x16, 0x03]])?.detail == "The method contains an invalid character.")
    }

    /// Methods are case-sensitive (RFC 9110 §9.1): a known method in another letter case is a 400
    /// that names the method it probably meant, however the bytes arrive.
    @Test(arguments: [
        ("get", "Unknown method 'get': methods are case-sensitive: did you mean GET?"),
        ("Post", "Unknown method 'Post': methods are case-sensitive: did you mean POST?"),
        ("delete", "Unknown method 'delete': methods are case-sensitive: did you mean DELETE?"),
        ("options", "Unknown method 'options': methods are case-sensitive: did you mean OPTIONS?"),
    ])
    func aKnownMethodInAnotherLetterCaseIsA400ThatSaysMethodsAreCaseSensitive(method: String, detail: String) {
        let bytes = Array("\(method) /healthz HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        let whole = Self.errorDetail([bytes])
        #expect(whole?.status == .badRequest)
        #expect(whole?.detail == detail)
        #expect(Self.errorDetail(bytes.map { [$0] })?.detail == detail, "byte by byte")
    }

    /// Every other method token parses as sent (the router answers 405 with `Allow`, or 404).
    @Test(arguments: ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "BREW", "brew", "M-SEARCH"])
    func otherMethodsParseAsSent(method: String) {
        let outcome = parse([Array("\(method) /x HTTP/1.1\r\nHost: a\r\n\r\n".utf8)], limits: .default)
        #expect(outcome.errorStatus == nil)
        #expect(outcome.messages.first?.method == method)
    }

    private static func errorDetail(_ pieces: [[UInt8]]) -> HTTPParseError? {
        var parser = HTTPRequestParser()
        for piece in pieces {
            parser.append(contentsOf: piece)
            while let event = parser.next() {
                if case .error(let error) = event { return error }
            }
        }
        return nil
    }

    @Test func aMethodStillArrivingIsNotAnError() {
        var parser = HTTPRequestParser()
        parser.append(contentsOf: Array("\r\nPOS".utf8))
        #expect(parser.next() == nil)
        parser.append(contentsOf: Array("T /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n".utf8))
        guard case .head(let head)? = parser.next() else {
            Issue.record("expected a head")
            return
        }
        #expect(head.method == .post)
    }
}
