import HealthModel
import HealthStore
import Identity

/// Invitations to activate an account (`POST /v1/users`, `POST /v1/users/{id}/invitation`,
/// `healthd invite`): single use, for `InvitationCode.lifetime`, stored only as a SHA-256.
public enum Invitations {
    public struct Issued: Sendable {
        /// Shown once, to the admin who hands it on; never stored.
        public let code: String
        public let expiresMs: Int64
        /// RFC 3339, UTC.
        public var expires: String { RFC3339.format(expiresMs) }
    }

    /// A new invitation for `user`, voiding any earlier one. For a person who is already active it
    /// is how the admin resets a forgotten password: activating it ends every session.
    public static func issue(for user: User, in data: HealthData, nowMs: Int64 = StoreClock.nowMilliseconds()) throws -> Issued {
        let code = InvitationCode.random()
        let expiresMs = nowMs + Int64(InvitationCode.lifetime * 1000)
        try data.people.createInvitation(userRowID: user.rowID, codeHash: code.hash, expiresMs: expiresMs)
        return Issued(code: code.value, expiresMs: expiresMs)
    }
}
