import HTTP
import HealthModel
import HealthStore
import JSON

/// The type catalog and characteristics (docs/api.md, Samples).
struct CatalogRoutes: Sendable {
    let data: HealthData
    let catalog: [UInt8]

    static func register(into router: inout Router<Route>, data: HealthData) {
        // The catalog is fixed for the life of the process: serialize it once.
        let catalog: [UInt8] = {
            var writer = JSONWriter(capacity: 32 * 1024)
            writer.beginObject()
            writer.key("types")
            writer.beginArray()
            for type in HealthTypeCatalog.all { write(type, into: &writer) }
            writer.endArray()
            writer.endObject()
            return writer.bytes
        }()
        let routes = CatalogRoutes(data: data, catalog: catalog)
        router.register(.get, "/v1/types", Route(access: .token, execution: .inline, handler: routes.listTypes))
        router.register(.get, "/v1/types/{id}", Route(access: .token, execution: .inline, handler: routes.readType))
        router.register(.get, "/v1/characteristics", Route(access: .token, handler: routes.readCharacteristics))
        router.register(.put, "/v1/characteristics", Route(access: .admin, handler: routes.writeCharacteristics))
    }

    /// `GET /v1/types`: the whole type catalog, serialized once at start.
    func listTypes(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        return JSONResponse.ok(catalog)
    }

    /// `GET /v1/types/{id}`: one type of the catalog.
    func readType(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        guard let type = HealthTypeCatalog.type(context.parameter("id")) else {
            throw APIError.notFound("no type '\(context.parameter("id"))'")
        }
        return JSONResponse.write { writer in Self.write(type, into: &writer) }
    }

    /// `GET /v1/characteristics`: the user's characteristics (date of birth, sex...) the app may read.
    func readCharacteristics(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let app = try context.app()
        let values = try storeCall { try data.app(app).characteristics() }
        return JSONResponse.write { writer in
            writer.beginObject()
            for (key, value) in values { writer.field(key, value) }
            writer.endObject()
        }
    }

    /// `PUT /v1/characteristics`: sets a user's characteristics.
    /// Apps cannot write characteristics (as in HealthKit); the admin token can.
    func writeCharacteristics(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        var body = try RequestBody.json(context.request)
        let (userKey, values) = try RequestBody.decode { () throws(JSONFieldError) -> (String, [(String, String)]) in
            let user = try body.requiredString("user")
            var values: [(String, String)] = []
            for type in HealthTypeCatalog.characteristicTypes {
                guard let text = try body.optionalString(type.id) else { continue }
                if type.id == "dateOfBirth" {
                    guard HealthDate.parseDay(text) != nil else {
                        throw body.error(type.id, "must be a date YYYY-MM-DD")
                    }
                    values.append((type.id, text))
                } else {
                    guard let name = type.values?.caseName(for: text) else {
                        throw body.error(type.id, "must be one of \(type.values?.caseNames.joined(separator: ", ") ?? "")")
                    }
                    values.append((type.id, name))
                }
            }
            try body.finish()
            return (user, values)
        }
        guard let user = try storeCall({ try data.user(idOrName: userKey) }) else {
            throw APIError.invalidField("user", "no user '\(userKey)'")
        }
        try storeCall { try data.person(user).replaceCharacteristics(values) }
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.field("user", user.id)
            for (key, value) in values { writer.field(key, value) }
            writer.endObject()
        }
    }

    static func write(_ type: HealthType, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.field("id", type.id)
        writer.field("kind", type.kind.rawValue)
        writer.field("aggregation", type.aggregation?.apiName)
        writer.field("canonicalUnit", type.canonicalUnit?.unitString)
        writer.key("units")
        AccountRoutes.writeStrings(type.units, into: &writer)
        writer.field("maximumDuration", type.maximumDuration)
        writer.key("range")
        if let range = type.range {
            writer.beginObject()
            writer.field("minimum", range.minimum)
            writer.field("maximum", range.maximum)
            writer.endObject()
        } else {
            writer.null()
        }
        if let values = type.values {
            writer.key("values")
            AccountRoutes.writeStrings(values.caseNames, into: &writer)
        }
        if let objects = type.objectTypeIDs {
            writer.key("objectTypes")
            AccountRoutes.writeStrings(objects, into: &writer)
        }
        writer.endObject()
    }
}
