import Testing
@testable import HTTPClient

@Suite struct HTTPResponseParserTests {
    func parse(_ text: String, limits: HTTPResponseParser.Limits = .init(), close: Bool = false) throws(HTTPResponseParseError) -> HTTPClientResponse? {
        var parser = HTTPResponseParser(limits: limits)
        if case .complete(let response) = try parser.consume(Array(text.utf8)) { return response }
        if close, case .complete(let response) = try parser.endOfInput() { return response }
        return nil
    }

    /// Fed one byte at a time, the answer must be the same as fed at once.
    func parseByteByByte(_ text: String) throws(HTTPResponseParseError) -> HTTPClientResponse? {
        var parser = HTTPResponseParser()
        for byte in text.utf8 {
            if case .complete(let response) = try parser.consume([byte]) { return response }
        }
        return nil
    }

    @Test func contentLength() throws {
        let text = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"
        let response = try #require(try parse(text))
        #expect(response.status == 200 && response.reason == "OK")
        #expect(response.header("content-type") == "text/plain")
        #expect(response.body == Array("hello".utf8) && response.bodyLength == 5)
        #expect(response.reusable)
        #expect(try parseByteByByte(text) == response)
    }

    @Test func incompleteBodyNeedsMoreAndTruncationIsAnError() throws {
        var parser = HTTPResponseParser()
        #expect(try parser.consume(Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc".utf8)) == .needMore)
        #expect(throws: HTTPResponseParseError.truncated) { try parser.endOfInput() }
        var headOnly = HTTPResponseParser()
        #expect(try headOnly.consume(Array("HTTP/1.1 200 OK\r\nContent-Le".utf8)) == .needMore)
        #expect(throws: HTTPResponseParseError.truncated) { try headOnly.endOfInput() }
    }

    @Test func chunked() throws {
        let text = "HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-Trailer: 1\r\n\r\n"
        let response = try #require(try parse(text))
        #expect(response.status == 202)
        #expect(String(decoding: response.body, as: UTF8.self) == "Wikipedia in\r\n\r\nchunks.")
        #expect(response.reusable)
        #expect(try parseByteByByte(text) == response)
    }

    @Test func closeDelimitedBodyEndsWithTheConnection() throws {
        var parser = HTTPResponseParser()
        #expect(try parser.consume(Array("HTTP/1.1 500 Internal Server Error\r\n\r\nsomething broke".utf8)) == .needMore)
        guard case .complete(let response) = try parser.endOfInput() else {
            Issue.record("expected a response")
            return
        }
        #expect(response.status == 500 && response.body == Array("something broke".utf8) && !response.reusable)
    }

    @Test func noBodyStatusesAndInterimAnswers() throws {
        let noContent = try #require(try parse("HTTP/1.1 204 No Content\r\nContent-Length: 99\r\n\r\n"))
        #expect(noContent.status == 204 && noContent.bodyLength == 0 && noContent.reusable)
        let afterContinue = try #require(try parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"))
        #expect(afterContinue.status == 201)
        #expect(throws: HTTPResponseParseError.unexpectedUpgrade) { try parse("HTTP/1.1 101 Switching Protocols\r\n\r\n") }
    }

    @Test func redirectsAreAnswersLikeAnyOther() throws {
        let response = try #require(try parse("HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/\r\nContent-Length: 0\r\n\r\n"))
        #expect(response.status == 302 && response.header("location") == "http://169.254.169.254/")
    }

    @Test func connectionReuse() throws {
        #expect(try #require(try parse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")).reusable == false)
        #expect(try #require(try parse("HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n")).reusable == false)
        #expect(try #require(try parse("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")).reusable == false)
        // Bytes after the answer: the peer is out of step, so the connection is not reused.
        #expect(try #require(try parse("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\n")).reusable == false)
    }

