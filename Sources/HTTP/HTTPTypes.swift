// The value types shared by the parser, the router, the server shell and the API.
// Plain Sendable values: no sockets, no Foundation.

import Synchronization

/// An HTTP method token, kept as received (methods are case-sensitive, RFC 9110 §9.1).
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let get = HTTPMethod("GET")
    public static let head = HTTPMethod("HEAD")
    public static let post = HTTPMethod("POST")
    public static let put = HTTPMethod("PUT")
    public static let delete = HTTPMethod("DELETE")
    public static let options = HTTPMethod("OPTIONS")
    public static let patch = HTTPMethod("PATCH")

    /// The methods named above. The parser refuses one of them spelled in another letter case
    /// (`get`) with a 400 that says methods are case-sensitive.
    public static let known: [HTTPMethod] = [.get, .head, .post, .put, .delete, .options, .patch]
}

public struct HTTPVersion: Hashable, Sendable, CustomStringConvertible {
    public var major: Int
    public var minor: Int
    public init(major: Int, minor: Int) { self.major = major; self.minor = minor }
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
    public var description: String { "HTTP/\(major).\(minor)" }
}

/// Header fields in the order received. Names compare case-insensitively (ASCII).
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// One field line. A struct rather than a `(name, value)` tuple: arrays of tuples are
    /// copied, destroyed and allocated through the runtime's generic tuple witnesses and a
    /// metadata lookup, which cost several hundred instructions on every request.
    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public private(set) var fields: [Field]

    public init() { fields = [] }
    public init(_ fields: [(String, String)]) { self.fields = fields.map { Field(name: $0.0, value: $0.1) } }
    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }
    /// Takes already-labelled fields as they are (no per-field copy; the parser uses it).
    public init(fields: [Field]) { self.fields = fields }

    public var count: Int { fields.count }
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// The first value of `name`, or nil.
    public subscript(name: String) -> String? {
        firstIndex(named: name).map { fields[$0].value }
    }

    /// Where the first field named `name` is. Scanned in place: iterating the fields by value
    /// copies each one, retaining and releasing both of its strings, on every lookup of every
    /// request and response.
    func firstIndex(named name: String) -> Int? {
        fields.withUnsafeBufferPointer { fields in
            // The lengths first, in line: most fields looked at are another field of another
            // length, and the call that compares bytes costs more than that check.
            let length = name.utf8.count
            for index in fields.indices where fields[index].name.utf8.count == length
                && fields[index].name.asciiCaseInsensitiveEquals(name) { return index }
            return nil
        }
    }

    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.asciiCaseInsensitiveEquals(name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool { firstIndex(named: name) != nil }

    public mutating func add(_ name: String, _ value: String) {
        reserveOnFirstField()
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every field named `name` with one field.
    public mutating func set(_ name: String, _ value: String) {
        // Usually the field is new: then nothing is removed and the array is not rewritten.
        if firstIndex(named: name) != nil { remove(name) }
        reserveOnFirstField()
        fields.append(Field(name: name, value: value))
    }

    /// A response's headers are built one field at a time (content type, cache policy, request
    /// id...): growing 1, 2, 4 cost three allocations and copies per response; one buffer with room
    /// for a typical response's fields costs one.
    private mutating func reserveOnFirstField() {
        if fields.capacity == 0 { fields.reserveCapacity(Self.typicalFieldCount) }
    }

    static let typicalFieldCount = 6

    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.asciiCaseInsensitiveEquals(name) }
    }
}

extension String {
    /// ASCII case-insensitive comparison, as header names and tokens need (no locale, no Unicode folding).
    public func asciiCaseInsensitiveEquals(_ other: String) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        // Compared in the strings' contiguous bytes (native and literal strings, i.e. all of them
        // here): zipping the UTF-8 views walks String indices, several times the cost, and header
        // lookups run this for every field of every request and response.
        let contiguous: Bool?? = a.withContiguousStorageIfAvailable { x in
            b.withContiguousStorageIfAvailable { y in ASCII.equalsIgnoringCase(x, y) }
        }
        if case .some(.some(let equal)) = contiguous { return equal }
        for (x, y) in zip(a, b) where x != y {
            let lx = (x >= 65 && x <= 90) ? x + 32 : x
            let ly = (y >= 65 && y <= 90) ? y + 32 : y
            if lx != ly { return false }
        }
        return true
    }
}

