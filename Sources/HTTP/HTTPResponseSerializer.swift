// Response heads on the wire, the HTTP date format and server-generated problem documents.

import Primitives

/// How a response body is delimited on the wire.
public enum HTTPResponseFraming: Sendable, Equatable {
    /// No body and no length header (HEAD of a stream, 204, 304).
    case none
    case contentLength(Int)
    case chunked
    /// HTTP/1.0 streaming: the body ends when the connection closes.
    case untilClose
}

public enum HTTPResponseSerializer {
    /// Whether a response with this status to this method carries a body at all (RFC 9110 §6.4.1).
    public static func allowsBody(status: HTTPStatus, method: HTTPMethod) -> Bool {
        if method == .head { return false }
        return !(status.code == 204 || status.code == 304 || (status.code >= 100 && status.code < 200))
    }

    /// Serializes a status line and headers. Framing, `Date` and `Connection` come from the
    /// arguments; the same fields in `headers` are dropped so the server alone decides framing.
    /// `keepAlive` describes the connection after this response; `requestVersion` chooses between
    /// `Connection: keep-alive` (needed by HTTP/1.0 clients) and nothing (the 1.1 default).
    public static func head(status: HTTPStatus, headers: HTTPHeaders, framing: HTTPResponseFraming,
                            keepAlive: Bool, requestVersion: HTTPVersion, date: String,
                            reservingBody bodyCount: Int = 0) -> [UInt8] {
        var out: [UInt8] = []
        // `bodyCount`: room for a body the caller appends next, so that append does not reallocate.
        out.reserveCapacity(160 + headers.count * 40 + bodyCount)
        appendASCII("HTTP/1.1 ", to: &out)
        appendDecimal(status.code, to: &out)
        out.append(ASCII.space)
        appendSanitized(status.reasonPhrase, to: &out)
        appendASCII("\r\nDate: ", to: &out)
        appendASCII(date, to: &out)
        appendASCII("\r\n", to: &out)
        for field in headers.fields {
            if isServerOwned(field.name) { continue }
            appendSanitized(field.name, to: &out)
            appendASCII(": ", to: &out)
            appendSanitized(field.value, to: &out)
            appendASCII("\r\n", to: &out)
        }
        switch framing {
        case .none, .untilClose:
            break
        case .contentLength(let length):
            appendASCII("Content-Length: ", to: &out)
            appendDecimal(length, to: &out)
            appendASCII("\r\n", to: &out)
        case .chunked:
            appendASCII("Transfer-Encoding: chunked\r\n", to: &out)
        }
        if !keepAlive {
            appendASCII("Connection: close\r\n", to: &out)
        } else if requestVersion == .http1_0 {
            appendASCII("Connection: keep-alive\r\n", to: &out)
        }
        appendASCII("\r\n", to: &out)
        return out
    }

    /// The interim response sent before reading a body announced with `Expect: 100-continue`.
    public static let continueResponse: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// Frames `bytes` as one chunk of a chunked body. Empty input yields nothing (an empty chunk would end the body).
    public static func chunk(_ bytes: [UInt8]) -> [UInt8] {
        guard !bytes.isEmpty else { return [] }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 12)
        appendHex(bytes.count, to: &out)
        appendASCII("\r\n", to: &out)
        out.append(contentsOf: bytes)
        appendASCII("\r\n", to: &out)
        return out
    }

    public static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)

    private static func isServerOwned(_ name: String) -> Bool {
        switch name.utf8.count {
        case 4: return name.asciiCaseInsensitiveEquals("date")
        case 10: return name.asciiCaseInsensitiveEquals("connection") || name.asciiCaseInsensitiveEquals("keep-alive")
        case 14: return name.asciiCaseInsensitiveEquals("content-length")
        case 17: return name.asciiCaseInsensitiveEquals("transfer-encoding")
        default: return false
        }
    }

    static func appendASCII(_ text: String, to out: inout [UInt8]) {
        if text.utf8.withContiguousStorageIfAvailable({ out.append(contentsOf: $0) }) == nil {
            out.append(contentsOf: text.utf8)
        }
    }

    /// Literals are copied from their static storage in one go.
    static func appendASCII(_ text: StaticString, to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Application-supplied text never gets to inject CR, LF or other controls (response splitting).
    private static func appendSanitized(_ text: String, to out: inout [UInt8]) {
        // Clean text (nearly all of it) is copied whole; the byte loop only runs when there is something to replace.
        let copied: Bool? = text.utf8.withContiguousStorageIfAvailable { bytes in
            for byte in bytes where (byte < 0x20 && byte != ASCII.tab) || byte == 0x7F { return false }
            out.append(contentsOf: bytes)
            return true
        }
        guard copied != true else { return }
        for byte in text.utf8 {
            out.append((byte < 0x20 && byte != ASCII.tab) || byte == 0x7F ? ASCII.space : byte)
        }
    }

    static func appendDecimal(_ value: Int, to out: inout [UInt8]) {
        // Digits are written in place, most significant first, without a scratch array.
        guard value > 0 else { out.append(ASCII.zero); return }
        var divisor = 1
        while divisor <= value / 10 { divisor *= 10 }
        var remaining = value
        while divisor > 0 {
            out.append(ASCII.zero + UInt8(remaining / divisor))
            remaining %= divisor
            divisor /= 10
        }
    }

    private static func appendHex(_ value: Int, to out: inout [UInt8]) {
        var shift = Int.bitWidth - 4
        while shift > 0 && (value >> shift) & 0xF == 0 { shift -= 4 }
        while shift >= 0 {
            out.append(hexDigit((value >> shift) & 0xF))
            shift -= 4
        }
    }

    static func hexDigit(_ nibble: Int) -> UInt8 {
        nibble < 10 ? ASCII.zero + UInt8(nibble) : UInt8(ascii: "a") + UInt8(nibble - 10)
    }
}

