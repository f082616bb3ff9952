import Synchronization

/// A budget of samples in flight to the writer. Work that does not fit waits in a queue, not on
/// a thread: `acquire` runs it at once when the budget allows, otherwise `release` starts it later,
/// in arrival order, once enough has been committed. A flood of saves therefore parks request
/// bodies, while every worker thread stays free for reads. A batch larger than the whole budget
/// still goes through, alone.
package final class WriteBacklog: Sendable {
    private struct Waiting {
        var count: Int
        var start: @Sendable () -> Void
    }

    private struct State {
        var inFlight = 0
        var waiting: [Waiting] = []
        /// Index of the oldest waiting entry (the queue is compacted when it empties).
        var head = 0

        func fits(_ count: Int, limit: Int) -> Bool { inFlight == 0 || inFlight + count <= limit }
    }

    private let state = Mutex(State())
    let limit: Int

    package init(limit: Int) { self.limit = limit }

    /// Work waiting for budget (for tests and metrics).
    var waitingCount: Int { state.withLock { $0.waiting.count - $0.head } }

    /// Runs `start` when `count` fits: now, on the calling thread, or later from `release`.
    /// Earlier waiting work goes first, so a large batch is not overtaken forever.
    package func acquire(_ count: Int, then start: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.head == state.waiting.count && state.fits(count, limit: limit) {
                state.inFlight += count
                return true
            }
            state.waiting.append(Waiting(count: count, start: start))
            return false
        }
        if runNow { start() }
    }

    /// Returns `count` to the budget and starts the waiting work that now fits.
    package func release(_ count: Int) {
        let ready = state.withLock { state -> [Waiting] in
            state.inFlight -= count
            var ready: [Waiting] = []
            while state.head < state.waiting.count, state.fits(state.waiting[state.head].count, limit: limit) {
                let next = state.waiting[state.head]
                state.inFlight += next.count
                ready.append(next)
                state.head += 1
            }
            if state.head == state.waiting.count {
                state.waiting.removeAll(keepingCapacity: true)
                state.head = 0
            }
            return ready
        }
        for work in ready { work.start() }
    }
}
