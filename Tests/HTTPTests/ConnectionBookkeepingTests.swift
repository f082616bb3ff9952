import Testing
@testable import HTTP

private let second: UInt64 = 1_000_000_000

/// Runs one mutating call, so its result can go straight into `#expect`.
private func step<Result>(_ books: inout HTTPConnectionBookkeeping, _ call: (inout HTTPConnectionBookkeeping) -> Result) -> Result {
    call(&books)
}

@Suite("HTTPConnectionBookkeeping")
struct ConnectionBookkeepingTests {
    @Test func sentBytesAdvanceTheOffsetAndAFullFlushResetsIt() {
        var books = HTTPConnectionBookkeeping()
        books.queue(Array(repeating: 1, count: 10))
        #expect(step(&books) { $0.sent(4, at: 5) } == 0)
        #expect(books.unsentByteCount == 6)
        #expect(books.lastWriteProgress == 5)
        let offered = books.sendUnsent { $0.count }
        #expect(offered == 6)
        #expect(step(&books) { $0.flushStopped(at: 6) } == .waitForWritable)
        #expect(step(&books) { $0.sent(6, at: 7) } == 0)
        #expect(step(&books) { $0.flushStopped(at: 8) } == .idle)
        // Nothing unsent: `send` is not called at all.
        let offeredNothing = books.sendUnsent { _ in Issue.record("send called with nothing unsent"); return 0 }
        #expect(offeredNothing == nil)
        #expect(books.output.isEmpty && books.outputOffset == 0)
    }

    @Test func aLargePartlySentBufferIsCompactedOnlyWhenMostlySent() {
        var books = HTTPConnectionBookkeeping()
        books.queue(Array(repeating: 0, count: 100 * 1024))
        _ = books.sent(40 * 1024, at: 1)
        _ = books.flushStopped(at: 1)
        #expect(books.outputOffset == 40 * 1024)
        _ = books.sent(30 * 1024, at: 2)
        _ = books.flushStopped(at: 2)
        #expect(books.outputOffset == 0)
        #expect(books.unsentByteCount == 30 * 1024)
    }

    @Test func theStreamIsCreditedOnlyWithItsOwnBytes() {
        var books = HTTPConnectionBookkeeping()
        books.queue(Array(repeating: 0, count: 100))   // the stream's head
        books.streamStarted()
        books.queue(Array(repeating: 1, count: 50))    // the stream's first chunk
        #expect(step(&books) { $0.sent(60, at: 1) } == 0)
        #expect(step(&books) { $0.sent(60, at: 2) } == 20)
        #expect(step(&books) { $0.sent(30, at: 3) } == 30)
        books.streamEnded()
        books.queue([1])
        #expect(step(&books) { $0.sent(1, at: 4) } == 0)
    }

    @Test func aResponseCountsAsWrittenOnlyBelowTheHighWaterMark() {
        var books = HTTPConnectionBookkeeping(outputHighWater: 100)
        books.queue(Array(repeating: 0, count: 50))
        #expect(step(&books) { $0.responseQueued() })
        books.queue(Array(repeating: 0, count: 100))
        #expect(!step(&books) { $0.responseQueued() })
        #expect(!step(&books) { $0.takeDrainedResponse() })
        _ = books.sent(60, at: 1)
        #expect(step(&books) { $0.takeDrainedResponse() })
        // Reported once.
        #expect(!step(&books) { $0.takeDrainedResponse() })
    }

    @Test func aStalledWriterIsClosedAfterTheWriteTimeout() {
        var books = HTTPConnectionBookkeeping()
        #expect(books.timerStep(at: 100 * second, writeTimeout: 5) == .checkStateMachine)
        books.queue([1, 2, 3])
        // Output first has to wait at t=10 s: the stall clock starts there, not at the last progress.
        #expect(step(&books) { $0.flushStopped(at: 10 * second) } == .waitForWritable)
        #expect(step(&books) { $0.resumeWriting() })
        #expect(books.timerStep(at: 14 * second, writeTimeout: 5) == .wait)
        _ = books.sent(1, at: 14 * second)
        #expect(step(&books) { $0.flushStopped(at: 14 * second) } == .waitForWritable)
        #expect(books.timerStep(at: 18 * second, writeTimeout: 5) == .wait)
        #expect(books.timerStep(at: 19 * second, writeTimeout: 5) == .close)
    }

    @Test func suspendAndResumeAreBalanced() {
        var books = HTTPConnectionBookkeeping()
        // Both sources start suspended.
        #expect(!step(&books) { $0.suspendReading() })
        #expect(step(&books) { $0.resumeReading() })
        #expect(!step(&books) { $0.resumeReading() })
        #expect(step(&books) { $0.suspendReading() })
        #expect(!step(&books) { $0.suspendReading() })
        #expect(step(&books) { $0.resumeWriting() })
        #expect(step(&books) { $0.suspendWriting() })
        #expect(!step(&books) { $0.suspendWriting() })
    }

}
