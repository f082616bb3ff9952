// An incremental HTTP/1.1 request parser (RFC 9112), written as an explicit state machine.
// It owns one byte buffer: callers append whatever arrived and pull events with `next()`.
// Because it only parses when asked, pipelined requests simply wait in the buffer.
// It is strict on purpose: every framing ambiguity that could enable request smuggling is an
// error that closes the connection.

import Primitives

/// Size limits enforced while parsing; each maps to the status RFC 9110 assigns to it.
public struct HTTPLimits: Sendable, Equatable {
    /// Longest request line (method, target, version) before 414.
    public var maxRequestLineLength: Int
    /// Longest header block (all field lines plus the empty line) before 431. Trailers get the same budget.
    public var maxHeaderBlockLength: Int
    /// Most header fields (trailer fields included) before 431.
    public var maxHeaderCount: Int
    /// Largest request body (declared or de-chunked) before 413.
    public var maxBodyLength: Int
    /// Longest chunk-size line, chunk extensions included, before 400.
    public var maxChunkLineLength: Int
    /// Largest body of a request the responder admitted without a valid token (413 past it):
    /// what a stranger can make the server buffer.
    public var maxUnauthenticatedBodyLength: Int = 64 * 1024
    /// Larger (or smaller) body limits for particular paths (origin-form target, query ignored):
    /// an upload route may take far more than an ordinary JSON request.
    public var bodyLimitOverrides: [HTTPBodyLimitOverride] = []

    public init(maxRequestLineLength: Int = 8 * 1024, maxHeaderBlockLength: Int = 16 * 1024,
                maxHeaderCount: Int = 100, maxBodyLength: Int = 16 * 1024 * 1024,
                maxChunkLineLength: Int = 1024, bodyLimitOverrides: [HTTPBodyLimitOverride] = []) {
        self.maxRequestLineLength = maxRequestLineLength
        self.maxHeaderBlockLength = maxHeaderBlockLength
        self.maxHeaderCount = maxHeaderCount
        self.maxBodyLength = maxBodyLength
        self.maxChunkLineLength = maxChunkLineLength
        self.bodyLimitOverrides = bodyLimitOverrides
    }

    public static let `default` = HTTPLimits()

    /// The body limit for a request target, and the override that set it.
    func bodyLimit(forTarget target: String) -> (limit: Int, override: HTTPBodyLimitOverride?) {
        guard !bodyLimitOverrides.isEmpty else { return (maxBodyLength, nil) }
        let path = HTTPRequest.queryMark(in: target).index.map { target[..<$0] } ?? target[...]
        for override in bodyLimitOverrides where path == override.path { return (override.maxBodyLength, override) }
        return (maxBodyLength, nil)
    }
}

/// A body limit for one path, with a hint for the 413's detail (what the client can do about it).
public struct HTTPBodyLimitOverride: Sendable, Equatable {
    public var path: String
    public var maxBodyLength: Int
    public var hint: String

    public init(path: String, maxBodyLength: Int, hint: String = "") {
        self.path = path
        self.maxBodyLength = maxBodyLength
        self.hint = hint
    }
}

/// A request the parser refuses. After an error the connection can no longer be framed.
public struct HTTPParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: HTTPStatus
    public var detail: String
    /// Always true today: once framing is in doubt, the only safe move is to close.
    public var closesConnection: Bool

    public init(status: HTTPStatus, detail: String, closesConnection: Bool = true) {
        self.status = status
        self.detail = detail
        self.closesConnection = closesConnection
    }

    public var description: String { "\(status.code) \(detail)" }
}

/// How the body of a request is delimited.
public enum HTTPBodyFraming: Sendable, Equatable {
    case none
    case contentLength(Int)
    case chunked
}

/// Everything before the body, validated.
public struct HTTPRequestHead: Sendable {
    public var method: HTTPMethod
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    public var framing: HTTPBodyFraming
    /// Whether the client allows the connection to stay open after this exchange.
    public var keepAlive: Bool
    /// `Expect: 100-continue` on HTTP/1.1 (ignored on 1.0, as RFC 9110 §10.1.1 requires).
    public var expectsContinue: Bool

    public var hasBody: Bool {
        switch framing {
        case .none: return false
        case .contentLength(let length): return length > 0
        case .chunked: return true
        }
    }
}

public enum HTTPParserEvent: Sendable {
    /// The head is complete and valid; body events follow (possibly none), then `end`.
    case head(HTTPRequestHead)
    case body([UInt8])
    /// The message is complete. Trailers are empty unless a chunked body carried some.
    case end(trailers: HTTPHeaders)
    /// The request is rejected; the parser stays failed.
    case error(HTTPParseError)
}

public struct HTTPRequestParser: Sendable {
    private enum State: Sendable {
        case requestLine
        case headerLines
        case body(remaining: Int)
        case chunkSizeLine
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailerLines
        case failed
    }

    private enum LineScan {
        case line(start: Int, end: Int)
        case needMore
        case failure(HTTPParseError)
    }

    private enum KnownField {
        case other, host, contentLength, transferEncoding, connection, expect, authorization
    }

