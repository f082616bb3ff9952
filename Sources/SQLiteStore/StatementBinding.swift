import HealthModel
import SQLite

extension Statement {
    /// Binds a uuid as the `uuid` column stores it: its 16 network-order bytes, straight from its
    /// two words (no array per row).
    func bind(_ uuid: HealthUUID, at index: Int) throws(SQLiteError) {
        try withUnsafeBytes(of: (uuid.high.bigEndian, uuid.low.bigEndian)) { bytes throws(SQLiteError) in
            try bind(bytes: bytes, at: index)
        }
    }
}
