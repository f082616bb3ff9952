import Crypto
import HealthModel
import HealthStore
import PostgreSQL

/// The columns of `samples` that `PostgresSampleRow` reads, in SELECT order.
enum PostgresSampleColumn: Int, PostgresColumns {
    case seq, uuid, typeID, sourceID, deviceID, start, end, value, body, created, parentSeq

    static let table = "samples"

    var name: String {
        switch self {
        case .seq: "seq"
        case .uuid: "uuid"
        case .typeID: "type_id"
        case .sourceID: "source_id"
        case .deviceID: "device_id"
        case .start: "start_ms"
        case .end: "end_ms"
        case .value: "value"
        case .body: "body"
        case .created: "created_ms"
        case .parentSeq: "parent_seq"
        }
    }
}

/// One row of `samples`, copied out of the result. A NULL in a NOT NULL column or a uuid that is
/// not 16 bytes throws instead of reading as zero.
struct PostgresSampleRow: Sendable {
    var seq: Int64
    var uuid: HealthUUID
    var typeCode: Int64
    var sourceRowID: Int64
    var deviceRowID: Int64?
    var start: Int64
    var end: Int64
    var value: Double?
    var body: [UInt8]?
    var created: Int64
    var parentSeq: Int64?

    static let selectList = PostgresSampleColumn.selectList

    init(_ row: PostgresRow) throws {
        seq = try row.int64(PostgresSampleColumn.seq)
        guard let uuid = HealthUUID(bytes: try row.bytes(PostgresSampleColumn.uuid)) else {
            throw PostgresDecodingError(table: "samples", column: "uuid", problem: "is not 16 bytes")
        }
        self.uuid = uuid
        typeCode = try row.int64(PostgresSampleColumn.typeID)
        sourceRowID = try row.int64(PostgresSampleColumn.sourceID)
        deviceRowID = try row.int64IfPresent(PostgresSampleColumn.deviceID)
        start = try row.int64(PostgresSampleColumn.start)
        end = try row.int64(PostgresSampleColumn.end)
        value = try row.doubleIfPresent(PostgresSampleColumn.value)
        body = try row.bytesIfPresent(PostgresSampleColumn.body)
        created = try row.int64(PostgresSampleColumn.created)
        parentSeq = try row.int64IfPresent(PostgresSampleColumn.parentSeq)
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

        mutating func sample(_ row: PostgresSampleRow) throws -> StoredSample {
            let typeName = store.typeName(for: row.typeCode) ?? "unknown"
            let body = row.body.map { decoded($0) } ?? SampleRowBody.Decoded()
            let content: SampleContent
            if let bodyContent = body.content {
                content = bodyContent
            } else if HealthTypeCatalog.type(typeName)?.kind == .correlation {
                let children = try connection.map("""
                    SELECT \(PostgresSampleRow.selectList) FROM samples WHERE user_id = $1 AND parent_seq = $2 ORDER BY seq
                    """, [.int64(userRowID), .int64(row.seq)], PostgresSampleRow.init)
                content = .correlation(try children.map { try self.sample($0).sample })
            } else {
                guard let value = row.value else {
                    // A quantity without its value is a damaged row: say so instead of reporting 0.
                    throw PostgresDecodingError(table: "samples", column: "value", problem: "is NULL for \(typeName) sample seq \(row.seq)")
                }
                content = .quantity(value)
            }
            var device: SampleDevice?
            if let id = row.deviceRowID {
                if let known = devices[id] {
                    device = known
                } else {
                    device = try connection.first("SELECT body FROM devices WHERE user_id = $1 AND id = $2",
                                                  [.int64(userRowID), .int64(id)], { DeviceBody.decode(try $0.bytes(at: 0)) }) ?? nil
                    devices[id] = device
                }
            }
            if appNames == nil { appNames = try PostgresHealthStore.appNames(connection, userRowID: userRowID) }
            let app = appNames?[row.sourceRowID] ?? "unknown"
            let restored = HealthSample(uuid: row.uuid, type: typeName, start: row.start, end: row.end, content: content,
                                        metadata: body.metadata, device: device)
            return StoredSample(sample: restored, source: SampleSource(app: app, user: userExternalID), created: row.created)
        }

        private mutating func decoded(_ bytes: [UInt8]) -> SampleRowBody.Decoded {
            bodies.decoded(bytes)
        }
    }
}
