import Crypto
import HealthModel
import HealthStore
import PostgreSQL

extension SampleRow {
    /// One row of `samples` from a PostgreSQL result. A NULL in a NOT NULL column or a uuid that
    /// is not 16 bytes throws instead of reading as zero.
    init(_ row: PostgresRow) throws {
        guard let uuid = HealthUUID(bytes: try row.bytes(SampleColumn.uuid)) else {
            throw RowDecodingError(table: SampleColumn.table, column: SampleColumn.uuid.name, problem: "is not 16 bytes")
        }
        self.init(seq: try row.int64(SampleColumn.seq), uuid: uuid, typeCode: try row.int64(SampleColumn.typeID),
                  sourceRowID: try row.int64(SampleColumn.sourceID), deviceRowID: try row.int64IfPresent(SampleColumn.deviceID),
                  start: try row.int64(SampleColumn.start), end: try row.int64(SampleColumn.end),
                  value: try row.doubleIfPresent(SampleColumn.value), body: try row.bytesIfPresent(SampleColumn.body),
                  created: try row.int64(SampleColumn.created), parentSeq: try row.int64IfPresent(SampleColumn.parentSeq))
    }
}

extension HealthUUID {
    /// As a query parameter: text, which the server reads as `uuid`.
    var parameter: PostgresValue { .text(lowercasedString) }
}

/// A device's row id: the first 8 bytes of the SHA-256 of its stored body, so a writer knows it
/// without asking the database (per user, a collision needs ~2^32 distinct devices).
enum DeviceID {
    static func of(body: [UInt8]) -> Int64 {
        let digest = SHA256.hash(body)
        var id: UInt64 = 0
        for byte in digest.prefix(8) { id = id << 8 | UInt64(byte) }
        return Int64(bitPattern: id)
    }
}

extension PostgresHealthStore {
    /// Reads rows of one user into samples. Devices and app names are read once per call, a
    /// correlation's objects with one query each.
    struct Materializer {
        let store: PostgresHealthStore
        let connection: PostgresConnection
        let userRowID: Int64
        let userExternalID: String
        private var devices: [Int64: SampleDevice?] = [:]
        private var appNames: [Int64: String]?
        private var bodies = SampleBodyCache()

        init(store: PostgresHealthStore, connection: PostgresConnection, userRowID: Int64, userExternalID: String) {
            self.store = store
            self.connection = connection
            self.userRowID = userRowID
            self.userExternalID = userExternalID
        }

        mutating func sample(_ row: SampleRow) throws -> StoredSample {
            let typeName = store.typeName(for: row.typeCode) ?? "unknown"
            let body = try row.body.map { bytes throws(RowDecodingError) in try bodies.decoded(bytes) } ?? SampleRowBody.Decoded()
            let content: SampleContent
            if let bodyContent = body.content {
                content = bodyContent
            } else if HealthTypeCatalog.type(typeName)?.kind == .correlation {
                let children = try connection.map("""
                    SELECT \(SampleRow.selectList) FROM samples WHERE user_id = $1 AND parent_seq = $2 ORDER BY seq
                    """, [.int64(userRowID), .int64(row.seq)], SampleRow.init)
                content = .correlation(try children.map { try self.sample($0).sample })
            } else {
                guard let value = row.value else {
                    // A quantity without its value is a damaged row: say so instead of reporting 0.
                    throw RowDecodingError(table: "samples", column: "value", problem: "is NULL for \(typeName) sample seq \(row.seq)")
                }
                content = .quantity(value)
            }
            var device: SampleDevice?
            if let id = row.deviceRowID {
                if let known = devices[id] {
                    device = known
                } else {
                    device = try connection.firstBytes("SELECT body FROM devices WHERE user_id = $1 AND id = $2",
                                                       [.int64(userRowID), .int64(id)]).map { bytes throws(RowDecodingError) in
                        try DeviceBody.decode(bytes)
                    }
                    devices[id] = device
                }
            }
            if appNames == nil { appNames = try PostgresHealthStore.appNames(connection, userRowID: userRowID) }
            let app = appNames?[row.sourceRowID] ?? "unknown"
            let restored = HealthSample(uuid: row.uuid, type: typeName, start: row.start, end: row.end, content: content,
                                        metadata: body.metadata, device: device)
            return StoredSample(sample: restored, source: SampleSource(app: app, user: userExternalID), created: row.created)
        }
    }
}