/// IMF-fixdate (RFC 9110 §5.6.7), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`, computed without Foundation.
public enum HTTPDate {
    public static func imfFixdate(unixSeconds: Int) -> String {
        let days = unixSeconds >= 0 ? unixSeconds / 86_400 : (unixSeconds - 86_399) / 86_400
        let secondsOfDay = unixSeconds - days * 86_400
        let (year, month, day) = CivilDate.of(daysSinceEpoch: Int64(days))
        // 1970-01-01 was a Thursday.
        let weekday = ((days % 7) + 7 + 4) % 7
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        return "\(weekdays[weekday]), \(twoDigits(day)) \(months[month - 1]) \(year) "
            + "\(twoDigits(secondsOfDay / 3600)):\(twoDigits(secondsOfDay / 60 % 60)):\(twoDigits(secondsOfDay % 60)) GMT"
    }

    private static func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
}

/// RFC 9457 problem documents for errors the server itself produces.
public enum HTTPProblem {
    /// The application error code the API uses for each server-generated status.
    public static func code(for status: HTTPStatus) -> String {
        switch status.code {
        case 400, 408, 414, 417, 431, 505: return "errorInvalidArgument"
        case 413: return "errorPayloadTooLarge"
        case 501: return "errorNotImplemented"
        case 503: return "errorServiceUnavailable"
        default: return "errorInternal"
        }
    }

    /// `{"type":"about:blank","title":...,"status":...,"detail":...,"code":...}`
    public static func json(status: HTTPStatus, detail: String, code: String? = nil) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(96 + detail.utf8.count)
        HTTPResponseSerializer.appendASCII("{\"type\":\"about:blank\",\"title\":", to: &out)
        appendJSONString(status.reasonPhrase, to: &out)
        HTTPResponseSerializer.appendASCII(",\"status\":", to: &out)
        HTTPResponseSerializer.appendDecimal(status.code, to: &out)
        HTTPResponseSerializer.appendASCII(",\"detail\":", to: &out)
        appendJSONString(detail, to: &out)
        HTTPResponseSerializer.appendASCII(",\"code\":", to: &out)
        appendJSONString(code ?? Self.code(for: status), to: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }

    public static func response(status: HTTPStatus, detail: String, code: String? = nil) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/problem+json"],
                     bytes: json(status: status, detail: detail, code: code))
    }

    static func appendJSONString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [92, 34])
            case UInt8(ascii: "\\"): out.append(contentsOf: [92, 92])
            case ASCII.lf: out.append(contentsOf: [92, UInt8(ascii: "n")])
            case ASCII.cr: out.append(contentsOf: [92, UInt8(ascii: "r")])
            case ASCII.tab: out.append(contentsOf: [92, UInt8(ascii: "t")])
            case 0 ..< 0x20, 0x7F:
                out.append(contentsOf: Array("\\u00".utf8))
                out.append(HTTPResponseSerializer.hexDigit(Int(byte >> 4)))
                out.append(HTTPResponseSerializer.hexDigit(Int(byte & 0xF)))
            default:
                // UTF-8 multi-byte sequences pass through unchanged; String guarantees they are valid.
                out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
