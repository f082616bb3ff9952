import Dispatch
import Glibc

/// One outbound connection's descriptor and its Dispatch sources. The descriptor closes only once
/// every source's cancellation has completed, as Dispatch requires.
// @unchecked: every mutable property is only touched on `queue`.
final class ClientSocket: @unchecked Sendable {
    let fd: Int32
    private let queue: DispatchQueue
    private var readSource: (any DispatchSourceRead)?
    private var writeSource: (any DispatchSourceWrite)?
    private var pendingCancels = 0
    private var closeRequested = false

    init(fd: Int32, queue: DispatchQueue) {
        self.fd = fd
        self.queue = queue
    }

    /// A socket dropped without `close` (an idle one when its client goes away): a live source
    /// keeps its socket alive through its cancel handler, so none is left here.
    deinit {
        if !closeRequested { Glibc.close(fd) }
    }

    /// A non-blocking stream socket for `family`; nil with `errno` set when none can be made.
    static func make(family: Int32, queue: DispatchQueue) -> ClientSocket? {
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return nil }
        var enabled: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &enabled, socklen_t(MemoryLayout<Int32>.size))
        return ClientSocket(fd: fd, queue: queue)
    }

    /// Calls `handler` on the queue whenever the socket is readable, until `stopReading`.
    func onReadable(_ handler: @escaping @Sendable () -> Void) {
        stopReading()
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler(handler: handler)
        source.setCancelHandler { [self] in sourceCancelled() }
        readSource = source
        source.resume()
    }

    func onWritable(_ handler: @escaping @Sendable () -> Void) {
        stopWriting()
        let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler(handler: handler)
        source.setCancelHandler { [self] in sourceCancelled() }
        writeSource = source
        source.resume()
    }

    func stopReading() {
        guard let source = readSource else { return }
        readSource = nil
        pendingCancels += 1
        source.cancel()
    }

    func stopWriting() {
        guard let source = writeSource else { return }
        writeSource = nil
        pendingCancels += 1
        source.cancel()
    }

    func close() {
        guard !closeRequested else { return }
        closeRequested = true
        stopReading()
        stopWriting()
        if pendingCancels == 0 { Glibc.close(fd) }
    }

    private func sourceCancelled() {
        pendingCancels -= 1
        if closeRequested && pendingCancels == 0 { Glibc.close(fd) }
    }

    /// An idle kept-alive connection is usable only if the peer has neither closed it nor sent
    /// anything unasked (both show as readable).
    func isOpenAndQuiet() -> Bool {
        guard !closeRequested else { return false }
        var byte: UInt8 = 0
        let result = recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
        return result < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }
}
