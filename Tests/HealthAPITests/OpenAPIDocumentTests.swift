import Foundation
import Testing
import HTTP
import JSON
import HealthModel
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

    /// `SampleInput` requires `value` and `unit` for exactly the catalog's quantity types (by id or
    /// HealthKit's long form): the script reads them from the catalog's source, so this catches drift.
    @Test func sampleInputRequiresAUnitForEveryQuantityType() throws {
        let data = try #require(FileManager.default.contents(atPath: Self.documentPath))
        let document = try JSONParser.parse([UInt8](data))
        let input = try #require(document.objectValue?["components"]?.objectValue?["schemas"]?.objectValue?["SampleInput"]?.objectValue)
        let documented = input["if"]?.objectValue?["properties"]?.objectValue?["type"]?.objectValue?["enum"]?.arrayValue?
            .compactMap(\.stringValue) ?? []
        let quantityTypes = HealthTypeCatalog.quantityTypes.filter(\.isSampleType)
        #expect(Set(documented) == Set(quantityTypes.flatMap { [$0.id, $0.longIdentifier] }))
        #expect(input["then"]?.objectValue?["required"]?.arrayValue?.compactMap(\.stringValue) == ["value", "unit"])
    }

    /// The document says which token each operation takes: none for open routes, only the admin
    /// token for admin routes, the session cookie only for a person's routes, an app token (possibly
    /// also the admin token) for the rest.
    @Test func everyOperationNamesTheTokenItsRouteTakes() throws {
        let data = try #require(FileManager.default.contents(atPath: Self.documentPath))
        let document = try JSONParser.parse([UInt8](data))
        let defaultSecurity = try #require(document.objectValue?["security"]?.arrayValue)
        let paths = try #require(document.objectValue?["paths"]?.objectValue)
        let server = try TestServer()
        let access = server.application.routeAccess
        #expect(access.count == server.application.registeredRoutes.count)
        for member in paths.members {
            for operation in member.value.objectValue?.members ?? [] {
                let name = "\(operation.key.uppercased()) \(member.key)"
                let security = operation.value.objectValue?["security"]?.arrayValue ?? defaultSecurity
                let schemes = Set(security.compactMap { $0.objectValue?.keys.first })
                switch access[name] {
                case .open?: #expect(schemes.isEmpty, "\(name) is open")
                case .admin?: #expect(schemes == ["adminToken"], "\(name) takes the admin token only")
                case .token?: #expect(schemes.contains("appToken"), "\(name) takes an app token")
                case .person?: #expect(schemes == ["sessionCookie"], "\(name) takes the session cookie only")
                case nil: Issue.record("\(name) is documented but not registered")
                }
            }
        }
    }

    /// Answers the server gives are ones the document lists: the status among the operation's
    /// responses, and a JSON body's members among its schema's (where the schema allows no others)
    /// with every required one present. The cases are answers a generated request rarely reaches.
    @Test func answersFitTheDocument() throws {
        let data = try #require(FileManager.default.contents(atPath: Self.documentPath))
        let document = try #require(try JSONParser.parse([UInt8](data)).objectValue)
        let schemas = try #require(document["components"]?.objectValue?["schemas"]?.objectValue)
        let paths = try #require(document["paths"]?.objectValue)
        func resolved(_ schema: JSONValue?) -> JSONObject? {
            guard let object = schema?.objectValue else { return nil }
            if let reference = object["$ref"]?.stringValue, let name = reference.split(separator: "/").last {
                return resolved(schemas[String(name)])
            }
            return object
        }
        let server = try TestServer()
        let alice = server.createUser("alice")
        let cases: [(method: HTTPMethod, pattern: String, target: String, token: String?, json: String?)] = [
            (.put, "/v1/characteristics", "/v1/characteristics", TestServer.adminToken,
             #"{"user":"\#(alice)","dateOfBirth":"1980-01-02","biologicalSex":"female"}"#),
            (.get, "/openapi.json", "/openapi.json?format=yaml", nil, nil),
        ]
        for call in cases {
            let name = "\(call.method.rawValue) \(call.target)"
            let reply = server.request(call.method, call.target, token: call.token, json: call.json)
            let operation = paths[call.pattern]?.objectValue?[call.method.rawValue.lowercased()]?.objectValue
            let response = operation?["responses"]?.objectValue?[String(reply.status)]?.objectValue
            #expect(response != nil, "\(name): \(reply.status) is not among the documented answers")
            let mediaType = reply.status < 400 ? "application/json" : "application/problem+json"
            guard let schema = resolved(response?["content"]?.objectValue?[mediaType]?.objectValue?["schema"]),
                  let members = reply.object?.keys else { continue }
            let required = schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(Set(required).subtracting(members).sorted() == [], "\(name): required members missing: \(reply.text)")
            if schema["additionalProperties"]?.boolValue == false, let properties = schema["properties"]?.objectValue?.keys {
                #expect(Set(members).subtracting(properties).sorted() == [], "\(name): members the document does not list: \(reply.text)")
            }
        }
    }
}