    public let limits: HTTPLimits
    private var state: State = .requestLine
    private var buffer: [UInt8] = []
    /// First byte not yet consumed.
    private var readIndex = 0
    /// Where the search for the next LF resumes, so a line split over many reads is scanned once.
    private var scanIndex = 0

    // The head being assembled.
    private var method = HTTPMethod.get
    private var target = ""
    private var version = HTTPVersion.http1_1
    private var fields: [HTTPHeaders.Field] = []
    private var headerBlockLength = 0
    private var hostCount = 0
    private var authorizationCount = 0
    private var contentLengthValue: Int?
    private var contentLengthCount = 0
    private var transferEncodings: [Substring] = []
    private var connectionClose = false
    private var connectionKeepAlive = false
    private var expectValue: String?
    private var bodyLength = 0
    /// This request's body limit (the target's override, or the default) and the 413 detail.
    private var bodyLimit = 0
    private var bodyLimitHint = ""
    private var trailers: [HTTPHeaders.Field] = []
    private var trailerBlockLength = 0
    /// The authority of an absolute-form target, which replaces the Host field (RFC 9112 §3.2.2).
    private var absoluteAuthority: String?

    public init(limits: HTTPLimits = .default) {
        self.limits = limits
    }

    /// Bytes received but not yet consumed by `next()`.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// True between messages with nothing buffered: no part of a next request has arrived.
    public var isIdle: Bool {
        if case .requestLine = state { return readIndex == buffer.count } else { return false }
    }

