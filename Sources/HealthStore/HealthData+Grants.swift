/// The permission model's doors: the person's switches per app, and RFC 8628's permission
/// requests (the app asking, the person answering on the sheet, the app polling for its token).
extension HealthData {
    /// Stores a new permission request; false when its user code is taken (draw another).
    public func createAuthorizationRequest(_ record: AuthorizationRequestRecord, deviceCodeHash: [UInt8]) throws -> Bool {
        try store.createAuthorizationRequest(record, deviceCodeHash: deviceCodeHash)
    }

    /// The request with this user code (8 letters), whatever its state.
    public func authorizationRequest(userCode: String) throws -> AuthorizationRequestRecord? {
        try store.authorizationRequest(userCode: userCode)
    }

    /// One poll in one locked transaction; a token is made in it when `poll` answers true.
    public func pollAuthorizationRequest(deviceCodeHash: [UInt8], _ poll: (inout AuthorizationRequestRecord) -> Bool) throws
        -> AuthorizationPollOutcome {
        try store.pollAuthorizationRequest(deviceCodeHash: deviceCodeHash, poll)
    }
}

extension PersonHealthData {
    /// The person's apps with their switches, oldest first.
    public func appGrants() throws -> [AppGrant] { try store.appGrants(userRowID: user.rowID) }

    /// Changes one app's switches; nil when the person has no such app. A change ends what the
    /// app's tokens have in flight.
    public func updateAppGrant(app: String, _ change: (inout AppGrant) throws -> Void) throws -> AppGrant? {
        try store.updateAppGrant(userRowID: user.rowID, app: app, change)
    }

    /// Revokes every token of the app and forgets its switches; false when there is no such app.
    public func revokeApp(_ app: String) throws -> Bool { try store.revokeApp(userRowID: user.rowID, app: app) }

    /// The person's answer to a permission request, with their grant for its app, in one transaction.
    public func answerAuthorizationRequest(userCode: String,
                                           _ answer: (inout AuthorizationRequestRecord, inout AppGrant) throws -> Void) throws
        -> AuthorizationRequestRecord? {
        try store.answerAuthorizationRequest(userCode: userCode, user: user, answer)
    }

    /// The person's switches for one app, if they have any.
    public func appGrant(_ app: String) throws -> AppGrant? { try appGrants().first { $0.app == app } }
}