/// A complete request as handed to a responder: head parsed, body fully read (de-chunked).
public struct HTTPRequest: Sendable {
    public var method: HTTPMethod
    /// The request-target exactly as received (origin-form: path and optional query).
    public var target: String {
        didSet { (queryMarkIndex, pathByteCount) = Self.queryMark(in: target) }
    }
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// Where the target's `?` is, searched once: `path` and `rawQuery` are read several times
    /// a request (routing, the query, logs), and each search cost more than the rest of the getter.
    private var queryMarkIndex: String.Index?
    /// The path's length in UTF-8 bytes (up to the `?`, or the whole target).
    private var pathByteCount: Int

    public init(method: HTTPMethod, target: String, version: HTTPVersion = .http1_1,
                headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
        (queryMarkIndex, pathByteCount) = Self.queryMark(in: target)
    }

    /// The raw path (before `?`), not percent-decoded.
    public var path: Substring {
        if let q = queryMarkIndex { return target[..<q] }
        return target[...]
    }

    /// The raw path's bytes (before `?`), read in place: routing looks at them on every request,
    /// and making a Substring of the path cost about half as much as the route lookup itself.
    public func withPathBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        var target = target
        let count = pathByteCount
        return try target.withUTF8 { bytes in try body(UnsafeBufferPointer(rebasing: bytes[0 ..< min(count, bytes.count)])) }
    }

    /// The raw query (after `?`), not decoded; nil when there is no `?`.
    public var rawQuery: Substring? {
        guard let q = queryMarkIndex else { return nil }
        return target[target.utf8.index(after: q)...]
    }

    /// Where the `?` of a request target is. Searched in the string's contiguous UTF-8 bytes: this
    /// runs several times a request, and `utf8.firstIndex(of:)` walks String indices, costing
    /// about 280 instructions for a short path.
    /// Also the path's length in bytes (the `?`'s offset, or the whole target's length).
    static func queryMark(in target: String) -> (index: String.Index?, pathByteCount: Int) {
        let offset: Int?? = target.utf8.withContiguousStorageIfAvailable { bytes in
            bytes.firstIndex(of: UInt8(ascii: "?"))
        }
        switch offset {
        case .some(.some(let offset)): return (target.utf8.index(target.utf8.startIndex, offsetBy: offset), offset)
        case .some(.none): return (nil, target.utf8.count)
        case .none:
            guard let index = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return (nil, target.utf8.count) }
            return (index, target.utf8.distance(from: target.utf8.startIndex, to: index))
        }
    }
}

public struct HTTPStatus: Hashable, Sendable, CustomStringConvertible {
    public var code: Int
    public var reasonPhrase: String
    public init(code: Int, reasonPhrase: String) { self.code = code; self.reasonPhrase = reasonPhrase }
    public var description: String { "\(code) \(reasonPhrase)" }

    public static let `continue` = HTTPStatus(code: 100, reasonPhrase: "Continue")
    public static let ok = HTTPStatus(code: 200, reasonPhrase: "OK")
    public static let created = HTTPStatus(code: 201, reasonPhrase: "Created")
    public static let noContent = HTTPStatus(code: 204, reasonPhrase: "No Content")
    public static let notModified = HTTPStatus(code: 304, reasonPhrase: "Not Modified")
    public static let badRequest = HTTPStatus(code: 400, reasonPhrase: "Bad Request")
    public static let unauthorized = HTTPStatus(code: 401, reasonPhrase: "Unauthorized")
    public static let forbidden = HTTPStatus(code: 403, reasonPhrase: "Forbidden")
    public static let notFound = HTTPStatus(code: 404, reasonPhrase: "Not Found")
    public static let methodNotAllowed = HTTPStatus(code: 405, reasonPhrase: "Method Not Allowed")
    public static let requestTimeout = HTTPStatus(code: 408, reasonPhrase: "Request Timeout")
    public static let conflict = HTTPStatus(code: 409, reasonPhrase: "Conflict")
    public static let gone = HTTPStatus(code: 410, reasonPhrase: "Gone")
    public static let lengthRequired = HTTPStatus(code: 411, reasonPhrase: "Length Required")
    public static let contentTooLarge = HTTPStatus(code: 413, reasonPhrase: "Content Too Large")
    public static let uriTooLong = HTTPStatus(code: 414, reasonPhrase: "URI Too Long")
    public static let unsupportedMediaType = HTTPStatus(code: 415, reasonPhrase: "Unsupported Media Type")
    public static let expectationFailed = HTTPStatus(code: 417, reasonPhrase: "Expectation Failed")
    public static let unprocessableContent = HTTPStatus(code: 422, reasonPhrase: "Unprocessable Content")
    public static let tooManyRequests = HTTPStatus(code: 429, reasonPhrase: "Too Many Requests")
    public static let requestHeaderFieldsTooLarge = HTTPStatus(code: 431, reasonPhrase: "Request Header Fields Too Large")
    public static let internalServerError = HTTPStatus(code: 500, reasonPhrase: "Internal Server Error")
    public static let serviceUnavailable = HTTPStatus(code: 503, reasonPhrase: "Service Unavailable")
    public static let httpVersionNotSupported = HTTPStatus(code: 505, reasonPhrase: "HTTP Version Not Supported")
}