    /// True once an error was returned.
    public var hasFailed: Bool {
        if case .failed = state { return true } else { return false }
    }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compactIfUseful()
        buffer.append(contentsOf: bytes)
    }

    public mutating func append<Bytes: Sequence>(contentsOf bytes: Bytes) where Bytes.Element == UInt8 {
        compactIfUseful()
        buffer.append(contentsOf: bytes)
    }

    private mutating func compactIfUseful() {
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
            scanIndex = 0
        } else if readIndex >= 16 * 1024 && readIndex * 2 >= buffer.count {
            buffer.removeFirst(readIndex)
            scanIndex -= readIndex
            readIndex = 0
        }
    }

    /// The next event the buffered bytes allow, or nil when more input is needed (or after an error).
    public mutating func next() -> HTTPParserEvent? {
        switch step() {
        case .needMore: return nil
        case .head(let head): return .head(head)
        case .body(let bytes): return .body(bytes)
        case .end(let trailers): return .end(trailers: trailers)
        case .error(let error): return .error(error)
        }
    }

    /// `next()`'s events without an Optional around them, for the connection state machine: an
    /// Optional of the event (a large multi-payload enum) was destroyed through the runtime's
    /// generic value witnesses, about 140 instructions each, several times a request.
    enum Step {
        case needMore
        case head(HTTPRequestHead)
        case body([UInt8])
        case end(trailers: HTTPHeaders)
        case error(HTTPParseError)
    }

    /// The next step the buffered bytes allow; `.needMore` when more input is needed (or after an error).
    mutating func step() -> Step {
        while true {
            switch state {
            case .failed:
                return .needMore

            case .requestLine:
                switch scanLine(limit: limits.maxRequestLineLength,
                                tooLong: .requestLine) {
                case .needMore:
                    // Fail at once on a byte no method can hold (a TLS handshake, binary garbage)
                    // instead of waiting for a line end that may never come.
                    if let error = partialMethodError() { return fail(error) }
                    return .needMore
                case .failure(let error):
                    // A bad method byte wins over a long or bare-CR line, as it does when the
                    // bytes arrive in pieces: the answer must not depend on packet boundaries.
                    return fail(partialMethodError() ?? error)
                case .line(let start, let end):
                    // RFC 9112 §2.2: empty lines before the request line are ignored.
                    if start == end { continue }
                    if let error = parseRequestLine(start: start, end: end) { return fail(error) }
                    state = .headerLines
                }

            case .headerLines:
                let budget = limits.maxHeaderBlockLength - headerBlockLength
                switch scanLine(limit: max(budget - 2, 0),
                                tooLong: .headerBlock) {
                case .needMore: return .needMore
                case .failure(let error): return fail(error)
                case .line(let start, let end):
                    headerBlockLength += end - start + 2
                    if start == end {
                        switch finishHead() {
                        case .success(let head): return .head(head)
                        case .failure(let error): return fail(error)
                        }
                    }
                    if fields.count >= limits.maxHeaderCount {
                        return fail(HTTPParseError(status: .requestHeaderFieldsTooLarge, detail: "More than \(limits.maxHeaderCount) header fields."))
                    }
                    switch parseFieldLine(start: start, end: end) {
                    case .failure(let error): return fail(error)
                    case .success(let (field, known)):
                        if let error = noteField(field, known) { return fail(error) }
                        // One buffer for a typical request's fields instead of growing 1, 2, 4, 8.
                        if fields.capacity == 0 { fields.reserveCapacity(16) }
                        fields.append(field)
                    }
                }

            case .body(let remaining):
                if remaining == 0 {
                    return finishMessage()
                }
                let available = buffer.count - readIndex
                if available == 0 { return .needMore }
                let count = min(available, remaining)
                let bytes = Array(buffer[readIndex ..< readIndex + count])
                readIndex += count
                scanIndex = readIndex
                state = .body(remaining: remaining - count)
                return .body(bytes)

            case .chunkSizeLine:
                switch scanLine(limit: limits.maxChunkLineLength,
                                tooLong: .chunkSizeLine) {
                case .needMore: return .needMore
                case .failure(let error): return fail(error)
                case .line(let start, let end):
                    switch parseChunkSize(start: start, end: end) {
                    case .failure(let error): return fail(error)
                    case .success(let size):
                        if size == 0 {
                            state = .trailerLines
                        } else {
                            bodyLength += size
                            state = .chunkData(remaining: size)
                        }
                    }
                }

            case .chunkData(let remaining):
                let available = buffer.count - readIndex
                if available == 0 { return .needMore }
                let count = min(available, remaining)
                let bytes = Array(buffer[readIndex ..< readIndex + count])
                readIndex += count
                scanIndex = readIndex
                state = count == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - count)
                return .body(bytes)

            case .chunkDataEnd:
                if buffer.count - readIndex < 2 {
                    // Fail early on a wrong first byte rather than waiting for a second.
                    if buffer.count - readIndex == 1 && buffer[readIndex] != ASCII.cr {
                        return fail(HTTPParseError(status: .badRequest, detail: "Chunk data is not followed by CRLF."))
                    }
                    return .needMore
                }
                guard buffer[readIndex] == ASCII.cr, buffer[readIndex + 1] == ASCII.lf else {
                    return fail(HTTPParseError(status: .badRequest, detail: "Chunk data is not followed by CRLF."))
                }
                readIndex += 2
                scanIndex = readIndex
                state = .chunkSizeLine

            case .trailerLines:
                let budget = limits.maxHeaderBlockLength - trailerBlockLength
                switch scanLine(limit: max(budget - 2, 0),
                                tooLong: .trailerSection) {
                case .needMore: return .needMore
                case .failure(let error): return fail(error)
                case .line(let start, let end):
                    trailerBlockLength += end - start + 2
                    if start == end { return finishMessage() }
                    if fields.count + trailers.count >= limits.maxHeaderCount {
                        return fail(HTTPParseError(status: .requestHeaderFieldsTooLarge, detail: "More than \(limits.maxHeaderCount) header and trailer fields."))
                    }
                    switch parseFieldLine(start: start, end: end) {
                    case .failure(let error): return fail(error)
                    case .success(let (field, _)): trailers.append(field)
                    }
                }
            }
        }
    }

    /// The 413's detail, built only when it is sent.
    private var bodyTooLargeDetail: String {
        "The request body is larger than \(bodyLimit) bytes." + (bodyLimitHint.isEmpty ? "" : " " + bodyLimitHint)
    }

    private mutating func fail(_ error: HTTPParseError) -> Step {
        state = .failed
        return .error(error)
    }

    private mutating func finishMessage() -> Step {
        let trailerHeaders = HTTPHeaders(fields: trailers)
        resetMessage()
        return .end(trailers: trailerHeaders)
    }

    private mutating func resetMessage() {
        state = .requestLine
        fields = []
        headerBlockLength = 0
        hostCount = 0
        authorizationCount = 0
        contentLengthValue = nil
        contentLengthCount = 0
        transferEncodings = []
        connectionClose = false
        connectionKeepAlive = false
        expectValue = nil
        bodyLength = 0
        trailers = []
        trailerBlockLength = 0
        absoluteAuthority = nil
    }

    /// Finds the next CRLF-terminated line. Bare LF is refused: peers that disagree on line
    /// endings disagree on where a message ends.
    /// Which limit a line scan enforces; its error is only built when it is exceeded, not for every line.
    private enum LineLimit {
        case requestLine, headerBlock, chunkSizeLine, trailerSection

        func error(_ limits: HTTPLimits) -> HTTPParseError {
            switch self {
            case .requestLine:
                return HTTPParseError(status: .uriTooLong, detail: "The request line is longer than \(limits.maxRequestLineLength) bytes.")
            case .headerBlock:
                return HTTPParseError(status: .requestHeaderFieldsTooLarge, detail: "The header block is larger than \(limits.maxHeaderBlockLength) bytes.")
            case .chunkSizeLine:
                return HTTPParseError(status: .badRequest, detail: "A chunk-size line is longer than \(limits.maxChunkLineLength) bytes.")
            case .trailerSection:
                return HTTPParseError(status: .requestHeaderFieldsTooLarge, detail: "The trailer section is larger than \(limits.maxHeaderBlockLength) bytes.")
            }
        }
    }

    private mutating func scanLine(limit: Int, tooLong: LineLimit) -> LineScan {
        let start = readIndex
        // -1: a CR followed by something other than LF (a bare CR ends the line for some peers).
        let found: Int? = buffer.withUnsafeBufferPointer { bytes in
            var index = scanIndex
            let end = bytes.count
            while index < end {
                let byte = bytes[index]
                if byte == ASCII.lf { return index }
                if byte == ASCII.cr && index + 1 < end && bytes[index + 1] != ASCII.lf { return -1 }
                index += 1
            }
            return nil
        }
        if found == -1 {
            return .failure(HTTPParseError(status: .badRequest, detail: "Line contains a bare CR (CR not followed by LF)."))
        }
        guard let lf = found else {
            // A trailing CR is checked again once the byte after it arrives.
            scanIndex = buffer.count > start && buffer.last == ASCII.cr ? buffer.count - 1 : buffer.count
            // A CRLF may still complete a line of exactly `limit` bytes.
            if buffer.count - start > limit + 1 { return .failure(tooLong.error(limits)) }
            return .needMore
        }
        guard lf > start, buffer[lf - 1] == ASCII.cr else {
            return .failure(HTTPParseError(status: .badRequest, detail: "Line ends with a bare LF instead of CRLF."))
        }
        let end = lf - 1
        if end - start > limit { return .failure(tooLong.error(limits)) }
        readIndex = lf + 1
        scanIndex = readIndex
        return .line(start: start, end: end)
    }

    /// Checks the bytes of an incomplete request line up to the first space: every one must be a
    /// token byte (leading empty lines, CR and LF, are allowed and skipped later).
    private func partialMethodError() -> HTTPParseError? {
        buffer.withUnsafeBufferPointer { bytes -> HTTPParseError? in
            var index = readIndex
            while index < bytes.count && (bytes[index] == ASCII.cr || bytes[index] == ASCII.lf) { index += 1 }
            let methodStart = index
            while index < bytes.count && bytes[index] != ASCII.space {
                guard ASCII.isTokenByte(bytes[index]) else {
                    return Self.invalidMethodByteError(bytes, methodStart: methodStart, at: index)
                }
                index += 1
            }
            return nil
        }
    }

    /// The error for a byte no method can hold. A TLS record (content type 0x16 "handshake", then
    /// version major 3) where the method should start is a client speaking https:// to this
    /// plain-HTTP port: said so, since "invalid character" sends people looking in the wrong place.
    /// A lone 0x16 already counts, so the answer does not depend on whether the 0x03 came with it.
    private static func invalidMethodByteError(_ bytes: UnsafeBufferPointer<UInt8>, methodStart: Int, at index: Int) -> HTTPParseError {
        if index == methodStart && bytes[index] == 0x16 && (index + 1 == bytes.count || bytes[index + 1] == 0x03) {
            return HTTPParseError(status: .badRequest, detail: "This port speaks plain HTTP/1.1, not TLS: use http://, "
                                  + "or put a TLS-terminating proxy in front.")
        }
        return HTTPParseError(status: .badRequest, detail: "The method contains an invalid character.")
    }

    /// A known method spelled in another letter case (`get`). Methods are case-sensitive (RFC 9110
    /// §9.1), so `get` is not GET: a 400 that says so, rather than the 405 or 404 an unknown
    /// method gets from the router, which would leave the client looking at the wrong thing.
    private static func caseMismatchedMethodError(_ token: UnsafeBufferPointer<UInt8>) -> HTTPParseError {
        let name = String(decoding: token, as: UTF8.self)
        return HTTPParseError(status: .badRequest, detail: "Unknown method '\(name)': methods are case-sensitive: did you mean \(name.uppercased())?")
    }

    private mutating func parseRequestLine(start: Int, end: Int) -> HTTPParseError? {
        buffer.withUnsafeBufferPointer { bytes -> HTTPParseError? in
            var index = start
            while index < end && bytes[index] != ASCII.space {
                guard ASCII.isTokenByte(bytes[index]) else {
                    return Self.invalidMethodByteError(bytes, methodStart: start, at: index)
                }
                index += 1
            }
            guard index > start, index < end else {
                return HTTPParseError(status: .badRequest, detail: "Malformed request line.")
            }
            let methodEnd = index
            index += 1
            let targetStart = index
            while index < end && bytes[index] != ASCII.space {
                let byte = bytes[index]
                // Visible ASCII only; a fragment never belongs in a request-target.
                guard byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: "#") else {
                    return HTTPParseError(status: .badRequest, detail: "The request-target contains an invalid character.")
                }
                index += 1
            }
            guard index > targetStart, index < end else {
                return HTTPParseError(status: .badRequest, detail: "Malformed request line.")
            }
            let targetEnd = index
            index += 1
            // HTTP-version = "HTTP/" DIGIT "." DIGIT, and nothing after it.
            guard end - index == 8,
                  bytes[index] == UInt8(ascii: "H"), bytes[index + 1] == UInt8(ascii: "T"),
                  bytes[index + 2] == UInt8(ascii: "T"), bytes[index + 3] == UInt8(ascii: "P"),
                  bytes[index + 4] == UInt8(ascii: "/"), ASCII.isDigit(bytes[index + 5]),
                  bytes[index + 6] == UInt8(ascii: "."), ASCII.isDigit(bytes[index + 7]) else {
                return HTTPParseError(status: .badRequest, detail: "Malformed HTTP version in the request line.")
            }
            let major = Int(bytes[index + 5] - ASCII.zero)
            let minor = Int(bytes[index + 7] - ASCII.zero)
            guard major == 1, minor == 0 || minor == 1 else {
                // A 400, not a 505: the API's only 5xx are 503 and 507. The HTTP/2 connection
                // preface (`PRI * HTTP/2.0`) is a client that assumed HTTP/2 without asking.
                let methodToken = UnsafeBufferPointer(rebasing: bytes[start ..< methodEnd])
                if major == 2 && ASCII.equals(methodToken, "PRI") {
                    return HTTPParseError(status: .badRequest, detail: "This port speaks HTTP/1.1 only; the HTTP/2 connection preface "
                                          + "(prior knowledge) is not accepted. Send HTTP/1.1 requests.")
                }
                return HTTPParseError(status: .badRequest, detail: "HTTP/\(major).\(minor) is not supported: this port speaks HTTP/1.1 "
                                      + "(and HTTP/1.0). Send the request as HTTP/1.1.")
            }
            let methodToken = UnsafeBufferPointer(rebasing: bytes[start ..< methodEnd])
            guard let knownMethod = Self.method(methodToken) else { return Self.caseMismatchedMethodError(methodToken) }
            method = knownMethod
            target = String(decoding: UnsafeBufferPointer(rebasing: bytes[targetStart ..< targetEnd]), as: UTF8.self)
            version = HTTPVersion(major: major, minor: minor)
            let isOriginForm = bytes[targetStart] == UInt8(ascii: "/")
            let isAsterisk = targetEnd - targetStart == 1 && bytes[targetStart] == UInt8(ascii: "*")
            if isAsterisk {
                guard method == .options else {
                    return HTTPParseError(status: .badRequest, detail: "The asterisk request-target is only allowed with OPTIONS.")
                }
            } else if !isOriginForm {
                // RFC 9112 §3.2.2: a server must accept absolute-form; the router reads origin-form.
                guard let absolute = AbsoluteFormTarget(UnsafeBufferPointer(rebasing: bytes[targetStart ..< targetEnd])) else {
                    return HTTPParseError(status: .badRequest, detail: "The request-target must be in origin-form (start with '/') or absolute-form (http://host[:port][/path][?query]).")
                }
                target = absolute.originForm
                absoluteAuthority = absolute.authority
            }
            return nil
        }
    }

    private func parseFieldLine(start: Int, end: Int) -> Result<(HTTPHeaders.Field, KnownField), HTTPParseError> {
        buffer.withUnsafeBufferPointer { bytes in
            let first = bytes[start]
            if first == ASCII.space || first == ASCII.tab {
                return .failure(HTTPParseError(status: .badRequest, detail: "Obsolete line folding (a field line starting with whitespace) is not accepted."))
            }
            var index = start
            while index < end && bytes[index] != ASCII.colon {
                let byte = bytes[index]
                guard ASCII.isTokenByte(byte) else {
                    if byte == ASCII.space || byte == ASCII.tab {
                        return .failure(HTTPParseError(status: .badRequest, detail: "Whitespace between a field name and the colon is not allowed."))
                    }
                    return .failure(HTTPParseError(status: .badRequest, detail: "A field name contains an invalid character."))
                }
                index += 1
            }
            guard index < end, index > start else {
                return .failure(HTTPParseError(status: .badRequest, detail: "Malformed header field line."))
            }
            let nameEnd = index
            var valueStart = index + 1
            var valueEnd = end
            while valueStart < valueEnd && (bytes[valueStart] == ASCII.space || bytes[valueStart] == ASCII.tab) { valueStart += 1 }
            while valueEnd > valueStart && (bytes[valueEnd - 1] == ASCII.space || bytes[valueEnd - 1] == ASCII.tab) { valueEnd -= 1 }
            for position in valueStart ..< valueEnd {
                let byte = bytes[position]
                // field-vchar / SP / HTAB / obs-text; everything else (NUL, bare CR, DEL...) is refused.
                if (byte < 0x20 && byte != ASCII.tab) || byte == 0x7F {
                    return .failure(HTTPParseError(status: .badRequest, detail: "A field value contains a control character."))
                }
            }
            let nameBytes = UnsafeBufferPointer(rebasing: bytes[start ..< nameEnd])
            let known = Self.classify(nameBytes)
            // Nearly every request spells Host this way; the literal costs no decoding.
            let name = known == .host && ASCII.equals(nameBytes, "Host") ? "Host" : String(decoding: nameBytes, as: UTF8.self)
            let value = String(decoding: UnsafeBufferPointer(rebasing: bytes[valueStart ..< valueEnd]), as: UTF8.self)
            return .success((HTTPHeaders.Field(name: name, value: value), known))
        }
    }

    /// The method token: the common ones are the shared constants (no string decoded per request).
    /// The method, or nil for a known one in another letter case (see `caseMismatchedMethodError`).
    /// Any other token is passed on: the router answers a method no route takes with 405 and `Allow`.
    private static func method(_ token: UnsafeBufferPointer<UInt8>) -> HTTPMethod? {
        if ASCII.equals(token, "GET") { return .get }
        if ASCII.equals(token, "POST") { return .post }
        let method = HTTPMethod(String(decoding: token, as: UTF8.self))
        if HTTPMethod.known.contains(method) { return method }
        return HTTPMethod.known.contains(HTTPMethod(method.rawValue.uppercased())) ? nil : method
    }

    private static func classify(_ name: UnsafeBufferPointer<UInt8>) -> KnownField {
        switch name.count {
        case 4: return ASCII.equalsLowercase(name, "host") ? .host : .other
        case 6: return ASCII.equalsLowercase(name, "expect") ? .expect : .other
        case 10: return ASCII.equalsLowercase(name, "connection") ? .connection : .other
        case 13: return ASCII.equalsLowercase(name, "authorization") ? .authorization : .other
        case 14: return ASCII.equalsLowercase(name, "content-length") ? .contentLength : .other
        case 17: return ASCII.equalsLowercase(name, "transfer-encoding") ? .transferEncoding : .other
        default: return .other
        }
    }

    private mutating func noteField(_ field: HTTPHeaders.Field, _ known: KnownField) -> HTTPParseError? {
        switch known {
        case .other:
            return nil
        case .authorization:
            authorizationCount += 1
            // Which one would win differs between servers and proxies; refusing both is the safe answer.
            if authorizationCount > 1 { return HTTPParseError(status: .badRequest, detail: "More than one Authorization header field; send one.") }
        case .host:
            hostCount += 1
            if hostCount > 1 { return HTTPParseError(status: .badRequest, detail: "More than one Host header field.") }
        case .contentLength:
            contentLengthCount += 1
            // Even equal repeats are refused: intermediaries disagree on which one wins.
            if contentLengthCount > 1 { return HTTPParseError(status: .badRequest, detail: "More than one Content-Length header field.") }
            guard let length = Self.parseDecimal(field.value) else {
                return HTTPParseError(status: .badRequest, detail: "Content-Length must be a single non-negative decimal number.")
            }
            contentLengthValue = length
        case .transferEncoding:
            transferEncodings.append(contentsOf: field.value.split(separator: ",", omittingEmptySubsequences: false))
        case .connection:
            for option in field.value.split(separator: ",") {
                let token = String(option.trimmingASCIIWhitespace())
                if token.asciiCaseInsensitiveEquals("close") { connectionClose = true }
                if token.asciiCaseInsensitiveEquals("keep-alive") { connectionKeepAlive = true }
            }
        case .expect:
            if expectValue != nil { return HTTPParseError(status: .badRequest, detail: "More than one Expect header field.") }
            expectValue = field.value
        }
        return nil
    }

    /// Decimal digits only, at least one, no sign, no overflow.
    private static func parseDecimal(_ text: String) -> Int? {
        var value = 0
        var digits = 0
        for byte in text.utf8 {
            guard ASCII.isDigit(byte) else { return nil }
            let (shifted, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowB) = shifted.addingReportingOverflow(Int(byte - ASCII.zero))
            if overflowA || overflowB { return nil }
            value = sum
            digits += 1
        }
        return digits > 0 ? value : nil
    }

    private mutating func finishHead() -> Result<HTTPRequestHead, HTTPParseError> {
        // Only a request with a body has a body limit to look up (the per-path overrides compare
        // the target's path with each of them, which a GET would pay for nothing).
        if !transferEncodings.isEmpty || contentLengthValue != nil {
            let (limit, override) = limits.bodyLimit(forTarget: target)
            bodyLimit = limit
            bodyLimitHint = override?.hint ?? ""
        } else {
            bodyLimit = 0
            bodyLimitHint = ""
        }
        if version == .http1_1 && hostCount != 1 {
            return .failure(HTTPParseError(status: .badRequest, detail: "HTTP/1.1 requests need exactly one Host header field."))
        }
        var framing = HTTPBodyFraming.none
        if !transferEncodings.isEmpty {
            if contentLengthCount > 0 {
                return .failure(HTTPParseError(status: .badRequest, detail: "Both Content-Length and Transfer-Encoding are present."))
            }
            if version == .http1_0 {
                return .failure(HTTPParseError(status: .badRequest, detail: "Transfer-Encoding is not allowed in an HTTP/1.0 request."))
            }
            let codings = transferEncodings.map { $0.trimmingASCIIWhitespace() }.filter { !$0.isEmpty }
            // RFC 9112 §6.3: if chunked is not the final coding the length cannot be determined: 400.
            guard let last = codings.last, String(last).asciiCaseInsensitiveEquals("chunked") else {
                return .failure(HTTPParseError(status: .badRequest, detail: "Transfer-Encoding must end with 'chunked'."))
            }
            if codings.dropLast().contains(where: { String($0).asciiCaseInsensitiveEquals("chunked") }) {
                return .failure(HTTPParseError(status: .badRequest, detail: "'chunked' is applied more than once."))
            }
            if codings.count > 1 {
                // We decode no other transfer coding. RFC 9112 §6.1 suggests 501, but the API's only
                // 5xx are 503 and 507 (any other is a bug to clients), and a body whose framing we
                // cannot undo is a framing error: 400, and the connection closes.
                return .failure(HTTPParseError(status: .badRequest,
                                               detail: "Only the 'chunked' transfer coding is supported; send the body without other codings (e.g. gzip, chunked)."))
            }
            framing = .chunked
        } else if let length = contentLengthValue {
            if length > bodyLimit {
                return .failure(HTTPParseError(status: .contentTooLarge, detail: bodyTooLargeDetail))
            }
            framing = .contentLength(length)
        }
        var expectsContinue = false
        if let expect = expectValue {
            guard expect.asciiCaseInsensitiveEquals("100-continue") else {
                return .failure(HTTPParseError(status: .expectationFailed, detail: "Only 'Expect: 100-continue' is supported."))
            }
            expectsContinue = version == .http1_1
        }
        if let authority = absoluteAuthority {
            // The target's authority wins over the Host field, so nothing downstream sees two hosts.
            if let index = fields.firstIndex(where: { $0.name.asciiCaseInsensitiveEquals("host") }) {
                fields[index].value = authority
            } else {
                fields.append(HTTPHeaders.Field(name: "Host", value: authority))
            }
        }
        let keepAlive = version == .http1_1 ? !connectionClose : (connectionKeepAlive && !connectionClose)
        let head = HTTPRequestHead(method: method, target: target, version: version,
                                   headers: HTTPHeaders(fields: fields),
                                   framing: framing, keepAlive: keepAlive, expectsContinue: expectsContinue)
        switch framing {
        case .none: state = .body(remaining: 0)
        case .contentLength(let length): state = .body(remaining: length)
        case .chunked: state = .chunkSizeLine
        }
        return .success(head)
    }

    private func parseChunkSize(start: Int, end: Int) -> Result<Int, HTTPParseError> {
        buffer.withUnsafeBufferPointer { bytes in
            var index = start
            var size = 0
            while index < end, let digit = ASCII.hexValue(bytes[index]) {
                // Refuse before the shift could lose bits.
                if size > (Int.max >> 4) {
                    return .failure(HTTPParseError(status: .badRequest, detail: "The chunk size overflows."))
                }
                size = size << 4 | digit
                index += 1
            }
            guard index > start else {
                return .failure(HTTPParseError(status: .badRequest, detail: "Invalid chunk size."))
            }
            if index < end, let error = Self.chunkExtensionsError(UnsafeBufferPointer(rebasing: bytes[index ..< end])) {
                return .failure(error)
            }
            if size > bodyLimit - bodyLength {
                return .failure(HTTPParseError(status: .contentTooLarge, detail: bodyTooLargeDetail))
            }
            return .success(size)
        }
    }
}

