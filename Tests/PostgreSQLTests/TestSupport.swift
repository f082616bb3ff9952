import PostgresTestSupport
import Testing

extension TestPostgres {
    static let skipReason: Comment =
        "HEALTHD_TEST_POSTGRES_URL is not set: start a server with `Tests/postgres/cluster.sh start` and export its URL to run the PostgreSQL tests"
}

struct ExpectedFailure: Error {}
