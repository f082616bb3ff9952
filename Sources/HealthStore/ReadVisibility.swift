/// Which sources' data of one type a read sees.
public enum SourceVisibility: Sendable, Equatable {
    /// Every source's: the reader may read the type (or is the person).
    case everySource
    /// Only this source row's: an app's own data of a type it may not read.
    case onlySource(Int64)

    /// The source a query on the type is narrowed to; nil when it is not narrowed.
    public var onlySource: Int64? {
        if case .onlySource(let source) = self { return source }
        return nil
    }
}

/// What a read sees of one user's data, decided above the stores: `HealthData`'s views make it
/// from a token's `AccessPolicy` (read privacy, as in HealthKit: of a type the token may not read
/// it sees its own data only, as if nothing else existed) or for the person's whole data. The
/// backends receive it with every read and only translate it into conditions: for each type,
/// every source or only one source row. They never see a policy or an authorization.
public struct ReadVisibility: Sendable, Equatable {
    public let userRowID: Int64
    /// The user's id as clients see it (stored samples carry it).
    public let userExternalID: String
    /// The types seen from every source; nil when every type is (the person's whole data).
    public let everySourceTypes: Set<String>?
    /// The source row whose data of any other type is seen: the app's own.
    public let ownSource: Int64

    /// An app token's view: read privacy for every type it may not read.
    init(app: AppAuthorization, userExternalID: String? = nil) {
        userRowID = app.userRowID
        self.userExternalID = userExternalID ?? app.userID
        everySourceTypes = app.access.read
        ownSource = app.sourceRowID
    }

    /// All of one user's data, with no app's narrowing: the person, or the admin acting for them.
    init(wholeUser user: User) {
        userRowID = user.rowID
        userExternalID = user.id
        everySourceTypes = nil
        ownSource = 0
    }

    /// What a read of `type` sees.
    public func sources(of type: String) -> SourceVisibility {
        guard let everySourceTypes, !everySourceTypes.contains(type) else { return .everySource }
        return .onlySource(ownSource)
    }

    /// True when the reader sees data of `type` saved by `sourceRowID`.
    public func sees(_ type: String, from sourceRowID: Int64) -> Bool {
        sources(of: type).onlySource.map { $0 == sourceRowID } ?? true
    }
}

extension ReadVisibility {
    /// The SQL condition (over `type_id` and `source_id`, with `sourceParameter` standing for
    /// `ownSource`) selecting the rows this view sees among `types` (all types when nil): every
    /// source for the types it sees whole, its own rows for the rest. Nil when nothing can match.
    /// Type codes are integers from the catalog map (`code`), never client text.
    package func condition(types: Set<String>?, sourceParameter own: String, code: (String) -> Int64?) -> String? {
        func codes(_ names: some Sequence<String>) -> [Int64] { names.compactMap(code).sorted() }
        func list(_ codes: [Int64]) -> String { codes.map(String.init).joined(separator: ",") }
        if let types {
            let all = codes(types)
            guard !all.isEmpty else { return nil }
            let whole = everySourceTypes.map { seen in codes(types.filter(seen.contains)) } ?? all
            if whole.count == all.count { return "type_id IN (\(list(all)))" }
            if whole.isEmpty { return "(source_id = \(own) AND type_id IN (\(list(all))))" }
            return "(type_id IN (\(list(whole))) OR (source_id = \(own) AND type_id IN (\(list(all)))))"
        }
        guard let everySourceTypes else { return "1 = 1" }
        let whole = codes(everySourceTypes)
        if whole.isEmpty { return "source_id = \(own)" }
        return "(type_id IN (\(list(whole))) OR source_id = \(own))"
    }
}

/// One app's own rows of one user: the key of state that only the app that made it reads back
/// (its IMU sessions and pedometer totals, its workout sessions). A backend receives this, not
/// the authorization.
public struct AppSource: Sendable, Equatable {
    public let userRowID: Int64
    /// The source row the app writes as, for this user.
    public let sourceRowID: Int64

    public init(_ app: AppAuthorization) {
        userRowID = app.userRowID
        sourceRowID = app.sourceRowID
    }
}