extension HTTPRequestParser {
    /// What follows a chunk size must be chunk extensions, exactly as RFC 9112 §7.1.1 spells them:
    /// `*( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] )`. They are ignored, but
    /// anything else (a bare space after the size, an empty name, a stray byte) is a framing error:
    /// peers that parse the line differently would disagree on where the chunk ends.
    static func chunkExtensionsError(_ bytes: UnsafeBufferPointer<UInt8>) -> HTTPParseError? {
        var index = 0
        let end = bytes.count
        func skipWhitespace() { while index < end && (bytes[index] == ASCII.space || bytes[index] == ASCII.tab) { index += 1 } }
        func token() -> Bool {
            let start = index
            while index < end && ASCII.isTokenByte(bytes[index]) { index += 1 }
            return index > start
        }
        while index < end {
            skipWhitespace()
            guard index < end, bytes[index] == UInt8(ascii: ";") else {
                return HTTPParseError(status: .badRequest, detail: "Invalid chunk size line: only ';' extensions may follow the size.")
            }
            index += 1
            skipWhitespace()
            guard token() else {
                return HTTPParseError(status: .badRequest, detail: "A chunk extension has no valid name.")
            }
            let afterName = index
            skipWhitespace()
            guard index < end, bytes[index] == UInt8(ascii: "=") else {
                index = afterName
                continue
            }
            index += 1
            skipWhitespace()
            if index < end && bytes[index] == UInt8(ascii: "\"") {
                guard let after = quotedStringEnd(bytes, from: index) else {
                    return HTTPParseError(status: .badRequest, detail: "A chunk extension has a malformed quoted value.")
                }
                index = after
            } else if !token() {
                return HTTPParseError(status: .badRequest, detail: "A chunk extension has no valid value after '='.")
            }
        }
        return nil
    }

