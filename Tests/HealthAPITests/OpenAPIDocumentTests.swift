import Foundation
import Testing
import JSON
@testable import HealthAPI

@Suite struct OpenAPIDocumentTests {
    static var documentPath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Public/openapi.json").path
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedRouteExists() throws {
        let data = try #require(FileManager.default.contents(atPath: Self.documentPath))
        let document = try JSONParser.parse([UInt8](data))
        #expect(document.objectValue?["openapi"]?.stringValue == "3.1.0")
        let paths = try #require(document.objectValue?["paths"]?.objectValue)
        var documented: Set<String> = []
        for member in paths.members {
            for operation in member.value.objectValue?.keys ?? [] {
                documented.insert("\(operation.uppercased()) \(member.key)")
            }
        }
        let server = try TestServer()
        let registered = Set(server.application.registeredRoutes.map { "\($0.method.rawValue) \($0.pattern)" })
        #expect(registered.subtracting(documented).sorted() == [], "registered but not documented")
        #expect(documented.subtracting(registered).sorted() == [], "documented but not registered")
    }
}
