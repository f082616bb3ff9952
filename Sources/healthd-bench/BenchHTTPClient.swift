import ClientThreads
import Foundation
import Glibc

/// A minimal blocking HTTP/1.1 client on one keep-alive connection, for benchmarks: it measures
/// the server, not a client library.
final class BenchHTTPClient {
    private let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { throw BenchError("cannot connect to 127.0.0.1:\(port)") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(fd) }

    /// Sends one request and returns (status, body).
    func request(_ method: String, _ target: String, token: String?, contentType: String = "application/json",
                 body: [UInt8] = []) throws -> (status: Int, body: [UInt8]) {
        try sendRequest(method, target, token: token, contentType: contentType, body: body)
        return try readResponse()
    }

    /// Sends a request without waiting for its answer (long-polls, event streams).
    func sendRequest(_ method: String, _ target: String, token: String?, contentType: String = "application/json",
                     body: [UInt8] = []) throws {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: bench\r\nContent-Length: \(body.count)\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        if !body.isEmpty { head += "Content-Type: \(contentType)\r\n" }
        head += "\r\n"
        // A large body goes out on its own: joining it to the head would copy it, and the memory
        // benchmarks would count that copy as the server's.
        if body.count > 1 << 20 {
            try send(Array(head.utf8))
            try send(body)
        } else {
            try send(Array(head.utf8) + body)
        }
    }

    /// Reads until `marker` has arrived (on a streamed body), dropping everything up to its end.
    func readUntil(_ marker: [UInt8]) throws {
        while true {
            if let range = buffer.firstRange(of: marker) {
                buffer.removeSubrange(buffer.startIndex..<range.upperBound)
                return
            }
            try fill()
        }
    }

    private func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw BenchError("send failed") }
            offset += written
        }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw BenchError("connection closed") }
        buffer.append(contentsOf: chunk[0..<count])
    }

    func readResponse() throws -> (status: Int, body: [UInt8]) {
        let separator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while headEnd == nil {
            if buffer.count >= 4 {
                for i in 0...(buffer.count - 4) where buffer[i] == 13 && Array(buffer[i..<i + 4]) == separator { headEnd = i; break }
            }
            if headEnd == nil { try fill() }
        }
        guard let end = headEnd else { throw BenchError("no header") }
        let head = String(decoding: buffer[0..<end], as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        let status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
        var length = 0
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "content-length" {
                length = Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        let bodyStart = end + 4
        while buffer.count < bodyStart + length { try fill() }
        let body = Array(buffer[bodyStart..<(bodyStart + length)])
        buffer.removeFirst(bodyStart + length)
        return (status, body)
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Resident set size of this process, from /proc.
func residentMegabytes() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
          let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
    return kilobytes / 1024
}

/// Peak resident memory since the last `resetPeakResident()` (VmHWM), in MiB.
func peakResidentMegabytes() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
    return kilobytes / 1024
}

/// Resets the peak (VmHWM) to the current resident size (Linux: clear_refs 5), so a phase's
/// peak is its own.
func resetPeakResident() {
    if let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") {
        handle.write(Data("5".utf8))
        try? handle.close()
    }
}

func machineDescription() -> String {
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let memory = Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824
    return "\(cores) cores, \(String(format: "%.0f", memory)) GiB, \(ProcessInfo.processInfo.operatingSystemVersionString)"
}
