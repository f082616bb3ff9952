import Foundation
import HTTP
import Synchronization

/// Where password hashes run: at most `width` at once (each Argon2id hash holds 46 MiB while it
/// runs, so the cores bound the memory too), on a queue of their own, never on a connection's
/// queue or a store worker. The rest wait in order, up to `maximumWaiting`; past that a sign-in is
/// refused (503) rather than piling up memory and threads.
final class PasswordHashingGate: Sendable {
    let width: Int
    let maximumWaiting: Int
    private let queue = DispatchQueue(label: "healthd.password-hashing", qos: .userInitiated, attributes: .concurrent)
    private let state = Mutex(State())

    private struct State {
        var running = 0
        var waiting: [@Sendable () -> Void] = []
        /// The most that ever ran at once (for the test of the bound).
        var peak = 0
    }

    init(width: Int = max(1, ProcessInfo.processInfo.activeProcessorCount), maximumWaiting: Int = 512) {
        self.width = max(1, width)
        self.maximumWaiting = maximumWaiting
    }

    /// Runs a route's `answer` on the gate and hands its response, or its error as a problem, to
    /// `respond`; a full queue is a 503 now.
    func answer(problems: ProblemResponder, respond: @escaping @Sendable (HTTPResponse) -> Void,
                _ answer: @escaping @Sendable () throws(APIError) -> HTTPResponse) throws(APIError) {
        let accepted = submit {
            let response: HTTPResponse
            do throws(APIError) { response = try answer() } catch { response = problems.response(error) }
            respond(response)
        }
        guard accepted else { throw PersonAccountRoutes.busy }
    }

    /// Runs `work` when a slot is free; false (and `work` never runs) when too many are waiting.
    func submit(_ work: @escaping @Sendable () -> Void) -> Bool {
        enum Decision { case run, wait, refuse }
        let decision = state.withLock { state -> Decision in
            if state.running < width {
                state.running += 1
                state.peak = max(state.peak, state.running)
                return .run
            }
            guard state.waiting.count < maximumWaiting else { return .refuse }
            state.waiting.append(work)
            return .wait
        }
        switch decision {
        case .run: start(work)
        case .wait: break
        case .refuse: return false
        }
        return true
    }

    var peakRunning: Int { state.withLock { $0.peak } }

    private func start(_ work: @escaping @Sendable () -> Void) {
        queue.async {
            work()
            self.finished()
        }
    }

    /// Hands the freed slot to the oldest waiting job, if any.
    private func finished() {
        let next = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.waiting.isEmpty else {
                state.running -= 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        if let next { start(next) }
    }
}
