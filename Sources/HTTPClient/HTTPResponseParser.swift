// An HTTP/1.1 response reader for the outbound client (RFC 9112): status line, headers, and a body
// framed by Content-Length, chunked coding or the end of the connection. Bytes go in as they
// arrive; the answer comes out once complete. A receiver's body is kept up to a small cap and the
// rest is read and dropped (only the status matters), unless it is too long to be worth reading,
// and then the connection is not reused.

public struct HTTPClientResponse: Sendable, Equatable {
    public var status: Int
    public var reason: String
    /// Names lowercased, in order.
    public var headers: [(name: String, value: String)]
    /// The first `keptBodyBytes` of the body.
    public var body: [UInt8]
    /// The body's full length as read (beyond the kept part).
    public var bodyLength: Int
    /// The connection may carry another request (HTTP/1.1, no `Connection: close`, body fully read).
    public var reusable: Bool

    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name == lowered }?.value
    }

    public static func == (a: HTTPClientResponse, b: HTTPClientResponse) -> Bool {
        a.status == b.status && a.reason == b.reason && a.body == b.body && a.bodyLength == b.bodyLength && a.reusable == b.reusable
            && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }
}

public enum HTTPResponseParseError: Error, Sendable, Equatable {
    case malformedStatusLine
    case unsupportedVersion
    case malformedHeader
    case headersTooLarge
    case invalidContentLength
    case invalidChunk
    /// A 101 Switching Protocols, which was never asked for.
    case unexpectedUpgrade
    /// The connection closed before the response was complete.
    case truncated
}

public struct HTTPResponseParser: Sendable {
    public struct Limits: Sendable, Equatable {
        /// The status line and headers together.
        public var headerBytes: Int = 16 * 1024
        public var headerCount: Int = 100
        /// Body bytes kept in the response.
        public var keptBodyBytes: Int = 4096
        /// Body bytes read (and dropped past `keptBodyBytes`) so the connection can be reused; a
        /// longer body ends the exchange at this point and the connection is closed.
        public var readBodyBytes: Int = 64 * 1024
        public init() {}
    }

    public enum Progress: Sendable, Equatable {
        case needMore
        /// Bytes after the response (the peer answering what was not asked) make the connection not reusable.
        case complete(HTTPClientResponse)
    }

    private enum Framing: Equatable {
        case length(remaining: Int)
        case chunked(ChunkState)
        case untilClose
    }

    private enum ChunkState: Equatable {
        case size            // reading "hex[;ext]\r\n"
        case data(remaining: Int)
        case dataEnd         // the CRLF after a chunk's data
        case trailers        // trailer lines until an empty one
    }

    private enum Phase {
        case head
        case body(Framing)
        case done
    }

    public let limits: Limits
    /// The request was HEAD: no body whatever the headers say.
    private let noBodyExpected: Bool
    private var phase: Phase = .head
    private var buffer: [UInt8] = []
    private var response = HTTPClientResponse(status: 0, reason: "", headers: [], body: [], bodyLength: 0, reusable: false)
    private var headerBytesSeen = 0

    public init(limits: Limits = Limits(), noBodyExpected: Bool = false) {
        self.limits = limits
        self.noBodyExpected = noBodyExpected
    }

    /// Feeds bytes as they arrive.
    public mutating func consume(_ bytes: some Collection<UInt8>) throws(HTTPResponseParseError) -> Progress {
        buffer.append(contentsOf: bytes)
        return try advance()
    }

    /// The peer closed the connection: a close-delimited body ends here; anything else is truncated.
    public mutating func endOfInput() throws(HTTPResponseParseError) -> Progress {
        if case .body(.untilClose) = phase {
            phase = .done
            response.reusable = false
            return .complete(response)
        }
        if case .done = phase { return .complete(response) }
        throw .truncated
    }

    private mutating func advance() throws(HTTPResponseParseError) -> Progress {
        while true {
            switch phase {
            case .done:
                if !buffer.isEmpty {
                    response.reusable = false
                    buffer.removeAll()
                }
                return .complete(response)
            case .head:
                guard let end = headEnd() else {
                    guard buffer.count <= limits.headerBytes - headerBytesSeen else { throw .headersTooLarge }
                    return .needMore
                }
                guard end + headerBytesSeen <= limits.headerBytes else { throw .headersTooLarge }
                let head = Array(buffer[..<end])
                buffer.removeFirst(end + 4)
                if let framing = try parseHead(head) {
                    phase = .body(framing)
                } else {
                    // An interim 1xx answer: the real one follows.
                    headerBytesSeen += end + 4
                }
            case .body(let framing):
                // Reads all the buffer holds; a framing back means it needs more.
                guard let next = try readBody(framing) else {
                    phase = .done
                    continue
                }
                phase = .body(next)
                return .needMore
            }
        }
    }

