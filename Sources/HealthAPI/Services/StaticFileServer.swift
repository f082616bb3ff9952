import Dispatch
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
        guard resolved.hasPrefix(rootPath + "/"), let file = Self.regularFile(resolved) else {
            return APIError.notFound("no such file").response
        }
        let etag = "\"\(String(file.size, radix: 16))-\(String(file.modifiedMilliseconds, radix: 16))\""
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
        // A file of one chunk goes out whole; a larger one is read chunk by chunk as the socket takes
        // it, so a large file in Public/ costs a few chunks per download, never its size.
        if file.size <= Self.chunkSize {
            guard let bytes = Self.read(resolved, upTo: Int(file.size)) else { return APIError.notFound("no such file").response }
            return HTTPResponse(status: .ok, headers: headers, bytes: bytes)
        }
        let length = Int(file.size)
        return HTTPResponse(status: .ok, headers: headers, body: .sizedStream(length: length, producer: { stream in
            DispatchQueue.global(qos: .utility).async { Self.stream(resolved, length: length, to: stream) }
        }))
    }

    /// Bytes read and queued at a time.
    static let chunkSize = 64 * 1024
    /// Unsent bytes above which the reader waits for the socket rather than reading on.
    static let backlogLimit = 4 * chunkSize

    /// Size and modification time of a regular file (symlinks already resolved), or nil.
    static func regularFile(_ path: String) -> (size: Int64, modifiedMilliseconds: Int64)? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        let modified = Int64(info.st_mtim.tv_sec) * 1000 + Int64(info.st_mtim.tv_nsec) / 1_000_000
        return (Int64(info.st_size), modified)
    }

    /// The whole of a small file (at most `count` bytes), or nil when it cannot be read.
    static func read(_ path: String, upTo count: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes { buffer in
                pread(fd, buffer.baseAddress.map { $0 + filled }, count - filled, off_t(filled))
            }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { break }
            filled += got
        }
        return Array(bytes[0 ..< filled])
    }

    /// Writes the first `length` bytes of the file to `stream`, a chunk at a time, waiting while the
    /// socket is behind. A file that shrank meanwhile ends the body early (the connection then closes).
    static func stream(_ path: String, length: Int, to stream: any HTTPBodyStream) {
        defer { stream.finish() }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        var offset = 0
        while offset < length && !stream.isClosed {
            while stream.bufferedByteCount > backlogLimit && !stream.isClosed { usleep(2_000) }
            let wanted = min(chunkSize, length - offset)
            let got = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, wanted, off_t(offset)) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0, stream.write(Array(chunk[0 ..< got])) else { return }
            offset += got
        }
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
