import HealthdSettings
import Crypto
import Foundation
import HealthStore

/// The admin token: `HEALTHD_ADMIN_TOKEN` when set; otherwise generated on the first start,
/// printed once, and kept in `DATA_DIR/admin-token`, readable by its owner only.
public enum AdminToken {
    public enum Origin: Equatable, Sendable { case environment, file, generated }

    public static func resolve(environment: [String: String], dataDirectory: String) throws -> (token: String, origin: Origin) {
        if let token = environment["HEALTHD_ADMIN_TOKEN"] {
            guard token.utf8.count >= 16, !token.contains(where: \.isWhitespace) else {
                throw ConfigurationError("HEALTHD_ADMIN_TOKEN must be at least 16 characters without spaces")
            }
            return (token, .environment)
        }
        let path = URL(fileURLWithPath: dataDirectory).appendingPathComponent("admin-token").path
        if FileManager.default.fileExists(atPath: path) {
            guard let data = FileManager.default.contents(atPath: path),
                  let token = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines),
                  !token.isEmpty else {
                throw ConfigurationError("cannot read the admin token file \(path)")
            }
            return (token, .file)
        }
        let token = SecureRandom.token(prefix: "hda_")
        // Create with 0600 from the start, so the token is never readable by others, not even briefly.
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            throw ConfigurationError("cannot write the admin token file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let bytes = Array((token + "\n").utf8)
        guard write(fd, bytes, bytes.count) == bytes.count, fsync(fd) == 0 else {
            throw ConfigurationError("cannot write the admin token file \(path): \(String(cString: strerror(errno)))")
        }
        return (token, .generated)
    }
}
