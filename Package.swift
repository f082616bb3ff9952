// swift-tools-version:6.2
// healthd: a HealthKit-style health-data server. No Swift package dependencies:
// only the toolchain and system C libraries through system-library targets: SQLite, zlib, libargon2,
// and libpq (loaded at run time, and only for `--database postgres://...`).
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

// The HTTP hot path in release builds: a connection's state is confined to its serial queue, and
// the runtime's exclusivity checks on its fields cost about 2,000 instructions a request (7 % of
// GET /healthz). Static checks still apply, and debug builds (the tests) keep the dynamic ones.
let hotPath: [SwiftSetting] = strict + [
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
]

let package = Package(
    name: "healthd",
    products: [
        .library(name: "HealthClient", targets: ["HealthClient"]),
        .executable(name: "healthd", targets: ["healthd"]),
        .executable(name: "healthd-bench", targets: ["healthd-bench"]),
    ],
    targets: [
        // System C libraries.
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CLibPQ", path: "Sources/CLibPQ"),
        .systemLibrary(name: "CArgon2", path: "Sources/CArgon2", providers: [.apt(["libargon2-dev"])]),

        // Pure cores: no I/O.
        // Hex digits and the Gregorian civil-date conversion, shared by HTTP, JSON, HealthModel and
        // Statistics (HTTP is a protocol layer and must not depend on the health model).
        .target(name: "Primitives", swiftSettings: strict),
        // Benchmark clients and test participants, each on a thread of its own (Foundation `Thread`).
        .target(name: "ClientThreads", swiftSettings: strict),
        .target(name: "JSON", dependencies: ["Primitives"], swiftSettings: strict),
        .target(name: "HTTP", dependencies: ["Primitives"], swiftSettings: hotPath),
        .target(name: "HealthModel", dependencies: ["JSON", "Primitives"], swiftSettings: strict),
        // Time zones come in as rules (`TimeZoneRules`); the tz database is read by the shell `TimeZoneDatabase`.
        .target(name: "Statistics", dependencies: ["Primitives"], swiftSettings: strict),
        .target(name: "Pedometer", swiftSettings: strict),
        .target(name: "Crypto", swiftSettings: strict),
        // Apple Health export.xml: byte-level XML tokenizer, repair filter and mapping to samples.
        .target(name: "AppleHealthExport", dependencies: ["HealthModel"], swiftSettings: strict),
        // Health Auto Export (iOS app) REST payloads: streaming JSON pass and mapping to samples.
        .target(name: "HealthAutoExport", dependencies: ["HealthModel", "JSON", "Crypto"], swiftSettings: strict),

        // Shells: sockets, SQLite, files, the clock and the system's random source.
        // A HealthKit-like async client for Swift apps; Foundation (URLSession) only.
        .target(name: "HealthClient", swiftSettings: strict),
        .target(name: "HTTPServer", dependencies: ["HTTP"], swiftSettings: hotPath),
        // The system's tz database (Foundation's TimeZone) as the statistics engine's time-zone rules.
        .target(name: "TimeZoneDatabase", dependencies: ["Statistics"], swiftSettings: strict),
        // What both database drivers share (no I/O of its own: the drivers run the SQL): the column lists
        // queries declare (`TableColumns`), row decoding errors, savepoints, the ordered named migrations runner.
        .target(name: "SQLSupport", swiftSettings: strict),
        .target(name: "SQLite", dependencies: ["CSQLite", "SQLSupport"], swiftSettings: strict),
        // A synchronous PostgreSQL driver over libpq (no health-domain code).
        .target(name: "PostgreSQL", dependencies: ["CLibPQ", "SQLSupport"], swiftSettings: strict),
        // The health-data interface both stores implement: the `HealthDataStore` protocol, its value
        // types, the access policy, and the pieces of storage both backends share (no database of its own;
        // the column lists and row errors it declares come from SQLSupport).
        .target(name: "HealthStore", dependencies: ["SQLSupport", "HealthModel", "Statistics", "JSON", "Crypto"], swiftSettings: strict),
        // The embedded SQLite store (the default): `SQLiteHealthStore`.
        .target(name: "SQLiteStore", dependencies: ["SQLite", "HealthStore", "HealthModel", "Statistics", "JSON", "Crypto"],
                swiftSettings: strict),
        // The PostgreSQL store (`serve --database postgres://...`): the same HealthDataStore, distributed by user.
        .target(name: "PostgresStore", dependencies: ["PostgreSQL", "HealthStore", "HealthModel", "Statistics", "JSON", "Crypto"],
                swiftSettings: strict),
        // The server's settings (defaults, config file, flags), shared by the command line and the HTTP API.
        .target(name: "HealthdSettings", swiftSettings: strict),
        // People's sign-in pieces: Argon2id password hashes (libargon2), the password policy, RFC 8628's
        // codes and poll, the sign-in limiter, session tokens and cookies. Pure but for libargon2 and the system random source.
        .target(name: "Identity", dependencies: ["CArgon2", "Crypto", "HealthdSettings"], swiftSettings: strict),
        // The HTTP API: routes, the application that answers them, and the services they share.
        .target(name: "HealthAPI",
                dependencies: ["HTTP", "JSON", "HealthModel", "HealthStore", "HealthdSettings", "Statistics", "TimeZoneDatabase", "Pedometer", "Crypto",
                               "HealthAutoExport", "Identity", "Webhooks", "NetworkPolicy", "HTTPClient"],
                swiftSettings: strict),
        // Realistic demo data (`healthd seed`, `serve --demo`): a pure generator and the shell that saves it.
        .target(name: "DemoData", dependencies: ["HealthModel", "HealthStore", "Primitives"], swiftSettings: strict),
        // The command line's pure parts (arguments, help, the config file) and the Apple Health importer's
        // wiring to the store, and `healthd export`/`import` of a person's backup (PersonBackup, beside the
        // export it shares in HealthAPI); a module of its own so tests reach them.
        .target(name: "HealthdCommandLine",
                dependencies: ["HealthdSettings", "HealthAPI", "JSON", "HealthModel", "HealthStore", "AppleHealthExport", "CZlib"],
                swiftSettings: strict),
        .executableTarget(name: "healthd",
                          dependencies: ["HealthdCommandLine", "HealthdSettings", "HealthAPI", "HTTP", "HTTPServer", "HealthStore",
                                         "SQLiteStore", "PostgresStore",
                                         "PostgreSQL", "DemoData", "Identity"],
                          swiftSettings: strict),
        .executableTarget(name: "healthd-bench",
                          dependencies: ["HTTP", "HTTPServer", "JSON", "HealthModel", "Pedometer", "SQLite", "Primitives",
                                         "HealthStore", "SQLiteStore", "HealthdSettings", "HealthAPI", "HealthAutoExport", "PostgreSQL",
                                         "PostgresStore", "ClientThreads", "Identity"],
                          swiftSettings: strict),
        // The HTTP benchmark's floor: a minimal responder on healthd's socket design (Benchmarks/http.sh).
        .executableTarget(name: "dispatch-floor", path: "Benchmarks/DispatchFloor", swiftSettings: strict),

        // What every PostgreSQL test needs: the test server's URL, a schema of its own per test, `eventually`.
        .target(name: "PostgresTestSupport", dependencies: ["PostgreSQL"], path: "Tests/PostgresTestSupport", swiftSettings: strict),
        .testTarget(name: "PrimitivesTests", dependencies: ["Primitives"]),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto"]),
        .testTarget(name: "IdentityTests", dependencies: ["Identity", "HealthdSettings"]),
        .testTarget(name: "HTTPTests", dependencies: ["HTTP", "HTTPServer", "Primitives"]),
        .testTarget(name: "HealthModelTests", dependencies: ["HealthModel", "JSON", "Primitives"]),
        .testTarget(name: "AppleHealthExportTests", dependencies: ["AppleHealthExport", "HealthModel"]),
        .testTarget(name: "HealthAutoExportTests", dependencies: ["HealthAutoExport", "HealthModel", "JSON"]),
        .testTarget(name: "StatisticsTests", dependencies: ["Statistics", "TimeZoneDatabase", "Primitives"]),
        .testTarget(name: "PedometerTests", dependencies: ["Pedometer"], resources: [.copy("Fixtures")]),
        .testTarget(name: "SQLiteTests", dependencies: ["SQLite", "ClientThreads"]),
        .testTarget(name: "PostgreSQLTests", dependencies: ["PostgreSQL", "PostgresTestSupport", "ClientThreads"]),
        .testTarget(name: "HealthStoreTests", dependencies: ["HealthStore", "SQLiteStore", "HealthModel", "Statistics", "Primitives", "ClientThreads"]),
        .testTarget(name: "PostgresStoreTests", dependencies: ["PostgresStore", "PostgreSQL", "HealthStore", "SQLiteStore", "HealthModel", "Statistics",
                                                             "TimeZoneDatabase", "PostgresTestSupport", "Primitives", "ClientThreads"]),
        .testTarget(name: "HealthAPITests", dependencies: ["HealthAPI", "HTTP", "JSON", "HealthStore", "SQLiteStore", "HealthdSettings", "HealthdCommandLine", "DemoData",
                                                          "PostgresStore", "PostgreSQL", "PostgresTestSupport", "ClientThreads", "Identity",
                                                          "Webhooks", "NetworkPolicy", "HTTPClient"]),
        .testTarget(name: "HealthdCommandLineTests", dependencies: ["HealthdCommandLine", "HealthdSettings", "HealthAPI", "SQLiteStore", "CZlib"]),
        .testTarget(name: "HealthClientTests", dependencies: ["HealthClient"]),
        .testTarget(name: "EndToEndTests", dependencies: ["HealthClient"]),

        // Webhooks: Standard Webhooks signing, the retry schedule and the per-subscription delivery
        // state machine (pure); HealthAPI's WebhookDelivery service runs them.
        .target(name: "Webhooks", dependencies: ["Crypto"], swiftSettings: strict),
        // The SSRF policy for outbound requests: address classes, receiver URLs, the allow-list (pure).
        .target(name: "NetworkPolicy", swiftSettings: strict),
        // The outbound HTTP/1.1 client webhook deliveries use: a shell around a pure response parser.
        .target(name: "HTTPClient", dependencies: ["NetworkPolicy"], swiftSettings: strict),
        .testTarget(name: "WebhooksTests", dependencies: ["Webhooks", "Crypto"]),
        .testTarget(name: "NetworkPolicyTests", dependencies: ["NetworkPolicy"]),
        .testTarget(name: "HTTPClientTests", dependencies: ["HTTPClient", "NetworkPolicy"]),
    ],
    swiftLanguageModes: [.v6]
)