    @Test func bodiesAreKeptUpToTheCapAndReadUpToTheLimit() throws {
        var limits = HTTPResponseParser.Limits()
        limits.keptBodyBytes = 4
        limits.readBodyBytes = 10
        let read = try #require(try parse("HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n12345678", limits: limits))
        #expect(read.body == Array("1234".utf8) && read.bodyLength == 8 && read.reusable)
        // Longer than worth reading: the answer ends at the limit and the connection is closed.
        var parser = HTTPResponseParser(limits: limits)
        guard case .complete(let long) = try parser.consume(Array("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n".utf8) + [UInt8](repeating: 65, count: 20)) else {
            Issue.record("expected the answer to end at the read limit")
            return
        }
        #expect(long.status == 200 && long.body.count == 4 && !long.reusable)
        var chunked = HTTPResponseParser(limits: limits)
        guard case .complete(let endless) = try chunked.consume(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffff\r\n".utf8) + [UInt8](repeating: 65, count: 20)) else {
            Issue.record("expected the chunked answer to end at the read limit")
            return
        }
        #expect(!endless.reusable)
    }

    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", HTTPResponseParseError.invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 0x5\r\n\r\nhello", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", .invalidChunk),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", .invalidChunk),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", .invalidChunk),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\n", .invalidChunk),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY", .invalidChunk),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", .invalidChunk),
        ("HTTP/2 200 OK\r\n\r\n", .malformedStatusLine),
        ("HTTP/2.0 200 OK\r\n\r\n", .unsupportedVersion),
        ("HTTP/1.1 20 OK\r\n\r\n", .malformedStatusLine),
        ("HTTP/1.1 2000 OK\r\n\r\n", .malformedStatusLine),
        ("HTTP/1.1 600 Odd\r\n\r\n", .malformedStatusLine),
        ("HTTP/1.1 099 Low\r\n\r\n", .malformedStatusLine),
        ("HTTP/1.1  200 OK\r\n\r\n", .malformedStatusLine),
        ("ICY 200 OK\r\n\r\n", .malformedStatusLine),
        ("HTTP/1.1 200 O\u{1}K\r\n\r\n", .malformedStatusLine),
        ("\r\n\r\n", .malformedStatusLine),
        ("HTTP/1.1 200 OK\r\nBad Header: x\r\n\r\n", .malformedHeader),
        ("HTTP/1.1 200 OK\r\nName : x\r\n\r\n", .malformedHeader),
        ("HTTP/1.1 200 OK\r\n: x\r\n\r\n", .malformedHeader),
        ("HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", .malformedHeader),
        ("HTTP/1.1 200 OK\r\nA: 1\r\n folded\r\n\r\n", .malformedHeader),
        ("HTTP/1.1 200 OK\r\nA: x\ny: z\r\n\r\n", .malformedHeader),
        ("HTTP/1.1 200 OK\r\nA: nul\u{0}\r\n\r\n", .malformedHeader),
    ])
    func hostileAnswersAreRefused(text: String, error: HTTPResponseParseError) {
        #expect(throws: error) { try parse(text) }
    }

    @Test func oversizedHeadsAreRefused() {
        var limits = HTTPResponseParser.Limits()
        limits.headerBytes = 64
        var endless = HTTPResponseParser(limits: limits)
        #expect(throws: HTTPResponseParseError.headersTooLarge) {
            for _ in 0..<100 { _ = try endless.consume(Array("X-Filler: aaaaaaaa\r\n".utf8)) }
        }
        var many = HTTPResponseParser()
        let head = "HTTP/1.1 200 OK\r\n" + String(repeating: "A: b\r\n", count: 101) + "\r\n"
        #expect(throws: HTTPResponseParseError.headersTooLarge) { try many.consume(Array(head.utf8)) }
        // Interim answers count against the same budget.
        var interim = HTTPResponseParser(limits: limits)
        #expect(throws: HTTPResponseParseError.headersTooLarge) {
            for _ in 0..<10 { _ = try interim.consume(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) }
        }
    }
}
