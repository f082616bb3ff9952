import Foundation

/// Runs `body(0)`, …, `body(count - 1)` each on a thread of its own, all at once, and returns when
/// every one has finished. A benchmark's clients, and a test whose participants must run side by
/// side, use this, not `DispatchQueue.concurrentPerform`: that runs only as many iterations at
/// once as there are cores, so "8 clients at once" would be 2 at a time on a 2-core machine, and
/// participants that wait for each other (a barrier, a reader looping until the writer is done)
/// could wait forever on a single core.
public func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread {
            defer { group.leave() }
            body(index)
        }.start()
    }
    group.wait()
}
