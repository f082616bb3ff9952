import HealthModel
import HealthStore
import SQLite

extension SampleRow {
    /// One row of `samples` (selected with `SampleRow.selectList`) from a SQLite statement. Reads
    /// by position with the non-generic getters (this runs for every row of every page); a NULL
    /// in a NOT NULL column is reported under the column's name, as `Row`'s named getters do.
    init(_ row: Row) throws(RowDecodingError) {
        func required(_ column: SampleColumn) throws(RowDecodingError) -> Int64 {
            guard let value = row.int64IfPresent(at: column.rawValue) else {
                throw RowDecodingError(table: SampleColumn.table, column: column.name, problem: "is NULL")
            }
            return value
        }
        let seq = try required(.seq)
        guard !row.isNull(at: SampleColumn.uuid.rawValue) else {
            throw RowDecodingError(table: SampleColumn.table, column: SampleColumn.uuid.name, problem: "is NULL")
        }
        guard let uuid = row.withBlob(at: SampleColumn.uuid.rawValue, { HealthUUID(bytes: $0) }) else {
            throw RowDecodingError(table: SampleColumn.table, column: SampleColumn.uuid.name, problem: "is not a 16-byte uuid")
        }
        self.init(seq: seq, uuid: uuid, typeCode: try required(.typeID), sourceRowID: try required(.sourceID),
                  deviceRowID: row.int64IfPresent(at: SampleColumn.deviceID.rawValue), start: try required(.start),
                  end: try required(.end), value: row.doubleIfPresent(at: SampleColumn.value.rawValue),
                  body: row.blobIfPresent(at: SampleColumn.body.rawValue), created: try required(.created),
                  parentSeq: row.int64IfPresent(at: SampleColumn.parentSeq.rawValue))
    }
}
