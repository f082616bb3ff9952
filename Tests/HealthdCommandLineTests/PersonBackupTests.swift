import Foundation
import HealthAPI
import HealthModel
import HealthStore
import SQLiteStore
import JSON
import Testing
@testable import HealthdCommandLine

@Suite("A person's backup")
struct PersonBackupTests {
    static func store() throws -> (SQLiteHealthStore, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("healthd-backup-\(UUID().uuidString)")
        return (try SQLiteHealthStore(directory: directory.path, readers: 1), directory)
    }

    static func steps(_ value: Double, minute: Int64) -> HealthSample {
        let start: Int64 = 1_772_960_400_000 + minute * 60_000
        return HealthSample(uuid: HealthUUID.timeOrdered(), type: "stepCount", start: start, end: start + 600_000,
                            content: .quantity(value))
    }

    static func backup(_ store: SQLiteHealthStore, _ user: User) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try PersonBackup(user: user).forEachPage(from: store) { bytes += $0; return true }
        return bytes
    }

    /// Without a set order the first app to save a type ranks first. The backup's samples are in time
    /// order, so an import alone would rank the phone (earlier samples, saved second) first.
    @Test("the source order nobody set, the settings and the apps come back, and a second import changes nothing")
    func settingsRoundTrip() throws {
        let (old, oldDirectory) = try Self.store()
        defer { try? FileManager.default.removeItem(at: oldDirectory) }
        let user = try old.createUser(name: "jane")
        let watch = try old.createAuthorization(user: user, app: "watch", read: [], share: ["stepCount"]).authorization
        let phone = try old.createAuthorization(user: user, app: "phone", read: ["stepCount", "heartRate"], share: ["stepCount"])
            .authorization
        _ = try old.save([Self.steps(900, minute: 10)], by: watch)
        _ = try old.save([Self.steps(1000, minute: 0)], by: phone)
        try old.replaceCharacteristics(userRowID: user.rowID, [("biologicalSex", "female"), ("dateOfBirth", "1981-02-03")])
        let goals = ActivityGoals(activeEnergyBurned: 640, appleExerciseTime: 45, appleStandHours: 10)
        try old.setActivityGoals(userRowID: user.rowID, goals)
        let stepCount = try #require(HealthTypeCatalog.type("stepCount"))
        #expect(try old.sourcePriority(userRowID: user.rowID, type: stepCount) == ["watch", "phone"])
        let exported = try Self.backup(old, user)
        #expect(!String(decoding: exported, as: UTF8.self).contains("hdt_"), "a token in the backup")

        let (new, newDirectory) = try Self.store()
        defer { try? FileManager.default.removeItem(at: newDirectory) }
        let restoredUser = try new.createUser(name: "jane")
        let first = try HealthdExportImporter(store: new, user: restoredUser).run(MemoryByteSource(exported))
        #expect(first.insertedCount == 2 && first.records == 2)
        #expect(first.settingsRestored?.isEmpty == false)
        #expect(try new.sourcePriority(userRowID: restoredUser.rowID, type: stepCount) == ["watch", "phone"])
        #expect(try new.activityGoals(userRowID: restoredUser.rowID) == goals)
        #expect(try new.characteristics(userRowID: restoredUser.rowID).map { "\($0.0)=\($0.1)" }
                == ["biologicalSex=female", "dateOfBirth=1981-02-03"])
        let apps = try new.appPermissions(userRowID: restoredUser.rowID)
        #expect(apps == [AppPermissions(app: "watch", read: [], share: ["stepCount"]),
                         AppPermissions(app: "phone", read: ["stepCount", "heartRate"], share: ["stepCount"])])
        // The restored store's backup is the same, settings line included.
        #expect(try Self.backup(new, restoredUser).split(separator: 0x0A).map { line in
            (try? JSONParser.parse(Array(line)))?.objectValue?.members.filter { $0.key != "created" && $0.key != "source" }.map(\.key) ?? []
        } == exported.split(separator: 0x0A).map { line in
            (try? JSONParser.parse(Array(line)))?.objectValue?.members.filter { $0.key != "created" && $0.key != "source" }.map(\.key) ?? []
        })
        let firstLine = { (bytes: [UInt8]) in Array(bytes.prefix(while: { $0 != 0x0A })) }
        #expect(firstLine(try Self.backup(new, restoredUser)) == firstLine(exported))

        let again = try HealthdExportImporter(store: new, user: restoredUser).run(MemoryByteSource(exported))
        #expect(again.insertedCount == 0 && again.settingsRestored == [])
    }

    @Test("a settings line that does not decode stops the import, naming the field")
    func badSettingsStop() throws {
        let (store, directory) = try Self.store()
        defer { try? FileManager.default.removeItem(at: directory) }
        let user = try store.createUser(name: "jane")
        for (line, field) in [(#"{"healthdBackup":{"version":2}}"#, "healthdBackup.version"),
                              (#"{"healthdBackup":{"version":1,"sourcePriorities":{"sleepAnalysis":["a"]}}}"#,
                               "healthdBackup.sourcePriorities.sleepAnalysis"),
                              (#"{"healthdBackup":{"version":1,"apps":[{"app":"a","read":["nope"],"share":[]}]}}"#,
                               "healthdBackup.apps[0]"),
                              // Goals PUT /v1/activity-goals would refuse are refused here too.
                              (#"{"healthdBackup":{"version":1,"activityGoals":{"activeEnergyBurned":500,"appleExerciseTime":30,"appleStandHours":25}}}"#,
                               "healthdBackup.activityGoals.appleStandHours"),
                              (#"{"healthdBackup":{"version":1,"activityGoals":{"activeEnergyBurned":0,"appleExerciseTime":30,"appleStandHours":12}}}"#,
                               "healthdBackup.activityGoals.activeEnergyBurned")] {
            #expect {
                _ = try HealthdExportImporter(store: store, user: user).run(MemoryByteSource(Array((line + "\n").utf8)))
            } throws: { error in
                "\(error)".contains(field)
            }
        }
    }
}
