// The floor for healthd's HTTP benchmark: healthd's socket design stripped to its bones.
// One DispatchSourceRead per connection on one serial queue per core; recv into a buffer, count
// request ends (CRLF CRLF), send one fixed response per request. No parsing, no routing, no
// allocation per request: whatever healthd spends above this is its own work.
//   dispatch-floor [port]      (default 18082; answers every request with {"status":"ok"})
import Dispatch
import Glibc

let port = UInt16(CommandLine.arguments.dropFirst().first.flatMap { UInt16($0) } ?? 18082)
let response = Array(("HTTP/1.1 200 OK\r\nDate: Thu, 01 Jan 2026 00:00:00 GMT\r\nContent-Type: application/json\r\n"
    + "Cache-Control: no-store\r\nContent-Length: 15\r\n\r\n{\"status\":\"ok\"}").utf8)
let queues = (0 ..< max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))).map { DispatchQueue(label: "floor.loop\($0)") }

// @unchecked: each connection is only touched on its own serial queue.
final class FloorConnection: @unchecked Sendable {
    let fd: Int32
    let source: any DispatchSourceRead
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    var matched = 0 // bytes of "\r\n\r\n" matched so far, carried across reads
    var out: [UInt8] = []

    init(fd: Int32, queue: DispatchQueue) {
        self.fd = fd
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { @Sendable [unowned self] in readable() }
        source.setCancelHandler { @Sendable [fd] in close(fd) }
        source.activate()
    }

    func readable() {
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) { source.cancel(); return }
        guard count > 0 else { return }
        var requests = 0
        for index in 0 ..< count {
            let byte = buffer[index]
            let expected: UInt8 = matched % 2 == 0 ? 13 : 10
            matched = byte == expected ? matched + 1 : (byte == 13 ? 1 : 0)
            if matched == 4 { requests += 1; matched = 0 }
        }
        guard requests > 0 else { return }
        out.removeAll(keepingCapacity: true)
        for _ in 0 ..< requests { out.append(contentsOf: response) }
        _ = out.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }
}

signal(SIGPIPE, SIG_IGN)
let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
var yes: Int32 = 1
setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
var address = sockaddr_in()
address.sin_family = sa_family_t(AF_INET)
address.sin_port = port.bigEndian
address.sin_addr.s_addr = inet_addr("127.0.0.1")
let bound = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
}
guard bound == 0, listen(listener, 4096) == 0 else { perror("dispatch-floor: bind/listen"); exit(1) }

// Accepts on its own queue and hands each connection to the next loop queue, as healthd does.
// @unchecked: `connections` and `next` are only touched on `queue`.
final class Acceptor: @unchecked Sendable {
    let queue = DispatchQueue(label: "floor.accept")
    var connections: [Int32: FloorConnection] = [:] // a reused descriptor replaces its closed predecessor
    var next = 0
    var source: (any DispatchSourceRead)?

    func start(listener: Int32) {
        let source = DispatchSource.makeReadSource(fileDescriptor: listener, queue: queue)
        source.setEventHandler { @Sendable [self] in
            while case let fd = accept(listener, nil, nil), fd >= 0 {
                var on: Int32 = 1
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
                next += 1
                connections[fd] = FloorConnection(fd: fd, queue: queues[next % queues.count])
            }
        }
        self.source = source
        source.activate()
    }
}

let acceptor = Acceptor()
acceptor.start(listener: listener)
print("dispatch-floor listening on 127.0.0.1:\(port)")
// Parked rather than dispatchMain(), which valgrind cannot run (Benchmarks/http-instructions.sh).
while true { sleep(3600) }