/// Where a streamed response body goes. The server implements it; producers call it from any thread.
public protocol HTTPBodyStream: AnyObject, Sendable {
    /// Queues `bytes` as one chunk. Returns false once the connection is gone or the unsent
    /// backlog exceeds the server's per-stream limit; the producer must then stop (and may `finish`).
    @discardableResult func write(_ bytes: [UInt8]) -> Bool
    /// Ends the body (the terminating chunk). Further writes are ignored.
    func finish()
    /// True once the peer went away or the stream was finished or cut off.
    var isClosed: Bool { get }
    /// Bytes queued but not yet accepted by the socket.
    var bufferedByteCount: Int { get }
    /// Runs once when the stream closes for any reason (finish, peer gone, shutdown). Runs at once if already closed.
    func onClose(_ handler: @escaping @Sendable () -> Void)
}

public enum HTTPResponseBody: Sendable {
    case bytes([UInt8])
    /// Sent with `Transfer-Encoding: chunked` (HTTP/1.1) or until close (HTTP/1.0).
    /// The closure is called once, on a server queue; it may keep the stream and write later from anywhere.
    case stream(@Sendable (any HTTPBodyStream) -> Void)
    /// Sent with `Content-Length: length`, so the connection stays open (a file of known size). The
    /// producer writes exactly `length` bytes: bytes past it are dropped, and a body that finishes
    /// short closes the connection (the client sees the truncation instead of misframed data).
    case sizedStream(length: Int, producer: @Sendable (any HTTPBodyStream) -> Void)
}

public struct HTTPResponse: Sendable {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: HTTPResponseBody

    public init(status: HTTPStatus, headers: HTTPHeaders = HTTPHeaders(), body: HTTPResponseBody = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(status: HTTPStatus, headers: HTTPHeaders = HTTPHeaders(), bytes: [UInt8]) {
        self.init(status: status, headers: headers, body: .bytes(bytes))
    }
}

/// What a responder knows about the connection a request came on.
public struct ConnectionInfo: Sendable {
    public var id: UInt64
    /// The peer's address without port, e.g. "127.0.0.1" or "::1".
    public var remoteAddress: String
    /// Tells a responder that is holding a request open (a long-poll) that the client went away.
    public let disconnect: DisconnectSignal
    public init(id: UInt64, remoteAddress: String, disconnect: DisconnectSignal = DisconnectSignal()) {
        self.id = id
        self.remoteAddress = remoteAddress
        self.disconnect = disconnect
    }
}

/// Fires when the client stops sending (end of input) or the connection dies while a request
/// waits for its answer, so a responder that parks requests can answer early instead of holding
/// the waiter until its deadline. One per connection; handlers belong to the pending request and
/// are dropped when its answer arrives. After end of input nothing more is read, so once fired it
/// stays fired and a later registration runs at once.
public final class DisconnectSignal: Sendable {
    private struct State {
        var fired = false
        var handlers: [@Sendable () -> Void] = []
    }

    private let state = Mutex(State())

    public init() {}

    public var hasFired: Bool { state.withLock { $0.fired } }

    /// Runs `handler` (on the server's thread: hand slow work to a queue) when the client goes away
    /// before the pending request is answered; at once if it already has.
    public func onDisconnect(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.fired { return true }
            state.handlers.append(handler)
            return false
        }
        if runNow { handler() }
    }

    /// Server side: the client went away.
    public func fire() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            state.fired = true
            defer { state.handlers.removeAll() }
            return state.handlers
        }
        for handler in handlers { handler() }
    }

    /// Server side: the pending request has its answer; its handlers no longer apply.
    public func requestAnswered() {
        state.withLock { state in
            if !state.handlers.isEmpty { state.handlers.removeAll() }
        }
    }
}

/// The application side of the server. `respond` is called on a server queue and must not block:
/// slow work goes to the responder's own queues, and `completion` is called exactly once, from any thread.
public protocol HTTPResponder: Sendable {
    func respond(to request: HTTPRequest, connection: ConnectionInfo,
                 completion: @escaping @Sendable (HTTPResponse) -> Void)
}
