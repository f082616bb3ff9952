import Foundation

/// The data directory holds every person's health data and the admin token: it is its owner's
/// alone (0700, its files 0600). `healthd` sets the umask 077 at start so everything it creates is;
/// `prepare` creates the directory that way and narrows the modes of an existing one.
public enum DataDirectory {
    /// One mode narrowed by `prepare`, for the log.
    public struct Repair: Equatable, Sendable, CustomStringConvertible {
        public var path: String
        public var oldMode: mode_t
        public var newMode: mode_t

        public var description: String {
            "\(path) \(String(oldMode, radix: 8)) -> \(String(newMode, radix: 8))"
        }
    }

    /// The umask every healthd command runs with: nothing it writes is readable by group or others.
    public static let umaskBits: mode_t = 0o077

    /// Creates `path` (0700) if missing; otherwise takes group and other permissions off it and off
    /// every file directly inside (the SQLite file and its `-wal`/`-shm`, the admin token, the lock).
    /// Returns what it changed. Only the owner's bits are kept, so nothing is ever widened.
    public static func prepare(_ path: String) throws -> [Repair] {
        var info = stat()
        if stat(path, &info) != 0 {
            guard errno == ENOENT else { throw DataDirectoryError.inaccessible(path, errno) }
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            return []
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw DataDirectoryError.notADirectory(path) }
        var repairs: [Repair] = []
        try narrow(path, info.st_mode, &repairs)
        guard let directory = opendir(path) else { throw DataDirectoryError.inaccessible(path, errno) }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard name != "." && name != ".." else { continue }
            let file = path + "/" + name
            var fileInfo = stat()
            // lstat: a symlink is left alone (its target may be anyone's).
            guard lstat(file, &fileInfo) == 0, fileInfo.st_mode & S_IFMT == S_IFREG || fileInfo.st_mode & S_IFMT == S_IFDIR
            else { continue }
            try narrow(file, fileInfo.st_mode, &repairs)
        }
        return repairs
    }

    private static func narrow(_ path: String, _ mode: mode_t, _ repairs: inout [Repair]) throws {
        let permissions = mode & 0o7777
        guard permissions & 0o077 != 0 else { return }
        let narrowed = permissions & 0o700
        guard chmod(path, narrowed) == 0 else { throw DataDirectoryError.inaccessible(path, errno) }
        repairs.append(Repair(path: path, oldMode: permissions, newMode: narrowed))
    }
}

public enum DataDirectoryError: Error, Equatable, CustomStringConvertible {
    case notADirectory(String)
    case inaccessible(String, Int32)
    /// Another server holds the lock; its pid and port as it recorded them (nil when not yet written).
    case inUse(directory: String, pid: Int32?, port: Int?)

    public var description: String {
        switch self {
        case .notADirectory(let path):
            return "the data directory \(path) is not a directory"
        case .inaccessible(let path, let code):
            return "cannot use the data directory: \(path): \(String(cString: strerror(code)))"
        case .inUse(let directory, let pid, let port):
            let who = [pid.map { "pid \($0)" }, port.map { "port \($0)" }].compactMap { $0 }.joined(separator: ", ")
            return "another healthd (\(who.isEmpty ? "starting" : who)) is serving the data directory \(directory); "
                + "two servers on one SQLite directory would disagree about tokens and caches. Stop it first, "
                + "or give this one another --data-dir (several servers may share one PostgreSQL --database)"
        }
    }
}

/// `healthd serve` on a SQLite data directory holds an exclusive `flock` on `healthd.lock` for its
/// whole life, so a second server there refuses to start. The file says who holds it ("pid port"):
/// the kernel drops the lock when the process ends, however it ends, so a stale file never blocks.
public final class DataDirectoryLock {
    public static let fileName = "healthd.lock"
    private let descriptor: Int32
    public let path: String

    public init(directory: String) throws {
        path = directory + "/" + Self.fileName
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw DataDirectoryError.inaccessible(path, errno) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            let holder = Self.holder(fd)
            close(fd)
            guard code == EWOULDBLOCK else { throw DataDirectoryError.inaccessible(path, code) }
            throw DataDirectoryError.inUse(directory: directory, pid: holder.pid, port: holder.port)
        }
        descriptor = fd
        record(port: nil)
    }

    /// Gives the lock up. A server never does: the kernel releases it when the process ends, so it
    /// does not hang on the object's lifetime. The file stays (removing it would race a starting server).
    public func release() {
        close(descriptor)
    }

    /// Writes "pid" or "pid port" into the file, for the message a second server prints.
    public func record(port: Int?) {
        let text = Array(("\(getpid())" + (port.map { " \($0)" } ?? "") + "\n").utf8)
        _ = ftruncate(descriptor, 0)
        _ = text.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
    }

    /// The holder as recorded: "pid [port]".
    static func holder(_ fd: Int32) -> (pid: Int32?, port: Int?) {
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return (nil, nil) }
        return parse(String(decoding: buffer[0 ..< count], as: UTF8.self))
    }

    static func parse(_ text: String) -> (pid: Int32?, port: Int?) {
        let fields = text.split(whereSeparator: \.isWhitespace)
        return (fields.first.flatMap { Int32($0) }, fields.dropFirst().first.flatMap { Int($0) })
    }
}
