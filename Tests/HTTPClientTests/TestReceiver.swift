import Foundation
import Glibc
import Synchronization

/// A webhook receiver on loopback for the client's tests: blocking sockets, a thread per
/// connection, and a scripted answer per request.
final class TestReceiver: Sendable {
    struct Request: Sendable {
        var head: String
        var body: [UInt8]
        func header(_ name: String) -> String? {
            for line in head.split(separator: "\r\n").dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].lowercased() == name.lowercased() { return parts[1].trimmingCharacters(in: .whitespaces) }
            }
            return nil
        }
    }

    enum Reply: Sendable {
        /// Raw bytes to write, then keep the connection for the next request.
        case answer(String)
        /// Write, then close the connection.
        case answerAndClose(String)
        /// Wait, then write.
        case answerAfter(seconds: Double, String)
    }

    let port: Int
    private let listenFD: Int32
    private let reply: @Sendable (Request) -> Reply
    private let state = Mutex<(accepted: Int, requests: [Request])>((0, []))

    var acceptedConnections: Int { state.withLock { $0.accepted } }
    var requests: [Request] { state.withLock { $0.requests } }

    /// `accepting: false` leaves connections in the listen queue (for connect timeouts).
    init(backlog: Int32 = 16, accepting: Bool = true, reply: @escaping @Sendable (Request) -> Reply) throws {
        signal(SIGPIPE, SIG_IGN)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, backlog) == 0 else { close(fd); throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        listenFD = fd
        self.reply = reply
        if accepting {
            Thread { [self] in acceptLoop() }.start()
        }
    }

    /// Stops accepting; connections already open end when their peer closes.
    func stop() {
        shutdown(listenFD, Int32(SHUT_RDWR))
        close(listenFD)
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                return
            }
            state.withLock { $0.accepted += 1 }
            Thread { [self] in serve(fd) }.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            // One request: the head, then Content-Length bytes of body.
            var headEnd: Int?
            while headEnd == nil {
                if let end = Self.find([13, 10, 13, 10], in: buffer) { headEnd = end; break }
                let count = recv(fd, &chunk, chunk.count, 0)
                guard count > 0 else { return }
                buffer += chunk[0..<count]
            }
            guard let headEnd else { return }
            let head = String(decoding: buffer[0..<headEnd], as: UTF8.self)
            buffer.removeFirst(headEnd + 4)
            var request = Request(head: head, body: [])
            let length = Int(request.header("content-length") ?? "0") ?? 0
            while buffer.count < length {
                let count = recv(fd, &chunk, chunk.count, 0)
                guard count > 0 else { return }
                buffer += chunk[0..<count]
            }
            request.body = Array(buffer[0..<length])
            buffer.removeFirst(length)
            state.withLock { $0.requests.append(request) }
            switch reply(request) {
            case .answer(let text):
                guard write(fd, text) else { return }
            case .answerAndClose(let text):
                _ = write(fd, text)
                return
            case .answerAfter(let seconds, let text):
                Thread.sleep(forTimeInterval: seconds)
                guard write(fd, text) else { return }
            }
        }
    }

    private func write(_ fd: Int32, _ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where Array(haystack[i..<(i + needle.count)]) == needle { return i }
        return nil
    }
}
