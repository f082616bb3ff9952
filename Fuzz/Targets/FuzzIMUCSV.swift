// libFuzzer target: the IMU CSV body parser, then the pedometer on whatever it accepts (the
// path of POST /v1/ingest/imu with Content-Type text/csv, minus HTTP and SQLite).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIMUCSV(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Array(UnsafeBufferPointer(start: data, count: size))
    guard let columns = try? AccelerometerCSV.parse(body, maximumRows: 20_000) else { return 0 }
    precondition(columns.x.count == columns.count && columns.y.count == columns.count && columns.z.count == columns.count,
                 "ragged columns from the CSV parser")
    precondition(columns.count <= 20_000, "row limit not enforced")
    // The unit comes from the query string in the API; fuzz both.
    let unit: AccelerationUnit = size % 2 == 0 ? .standardGravity : .metersPerSecondSquared
    var session = PedometerSession()
    let batch = AccelerometerBatch(timestamps: columns.t, x: columns.x, y: columns.y, z: columns.z, unit: unit)
    // Messy streams are repaired, never passed on: what the detector sees is strictly increasing.
    if let (repaired, _) = try? batch.normalized() {
        precondition(zip(repaired.timestamps, repaired.timestamps.dropFirst()).allSatisfy { $0 < $1 },
                     "a repaired stream that is not strictly increasing")
        precondition(repaired.x.count == repaired.timestamps.count && repaired.z.count == repaired.timestamps.count, "ragged repaired batch")
    }
    if let update = try? session.process(batch) {
        precondition(update.totalSteps >= 0 && update.distanceMeters >= 0, "negative steps or distance")
        precondition(update.stepTimestamps.allSatisfy(\.isFinite), "a step at a non-finite time")
    }
    let end = session.finish()
    precondition(end.totalSteps >= 0, "negative steps")
    return 0
}
