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

    /// The request path as a relative file path, or nil when it could name anything outside the
    /// root (the HTTP module's `PathNormalizer` refuses dot segments, encoded separators, NUL and
    /// bad escapes) or a hidden file (`.git`, `.DS_Store`).
    static func relativePath(fromRawPath raw: String) -> String? {
        guard let segments = try? PathNormalizer.segments(raw),
              !segments.contains(where: { $0.hasPrefix(".") }) else { return nil }
        return segments.joined(separator: "/")
    }
}
