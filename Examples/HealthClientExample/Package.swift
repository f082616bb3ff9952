// swift-tools-version:6.2
// A Swift app's view of healthd: this package uses the HealthClient library as any app would.
// CI builds it and runs it against a live server (Tests/e2e/client_example.py).
import PackageDescription

let package = Package(
    name: "HealthClientExample",
    dependencies: [
        // From a clone: .package(url: "https://github.com/OWNER/healthd.git", branch: "main").
        // A path dependency's package identity is its folder's name ("healthd" in a clone named so,
        // but "healthd-main" or "backup" for other checkouts); `name:` fixes the name used below
        // whatever the folder is called.
        .package(name: "healthd", path: "../.."),
    ],
    targets: [
        .executableTarget(name: "HealthClientExample", dependencies: [
            .product(name: "HealthClient", package: "healthd"),
        ]),
    ]
)
