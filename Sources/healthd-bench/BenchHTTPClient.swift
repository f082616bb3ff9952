import Glibc

/// A minimal blocking HTTP/1.1 client over one keep-alive TCP connection, so the benchmark
/// measures the server and not a client library. Understands Content-Length and chunked bodies.
final class BenchHTTPClient {
    struct Response {
        var status: Int
        var body: [UInt8]
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let socketDescriptor: Int32
    private let port: Int
    /// Bytes received but not yet consumed (the start of the next response, if pipelined).
    private var pending: [UInt8] = []
    private var receiveBuffer = [UInt8](repeating: 0, count: 256 * 1024)

    init(port: Int) throws {
        self.port = port
        socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketDescriptor >= 0 else { throw Failure(description: "socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(socketDescriptor)
            throw Failure(description: "connect to 127.0.0.1:\(port) failed: errno \(errno)")
        }
        var noDelay: Int32 = 1
        setsockopt(socketDescriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(socketDescriptor) }

    func request(_ method: String, _ target: String, token: String?, body: [UInt8]? = nil) throws -> Response {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        head += "\r\n"
        try send(Array(head.utf8))
        if let body { try send(body) }
        return try readResponse()
    }

    private func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                Glibc.send(socketDescriptor, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                if errno == EINTR { continue }
                throw Failure(description: "send failed: errno \(errno)")
            }
            offset += written
        }
    }

    /// Reads more bytes into `pending`; throws at end of stream.
    private func fill() throws {
        let count = receiveBuffer.withUnsafeMutableBytes { recv(socketDescriptor, $0.baseAddress, $0.count, 0) }
        if count < 0 {
            if errno == EINTR { return }
            throw Failure(description: "recv failed: errno \(errno)")
        }
        if count == 0 { throw Failure(description: "the server closed the connection") }
        pending.append(contentsOf: receiveBuffer[0..<count])
    }

    private func readResponse() throws -> Response {
        let headerEnd: Int
        while true {
            if let end = Self.find([13, 10, 13, 10], in: pending, from: 0) { headerEnd = end; break }
            try fill()
        }
        let headText = String(decoding: pending[0..<headerEnd], as: UTF8.self)
        pending.removeFirst(headerEnd + 4)
        let lines = headText.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusParts = lines.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw Failure(description: "malformed status line: \(lines.first ?? "")")
        }
        var contentLength: Int?
        var chunked = false
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces
            if name == "content-length" { contentLength = Int(value) }
            if name == "transfer-encoding", value.lowercased().contains("chunked") { chunked = true }
        }
        if chunked { return Response(status: status, body: try readChunkedBody()) }
        let length = contentLength ?? 0
        while pending.count < length { try fill() }
        let body = Array(pending[0..<length])
        pending.removeFirst(length)
        return Response(status: status, body: body)
    }

    private func readChunkedBody() throws -> [UInt8] {
        var body: [UInt8] = []
        while true {
            var lineEnd: Int
            while true {
                if let end = Self.find([13, 10], in: pending, from: 0) { lineEnd = end; break }
                try fill()
            }
            let sizeText = String(decoding: pending[0..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingSpaces, radix: 16) else {
                throw Failure(description: "malformed chunk size '\(sizeText)'")
            }
            pending.removeFirst(lineEnd + 2)
            if size == 0 {
                // Trailers (none expected) end with an empty line.
                while true {
                    if let end = Self.find([13, 10], in: pending, from: 0) {
                        pending.removeFirst(end + 2)
                        if end == 0 { return body }
                    } else {
                        try fill()
                    }
                }
            }
            while pending.count < size + 2 { try fill() }
            body.append(contentsOf: pending[0..<size])
            pending.removeFirst(size + 2)
        }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var index = start
        while index <= haystack.count - needle.count {
            if haystack[index] == needle[0] {
                var matches = true
                for offset in 1..<needle.count where haystack[index + offset] != needle[offset] {
                    matches = false
                    break
                }
                if matches { return index }
            }
            index += 1
        }
        return nil
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}