    /// The index of "\r\n\r\n" in the buffer.
    private func headEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }

    /// Nil for a 1xx interim response.
    private mutating func parseHead(_ head: [UInt8]) throws(HTTPResponseParseError) -> Framing? {
        var lines = split(head)
        guard !lines.isEmpty else { throw .malformedStatusLine }
        let statusLine = Array(lines.removeFirst())
        // "HTTP/1.1 200 OK": version, space, three digits, then a space and a reason, or nothing.
        guard statusLine.count >= 12, Array(statusLine[0..<5]) == Array("HTTP/".utf8), statusLine[6] == UInt8(ascii: "."),
              statusLine[8] == UInt8(ascii: " ") else { throw .malformedStatusLine }
        guard statusLine[5] == UInt8(ascii: "1"), statusLine[7] == UInt8(ascii: "1") || statusLine[7] == UInt8(ascii: "0")
        else { throw .unsupportedVersion }
        let isHTTP11 = statusLine[7] == UInt8(ascii: "1")
        let digits = statusLine[9..<12]
        guard digits.allSatisfy({ $0 >= 48 && $0 <= 57 }), digits.first != 48 else { throw .malformedStatusLine }
        let status = digits.reduce(0) { $0 * 10 + Int($1 - 48) }
        guard status <= 599 else { throw .malformedStatusLine }
        if statusLine.count > 12 { guard statusLine[12] == UInt8(ascii: " ") else { throw .malformedStatusLine } }
        let reasonBytes = statusLine.count > 13 ? Array(statusLine[13...]) : []
        guard reasonBytes.allSatisfy({ $0 == 9 || ($0 >= 0x20 && $0 != 0x7f) }) else { throw .malformedStatusLine }

        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex else { throw .malformedHeader }
            let name = line[..<colon]
            // Token characters only: no spaces before the colon (RFC 9112 §5.1), no obsolete line folding.
            guard name.allSatisfy(Self.isTokenCharacter) else { throw .malformedHeader }
            var value = line[(colon + 1)...]
            while let first = value.first, first == 32 || first == 9 { value = value.dropFirst() }
            while let last = value.last, last == 32 || last == 9 { value = value.dropLast() }
            guard value.allSatisfy({ $0 == 9 || ($0 >= 0x20 && $0 != 0x7f) }) else { throw .malformedHeader }
            headers.append((String(decoding: name, as: UTF8.self).lowercased(), String(decoding: value, as: UTF8.self)))
        }
        guard headers.count <= limits.headerCount else { throw .headersTooLarge }

        if status == 101 { throw .unexpectedUpgrade }
        if status < 200 { return nil }

        response.status = status
        response.reason = String(decoding: reasonBytes, as: UTF8.self)
        response.headers = headers
        let connectionTokens = headers.filter { $0.name == "connection" }
            .flatMap { $0.value.lowercased().split(separator: ",").map { $0.trimmingSpaces() } }
        response.reusable = isHTTP11 && !connectionTokens.contains("close")

        let transferEncodings = headers.filter { $0.name == "transfer-encoding" }
            .flatMap { $0.value.lowercased().split(separator: ",").map { $0.trimmingSpaces() } }
        let lengths = headers.filter { $0.name == "content-length" }
            .flatMap { $0.value.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingSpaces() } }

        if noBodyExpected || status == 204 || status == 304 {
            return .length(remaining: 0)
        }
        if !transferEncodings.isEmpty {
            // Both framings at once is how responses are smuggled: refuse rather than pick one.
            guard lengths.isEmpty else { throw .invalidContentLength }
            if transferEncodings.last == "chunked" {
                guard transferEncodings.filter({ $0 == "chunked" }).count == 1 else { throw .invalidChunk }
                return .chunked(.size)
            }
            response.reusable = false
            return .untilClose
        }
        if let first = lengths.first {
            // Repeated values must agree ("Content-Length: 5, 5" is allowed, "5, 6" is not).
            guard lengths.allSatisfy({ $0 == first }), !first.isEmpty, first.utf8.count <= 18,
                  first.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let length = Int(first) else { throw .invalidContentLength }
            return .length(remaining: length)
        }
        response.reusable = false
        return .untilClose
    }

    /// Reads what the buffer holds of the body; nil once the body is complete.
    private mutating func readBody(_ framing: Framing) throws(HTTPResponseParseError) -> Framing? {
        switch framing {
        case .length(let remaining):
            let taken = min(remaining, buffer.count)
            keep(buffer.prefix(taken))
            buffer.removeFirst(taken)
            if remaining - taken == 0 { return nil }
            if response.bodyLength >= limits.readBodyBytes { return stopReading() }
            return .length(remaining: remaining - taken)
        case .untilClose:
            keep(buffer[...])
            buffer.removeAll(keepingCapacity: true)
            if response.bodyLength >= limits.readBodyBytes { return stopReading() }
            return .untilClose
        case .chunked(let state):
            var state = state
            while true {
                switch state {
                case .size:
                    guard let lineEnd = lineEnd() else {
                        guard buffer.count <= 1024 else { throw .invalidChunk }
                        return .chunked(.size)
                    }
                    let line = buffer[..<lineEnd]
                    let sizeText = line.prefix { $0 != UInt8(ascii: ";") }
                    var trimmedSize = sizeText[...]
                    while let last = trimmedSize.last, last == 32 || last == 9 { trimmedSize = trimmedSize.dropLast() }
                    guard !trimmedSize.isEmpty, trimmedSize.count <= 15, let size = Int(String(decoding: trimmedSize, as: UTF8.self), radix: 16),
                          trimmedSize.allSatisfy(Self.isHexDigit) else { throw .invalidChunk }
                    buffer.removeFirst(lineEnd + 2)
                    state = size == 0 ? .trailers : .data(remaining: size)
                case .data(let remaining):
                    let taken = min(remaining, buffer.count)
                    keep(buffer.prefix(taken))
                    buffer.removeFirst(taken)
                    if response.bodyLength >= limits.readBodyBytes { return stopReading() }
                    if remaining - taken > 0 { return .chunked(.data(remaining: remaining - taken)) }
                    state = .dataEnd
                case .dataEnd:
                    guard buffer.count >= 2 else { return .chunked(.dataEnd) }
                    guard buffer[0] == 13 && buffer[1] == 10 else { throw .invalidChunk }
                    buffer.removeFirst(2)
                    state = .size
                case .trailers:
                    guard let lineEnd = lineEnd() else {
                        guard buffer.count <= limits.headerBytes else { throw .headersTooLarge }
                        return .chunked(.trailers)
                    }
                    buffer.removeFirst(lineEnd + 2)
                    if lineEnd == 0 { return nil }
                }
            }
        }
    }

    /// The body is longer than is worth reading: the response ends here, and the connection with it.
    private mutating func stopReading() -> Framing? {
        response.reusable = false
        buffer.removeAll()
        return nil
    }

    private mutating func keep(_ bytes: some Collection<UInt8>) {
        let room = max(0, limits.keptBodyBytes - response.body.count)
        response.body.append(contentsOf: bytes.prefix(room))
        response.bodyLength += bytes.count
    }

    private func lineEnd() -> Int? {
        guard buffer.count >= 2 else { return nil }
        for i in 0..<(buffer.count - 1) where buffer[i] == 13 && buffer[i + 1] == 10 { return i }
        return nil
    }

    /// Lines separated by CRLF; a bare CR or LF inside a line is refused later by the character checks.
    private func split(_ head: [UInt8]) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        var i = 0
        while i + 1 < head.count {
            if head[i] == 13 && head[i + 1] == 10 {
                lines.append(head[start..<i])
                i += 2
                start = i
            } else {
                i += 1
            }
        }
        lines.append(head[start...])
        return lines
    }

    private static func isTokenCharacter(_ c: UInt8) -> Bool {
        switch c {
        case 48...57, 65...90, 97...122: return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): return true
        default: return false
        }
    }

    private static func isHexDigit(_ c: UInt8) -> Bool {
        (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102)
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        var text = self[...]
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return String(text)
    }
}
