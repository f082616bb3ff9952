import HealthModel

// libFuzzer target: a POST /v1/ingest/health-auto-export body through the streaming scanner and
// the mapper. Any input must end in items or a HealthAutoExportError, never a crash; the checking
// pass (no uuids) and the saving pass must agree on every item but the uuids.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHealthAutoExport(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = UnsafeRawBufferPointer(start: data, count: size)
    func read(uuids: Bool) -> [HealthAutoExportItem]? {
        var reader = HealthAutoExportReader(user: "fuzz", batchSize: 7)
        reader.mapper.computesUUIDs = uuids
        var items: [HealthAutoExportItem] = []
        do {
            try reader.read(body) { batch in
                guard batch.count <= 7 else { fatalError("a batch over its size") }
                items += batch
            }
        } catch is HealthAutoExportError {
            return nil
        } catch {
            fatalError("unexpected error \(error)")
        }
        return items
    }
    let saving = read(uuids: true)
    let checking = read(uuids: false)
    guard (saving == nil) == (checking == nil), saving?.count == checking?.count else {
        fatalError("the checking and saving passes disagree")
    }
    return 0
}
