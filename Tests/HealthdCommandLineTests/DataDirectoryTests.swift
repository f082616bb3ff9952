import Foundation
import Testing
@testable import HealthdCommandLine

@Suite("Data directory modes and lock")
struct DataDirectoryTests {
    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("healthd-datadir-\(UUID().uuidString)").path
    }

    static func mode(_ path: String) -> mode_t {
        var info = stat()
        _ = stat(path, &info)
        return info.st_mode & 0o7777
    }

    @Test("a new data directory is 0700")
    func createsPrivateDirectory() throws {
        let path = Self.temporaryPath() + "/nested/data"
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let repairs = try DataDirectory.prepare(path)
        #expect(repairs.isEmpty)
        #expect(Self.mode(path) == 0o700)
    }

    @Test("an existing directory and its files lose group and other permissions, and each change is reported")
    func repairsExistingModes() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        chmod(path, 0o755)
        for name in ["healthd.sqlite", "healthd.sqlite-wal", "healthd.sqlite-shm"] {
            _ = FileManager.default.createFile(atPath: path + "/" + name, contents: Data([1]))
            chmod(path + "/" + name, 0o644)
        }
        _ = FileManager.default.createFile(atPath: path + "/admin-token", contents: Data([1]))
        chmod(path + "/admin-token", 0o600)
        // A file the owner cannot write stays unwritable: nothing is widened.
        _ = FileManager.default.createFile(atPath: path + "/read-only", contents: Data([1]))
        chmod(path + "/read-only", 0o444)

        let repairs = try DataDirectory.prepare(path)
        #expect(Self.mode(path) == 0o700)
        for name in ["healthd.sqlite", "healthd.sqlite-wal", "healthd.sqlite-shm", "admin-token"] {
            #expect(Self.mode(path + "/" + name) == 0o600, "\(name)")
        }
        #expect(Self.mode(path + "/read-only") == 0o400)
        #expect(Set(repairs.map { ($0.path as NSString).lastPathComponent })
                == ["healthd.sqlite", "healthd.sqlite-wal", "healthd.sqlite-shm", "read-only", (path as NSString).lastPathComponent])
        #expect(repairs.contains(DataDirectory.Repair(path: path, oldMode: 0o755, newMode: 0o700)))
        // Already private: nothing to say the second time.
        #expect(try DataDirectory.prepare(path).isEmpty)
    }

    @Test("a file in place of the directory is a clear error")
    func refusesAFile() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = FileManager.default.createFile(atPath: path, contents: Data())
        #expect(throws: DataDirectoryError.notADirectory(path)) { try DataDirectory.prepare(path) }
    }

    @Test("a second lock on the same directory is refused, naming the holder's pid and port; released, it is free")
    func lockIsExclusive() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try DataDirectory.prepare(path)
        let first = try DataDirectoryLock(directory: path)
        #expect(throws: DataDirectoryError.inUse(directory: path, pid: getpid(), port: nil)) {
            try DataDirectoryLock(directory: path)
        }
        first.record(port: 8123)
        do {
            _ = try DataDirectoryLock(directory: path)
            Issue.record("a second lock was granted")
        } catch let error as DataDirectoryError {
            #expect(error == .inUse(directory: path, pid: getpid(), port: 8123))
            #expect(error.description.contains("pid \(getpid()), port 8123"))
        }
        #expect(Self.mode(path + "/" + DataDirectoryLock.fileName) & 0o077 == 0)
        first.release()
        let second = try DataDirectoryLock(directory: path)
        second.release()
    }

    @Test("the lock file's text is read leniently")
    func parsesHolder() {
        #expect(DataDirectoryLock.parse("123 8080\n") == (123, 8080))
        #expect(DataDirectoryLock.parse("123\n") == (123, nil))
        #expect(DataDirectoryLock.parse("") == (nil, nil))
        #expect(DataDirectoryLock.parse("garbage") == (nil, nil))
    }
}
