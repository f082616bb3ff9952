import HealthStore
import SQLite

extension SQLiteError: StoreFaultReporting {
    /// A full disk is the only database-wide fault SQLite reports (an embedded file is never unreachable).
    public var storeFault: StoreFault? { SQLiteHealthStore.isOutOfSpace(self) ? .outOfSpace : nil }
}

extension SQLiteHealthStore {
    /// True when `error` means the data directory's filesystem is full (SQLite's SQLITE_FULL, or
    /// an I/O error SQLite reports while growing the WAL or its index). Nothing was written by the
    /// failed transaction, so the caller may retry once space returns; the store needs no repair.
    public static func isOutOfSpace(_ error: any Error) -> Bool {
        guard let error = error as? SQLiteError else { return false }
        if error.code == .full { return true }
        // SQLITE_IOERR_WRITE, _FSYNC, _TRUNCATE and _SHMSIZE are how ENOSPC surfaces outside a
        // plain page write (e.g. when the WAL index grows on a full tmpfs).
        return error.code == .ioError && [778, 1034, 1546, 4874].contains(error.extendedCode)
    }
}