    /// The index after the quoted-string (RFC 9110 §5.6.4) starting at `start`, or nil.
    private static func quotedStringEnd(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        var index = start + 1
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                return index + 1
            case UInt8(ascii: "\\"):
                guard index + 1 < bytes.count, isQuotedText(bytes[index + 1]) || bytes[index + 1] == UInt8(ascii: "\"") || bytes[index + 1] == UInt8(ascii: "\\") else { return nil }
                index += 2
            default:
                guard isQuotedText(byte) else { return nil }
                index += 1
            }
        }
        return nil
    }

    /// qdtext: HTAB, SP, visible ASCII except '"' and '\\', and obs-text.
    private static func isQuotedText(_ byte: UInt8) -> Bool {
        byte == ASCII.tab || byte == ASCII.space || (byte >= 0x21 && byte <= 0x7E && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\")) || byte >= 0x80
    }
}

/// An absolute-form request-target (`http://host[:port][/path][?query]`, RFC 9112 §3.2.2) split
/// into its authority and the origin-form the router reads: an empty path is "/" (RFC 9110 §4.2.3).
struct AbsoluteFormTarget: Equatable {
    var authority: String
    var originForm: String

    init?(_ bytes: UnsafeBufferPointer<UInt8>) {
        var index = 0
        let end = bytes.count
        while index < end && ASCII.isLetter(bytes[index]) { index += 1 }
        let scheme = String(decoding: UnsafeBufferPointer(rebasing: bytes[0 ..< index]), as: UTF8.self).lowercased()
        guard scheme == "http" || scheme == "https", end - index >= 3,
              bytes[index] == ASCII.colon, bytes[index + 1] == UInt8(ascii: "/"), bytes[index + 2] == UInt8(ascii: "/") else { return nil }
        index += 3
        let authorityStart = index
        while index < end && bytes[index] != UInt8(ascii: "/") && bytes[index] != UInt8(ascii: "?") { index += 1 }
        let authority = UnsafeBufferPointer(rebasing: bytes[authorityStart ..< index])
        guard Self.isValidAuthority(authority) else { return nil }
        self.authority = String(decoding: authority, as: UTF8.self)
        let rest = String(decoding: UnsafeBufferPointer(rebasing: bytes[index ..< end]), as: UTF8.self)
        originForm = rest.hasPrefix("/") ? rest : "/" + rest
    }

