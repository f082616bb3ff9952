import HealthStore
import SQLite

/// A source and its grant's switches (`s.app, g.read_types, g.share_types`).
enum AppPermissionsColumn: Int, TableColumns {
    case app, readTypes, shareTypes

    static let table = "app_grants"
}
