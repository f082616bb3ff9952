/// Savepoints as both drivers run them (the SQL is the same in SQLite and PostgreSQL).
public enum Savepoint {
    /// Runs `body` in `SAVEPOINT healthd_savepoint_<depth>` through `execute`: if it throws, only
    /// its own work is undone (ROLLBACK TO keeps the savepoint, RELEASE then removes it) and the
    /// enclosing transaction stays usable. The caller has checked that a transaction is open and
    /// counts the depth, so nested savepoints get names of their own.
    public static func run<T>(depth: Int, execute: (String) throws -> Void, _ body: () throws -> T) throws -> T {
        let name = "healthd_savepoint_\(depth)"
        try execute("SAVEPOINT \(name)")
        let result: T
        do {
            result = try body()
        } catch {
            // Both fail harmlessly when the database already rolled back the whole transaction
            // (SQLite on SQLITE_FULL) or the session broke: the caller's error is the one that matters.
            try? execute("ROLLBACK TO SAVEPOINT \(name)")
            try? execute("RELEASE SAVEPOINT \(name)")
            throw error
        }
        try execute("RELEASE SAVEPOINT \(name)")
        return result
    }
}