    /// host [ ":" port ]: a bracketed IPv6 literal or a reg-name, no userinfo (RFC 9110 §4.2.4
    /// makes it an error in http URIs), port digits only.
    private static func isValidAuthority(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !bytes.isEmpty else { return false }
        var index = 0
        if bytes[0] == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")), close > 1 else { return false }
            for byte in bytes[1 ..< close] where !(ASCII.hexValue(byte) != nil || byte == ASCII.colon || byte == UInt8(ascii: ".")) {
                return false
            }
            index = close + 1
        } else {
            let hostStart = index
            while index < bytes.count && bytes[index] != ASCII.colon {
                guard isRegNameByte(bytes[index]) else { return false }
                index += 1
            }
            guard index > hostStart else { return false }
        }
        guard index < bytes.count else { return true }
        guard bytes[index] == ASCII.colon else { return false }
        return bytes[(index + 1)...].allSatisfy(ASCII.isDigit)
    }

    /// unreserved / pct-encoded / sub-delims (RFC 3986 §3.2.2).
    private static func isRegNameByte(_ byte: UInt8) -> Bool {
        ASCII.isLetter(byte) || ASCII.isDigit(byte) || "-._~%!$&'()*+,;=".utf8.contains(byte)
    }
}

/// Byte-level helpers shared by the parser, the router and the serializer.
enum ASCII {
    static let cr: UInt8 = 13
    static let lf: UInt8 = 10
    static let space: UInt8 = 32
    static let tab: UInt8 = 9
    static let colon: UInt8 = 58
    static let zero: UInt8 = 48

