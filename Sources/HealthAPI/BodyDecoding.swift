import Foundation
import HTTP
import JSON

/// Reading request bodies: JSON only (415 otherwise), strictly parsed, errors naming the field.
enum RequestBody {
    static func json(_ request: HTTPRequest, allowEmpty: Bool = false) throws(APIError) -> JSONFieldReader {
        if request.body.isEmpty && allowEmpty { return JSONFieldReader(JSONObject()) }
        try requireContentType(request, "application/json")
        do {
            return try JSONFieldReader(parsing: request.body)
        } catch {
            throw APIError.invalidField(error.field.isEmpty ? "body" : error.field, error.detail)
        }
    }

    static func requireContentType(_ request: HTTPRequest, _ expected: String) throws(APIError) {
        guard let contentType = request.headers["Content-Type"] else {
            throw APIError.unsupportedMediaType("send Content-Type: \(expected)")
        }
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        } ?? ""
        guard mediaType == expected else {
            throw APIError.unsupportedMediaType("expected \(expected), got \(contentType)")
        }
        if let charset = contentType.lowercased().range(of: "charset=") {
            let value = contentType[charset.upperBound...].trimmingCharacters(in: CharacterSet(charactersIn: " \"")).lowercased()
            guard value.hasPrefix("utf-8") || value.hasPrefix("utf8") else {
                throw APIError.unsupportedMediaType("bodies are UTF-8, not \(value)")
            }
        }
    }

    /// Runs a decoding step, turning field errors into 400s.
    static func decode<T>(_ body: () throws(JSONFieldError) -> T) throws(APIError) -> T {
        do { return try body() } catch { throw APIError.invalidField(error.field, error.detail) }
    }
}
