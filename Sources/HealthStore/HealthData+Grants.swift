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
    /// app's tokens have in flight, before the write waits for the writer (`endInFlight`).
    public func updateAppGrant(app: String, _ change: (inout AppGrant) throws -> Void) throws -> AppGrant? {
        if let before = try appGrant(app) {
            var after = before
            if (try? change(&after)) != nil, after.changesAccess(from: before) {
                try endInFlight(ofApp: app)
            }
        }
        return try store.updateAppGrant(userRowID: user.rowID, app: app, change)
    }

    /// Revokes every token of the app and forgets its switches; false when there is no such app.
    /// What the tokens have in flight ends first (`endInFlight`).
    public func revokeApp(_ app: String) throws -> Bool {
        try endInFlight(ofApp: app)
        return try store.revokeApp(userRowID: user.rowID, app: app)
    }

    /// Ends what the person's live tokens (of `app`, or all) have in flight, now, before the
    /// revocation's write queues for the writer. Why: a write waits for the one before it, and a
    /// slow disk's fsync (seen: half a second each on a CI machine) would stretch "within a second"
    /// past its bound. The store ends them again inside the write, which also catches a stream
    /// opened meanwhile; should that write fail, they merely ended early, as before.
    func endInFlight(ofApp app: String?) throws {
        store.endInFlight(authorizationIDs: try store.liveAuthorizationIDs(userRowID: user.rowID, app: app))
    }

    /// The person's answer to a permission request, with their grant for its app, in one transaction.
    public func answerAuthorizationRequest(userCode: String,
                                           _ answer: (inout AuthorizationRequestRecord, inout AppGrant) throws -> Void) throws
        -> AuthorizationRequestRecord? {
        try store.answerAuthorizationRequest(userCode: userCode, user: user, answer)
    }

    /// The person's switches for one app, if they have any.
    public func appGrant(_ app: String) throws -> AppGrant? { try appGrants().first { $0.app == app } }
}
