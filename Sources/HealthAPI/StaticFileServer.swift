import Foundation
import HTTP

/// Serves the dashboard from `Public/`. Nothing outside that folder is ever reachable: the path
/// is decoded segment by segment (encoded slashes, `..` and NUL refused), and the resolved file,
/// symlinks followed, must still lie inside the folder's own resolved path.
final class StaticFileServer: Sendable {
    let rootPath: String

    init?(root: String) {
        let url = URL(fileURLWithPath: root).standardizedFileURL.resolvingSymlinksInPath()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return nil
        }
        rootPath = url.path
    }

    static let contentTypes: [String: String] = [
        "html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8",
        "js": "text/javascript; charset=utf-8", "mjs": "text/javascript; charset=utf-8",
        "json": "application/json", "svg": "image/svg+xml", "png": "image/png", "ico": "image/x-icon",
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "webp": "image/webp", "txt": "text/plain; charset=utf-8",
        "woff2": "font/woff2", "webmanifest": "application/manifest+json", "map": "application/json",
    ]

    /// The dashboard talks only to its own origin and loads nothing from elsewhere.
    static let securityHeaders: [(String, String)] = [
        ("Content-Security-Policy",
         "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
         + "media-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"),
        ("Cross-Origin-Opener-Policy", "same-origin"),
    ]

    func response(for request: HTTPRequest) -> HTTPResponse {
        guard let relative = StaticFileServer.relativePath(fromRawPath: String(request.path)) else {
            return APIError.notFound("no such file").response
        }
        let candidate = relative.isEmpty ? "index.html" : relative
        var url = URL(fileURLWithPath: rootPath).appendingPathComponent(candidate)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue {
            url = url.appendingPathComponent("index.html")
        }
        let resolved = url.resolvingSymlinksInPath().path
        guard resolved.hasPrefix(rootPath + "/"),
              let attributes = try? FileManager.default.attributesOfItem(atPath: resolved),
              (attributes[.type] as? FileAttributeType) == .typeRegular,
              let data = FileManager.default.contents(atPath: resolved) else {
            return APIError.notFound("no such file").response
        }
        let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        let etag = "\"\(String(data.count, radix: 16))-\(String(Int64(modified * 1000), radix: 16))\""
        var headers = HTTPHeaders()
        let ext = (resolved as NSString).pathExtension.lowercased()
        headers.add("Content-Type", Self.contentTypes[ext] ?? "application/octet-stream")
        // HTML revalidates every time so a new dashboard shows at once; assets may be cached a while
        // and are revalidated cheaply by ETag.
        headers.add("Cache-Control", ext == "html" ? "no-cache" : "public, max-age=300")
        headers.add("ETag", etag)
        for (name, value) in Self.securityHeaders { headers.add(name, value) }
        if let match = request.headers["If-None-Match"], match.split(separator: ",").contains(where: {
            $0.trimmingCharacters(in: .whitespaces) == etag
        }) {
            return HTTPResponse(status: .notModified, headers: headers)
        }
        return HTTPResponse(status: .ok, headers: headers, bytes: [UInt8](data))
    }

    /// Percent-decodes a request path into a relative file path, or nil when it could name
    /// anything outside the root: `..`/`.` segments, encoded `/` or `\`, NUL, invalid escapes or UTF-8.
    static func relativePath(fromRawPath raw: String) -> String? {
        guard raw.hasPrefix("/") else { return nil }
        var segments: [String] = []
        for rawSegment in raw.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            var bytes: [UInt8] = []
            var iterator = rawSegment.utf8.makeIterator()
            while let byte = iterator.next() {
                if byte == UInt8(ascii: "%") {
                    guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                    bytes.append(high << 4 | low)
                } else {
                    bytes.append(byte)
                }
            }
            guard let segment = String(validating: bytes, as: UTF8.self) else { return nil }
            if segment.isEmpty { continue }
            if segment == "." || segment == ".." || segment.hasPrefix(".") { return nil }
            if segment.contains("/") || segment.contains("\\") || segment.contains("\0") { return nil }
            segments.append(segment)
        }
        return segments.joined(separator: "/")
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - 48
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - 87
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - 55
        default: return nil
        }
    }
}
