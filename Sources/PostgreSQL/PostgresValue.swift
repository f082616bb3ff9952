/// One query parameter. Numbers, booleans and bytes travel in PostgreSQL's binary form (no
/// printing and re-parsing, doubles stay exact); text travels as text with an unspecified type, so
/// the server reads it as whatever the SQL needs there (uuid, timestamptz, jsonb, numeric...).
///
/// `int64` is sent as `int8`: where a function needs `int4` (e.g. `make_interval(days => $1)`),
/// cast in the SQL (`$1::int`). Comparisons and inserts into `integer` columns need no cast.
public enum PostgresValue: Sendable, Hashable {
    case null
    case int64(Int64)
    case double(Double)
    case bool(Bool)
    case text(String)
    case bytes([UInt8])

    public var isNull: Bool { if case .null = self { true } else { false } }
}

extension PostgresValue: ExpressibleByNilLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByBooleanLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(integerLiteral value: Int64) { self = .int64(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension PostgresValue {
    public init(_ value: Int64?) { self = value.map { .int64($0) } ?? .null }
    public init(_ value: Int?) { self = value.map { .int64(Int64($0)) } ?? .null }
    public init(_ value: Double?) { self = value.map { .double($0) } ?? .null }
    public init(_ value: Bool?) { self = value.map { .bool($0) } ?? .null }
    public init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    public init(_ value: [UInt8]?) { self = value.map { .bytes($0) } ?? .null }
}

/// PostgreSQL type OIDs the driver sends or decodes (pg_type.dat; fixed since PostgreSQL 7).
enum TypeOID {
    static let unspecified: UInt32 = 0
    static let bool: UInt32 = 16
    static let bytea: UInt32 = 17
    static let name: UInt32 = 19
    static let int8: UInt32 = 20
    static let int2: UInt32 = 21
    static let int4: UInt32 = 23
    static let text: UInt32 = 25
    static let oid: UInt32 = 26
    static let json: UInt32 = 114
    static let float4: UInt32 = 700
    static let float8: UInt32 = 701
    static let unknown: UInt32 = 705
    static let bpchar: UInt32 = 1042
    static let varchar: UInt32 = 1043
    static let timestamp: UInt32 = 1114
    static let timestamptz: UInt32 = 1184
    static let numeric: UInt32 = 1700
    static let uuid: UInt32 = 2950
    static let jsonb: UInt32 = 3802

    static func name(_ oid: UInt32) -> String {
        switch oid {
        case bool: "boolean"
        case bytea: "bytea"
        case name: "name"
        case int8: "bigint"
        case int2: "smallint"
        case int4: "integer"
        case text: "text"
        case oid: "oid"
        case json: "json"
        case float4: "real"
        case float8: "double precision"
        case unknown: "unknown"
        case bpchar: "character"
        case varchar: "character varying"
        case timestamp: "timestamp"
        case timestamptz: "timestamptz"
        case numeric: "numeric"
        case uuid: "uuid"
        case jsonb: "jsonb"
        default: "type \(oid)"
        }
    }
}

/// The parameter's wire type and format. Text and NULL share "unspecified, text format", so a
/// prepared statement's parameter types depend only on which parameters are numbers/bools/bytes.
extension PostgresValue {
    var wireType: UInt32 {
        switch self {
        case .null, .text: TypeOID.unspecified
        case .int64: TypeOID.int8
        case .double: TypeOID.float8
        case .bool: TypeOID.bool
        case .bytes: TypeOID.bytea
        }
    }

    var isBinary: Bool {
        switch self {
        case .null, .text: false
        case .int64, .double, .bool, .bytes: true
        }
    }
}
