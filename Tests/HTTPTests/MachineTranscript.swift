@testable import HTTP

// What the state machine tests share: instants, request bytes, and a readable digest of the
// actions the machine returns, so expectations read like a transcript.

typealias Machine = HTTPConnectionStateMachine

func at(_ seconds: Double) -> HTTPInstant {
    HTTPInstant(uptimeNanoseconds: UInt64(seconds * 1_000_000_000), httpDate: "Sun, 08 Mar 2026 09:30:00 GMT")
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// How a dispatched request's body reads in the transcript: its text, or its length (for bodies
/// of filler bytes).
enum BodyInTranscript {
    case text, count
}

func describe(_ actions: [Machine.Action], bodies: BodyInTranscript = .text) -> [String] {
    actions.map { action in
        switch action {
        case .dispatch(let request):
            let body = bodies == .text ? String(decoding: request.body, as: UTF8.self) : String(request.body.count)
            return "dispatch \(request.method) \(request.target) body=\(body)"
        case .admit(let head): return "admit \(head.method) \(head.target)"
        case .write(let bytes):
            let text = String(decoding: bytes, as: UTF8.self)
            return "write " + (text.split(separator: "\r\n").first.map(String.init) ?? "")
        case .startStream(_, let chunked, let length):
            return "stream chunked=\(chunked)" + (length.map { " length=\($0)" } ?? "")
        case .pauseReading: return "pause"
        case .resumeReading: return "resume"
        case .close(let lingering): return lingering ? "close lingering" : "close"
        case .serverError(let status, _): return "error \(status.code)"
        case .peerGone: return "peer gone"
        case .halfClose: return "half-close"
        case .closeSocket: return "close socket"
        }
    }
}

/// Everything the actions write, as text.
func writtenText(_ actions: [Machine.Action]) -> String {
    actions.compactMap { action -> String? in
        if case .write(let bytes) = action { return String(decoding: bytes, as: UTF8.self) }
        return nil
    }.joined()
}
