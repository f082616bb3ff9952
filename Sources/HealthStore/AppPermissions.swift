/// An app of a user with a live token, and what its live tokens together may read and share: the
/// person's backup carries these, never a token.
public struct AppPermissions: Sendable, Equatable {
    public var app: String
    public var read: Set<String>
    public var share: Set<String>

    public init(app: String, read: Set<String>, share: Set<String>) {
        self.app = app
        self.read = read
        self.share = share
    }

    /// Folds rows of (app, read list, share list) from a source-ordered left join into one entry per
    /// app with a live token, in source order (a source without one, say from an import, has no
    /// permissions to carry: its samples bring it back).
    package static func folding(_ rows: [(app: String, read: String?, share: String?)]) -> [AppPermissions] {
        var apps: [AppPermissions] = []
        var index: [String: Int] = [:]
        for row in rows where row.read != nil || row.share != nil {
            let position = index[row.app] ?? {
                apps.append(AppPermissions(app: row.app, read: [], share: []))
                index[row.app] = apps.count - 1
                return apps.count - 1
            }()
            if let read = row.read { apps[position].read.formUnion(StoredForms.typeList(read)) }
            if let share = row.share { apps[position].share.formUnion(StoredForms.typeList(share)) }
        }
        return apps
    }
}
