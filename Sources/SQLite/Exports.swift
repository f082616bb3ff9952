// The driver-neutral parts of this driver's API (column lists, row decoding errors, savepoints,
// the migration runner and its errors) live in SQLSupport, shared with the PostgreSQL driver.
@_exported import SQLSupport
