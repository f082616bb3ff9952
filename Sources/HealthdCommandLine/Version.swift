/// healthd's version: `healthd --version` prints it and `Tools/openapi.py` copies it into the
/// OpenAPI document's `info.version`, so it is written here only.
public enum HealthdVersion {
    public static let string = "1.0.0"
}
