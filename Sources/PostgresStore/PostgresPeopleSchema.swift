/// The PostgreSQL tables of people's accounts (docs/decisions.md, "People and sign-in"): the
/// password column, invitations, sessions and failed sign-ins.
///
/// Distribution: all three new tables are reference tables, like `authorizations`. A session is
/// looked up by its token's hash and an invitation by its code's, before the user is known, and a
/// failed sign-in is counted per name and per address, not per user; all are small. Every node
/// reads and writes the same rows, so a sign-out on one node is refused on the next request to
/// another (no node caches a session), and guesses spread over nodes share one budget.
enum PostgresPeopleSchema {
    static let migrationName = "010-people-accounts"

    static let referenceTables = ["invitations", "sessions", "sign_in_failures"]

    static let sql = """
        -- The person's password: an Argon2id PHC string (parameters, salt, hash); NULL until the
        -- account is activated with an invitation.
        ALTER TABLE users ADD COLUMN password_hash text;
        -- One open invitation per person, by the SHA-256 of its code (a new one replaces it).
        CREATE TABLE invitations (
            user_id bigint PRIMARY KEY REFERENCES users (id),
            code_hash bytea NOT NULL UNIQUE,
            created_ms bigint NOT NULL,
            expires_ms bigint NOT NULL
        );
        -- Signed-in sessions, by the SHA-256 of the cookie's token.
        CREATE TABLE sessions (
            token_hash bytea PRIMARY KEY,
            user_id bigint NOT NULL REFERENCES users (id),
            created_ms bigint NOT NULL,
            last_used_ms bigint NOT NULL
        );
        CREATE INDEX sessions_by_user ON sessions (user_id);
        -- Failed sign-ins within the limiter's window, per account name and per client address.
        CREATE TABLE sign_in_failures (
            kind text NOT NULL,
            key text NOT NULL,
            at_ms bigint NOT NULL
        );
        CREATE INDEX sign_in_failures_by_key ON sign_in_failures (kind, key, at_ms);
        CREATE INDEX sign_in_failures_by_time ON sign_in_failures (at_ms);
        """
}
