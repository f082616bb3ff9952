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
        method != .head && allowsBody(status: status)
    }

    /// Whether a response with this status carries a body to a request other than HEAD.
    public static func allowsBody(status: HTTPStatus) -> Bool {
        !(status.code == 204 || status.code == 304 || (status.code >= 100 && status.code < 200))
    }

    /// Serializes a status line and headers. Framing, `Date` and `Connection` come from the
    /// arguments; the same fields in `headers` are dropped so the server alone decides framing.
    /// `keepAlive` describes the connection after this response; `requestVersion` chooses between
    /// `Connection: keep-alive` (needed by HTTP/1.0 clients) and nothing (the 1.1 default).
    public static func head(status: HTTPStatus, headers: HTTPHeaders, framing: HTTPResponseFraming,
                            keepAlive: Bool, requestVersion: HTTPVersion, date: String,
                            reservingBody bodyCount: Int = 0) -> [UInt8] {
        // Every response goes through here, so the head is written into one buffer sized up front
        // with raw copies: an `Array.append` per piece cost more than the rest of serializing.
        // Sanitizing replaces byte for byte, so the text's UTF-8 counts bound the size exactly.
        // 64: the status line's and Date line's fixed parts with a code of up to 20 digits.
        var capacity = 64 + status.reasonPhrase.utf8.count + date.utf8.count
        // The fields are read in place, here and below: a loop over them by value copies each
        // field, retaining and releasing both its strings.
        headers.fields.withUnsafeBufferPointer { fields in
            for index in fields.indices { capacity += fields[index].name.utf8.count + fields[index].value.utf8.count + 4 }
        }
        capacity += 72 + 33  // nosniff (33), the framing line (at most 38), the Connection line (24) and the final CRLF
        // Written on the stack, then copied into an array with room for the body the caller
        // appends next (`bodyCount`), in one allocation: `init(unsafeUninitializedCapacity:)` and
        // `init(repeating:count:)` allocate through an unspecialized path that looks up the
        // array's generic metadata at run time, several times the cost of the copy;
        // `reserveCapacity` does not.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer in
            var writer = HeadWriter(buffer: buffer)
            writer.literal("HTTP/1.1 ")
            writer.decimal(status.code)
            writer.byte(ASCII.space)
            writer.sanitized(status.reasonPhrase)
            writer.literal("\r\nDate: ")
            writer.sanitized(date)
            // On every response, API answers and server errors included: no browser sniffs a
            // JSON answer into something it would run.
            writer.literal("\r\nX-Content-Type-Options: nosniff\r\n")
            headers.fields.withUnsafeBufferPointer { fields in
                for index in fields.indices where !isServerOwned(fields[index].name) {
                    writer.sanitized(fields[index].name)
                    writer.literal(": ")
                    writer.sanitized(fields[index].value)
                    writer.literal("\r\n")
                }
            }
            switch framing {
            case .none, .untilClose:
                break
            case .contentLength(let length):
                writer.literal("Content-Length: ")
                writer.decimal(length)
                writer.literal("\r\n")
            case .chunked:
                writer.literal("Transfer-Encoding: chunked\r\n")
            }
            if !keepAlive {
                writer.literal("Connection: close\r\n")
            } else if requestVersion == .http1_0 {
                writer.literal("Connection: keep-alive\r\n")
            }
            writer.literal("\r\n")
            var out: [UInt8] = []
            out.reserveCapacity(writer.count + bodyCount)
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[0 ..< writer.count]))
            return out
        }
    }

    /// Writes a response head into uninitialized memory sized by `head`, which counted every
    /// piece; the precondition only guards against a miscount, never against input.
    struct HeadWriter {
        let buffer: UnsafeMutableBufferPointer<UInt8>
        var count = 0

        mutating func byte(_ value: UInt8) {
            precondition(count < buffer.count, "response head larger than counted")
            buffer[count] = value
            count += 1
        }

        /// Our own text, free of controls: copied as whole words (the last overlapping the one
        /// before) with no check, whatever its length (the 35-byte `nosniff` line would otherwise go
        /// through `memmove` and a scan).
        @inline(__always)
        mutating func literal(_ text: StaticString) {
            let length = text.utf8CodeUnitCount
            guard length >= 8, let target = buffer.baseAddress else {
                return copy(UnsafeBufferPointer(start: text.utf8Start, count: length))
            }
            precondition(count + length <= buffer.count, "response head larger than counted")
            let from = UnsafeRawPointer(text.utf8Start)
            let to = UnsafeMutableRawPointer(target + count)
            var offset = 0
            while offset + 8 <= length {
                to.storeBytes(of: from.loadUnaligned(fromByteOffset: offset, as: UInt64.self), toByteOffset: offset, as: UInt64.self)
                offset += 8
            }
            if offset < length {
                to.storeBytes(of: from.loadUnaligned(fromByteOffset: length - 8, as: UInt64.self), toByteOffset: length - 8, as: UInt64.self)
            }
            count += length
        }

        private mutating func copy(_ bytes: UnsafeBufferPointer<UInt8>) {
            guard let source = bytes.baseAddress, let target = buffer.baseAddress, !bytes.isEmpty else { return }
            precondition(count + bytes.count <= buffer.count, "response head larger than counted")
            _ = Self.copyFlaggingControls(from: source, to: target + count, count: bytes.count)
            count += bytes.count
        }

        /// Application-supplied text never gets to inject CR, LF or other controls (response splitting).
        mutating func sanitized(_ text: String) {
            // Copied whole, checked as it is copied; only text with a control byte in it (nearly
            // never) is looked at again, in place, byte by byte.
            let copied: Bool? = text.utf8.withContiguousStorageIfAvailable { bytes in
                guard let source = bytes.baseAddress, let target = buffer.baseAddress else { return true }
                precondition(count + bytes.count <= buffer.count, "response head larger than counted")
                if Self.copyFlaggingControls(from: source, to: target + count, count: bytes.count) {
                    for index in count ..< count + bytes.count where isControl(buffer[index]) { buffer[index] = ASCII.space }
                }
                count += bytes.count
                return true
            }
            guard copied == nil else { return }
            for byte in text.utf8 { self.byte(isControl(byte) ? ASCII.space : byte) }
        }

        /// True when no byte is below 0x20 or DEL, checked a word at a time (a byte-wise scan of
        /// every header cost more than the rest of writing the head). A tab also answers false;
        /// the byte loop then keeps it.
        static func hasNoControls(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            !ByteScan.containsByte(below: 0x20, or: 0x7F, or: 0x7F, in: bytes)
        }

        /// Copies `count` bytes and tells whether any is below 0x20 or DEL (a tab counts too).
        /// A head is a dozen short pieces (`: `, a 12-byte name, a 16-byte value): a `memmove` call
        /// and a scan with a byte-wise tail for each cost more than the bytes themselves, so pieces
        /// are moved as whole words, the last word overlapping the one before, and each word is
        /// checked in registers on its way through.
        @inline(__always)
        static func copyFlaggingControls(from source: UnsafePointer<UInt8>, to target: UnsafeMutablePointer<UInt8>,
                                         count: Int) -> Bool {
            let from = UnsafeRawPointer(source)
            let to = UnsafeMutableRawPointer(target)
            if count >= 8 {
                // Longer text (a 64-byte token echo, a long location) goes through memmove and the scan.
                if count > 32 {
                    to.copyMemory(from: from, byteCount: count)
                    return ByteScan.containsByte(below: 0x20, or: 0x7F, or: 0x7F, in: UnsafeBufferPointer(start: source, count: count))
                }
                var flags: UInt64 = 0
                var offset = 0
                while offset + 8 <= count {
                    let word = from.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    flags |= controlFlags(word)
                    to.storeBytes(of: word, toByteOffset: offset, as: UInt64.self)
                    offset += 8
                }
                if offset < count {
                    let word = from.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
                    flags |= controlFlags(word)
                    to.storeBytes(of: word, toByteOffset: count - 8, as: UInt64.self)
                }
                return flags != 0
            }
            if count >= 4 {
                let first = from.loadUnaligned(as: UInt32.self)
                let last = from.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
                to.storeBytes(of: first, as: UInt32.self)
                to.storeBytes(of: last, toByteOffset: count - 4, as: UInt32.self)
                return controlFlags(UInt64(first) | UInt64(last) << 32) != 0
            }
            var found = false
            for index in 0 ..< count {
                let byte = source[index]
                found = found || byte < 0x20 || byte == 0x7F
                target[index] = byte
            }
            return found
        }

        /// A byte's high bit set for each byte below 0x20 or equal to DEL (and possibly for bytes
        /// above such a byte, through the borrow: only whether any is set is meaningful).
        @inline(__always)
        static func controlFlags(_ word: UInt64) -> UInt64 {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let below = (word &- ones &* 0x20) & ~word
            let delete = word ^ (ones &* 0x7F)
            return (below | ((delete &- ones) & ~delete)) & 0x8080_8080_8080_8080
        }

        private func isControl(_ byte: UInt8) -> Bool {
            (byte < 0x20 && byte != ASCII.tab) || byte == 0x7F
        }

        /// At most 20 digits, which the counted slack covers.
        mutating func decimal(_ value: Int) {
            guard value > 0 else { byte(ASCII.zero); return }
            var divisor = 1
            while divisor <= value / 10 { divisor *= 10 }
            var remaining = value
            while divisor > 0 {
                byte(ASCII.zero + UInt8(remaining / divisor))
                remaining %= divisor
                divisor /= 10
            }
        }
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
        case 22: return name.asciiCaseInsensitiveEquals("x-content-type-options")
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
        case 400, 408, 414, 417, 431: return "errorInvalidArgument"
        case 413: return "errorPayloadTooLarge"
        case 503: return "errorUnavailable"
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
