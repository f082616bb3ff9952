import PostgresTestSupport
import Testing
@testable import PostgreSQL

/// What the driver decides without a server: URL checks, error classes, numeric decoding.
@Suite struct OfflineTests {
    @Test func acceptsPostgresURLsAndRefusesOthers() throws {
        _ = try PostgresConfiguration(url: "postgres://healthd@db.internal:5432/healthd")
        _ = try PostgresConfiguration(url: "postgresql://u:p@127.0.0.1/db?sslmode=require")
        for bad in ["mysql://x/y", "healthd.sqlite", "postgres://host/db?nosuchoption=1", ""] {
            #expect(throws: PostgresError.self) { try PostgresConfiguration(url: bad) }
        }
    }

    @Test func redactsPasswordsForLogs() throws {
        #expect(try PostgresConfiguration(url: "postgres://alice:s3cret@db:5432/h").redactedURL == "postgres://alice:***@db:5432/h")
        #expect(try PostgresConfiguration(url: "postgres://alice@db/h").redactedURL == "postgres://alice@db/h")
    }

    @Test func urlParametersOverrideTheDefaults() throws {
        var configuration = try PostgresConfiguration(url: "postgres://db/h?connect_timeout=9")
        configuration.settings = ["search_path": "a b"]
        let parameters = configuration.connectionParameters()
        // The URL goes last: libpq lets it override the keywords before it.
        #expect(parameters.last?.0 == "dbname")
        #expect(parameters.first { $0.0 == "options" }?.1 == "-c search_path=a\\ b -c statement_timeout=30000")
    }

    @Test func classifiesSQLStates() {
        #expect(PostgresError.kind(sqlState: "23505") == .uniqueViolation)
        #expect(PostgresError.kind(sqlState: "23503") == .foreignKeyViolation)
        #expect(PostgresError.kind(sqlState: "23514") == .otherConstraintViolation)
        #expect(PostgresError.kind(sqlState: "40001") == .serializationFailure)
        #expect(PostgresError.kind(sqlState: "40P01") == .deadlock)
        #expect(PostgresError.kind(sqlState: "08006") == .unavailable)
        #expect(PostgresError.kind(sqlState: "57P01") == .unavailable)
        #expect(PostgresError.kind(sqlState: "53300") == .unavailable)
        #expect(PostgresError.kind(sqlState: "57014") == .queryCanceled)
        #expect(PostgresError.kind(sqlState: "53100") == .diskFull)
        #expect(PostgresError.kind(sqlState: "42P01") == .invalidStatement)
        #expect(PostgresError.kind(sqlState: "XX000") == .other)
    }

    @Test func decodesBinaryNumerics() {
        // 1234567890123 = 1 | 2345 | 6789 | 0123 with weight 3.
        func numeric(weight: Int16, negative: Bool = false, _ digits: [UInt16]) -> [UInt8] {
            var bytes: [UInt8] = []
            bytes.appendBigEndian(UInt16(digits.count))
            bytes.appendBigEndian(weight)
            bytes.appendBigEndian(UInt16(negative ? 0x4000 : 0))
            bytes.appendBigEndian(UInt16(0))
            for digit in digits { bytes.appendBigEndian(digit) }
            return bytes
        }
        let big = numeric(weight: 3, [1, 2345, 6789, 123])
        #expect(big.withUnsafeBytes { NumericValue($0)?.int64 } == 1_234_567_890_123)
        let fraction = numeric(weight: 0, negative: true, [12, 5000])
        #expect(fraction.withUnsafeBytes { NumericValue($0)?.int64 } == .some(nil))
        #expect(fraction.withUnsafeBytes { NumericValue($0)?.double } == -12.5)
        // 20000 is stored as one digit 2 with weight 1 (trailing zero digits are dropped).
        #expect(numeric(weight: 1, [2]).withUnsafeBytes { NumericValue($0)?.int64 } == 20_000)
        let overflow = numeric(weight: 5, [9999, 9999, 9999, 9999, 9999, 9999])
        #expect(overflow.withUnsafeBytes { NumericValue($0)?.int64 } == .some(nil))
    }

    @Test func refusesTextWithNUL() {
        #expect { try EncodedParameters([.text("a\u{0}b")], sql: "SELECT $1") } throws: { ($0 as? PostgresError)?.kind == .nulInText }
    }

    @Test func refusesBadListenChannels() {
        #expect(PostgresListener.isValidChannel("healthd_changes"))
        for bad in ["", "Upper", "has space", "x;DROP", "1abc", String(repeating: "a", count: 64)] {
            #expect(!PostgresListener.isValidChannel(bad))
        }
    }

    @Test func unreachableServerIsUnavailableQuickly() throws {
        // Port 1 on localhost: nothing listens, so the connect is refused at once.
        do {
            _ = try PostgresConnection(url: "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
            Issue.record("expected the connection to fail")
        } catch {
            #expect(error.kind == .unavailable)
            #expect(error.message.contains("127.0.0.1"))
        }
    }
}
