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
        case .responseComplete: return "complete"
        case .write(let bytes):
            return "write " + firstLine(bytes)
        case .writeResponse(let bytes, let complete):
            return "write " + firstLine(bytes) + (complete ? ", complete" : "")
        case .startStream(_, let chunked, let length, _):
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

private func firstLine(_ bytes: [UInt8]) -> String {
    String(decoding: bytes, as: UTF8.self).split(separator: "\r\n").first.map(String.init) ?? ""
}

/// Everything the actions write, as text.
func writtenText(_ actions: [Machine.Action]) -> String {
    actions.compactMap { action -> String? in
        switch action {
        case .write(let bytes), .writeResponse(let bytes, _): return String(decoding: bytes, as: UTF8.self)
        default: return nil
        }
    }.joined()
}

/// The events that name an exchange, answered for the latest one (the request in flight); the
/// lifecycle tests name exchanges explicitly where that is what they test.
extension Machine {
    mutating func responseReady(_ response: HTTPResponse, now: HTTPInstant) -> [Action] {
        var actions: [Action] = []
        responseReady(response, exchange: lastExchange, now: now, into: &actions)
        return actions
    }

    mutating func responseReady(_ response: HTTPResponse, exchange: Exchange, now: HTTPInstant) -> [Action] {
        var actions: [Action] = []
        responseReady(response, exchange: exchange, now: now, into: &actions)
        return actions
    }

    mutating func admissionDecided(_ admission: HTTPAdmission, now: HTTPInstant) -> [Action] {
        admissionDecided(admission, exchange: lastExchange, now: now)
    }

    mutating func admissionDecided(_ admission: HTTPAdmission, exchange: Exchange, now: HTTPInstant) -> [Action] {
        var actions: [Action] = []
        admissionDecided(admission, exchange: exchange, now: now, into: &actions)
        return actions
    }

    mutating func streamEnded() -> [Action] { streamEnded(exchange: lastExchange) }

    mutating func streamEnded(exchange: Exchange) -> [Action] {
        var actions: [Action] = []
        streamEnded(exchange: exchange, into: &actions)
        return actions
    }
}
