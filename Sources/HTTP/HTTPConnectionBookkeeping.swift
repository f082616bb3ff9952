// The socket shell's output accounting for one connection, as a plain value: the output queued
// for the socket and how far `send` got, the bytes queued ahead of a streamed body, and whether
// the read and write sources are suspended. The connection's lifecycle (closing and lingering
// included) is the state machine's; this only counts bytes and suspensions, so these rules are
// tested without sockets.

/// What a connection's bookkeeping asks of the socket layer after a `send` pass.
package enum HTTPFlushStep: Equatable, Sendable {
    /// Everything queued is sent: stop watching for writability.
    case idle
    /// Output is left: watch for writability and send the rest then.
    case waitForWritable
}

/// What the periodic timer finds for a connection.
package enum HTTPTimerStep: Equatable, Sendable {
    /// Close now: the peer stopped reading for longer than the write timeout.
    case close
    /// Output is waiting: the state machine's timeouts do not apply.
    case wait
    /// Nothing queued: the state machine's own timeouts apply.
    case checkStateMachine
}

package struct HTTPConnectionBookkeeping: Sendable {
    /// Above this much unsent output, a response counts as written only once output drains below
    /// it, so pipelined requests wait for a slow reader instead of growing the buffer.
    package let outputHighWater: Int

    package private(set) var output: [UInt8] = []
    /// First byte of `output` the socket has not taken.
    package private(set) var outputOffset = 0
    /// When `send` last made progress (or output first had to wait): the write-stall clock.
    package private(set) var lastWriteProgress: UInt64 = 0
    /// Queued bytes ahead of the streamed body's own bytes (its head), not counted against its backlog.
    private var bytesAheadOfStream = 0
    package private(set) var isStreaming = false
    /// Both sources start suspended (inactive) until the connection starts.
    package private(set) var readSuspended = true
    package private(set) var writeSuspended = true
    /// A queued response waits for output to drain below the high-water mark before it counts as written.
    private var responseWaitingForDrain = false

    package init(outputHighWater: Int = 64 * 1024) {
        self.outputHighWater = outputHighWater
    }

    // Inlinable, like `sendUnsent`: the server calls these from another module on every flush,
    // and an opaque call on a struct held by a class copies the whole value (retaining its buffer) first.
    @inlinable
    package var unsentByteCount: Int { output.count - outputOffset }

    // MARK: Output

    package mutating func queue(_ bytes: consuming [UInt8]) {
        // Usually nothing is pending (a response is sent as soon as it is ready): then the
        // response's own buffer becomes the output, with no copy.
        if output.isEmpty {
            output = bytes
        } else {
            output.append(contentsOf: bytes)
        }
    }

    /// A streamed body starts after what is queued now (its head and any earlier responses).
    package mutating func streamStarted() {
        isStreaming = true
        bytesAheadOfStream = unsentByteCount
    }

    package mutating func streamEnded() {
        isStreaming = false
        bytesAheadOfStream = 0
    }

    /// Hands the unsent bytes to `send` and returns its result, or nil (without calling it) when
    /// nothing is unsent. Not generic, so the server's calls from another module need no runtime
    /// generics; `mutating` although it changes nothing, because a non-mutating call on the
    /// value a class holds copies the whole value (retaining its buffers) first.
    @inlinable
    package mutating func sendUnsent(_ send: (UnsafeRawBufferPointer) -> Int) -> Int? {
        guard output.count > outputOffset else { return nil }
        return output.withUnsafeBytes { send(UnsafeRawBufferPointer(rebasing: $0[outputOffset...])) }
    }

    /// The socket took `count` bytes at `time`. Returns how many of them were the stream's own
    /// bytes, which its backlog should be credited with.
    package mutating func sent(_ count: Int, at time: UInt64) -> Int {
        precondition(count > 0 && count <= unsentByteCount, "sent more than was queued")
        outputOffset += count
        lastWriteProgress = time
        guard isStreaming else { return 0 }
        let ahead = min(count, bytesAheadOfStream)
        bytesAheadOfStream -= ahead
        return count - ahead
    }

    /// A `send` pass stopped (all sent, or the socket is full): compacts the buffer and says what
    /// the socket layer must do next.
    package mutating func flushStopped(at time: UInt64) -> HTTPFlushStep {
        if outputOffset == output.count {
            // Given back at once, not kept for the next response: that one arrives in a buffer of
            // its own (see `queue`), so a kept one would never be written again, only held, a
            // few hundred bytes on every idle connection, and freed cold one request later.
            output = []
            outputOffset = 0
            return .idle
        }
        // Compact only when most of the buffer is sent, so a large response is not copied over and over.
        if outputOffset >= 64 * 1024 && outputOffset * 2 >= output.count {
            output.removeFirst(outputOffset)
            outputOffset = 0
        }
        // The write-stall clock starts when output first has to wait.
        if writeSuspended { lastWriteProgress = time }
        return .waitForWritable
    }

    // MARK: Responses

    /// A complete response is queued. True when the state machine may hear now that it is
    /// written; otherwise `takeDrainedResponse` says when.
    package mutating func responseQueued() -> Bool {
        if unsentByteCount < outputHighWater { return true }
        responseWaitingForDrain = true
        return false
    }

    /// True once (after a `send` pass) when a response waiting for the drain now counts as written.
    package mutating func takeDrainedResponse() -> Bool {
        guard responseWaitingForDrain && unsentByteCount < outputHighWater else { return false }
        responseWaitingForDrain = false
        return true
    }

    /// The periodic timer at `time`, with the server's write timeout in seconds.
    package func timerStep(at time: UInt64, writeTimeout: Double) -> HTTPTimerStep {
        if unsentByteCount > 0 {
            let stalled = Double(time &- lastWriteProgress) / 1_000_000_000
            return stalled >= writeTimeout ? .close : .wait
        }
        return .checkStateMachine
    }

    // MARK: Source suspension

    // Dispatch counts suspensions, and a source must be resumed as often as it was suspended, so
    // each of these says whether the source call is actually due (true) or would unbalance it.

    package mutating func suspendReading() -> Bool { Self.change(&readSuspended, to: true) }
    package mutating func resumeReading() -> Bool { Self.change(&readSuspended, to: false) }
    package mutating func suspendWriting() -> Bool { Self.change(&writeSuspended, to: true) }
    package mutating func resumeWriting() -> Bool { Self.change(&writeSuspended, to: false) }

    private static func change(_ suspended: inout Bool, to value: Bool) -> Bool {
        guard suspended != value else { return false }
        suspended = value
        return true
    }
}