    static func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }
    static func isLetter(_ byte: UInt8) -> Bool { (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) }

    @inline(__always)
    static func hexValue(_ byte: UInt8) -> Int? { HexDigit.value(byte).map(Int.init) }

    /// tchar from RFC 9110 §5.6.2.
    static func isTokenByte(_ byte: UInt8) -> Bool { tokenTable[Int(byte)] }

    private static let tokenTable: [Bool] = (0 ..< 256).map { value in
        let byte = UInt8(value)
        switch byte {
        case UInt8(ascii: "0") ... UInt8(ascii: "9"), UInt8(ascii: "a") ... UInt8(ascii: "z"), UInt8(ascii: "A") ... UInt8(ascii: "Z"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// Exactly the literal's bytes (case-sensitive).
    static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
        guard bytes.count == literal.utf8CodeUnitCount else { return false }
        let expected = literal.utf8Start
        for index in 0 ..< bytes.count where bytes[index] != expected[index] { return false }
        return true
    }

    /// Equal when ASCII letters are folded to lowercase; both the same length.
    static func equalsIgnoringCase(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        for index in 0 ..< a.count {
            let x = a[index], y = b[index]
            if x == y { continue }
            if (x | 0x20) != (y | 0x20) || !isLetter(x) { return false }
        }
        return true
    }

    static func equalsLowercase(_ bytes: UnsafeBufferPointer<UInt8>, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        for index in 0 ..< bytes.count {
            var byte = bytes[index]
            if byte >= 65 && byte <= 90 { byte += 32 }
            if byte != expected[index] { return false }
        }
        return true
    }
}

extension Substring {
    func trimmingASCIIWhitespace() -> Substring {
        var result = self
        while let first = result.utf8.first, first == ASCII.space || first == ASCII.tab { result = result.dropFirst() }
        while let last = result.utf8.last, last == ASCII.space || last == ASCII.tab { result = result.dropLast() }
        return result
    }
}
