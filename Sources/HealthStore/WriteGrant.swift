import HealthModel

/// A write the access policy allowed, for one app: made only in this module, after the check
/// (`save(_:by:)` and the other writes below), so the backends' write operations receive the
/// decision and never make it. What a backend writes as comes from `app`: its user and source.
public struct WriteGrant: Sendable {
    public let app: AppAuthorization
    /// What reads inside the write see (a workout's totals when its session ends): the app's view.
    public let reads: ReadVisibility

    init(_ app: AppAuthorization) {
        self.app = app
        self.reads = ReadVisibility(app: app)
    }
}

extension WorkoutSession {
    /// Starting and ending a session need share permission for `workout`: ending saves one as the app.
    public static let shareDetail = "a workout session saves a workout sample: this token may not share workout"
}

/// The writes of an app, decided here, once, for every backend: a type the token may not share is
/// `SharingDenied` (a 403) and the store is not asked.
extension HealthDataStore {
    /// Saves a batch atomically (all or none) and returns the uuids in request order. A uuid saved
    /// before with identical content is accepted again without a second copy; with different
    /// content the batch is a `SampleConflict`.
    public func save(_ samples: [HealthSample], by app: AppAuthorization) throws -> [HealthUUID] {
        try app.access.requireShare(samples)
        return try save(samples, granted: WriteGrant(app))
    }

    /// `save` without holding the calling thread until the commit.
    public func save(_ samples: [HealthSample], by app: AppAuthorization,
                     completion: @escaping @Sendable (Result<[HealthUUID], any Error>) -> Void) {
        do throws(SharingDenied) { try app.access.requireShare(samples) } catch {
            completion(.failure(error))
            return
        }
        save(samples, granted: WriteGrant(app), completion: completion)
    }

    /// Deletes one sample the app saved, leaving a tombstone. Another app's sample is `forbidden`,
    /// or `notFound` when the app may not read its type (it must not learn the sample exists);
    /// none is `notFound`; the app's own of a type it may not share is `SharingDenied`.
    public func deleteSample(_ uuid: HealthUUID, by app: AppAuthorization) throws {
        let visibility = ReadVisibility(app: app)
        try deleteSample(uuid, granted: WriteGrant(app)) { type, sourceRowID in
            guard sourceRowID == app.sourceRowID else {
                if visibility.sees(type, from: sourceRowID) {
                    throw StoreError.forbidden("sample \(uuid.lowercasedString) was saved by another app")
                }
                throw StoreError.notFound("no sample \(uuid.lowercasedString)")
            }
            try app.access.requireShare(type)
        }
    }

    /// Deletes the app's own top-level samples of a type in [start, end) (overlap); returns how many.
    public func deleteSamples(type: String, start: Int64, end: Int64, by app: AppAuthorization) throws -> Int {
        try app.access.requireShare(type)
        return try deleteSamples(type: type, start: start, end: end, granted: WriteGrant(app))
    }

    /// Commits a pedometer batch; every sample in it must be one the token may share.
    public func commitIMU(app: AppAuthorization, session: String, seq: Int?, device: SampleDevice?,
                          basis: IMUSessionState, result: IMUBatchResult,
                          completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        do throws(SharingDenied) { try app.access.requireShare(result.samples) } catch {
            completion(.failure(error))
            return
        }
        commitIMU(granted: WriteGrant(app), session: session, seq: seq, device: device, basis: basis, result: result,
                  completion: completion)
    }

    public func startWorkoutSession(app: AppAuthorization, activityType: String, zone: HeartRateZoneBounds?,
                                    at start: Int64) throws -> WorkoutSession {
        try app.access.requireShare("workout", detail: WorkoutSession.shareDetail)
        return try startWorkoutSession(granted: WriteGrant(app), activityType: activityType, zone: zone, at: start)
    }

    public func endWorkoutSession(id: String, app: AppAuthorization, now: Int64, workoutUUID: HealthUUID) throws -> WorkoutSession {
        try app.access.requireShare("workout", detail: WorkoutSession.shareDetail)
        return try endWorkoutSession(id: id, granted: WriteGrant(app), now: now, workoutUUID: workoutUUID)
    }
}
