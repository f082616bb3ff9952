import Foundation
import Testing
@testable import HealthdCommandLine

@Suite struct PublicDirectoryTests {
    @Test func aCheckoutsBinaryFindsTheRepositorysPublicFolderFirst() {
        let search = PublicDirectory.search(executablePath: "/src/healthd/.build/x86_64-unknown-linux-gnu/debug/healthd",
                                            workingDirectory: "/home/me") { $0 == "/src/healthd/Public" || $0 == "/home/me/Public" }
        #expect(search.found == "/src/healthd/Public")
        #expect(search.tried.first == "/src/healthd/.build/x86_64-unknown-linux-gnu/debug/Public")
    }

    @Test func anInstalledBinaryFindsShareHealthd() {
        let search = PublicDirectory.search(executablePath: "/usr/local/bin/healthd", workingDirectory: "/") {
            $0 == "/usr/local/share/healthd/Public"
        }
        #expect(search.found == "/usr/local/share/healthd/Public")
    }

    @Test func theWorkingDirectoryIsTheLastResortAndNothingIsTriedTwice() {
        let search = PublicDirectory.search(executablePath: "/opt/x/healthd", workingDirectory: "/work/repo") { _ in false }
        #expect(search.found == nil)
        #expect(search.tried.last == "/work/repo/Public")
        #expect(Set(search.tried).count == search.tried.count)
        #expect(PublicDirectory.candidates(executablePath: nil, workingDirectory: "/a") == ["/a/Public"])
    }

    @Test func aFolderIsTheDashboardOnlyWithItsPageAndDocument() throws {
        let directory = NSTemporaryDirectory() + "healthd-public-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(!PublicDirectory.isDashboard(directory))
        #expect(FileManager.default.createFile(atPath: directory + "/index.html", contents: Data()))
        #expect(!PublicDirectory.isDashboard(directory))
        #expect(FileManager.default.createFile(atPath: directory + "/openapi.json", contents: Data("{}".utf8)))
        #expect(PublicDirectory.isDashboard(directory))
    }
}
