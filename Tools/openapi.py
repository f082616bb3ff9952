#!/usr/bin/env python3
"""Generates Public/openapi.json, the OpenAPI 3.1 document of healthd's HTTP API.

This script is the maintained source of the document (schemas are shared, so it stays short);
the generated file is committed so the server can serve it. A Swift test checks that every
registered route is documented and vice versa, and CI checks the committed file is current:
    python3 Tools/openapi.py            # rewrite Public/openapi.json
    python3 Tools/openapi.py --check    # exit 1 if it is stale
"""
import json, os, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Public", "openapi.json")


def ref(name):
    return {"$ref": f"#/components/schemas/{name}"}


def problem(description):
    return {"description": description, "content": {"application/problem+json": {"schema": ref("Problem")}}}


def ok_json(schema, description="OK"):
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def qparam(name, description, schema=None, required=False):
    return {"name": name, "in": "query", "required": required, "description": description,
            "schema": schema or {"type": "string", "minLength": 1}}


def pparam(name, description, schema=None):
    return {"name": name, "in": "path", "required": True, "description": description,
            "schema": schema or {"type": "string", "minLength": 1}}


def quantity_type_ids():
    """The quantity types' ids and HealthKit long forms, read from the catalog's source (a Swift test
    checks the document's list against the catalog itself)."""
    import re
    source = open(os.path.join(ROOT, "Sources", "HealthModel", "HealthTypeCatalog.swift")).read()
    ids = []
    for match in re.finditer(r'\b(?:cumulative|discrete)\(\s*"(\w+)"(?:[^()]|\([^()]*\))*?(?:longIdentifier:\s*"(\w+)")?\s*\)', source):
        short, long_form = match.group(1), match.group(2)
        ids += [short, long_form or "HKQuantityTypeIdentifier" + short[0].upper() + short[1:]]
    if len(ids) < 100:
        sys.exit(f"openapi.py: found only {len(ids) // 2} quantity types in HealthTypeCatalog.swift")
    return ids


uuid_schema = {"type": "string", "format": "uuid"}
session_schema = {"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,128}$"}


ERRORS_APP = {
    "400": problem("Invalid argument (errorInvalidArgument): a malformed parameter, body field or unknown field, named in `detail`/`errors`."),
    "401": problem("Missing, unknown or revoked token (errorAuthenticationRequired)."),
    "403": problem("The token may not do this (errorAuthorizationDenied)."),
    "429": {**problem("Too many requests from this address or with this token (errorRateLimited): token buckets, "
                      "see docs/operations.md, 'Abuse and privacy'. A failed authentication costs the address extra."),
            "headers": {"Retry-After": {"description": "Whole seconds until a request fits the bucket again.",
                                        "schema": {"type": "integer", "minimum": 1}}}},
}
# Open routes count against the per-address bucket too.
ERRORS_OPEN = {"429": ERRORS_APP["429"]}

instant = {"type": "string", "format": "date-time", "description": "RFC 3339 with an offset; responses are UTC with milliseconds."}

SCHEMAS = {
    "Invitation": {
        "type": "object", "required": ["code", "expires"],
        "description": "Shown once; only its SHA-256 is stored. Single use, for 7 days; a newer invitation of the person voids it.",
        "properties": {"code": {"type": "string", "description": "43 characters (32 random bytes, base64url)."},
                       "expires": instant}},
    "Problem": {
        "type": "object", "description": "RFC 9457 problem details with a HealthKit-style code.",
        "required": ["type", "title", "status", "detail", "code"],
        "properties": {
            "type": {"type": "string", "example": "about:blank"},
            "title": {"type": "string"}, "status": {"type": "integer"}, "detail": {"type": "string"},
            "code": {"type": "string", "enum": ["errorInvalidArgument", "errorAuthenticationRequired", "errorAuthorizationDenied",
                                                "errorNotFound", "errorConflict", "errorPayloadTooLarge",
                                                "errorUnsupportedMediaType", "errorRateLimited", "errorMethodNotAllowed",
                                                "errorAnchorExpired", "errorUnavailable", "errorInternal",
                                                "errorInsufficientStorage"]},
            "requestId": {"type": "string", "description": "On 5xx answers: the request's id (as in `X-Request-Id`); the server's "
                          "log line with this id holds what failed. The detail itself never shows internals."},
            "errors": {"type": "array", "items": {"type": "object", "required": ["field", "detail"], "properties": {
                "index": {"type": "integer", "description": "Position in the request's batch."},
                "field": {"type": "string", "description": "Field path within the sample (or body)."},
                "detail": {"type": "string"}}}},
        },
    },
    "Device": {"type": "object", "additionalProperties": False, "description": "HKDevice; every field optional.",
               "properties": {k: {"type": "string"} for k in
                              ["name", "manufacturer", "model", "hardwareVersion", "softwareVersion", "localIdentifier"]}},
    "Metadata": {"type": "object", "maxProperties": 128, "description": "At most 128 keys and 16 KiB serialized.",
                 "additionalProperties": {"type": ["string", "number", "boolean"]}},
    "Quantity": {"type": "object", "required": ["value", "unit"], "additionalProperties": False,
                 "properties": {"value": {"type": "number", "minimum": 0}, "unit": {"type": "string"}}},
    "WorkoutEvent": {"type": "object", "required": ["type", "date"], "additionalProperties": False,
                     "properties": {"type": {"type": "string", "enum": ["pause", "resume", "lap", "marker", "segment"]},
                                    "date": instant}},
    "RouteLocation": {
        "type": "object", "additionalProperties": False, "required": ["date", "latitude", "longitude"],
        "description": "One location of a workout route (CLLocation's fields). Unknown fields are left out.",
        "properties": {"date": instant,
                       "latitude": {"type": "number", "minimum": -90, "maximum": 90, "description": "WGS 84 degrees."},
                       "longitude": {"type": "number", "minimum": -180, "maximum": 180, "description": "WGS 84 degrees."},
                       "altitude": {"type": "number", "minimum": -12000, "maximum": 100000, "description": "Metres above sea level."},
                       "speed": {"type": "number", "minimum": 0, "maximum": 1000, "description": "m/s."},
                       "course": {"type": "number", "minimum": 0, "maximum": 360, "description": "Degrees clockwise from true north."},
                       "horizontalAccuracy": {"type": "number", "minimum": 0, "description": "Metres."},
                       "verticalAccuracy": {"type": "number", "minimum": 0, "description": "Metres."}}},
    "SampleInput": {
        "type": "object", "additionalProperties": False, "required": ["type", "start"],
        "description": "A sample to save. Quantity samples: value and unit, both required (a missing unit is a 400 "
                       "naming it, never the canonical unit). Category samples: "
                       "value as the case name (or raw integer), no unit. Correlations: objects. Workouts: activityType, "
                       "totals, events. Workout routes (workoutRoute, HKSeriesType.workoutRoute): workout (the workout's "
                       "uuid) and locations in time order within [start, end], at most 100,000. `end` defaults to `start`. "
                       "`uuid` is assigned when missing.",
        "properties": {
            "uuid": {"type": "string", "format": "uuid",
                     "description": "Any RFC 4122/9562 uuid, unique per user; a retry with the same uuid and content stores "
                                    "nothing twice. Left out, the server assigns a time-ordered version-7 uuid."},
            "type": {"type": "string", "description": "Type id (stepCount) or HealthKit's long form."},
            "value": {"type": ["number", "string", "integer"]},
            "unit": {"type": "string", "description": "HKUnit syntax; must fit the type. Required for a quantity "
                                                        "sample (GET /v1/types lists each type's units)."},
            "start": instant, "end": instant,
            "metadata": ref("Metadata"), "device": ref("Device"),
            "objects": {"type": "array", "items": {"$ref": "#/components/schemas/SampleInput"}, "minItems": 1},
            "activityType": {"type": "string", "description": "HKWorkoutActivityType case name."},
            "totalEnergyBurned": ref("Quantity"), "totalDistance": ref("Quantity"),
            "events": {"type": "array", "items": ref("WorkoutEvent")},
            "workout": {"type": "string", "format": "uuid", "description": "workoutRoute: the workout the route belongs to."},
            "locations": {"type": "array", "items": ref("RouteLocation"), "minItems": 1, "maxItems": 100000},
        },
        # A quantity type (short id or long form) needs value and unit.
        "if": {"required": ["type"], "properties": {"type": {"enum": quantity_type_ids()}}},
        "then": {"required": ["value", "unit"]},
    },
    "Sample": {
        "type": "object", "required": ["uuid", "type", "start", "end", "metadata", "device", "source", "created"],
        "properties": {
            "uuid": {"type": "string", "format": "uuid"}, "type": {"type": "string"},
            "value": {"type": ["number", "string"]}, "unit": {"type": "string"},
            "start": instant, "end": instant, "metadata": ref("Metadata"),
            "device": {"oneOf": [ref("Device"), {"type": "null"}]},
            "source": {"type": "object", "required": ["app", "user"],
                       "properties": {"app": {"type": "string"}, "user": {"type": "string"}}},
            "created": instant,
            "objects": {"type": "array", "items": {"$ref": "#/components/schemas/Sample"}},
            "activityType": {"type": "string"}, "totalEnergyBurned": ref("Quantity"), "totalDistance": ref("Quantity"),
            "events": {"type": "array", "items": ref("WorkoutEvent")},
            "workout": {"type": "string", "format": "uuid"}, "locations": {"type": "array", "items": ref("RouteLocation")},
        },
    },
    "HealthType": {
        "type": "object", "required": ["id", "kind", "aggregation", "canonicalUnit", "units", "maximumDuration", "range"],
        "properties": {
            "id": {"type": "string"},
            "kind": {"type": "string", "enum": ["quantity", "category", "correlation", "workout", "series", "characteristic"]},
            "aggregation": {"type": ["string", "null"], "enum": ["cumulative", "discrete", None]},
            "canonicalUnit": {"type": ["string", "null"]},
            "units": {"type": "array", "items": {"type": "string"}},
            "maximumDuration": {"type": ["integer", "null"], "description": "Seconds."},
            "range": {"oneOf": [{"type": "null"}, {"type": "object", "properties": {
                "minimum": {"type": "number"}, "maximum": {"type": "number"}}}]},
            "values": {"type": "array", "items": {"type": "string"}, "description": "Category/characteristic case names."},
            "objectTypes": {"type": "array", "items": {"type": "string"}, "description": "Types a correlation may hold."},
        },
    },
    "Authorization": {
        "type": "object", "required": ["id", "token", "user", "app", "read", "share", "discloseRead"],
        "properties": {"id": {"type": "string"}, "token": {"type": "string", "description": "Shown once; only its hash is stored."},
                       "user": {"type": "string"}, "app": {"type": "string"},
                       "read": {"type": "array", "items": {"type": "string"}},
                       "share": {"type": "array", "items": {"type": "string"}},
                       "discloseRead": {"type": "boolean", "description": "Whether the token may learn its own read list "
                                        "(`GET /v1/authorizations/current`); as requested, false by default."}},
    },
    "Characteristics": {
        "type": "object", "additionalProperties": False,
        "properties": {"dateOfBirth": {"type": "string", "format": "date"},
                       "biologicalSex": {"type": "string", "enum": ["notSet", "female", "male", "other"]},
                       "bloodType": {"type": "string"}, "fitzpatrickSkinType": {"type": "string"},
                       "wheelchairUse": {"type": "string"}, "activityMoveMode": {"type": "string"}},
    },
}

sample_predicate = [
    qparam("type", "Sample type id.", required=True),
    qparam("start", "Lower bound (RFC 3339); missing = unbounded.", {"type": "string", "format": "date-time"}),
    qparam("end", "Upper bound, exclusive; missing = unbounded.", {"type": "string", "format": "date-time"}),
]

imu_answer = {"type": "object", "required": ["session", "seq", "steps", "totalSteps", "distance", "cadence", "pace",
                                              "floorsAscended", "floorsDescended", "activity", "repaired", "saved"],
              "properties": {"session": {"type": "string"}, "seq": {"type": "integer", "description": "The batch's seq (for /end: the last batch's)."},
                             "steps": {"type": "integer", "description": "Steps counted by this call."},
                             "totalSteps": {"type": "integer"}, "distance": {"type": "number", "description": "Metres, session total."},
                             "cadence": {"type": ["number", "null"], "description": "Steps per second over the last 8 s; null when not walking."},
                             "pace": {"type": ["number", "null"], "description": "Seconds per metre; null when not walking."},
                             "floorsAscended": {"type": "integer"}, "floorsDescended": {"type": "integer"},
                             "activity": {"type": "string", "enum": ["stationary", "walking", "running", "unknown"]},
                             "repaired": {"type": "object", "required": ["duplicates", "reordered", "late"],
                                          "description": "What this call's input needed (accelerometer and pressure): samples "
                                                         "dropped for repeating an earlier sample's timestamp, samples sorted back "
                                                         "into place (jitter up to 0.1 s), samples dropped for lying at or before "
                                                         "the previous batch's end (by up to 0.1 s).",
                                          "properties": {k: {"type": "integer", "minimum": 0} for k in ["duplicates", "reordered", "late"]}},
                             "saved": {"type": "array", "items": {"type": "string", "format": "uuid"},
                                       "description": "stepCount, distanceWalkingRunning and flightsClimbed samples saved for this call: "
                                                      "only types the token may share."},
                             "refused": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1},
                                         "description": "Present when this call found samples of a type the token may not share "
                                                        "(flightsClimbed from the barometer): how many of each type were left unsaved. "
                                                        "The batch still succeeds; stepCount and distanceWalkingRunning need share "
                                                        "permission for the call to be accepted at all (403 otherwise)."}}}

PATHS = {
    "/healthz": {"get": {"summary": "Liveness", "security": [], "tags": ["operations"],
                         "responses": {"200": ok_json({"type": "object", "properties": {"status": {"const": "ok"}}}), **ERRORS_OPEN}}},
    "/metrics": {"get": {"summary": "Prometheus metrics (text format 0.0.4)", "security": [], "tags": ["operations"],
                         "responses": {"200": {"description": "Requests by route and status, latency histogram, open connections, store size.",
                                               "content": {"text/plain": {"schema": {"type": "string"}}}},
                                       "400": ERRORS_APP["400"], **ERRORS_OPEN}}},
    "/openapi.json": {"get": {"summary": "This document", "security": [], "tags": ["operations"],
                              "responses": {"200": ok_json({"type": "object"}),
                                            "400": problem("A query parameter: the document takes none (errorInvalidArgument)."), **ERRORS_OPEN}}},
    "/v1/users": {"post": {
        "summary": "Create a user (admin)", "tags": ["authorization"],
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "required": ["name"], "additionalProperties": False, "properties": {"name": {
                "type": "string", "minLength": 1, "maxLength": 200,
                "description": "1-200 characters of visible text: no control characters, no invisible formatting ones "
                               "(bidirectional overrides, zero-width spaces), no space at either end."}}}}}},
        "description": "The answer carries the person's invitation: they activate the account with its code and a password "
                       "of their choice (`POST /v1/people/activate`). `healthd invite NAME` does the same on the command line.",
        "responses": {"201": ok_json({"type": "object", "required": ["id", "name", "invitation"], "properties": {
                          "id": {"type": "string"}, "name": {"type": "string"}, "invitation": ref("Invitation")}}, "Created"),
                      "409": problem("A user with that name exists, or with a name that reads like it (another case, full-width "
                                     "letters, a decomposed accent: equal under NFKC and case folding); the detail names it "
                                     "(errorConflict)."),
                      "415": problem("Not application/json."), **ERRORS_APP}}},
    "/v1/authorizations": {"post": {
        "summary": "Authorize an app for a user (admin); returns the token once", "tags": ["authorization"],
        "description": "Permissions belong to the person and the app: the admin acts for the person and turns on the switches it "
                       "names in the person's grant for the app (others stay as the person set them), and the new token, like "
                       "every token of the app, follows those switches. `read` and `share` in the answer are the app's switches "
                       "after this call.",
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "required": ["user", "app"], "additionalProperties": False,
            "properties": {"user": {"type": "string", "description": "User id (or name)."},
                           "app": {"type": "string", "minLength": 1, "maxLength": 200,
                                   "description": "Visible text as a user's name is (the person's apps page shows it)."},
                           "read": {"type": "array", "items": {"type": "string"}, "default": [],
                                    "description": "Types (and characteristics) the app may read. Left out: none (the app "
                                                   "sees only the samples it saved, as when a user denies reading in HealthKit)."},
                           "share": {"type": "array", "items": {"type": "string"}, "default": [],
                                     "description": "Types the app may write and delete. Left out: none (every write is a 403)."},
                           "discloseRead": {"type": "boolean", "default": False,
                                            "description": "Let the token learn its own read list from `GET /v1/authorizations/current`. "
                                                           "Off by default: as in HealthKit, read permission is never disclosed to an app "
                                                           "(a denial could hint at what the user keeps private). Meant for the user's own "
                                                           "viewer, such as a personal dashboard."}}}}}},
        "responses": {"201": ok_json(ref("Authorization"), "Created"), "415": problem("Not application/json."), **ERRORS_APP}}},
    "/v1/authorizations/{id}": {"delete": {
        "summary": "Revoke an authorization at once (admin)", "tags": ["authorization"],
        "parameters": [pparam("id", "Authorization id.")],
        "responses": {"204": {"description": "Revoked."}, "404": problem("No such active authorization."), **ERRORS_APP}}},
    "/v1/authorizations/status": {"get": {
        "summary": "Share (write) status of types for the calling token; read permission is never disclosed",
        "tags": ["authorization"], "parameters": [qparam("types", "Comma list of type ids.", required=True)],
        "responses": {"200": ok_json({"type": "object", "additionalProperties": {
            "type": "string", "enum": ["sharingAuthorized", "sharingDenied"]}}), **ERRORS_APP}}},
    "/v1/authorizations/current": {"get": {
        "summary": "What the calling token was granted: its app, user, share types, and read types if it may learn them",
        "tags": ["authorization"],
        "description": "The token's app's switches (the person's, which every token of the app follows), so a dashboard can say \"not shared with this "
                       "app\" instead of showing an empty figure as zero. `share` always comes back (`/v1/authorizations/status` "
                       "says the same per type). `read` comes back only when the authorization was created with "
                       "`\"discloseRead\": true`; otherwise the member is absent (not null, not empty): as in HealthKit, read "
                       "permission is never disclosed to an app. Read privacy of samples is unchanged.",
        "responses": {"200": ok_json({"type": "object", "required": ["id", "user", "app", "discloseRead", "share"], "properties": {
            "id": {"type": "string"}, "user": {"type": "string"}, "app": {"type": "string"},
            "discloseRead": {"type": "boolean", "description": "Whether this token may learn its read list (set by the admin)."},
            "read": {"type": "array", "items": {"type": "string"},
                     "description": "Types (and characteristics) it may read, sorted; present only when `discloseRead` is true."},
            "share": {"type": "array", "items": {"type": "string"}, "description": "Types it may write and delete, sorted."}}}),
            **ERRORS_APP}}},
    "/v1/samples": {
        "post": {"summary": "Save samples (all or nothing, idempotent by uuid)", "tags": ["samples"],
                 "requestBody": {"required": True, "content": {"application/json": {"schema": {
                     "type": "object", "required": ["samples"], "additionalProperties": False,
                     "properties": {"samples": {"type": "array", "items": ref("SampleInput"), "minItems": 1,
                                                "description": "At most maxBatchSize (configurable, default 10,000; over it: 413)."}}}}}},
                 "responses": {"201": ok_json({"type": "object", "properties": {"saved": {"type": "array", "items": {"type": "string", "format": "uuid"}}}}, "Saved; uuids in request order."),
                               "409": problem("A uuid exists with different content (errorConflict)."),
                               "413": problem("Too many samples in the batch, or body over the limit."),
                               "415": problem("Not application/json."), **ERRORS_APP}},
        "get": {"summary": "Query samples of a type (HKSampleQuery) with cursor paging", "tags": ["samples"],
                "parameters": sample_predicate + [
                    qparam("strictStartDate", "Require sample.start >= start.", {"type": "boolean"}),
                    qparam("strictEndDate", "Require sample.end <= end.", {"type": "boolean"}),
                    qparam("source", "Only this app's samples."),
                    qparam("order", "By start.", {"type": "string", "enum": ["asc", "desc"], "default": "asc"}),
                    qparam("limit", "Page size; workoutRoute pages hold at most 16 (a route can hold 100,000 locations), `next` goes on.", {"type": "integer", "minimum": 1, "maximum": 10000, "default": 100}),
                    qparam("unit", "Unit for values (must fit the type)."),
                    qparam("cursor", "The previous page's `next`.")],
                "responses": {"200": ok_json({"type": "object", "required": ["samples", "next"], "properties": {
                    "samples": {"type": "array", "items": ref("Sample")}, "next": {"type": ["string", "null"]}}}), **ERRORS_APP}},
        "delete": {"summary": "Delete the calling app's samples of a type in a range", "tags": ["samples"],
                   "parameters": [dict(p, required=True) for p in sample_predicate],
                   "responses": {"200": ok_json({"type": "object", "properties": {"deleted": {"type": "integer"}}}), **ERRORS_APP}},
    },
    "/v1/samples/{uuid}": {
        "get": {"summary": "One sample", "tags": ["samples"], "parameters": [pparam("uuid", "Sample uuid.", uuid_schema), qparam("unit", "Unit for the value.")],
                "responses": {"200": ok_json(ref("Sample")), "404": problem("No such sample for this user (or not visible)."), **ERRORS_APP}},
        "delete": {"summary": "Delete one of the calling app's samples (tombstoned for the change feed)", "tags": ["samples"],
                   "parameters": [pparam("uuid", "Sample uuid.", uuid_schema)],
                   "responses": {"204": {"description": "Deleted."}, "404": problem("No such sample for this user."), **ERRORS_APP}},
    },
    "/v1/sources": {"get": {
        "summary": "Apps and devices that saved a type (HKSourceQuery)", "tags": ["samples"],
        "parameters": [qparam("type", "Type id.", required=True)],
        "responses": {"200": ok_json({"type": "object", "properties": {"sources": {"type": "array", "items": {
            "type": "object", "properties": {"app": {"type": "string"}, "devices": {"type": "array", "items": ref("Device")}}}}}}),
            **ERRORS_APP}}},
    "/v1/ingest/imu": {"post": {
        "summary": "Ingest a phone's raw accelerometer batch; the server's pedometer counts steps", "tags": ["motion"],
        "description": "JSON columnar body, or text/csv with a header row t,x,y,z and session, seq, unit, t0, device, heightCm "
                       "as query parameters. seq starts at 0 and rises by one per batch; a repeated seq returns the first "
                       "answer and changes nothing; a gap is a 409 naming the expected seq. Time running backwards by more than "
                       "0.1 s (in a batch, or before the previous batch's end) is a 400 naming the sample's index. The pedometer's state, the saved "
                       "samples and the answer commit together, so a restart mid-session loses nothing acknowledged.",
        "parameters": [qparam("session", "CSV only."), qparam("seq", "CSV only.", {"type": "integer", "minimum": 0}),
                       qparam("unit", "CSV only: g or m/s2."), qparam("t0", "CSV only: RFC 3339 instant."),
                       qparam("device", "CSV only: device name."), qparam("heightCm", "CSV only.", {"type": "number"})],
        "requestBody": {"required": True, "content": {
            "application/json": {"schema": {"type": "object", "additionalProperties": False,
                                            "required": ["session", "seq", "unit", "t0", "samples"], "properties": {
                "device": {"oneOf": [ref("Device"), {"type": "string"}]},
                "session": {"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,128}$"},
                "seq": {"type": "integer", "minimum": 0}, "unit": {"type": "string", "enum": ["g", "m/s2"]},
                "t0": instant,
                "samples": {"type": "object", "required": ["t", "x", "y", "z"], "additionalProperties": False,
                            "description": "t: seconds after t0, increasing; equal times keep the first sample, jitter back by up to 0.1 s "
                                           "is reordered, gaps restart the detector; x, y, z including gravity. At most 100,000. "
                                           "t0 plus each t lies between 1900 and 2200 (a 400 naming samples.t otherwise).",
                            "properties": {k: {"type": "array", "items": {"type": "number"}} for k in ["t", "x", "y", "z"]}},
                "pressure": {"type": "object", "required": ["t", "hPa"], "additionalProperties": False,
                             "description": "t: seconds after t0; t0 plus each t lies between 1900 and 2200.",
                             "properties": {"t": {"type": "array", "items": {"type": "number"}},
                                            "hPa": {"type": "array", "items": {"type": "number"}}}},
                "heightCm": {"type": "number", "minimum": 40, "maximum": 280}}}},
            "text/csv": {"schema": {"type": "string"}}}},
        "responses": {"200": ok_json(imu_answer), "409": problem("A gap in seq (expected seq named), or the session ended."),
                      "413": problem("More than 100,000 samples."), "415": problem("Neither JSON nor CSV."), **ERRORS_APP}}},
    "/v1/ingest/imu/{session}/end": {"post": {
        "summary": "End an IMU session: flush pending steps; totalSteps is final", "tags": ["motion"],
        "parameters": [pparam("session", "Session name.", session_schema)],
        "requestBody": {"required": False, "content": {"application/json": {"schema": {"type": "object", "additionalProperties": False}}}},
        "responses": {"200": ok_json(imu_answer), "404": problem("No such session for this app."),
                      "409": problem("The session has ended already, or its stored state cannot be read."),
                      "415": problem("A body that is not application/json."), **ERRORS_APP}}},
    "/v1/ingest/health-auto-export": {"post": {
        "summary": "Ingest what the Health Auto Export iOS app's REST API automation posts (JSON, export format v2)", "tags": ["ingest"],
        "description": "The app's payload, unchanged: {\"data\":{\"metrics\":[{\"name\",\"units\",\"data\":[...]}],\"workouts\":[...]}}. "
                       "Each metric with a HealthKit counterpart is saved as that type in its unit (the table in docs/guide.md, 'Health Auto Export'): "
                       "quantity samples, sleep stages as sleepAnalysis category samples, blood_pressure as a bloodPressure "
                       "correlation, workouts with their totals, heart-rate samples and a workoutRoute sample linked to "
                       "the workout; symptoms as symptom category types, heart-rate notifications as high/low heart rate "
                       "and irregular rhythm events, ECGs as electrocardiogram samples, state of mind as stateOfMind samples. "
                       "Dates come as the app writes them: yyyy-MM-dd HH:mm:ss Z, or from a 12-hour phone h:mm:ss am/pm "
                       "(one or two hour digits, am/pm in any case, also a.m./p.m. or p. m., after a space, U+202F or U+00A0), "
                       "the same instant; "
                       "they keep their UTC offset (also stored as HKTimeZone metadata). Metric names of other app versions "
                       "(dietary_cholesterol, caffeine) map to the same type. Sample uuids derive from content (user, the "
                       "saving app, type, start, end, source, value), so overlapping re-sends store nothing twice and each "
                       "app's copy of a point is its own; samples stored before the app was part of the uuid stay duplicates "
                       "of the same app's re-sends. The request is stored whole or not at all (one transaction): a 507 or 503 "
                       "stores nothing of it, and the re-send completes it without duplicates. Unknown metrics and sections (medications), and "
                       "what is not stored (ECG voltages, the readings inside heart-rate notifications), "
                       "are counted in `unmapped`; types the token may not share in `refused`; values HealthKit refuses in "
                       "`invalid` (with the first 20 in `errors`). None of these fails the request; a malformed payload "
                       "(JSON syntax, the format's shape, a date or number that does not parse) is a 400 naming each field "
                       "and saves nothing. The body limit of this route is maxHealthAutoExportBodyBytes (default 128 MiB).",
        "parameters": [qparam("interval", "The app's time grouping: how long one aggregated cumulative point lasts "
                                          "(default minutes, the app's JSON default).",
                              {"type": "string", "enum": ["seconds", "minutes", "hours", "days"]})],
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "required": ["data"], "properties": {"data": {
                "type": "object",
                "properties": {
                    "metrics": {"type": ["array", "null"], "items": {
                        "type": "object", "required": ["name", "data"], "properties": {
                            "name": {"type": "string", "description": "snake_case metric name, e.g. step_count."},
                            "units": {"type": "string", "description": "The app's unit spelling, e.g. count, kcal, km, count/min, %."},
                            "data": {"type": "array", "description": "Points: {date, qty, source}, heart_rate {date, Min, Avg, Max}, "
                                                                     "blood_pressure {date, systolic, diastolic}, sleep_analysis "
                                                                     "aggregated or {startDate, endDate, value}."}}}},
                    "workouts": {"type": ["array", "null"], "items": {"type": "object"}}},
                "additionalProperties": {"type": ["array", "null"]}}}}}}},
        "responses": {"200": ok_json({"type": "object", "properties": {
            "saved": {"type": "integer"}, "duplicates": {"type": "integer"},
            "unmapped": {"type": "object", "additionalProperties": {"type": "integer"}},
            "refused": {"type": "object", "additionalProperties": {"type": "integer"}},
            "invalid": {"type": "object", "additionalProperties": {"type": "integer"}},
            "errors": {"type": "array", "items": {"type": "object", "properties": {
                "field": {"type": "string"}, "detail": {"type": "string"}}}}}}),
            "413": problem("The body is over maxHealthAutoExportBodyBytes; choose a shorter export period."),
            "415": problem("Not application/json."), **ERRORS_APP}}},
    "/v1/pedometer": {"get": {
        "summary": "CMPedometer.queryPedometerData over the calling app's IMU sessions", "tags": ["motion"],
        "parameters": [qparam("start", "RFC 3339.", {"type": "string", "format": "date-time"}, required=True),
                       qparam("end", "RFC 3339, after start.", {"type": "string", "format": "date-time"}, required=True)],
        "responses": {"200": ok_json({"type": "object", "properties": {
            "numberOfSteps": {"type": "integer"}, "distance": {"type": "number", "description": "Metres."},
            "averageActivePace": {"type": ["number", "null"], "description": "Seconds per metre while walking."},
            "currentPace": {"type": ["number", "null"]}, "currentCadence": {"type": ["number", "null"], "description": "Steps per second."},
            "floorsAscended": {"type": "integer"}, "floorsDescended": {"type": "integer"}}}), **ERRORS_APP}}},
    "/v1/types": {"get": {"summary": "The type catalog", "tags": ["types"],
                          "responses": {"200": ok_json({"type": "object", "properties": {"types": {"type": "array", "items": ref("HealthType")}}}), **ERRORS_APP}}},
    "/v1/types/{id}": {"get": {"summary": "One type (short or long identifier)", "tags": ["types"], "parameters": [pparam("id", "Type id.")],
                               "responses": {"200": ok_json(ref("HealthType")), "404": problem("Unknown type."), **ERRORS_APP}}},
    "/v1/characteristics": {
        "get": {"summary": "Characteristics the token may read", "tags": ["types"],
                "responses": {"200": ok_json(ref("Characteristics")), **ERRORS_APP}},
        "put": {"summary": "Replace a user's characteristics (admin only; apps get 403)", "tags": ["types"],
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    **SCHEMAS["Characteristics"], "required": ["user"],
                    "properties": {**SCHEMAS["Characteristics"]["properties"], "user": {"type": "string", "minLength": 1}}}}}},
                "responses": {"200": ok_json({**SCHEMAS["Characteristics"], "required": ["user"],
                                              "properties": {**SCHEMAS["Characteristics"]["properties"],
                                                             "user": {"type": "string", "description": "The user's id."}}},
                                             "The user's characteristics as stored now."),
                              "415": problem("Not application/json."), **ERRORS_APP}},
    },
    "/v1/heart-rate/zones": {"get": {
        "summary": "Training heart-rate zone for a goal (Tanaka maximum; Karvonen with a resting rate)", "tags": ["heart-rate"],
        "description": "maxHeartRate = 208 - 0.7 x age (Tanaka, Monahan & Seals 2001). Bands: fatBurn 50-70 %, cardio 70-85 %, "
                       "peak 85-100 %, of the maximum (`percentOfMaximum`) or, when a resting rate is given or stored, of the "
                       "heart-rate reserve: rest + share x (max - rest) (`karvonen`, Karvonen 1957). The stored resting rate is "
                       "the latest `restingHeartRate` sample the token can see (read privacy: without read permission only the "
                       "app's own). All three figures are whole beats per minute, rounded half up from the unrounded maximum.",
        "parameters": [
            qparam("goal", "Training goal.", {"type": "string", "enum": ["fatBurn", "cardio", "peak"]}, required=True),
            qparam("age", "Years, 1-120. Missing: from the user's dateOfBirth when the token may read it, else 400.",
                   {"type": "integer", "minimum": 1, "maximum": 120}),
            qparam("restingHeartRate", "Beats per minute, 20-250, below the maximum. Missing: the latest stored sample, if any.",
                   {"type": "number", "minimum": 20, "maximum": 250}),
        ],
        "responses": {"200": ok_json({"type": "object", "required": ["maxHeartRate", "low", "high", "method", "goal", "age", "restingHeartRate"],
                                      "properties": {
                                          "maxHeartRate": {"type": "integer", "description": "count/min"},
                                          "low": {"type": "integer", "description": "count/min"},
                                          "high": {"type": "integer", "description": "count/min"},
                                          "method": {"type": "string", "enum": ["karvonen", "percentOfMaximum"]},
                                          "goal": {"type": "string", "enum": ["fatBurn", "cardio", "peak"]},
                                          "age": {"type": "integer", "description": "The age used (given or from dateOfBirth)."},
                                          "restingHeartRate": {"type": ["number", "null"], "description": "The resting rate used; null for percentOfMaximum."}}}),
                      **ERRORS_APP}}},
    "/v1/workouts": {"get": {
        "summary": "Workouts in a range, newest first, with active duration, heart rate and time in zone", "tags": ["heart-rate"],
        "description": "Workouts (read privacy as for queries) overlapping [start, end). `duration` is seconds from start to end "
                       "without paused spells (pause to the next resume). `heartRate` is the average, minimum and maximum of the "
                       "heartRate readings the token can see from the workout's start to its end (HealthKit's discrete statistics "
                       "over the workout); null without readings. `timeInZone` is seconds of the active time during which the "
                       "heart rate lay in the goal's zone (as `GET /v1/heart-rate/zones` gives it, from `age` or the stored "
                       "dateOfBirth, and the stored resting rate); each reading holds until the next one, for at most 5 minutes, "
                       "so a gap in readings counts in no zone. Without a known age, `zone` and every `timeInZone` are null.",
        "parameters": [
            qparam("start", "RFC 3339 instant.", {"type": "string", "format": "date-time"}, required=True),
            qparam("end", "RFC 3339 instant, after start.", {"type": "string", "format": "date-time"}, required=True),
            qparam("goal", "Zone for timeInZone; default fatBurn.", {"type": "string", "enum": ["fatBurn", "cardio", "peak"]}),
            qparam("age", "Years, 1-120; default from dateOfBirth when the token may read it.", {"type": "integer", "minimum": 1, "maximum": 120}),
            qparam("limit", "At most this many workouts, 1-500; default 50.", {"type": "integer", "minimum": 1, "maximum": 500}),
        ],
        "responses": {"200": ok_json({"type": "object", "required": ["zone", "workouts"], "properties": {
            "zone": {"type": ["object", "null"], "properties": {
                "goal": {"type": "string"}, "low": {"type": "integer"}, "high": {"type": "integer"},
                "method": {"type": "string", "enum": ["karvonen", "percentOfMaximum"]}}},
            "workouts": {"type": "array", "items": {"type": "object", "required": [
                "uuid", "activityType", "start", "end", "duration", "totalDistance", "totalEnergyBurned", "heartRate", "timeInZone", "source"],
                "properties": {
                    "uuid": {"type": "string", "format": "uuid"},
                    "activityType": {"type": "string", "description": "HKWorkoutActivityType case name."},
                    "start": {"type": "string", "format": "date-time"}, "end": {"type": "string", "format": "date-time"},
                    "duration": {"type": "number", "description": "Active seconds (pauses excluded)."},
                    "totalDistance": {"type": ["number", "null"], "description": "Metres."},
                    "totalEnergyBurned": {"type": ["number", "null"], "description": "kcal."},
                    "heartRate": {"type": ["object", "null"], "properties": {
                        "average": {"type": "number"}, "minimum": {"type": "number"}, "maximum": {"type": "number"},
                        "readings": {"type": "integer"}}},
                    "timeInZone": {"type": ["number", "null"], "description": "Seconds."},
                    "source": {"type": "string", "description": "The app that saved the workout."}}}}}}),
            **ERRORS_APP}}},
    "/v1/workouts/{uuid}/route": {"get": {
        "summary": "A workout's routes with their locations (HKWorkoutRouteQuery)", "tags": ["heart-rate"],
        "description": "The workoutRoute samples linked to the workout (read privacy as for queries), oldest first, each with "
                       "its locations in time order. A workout without a route answers an empty list. A page holds at most "
                       "100,000 locations (whole routes, one route at least); `next` is the cursor for the rest.",
        "parameters": [{"name": "uuid", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"},
                        "description": "The workout's uuid."},
                       qparam("cursor", "The previous page's `next`.")],
        "responses": {"200": ok_json({"type": "object", "required": ["workout", "routes", "next"], "properties": {
            "workout": {"type": "string", "format": "uuid"},
            "next": {"type": ["string", "null"], "description": "Opaque, HMAC-signed cursor of the next page; null on the last."},
            "routes": {"type": "array", "items": {"type": "object", "required": ["uuid", "start", "end", "source", "locations"],
                "properties": {"uuid": {"type": "string", "format": "uuid"}, "start": instant, "end": instant,
                               "source": {"type": "string", "description": "The app that saved the route."},
                               "locations": {"type": "array", "items": ref("RouteLocation")}}}}}}),
                      "404": problem("No such workout for this user (or not visible)."), **ERRORS_APP}}},
    "/v1/export": {"get": {
        "summary": "Every sample the token may read, as NDJSON (one Sample per line), streamed", "tags": ["export"],
        "description": ("Read privacy as for queries: types the token may not read appear only with the calling app's own samples. "
                        "Lines are top-level samples oldest first (by start, ties in commit order); a correlation carries its "
                        "objects inside it, so its objects are not repeated as lines. The body is chunked and produced page by page "
                        "(constant server memory). A revocation or a narrowing of the token holds for an export under way: no page "
                        "read under the access that ended is sent. Should the export stop early that way, or the store fail "
                        "mid-stream, a last line {\"error\", \"code\"} (and \"requestId\" for a server-side failure) says the "
                        "export is incomplete."),
        "parameters": [qparam("types", "Comma list of type ids (short or HealthKit identifiers); default every type.")],
        "responses": {"200": {"description": "NDJSON, one sample per line.",
                              "content": {"application/x-ndjson": {"schema": ref("Sample")}}}, **ERRORS_APP}}},
}


# Change feed (HKAnchoredObjectQuery, HKObserverQuery).
SCHEMAS["ChangePage"] = {
    "type": "object", "required": ["added", "deleted", "anchor", "more"],
    "description": "Changes after the anchor in commit order. A uuid in both lists was deleted and saved again: apply `deleted` first.",
    "properties": {
        "added": {"type": "array", "items": ref("Sample"),
                  "description": "Samples saved after the anchor and still present (without an anchor: every matching sample now present)."},
        "deleted": {"type": "array", "description": "Samples deleted after the anchor (a sample added and deleted after it appears only here).",
                    "items": {"type": "object", "required": ["uuid", "type"],
                              "properties": {"uuid": {"type": "string", "format": "uuid"}, "type": {"type": "string"}}}},
        "anchor": {"type": "string", "description": "Opaque, HMAC-signed; bound to the user and the types list. Pass it as `anchor` for the next page."},
        "more": {"type": "boolean", "description": "True when more changes follow right now: call again with `anchor` at once."},
    },
}
CHANGE_TYPES = qparam("types", "Comma-separated sample types; absent means every type. For types the token cannot read, only the app's own samples and deletions appear.")
CHANGE_ERRORS = {
    **ERRORS_APP,
    "400": problem("Invalid argument (errorInvalidArgument): unknown or characteristic type, bad limit/wait, or an anchor that is forged, altered, another user's or another types list's."),
    "410": problem("errorAnchorExpired: deletions after this anchor were purged (tombstone retention, `tombstoneRetentionDays`); start over without an anchor."),
}
PATHS["/v1/changes"] = {
    "get": {"summary": "Anchored object query: changes after an anchor, with optional long-poll", "tags": ["changes"],
            "parameters": [
                CHANGE_TYPES,
                qparam("anchor", "From a previous response; absent = every matching sample now present (paged: follow `anchor` while `more`)."),
                qparam("limit", "Changes per page, 1 to 10,000. A page holds at most 16 workoutRoute samples (a route can hold 100,000 locations), as `GET /v1/samples` pages do: it ends before the 17th with `more: true`, and its `anchor` resumes at that route, so following it skips nothing.", {"type": "integer", "minimum": 1, "maximum": 10000, "default": 1000}),
                qparam("wait", "Long-poll: seconds (0 to 60) to hold the request when there is nothing new; it answers within milliseconds of a relevant commit, or with an empty page (and a current anchor) when the time is up. A revocation of the token, or a change of its permissions, answers a parked poll 401 within 1 s, on every node, with nothing saved after it.",
                       {"type": "integer", "minimum": 0, "maximum": 60, "default": 0}),
            ],
            "responses": {"200": ok_json(ref("ChangePage")), **CHANGE_ERRORS}},
}
PATHS["/v1/changes/stream"] = {
    "get": {"summary": "Observer query as Server-Sent Events", "tags": ["changes"],
            "description": "`text/event-stream`, chunked. Each event: `id: <anchor>`, `event: change`, `data: <ChangePage JSON>` (at most 500 changes per event, of them at most 16 workoutRoute samples). "
                           "Without an anchor or Last-Event-ID the stream starts at the present with one empty event carrying the current anchor. "
                           "A `: keep-alive` comment at least every 15 s (every 10 s). A client that cannot keep up (unsent backlog over half of "
                           "`maxStreamBacklogBytes`) gets `event: error` with `{\"code\":\"errorSlowConsumer\"}` and the stream ends: reconnect with Last-Event-ID. "
                           "The stream ends cleanly on server shutdown. A revocation of the token, or a change of its permissions, ends the stream "
                           "within 1 s on every node with `event: error` and `{\"code\":\"errorAuthenticationRequired\"}`; nothing saved after it is sent. While a workout session with a zone runs, streams of apps that may read "
                           "`heartRate` also carry `event: zone` without an `id` (see `POST /v1/workout-sessions`).",
            "parameters": [
                CHANGE_TYPES,
                qparam("anchor", "Start after this anchor (from /v1/changes or an event id)."),
                {"name": "Last-Event-ID", "in": "header", "required": False, "schema": {"type": "string"},
                 "description": "Resume after this event id (wins over `anchor`)."},
            ],
            "responses": {"200": {"description": "The event stream.", "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                          **CHANGE_ERRORS}},
}

# Webhooks: HKObserverQuery for servers (Standard Webhooks).
SCHEMAS.update({
    "Webhook": {
        "type": "object", "required": ["id", "url", "types", "created", "disabled"],
        "properties": {
            "id": {"type": "string"},
            "url": {"type": "string", "description": "The receiver, as normalized (`http://host[:port]/path`)."},
            "types": {"type": "array", "items": {"type": "string"}, "description": "The subscribed sample types (canonical ids)."},
            "created": {"type": "string", "format": "date-time"},
            "disabled": {"type": ["string", "null"],
                         "description": "Null while delivering; otherwise why deliveries stopped (no 2xx answer for 24 hours, "
                                        "or the change feed no longer holds its position). A disabled webhook stays listed until deleted."},
        }},
    "WebhookCreated": {
        "type": "object", "required": ["id", "url", "types", "secret", "created"],
        "properties": {
            "id": {"type": "string"}, "url": {"type": "string"},
            "types": {"type": "array", "items": {"type": "string"}},
            "secret": {"type": "string", "pattern": "^whsec_",
                       "description": "Shown once: `whsec_` + base64 of 32 random bytes; those bytes are the HMAC-SHA256 key "
                                      "of every delivery's `webhook-signature` (Standard Webhooks)."},
            "created": {"type": "string", "format": "date-time"},
        }},
    "WebhookDelivery": {
        "type": "object", "required": ["webhookId", "time", "status", "durationMs", "error"],
        "properties": {
            "webhookId": {"type": "string", "description": "The attempt's `webhook-id` header: the same for every attempt at one page."},
            "time": {"type": "string", "format": "date-time"},
            "status": {"type": ["integer", "null"], "description": "The receiver's HTTP status; null when no answer came "
                                                                    "(refused, unreachable, timed out after 10 s)."},
            "durationMs": {"type": "integer", "minimum": 0},
            "error": {"type": ["string", "null"], "description": "Why the attempt failed; null for a delivery (a 2xx)."},
        }},
})
WEBHOOK_ID = pparam("id", "Webhook id (from `POST /v1/webhooks`).")
PATHS["/v1/webhooks"] = {
    "post": {"summary": "Subscribe a receiver to the token's change feed (HKObserverQuery for servers)", "tags": ["webhooks"],
             "description": "Each commit of the subscribed types that the token may read is delivered as `POST url` with the change "
                            "feed's page as body (`ChangePage`: read privacy exactly as `GET /v1/changes`, at most 500 changes a page) "
                            "and the Standard Webhooks headers `webhook-id`, `webhook-timestamp` and `webhook-signature` (`v1,` + base64 "
                            "HMAC-SHA256 of `id.timestamp.body` keyed with the secret's bytes). Pages go in commit order, one at a time; "
                            "a 2xx within 10 s is a delivery; anything else (a 3xx included: redirects are never followed) is retried "
                            "after 5 s, doubling to 1 h, for 24 hours, then the webhook is disabled and says why. A page sent again "
                            "(a retry, a restart) carries the same `webhook-id` and body. Only changes committed after the webhook "
                            "is made are delivered. The URL is http (https needs a forward proxy this server does not have); a host "
                            "that is, or resolves to, a loopback, private, link-local, carrier-grade NAT or metadata address is "
                            "refused unless listed in `webhookAllowedHosts`; the name is resolved again at every connection and "
                            "the checked address is the one connected to. At most 20 webhooks per token. Revoking the token "
                            "deletes its webhooks.",
             "requestBody": {"required": True, "content": {"application/json": {"schema": {
                 "type": "object", "additionalProperties": False, "required": ["url", "types"],
                 "properties": {"url": {"type": "string", "maxLength": 2048, "description": "http://host[:port]/path"},
                                "types": {"type": "array", "minItems": 1, "items": {"type": "string"},
                                          "description": "Sample types (short or HealthKit long form)."}}}}}},
             "responses": {**ERRORS_APP, "201": ok_json(ref("WebhookCreated"), "Created; the secret is shown only here."),
                           "400": problem("errorInvalidArgument: a URL that is not http://host[:port]/path, a refused address "
                                          "(the detail names its class), a name that does not resolve, or unknown types."),
                           "409": problem("errorConflict: the token has 20 webhooks."),
                           "415": problem("Not application/json.")}},
    "get": {"summary": "The token's webhooks (never their secrets)", "tags": ["webhooks"],
            "responses": {"200": ok_json({"type": "object", "required": ["webhooks"],
                                          "properties": {"webhooks": {"type": "array", "items": ref("Webhook")}}}), **ERRORS_APP}},
}
PATHS["/v1/webhooks/{id}"] = {
    "delete": {"summary": "Delete a webhook: its deliveries stop within 1 s, pending retries included", "tags": ["webhooks"],
               "parameters": [WEBHOOK_ID],
               "responses": {"204": {"description": "Deleted."}, "404": problem("No webhook of this token by that id."), **ERRORS_APP}},
}
PATHS["/v1/webhooks/{id}/deliveries"] = {
    "get": {"summary": "The webhook's last 50 delivery attempts, newest first", "tags": ["webhooks"],
            "parameters": [WEBHOOK_ID],
            "responses": {"200": ok_json({"type": "object", "required": ["deliveries"],
                                          "properties": {"deliveries": {"type": "array", "items": ref("WebhookDelivery")}}}),
                          "404": problem("No webhook of this token by that id."), **ERRORS_APP}},
}

# Statistics (HKStatisticsQuery, HKStatisticsCollectionQuery), source priority, summaries.
figure = {"type": "number", "description": "In `unit`; absent when no sample lies in the interval (never 0 for no data)."}
SCHEMAS.update({
    "StatisticsFigures": {
        "type": "object", "description": "Only the figures asked for in `options`; a figure with no data behind it is absent. "
                                         "Written with 12 significant digits.",
        "properties": {
            "sum": dict(figure, description="cumulativeSum: pro-rated by time overlap, sources merged by priority."),
            "average": dict(figure, description="discreteAverage: mean of the samples starting in the interval."),
            "minimum": dict(figure, description="discreteMin."), "maximum": dict(figure, description="discreteMax."),
            "mostRecent": {"type": "object", "required": ["value", "start", "end"], "description": "mostRecent: the sample with the latest start (then end).",
                           "properties": {"value": {"type": "number"}, "start": instant, "end": instant}},
        },
    },
    "SourceFigures": {"allOf": [{"type": "object", "required": ["app"], "properties": {"app": {"type": "string"}}},
                                ref("StatisticsFigures")],
                      "description": "One app's own figures, unmerged (separateBySource); in priority order, apps with data only."},
    "SummaryFigures": {
        "type": "object", "required": ["steps", "distance", "exerciseTime", "activeEnergy", "averagePace"],
        "properties": {"steps": {"type": "number", "description": "stepCount sum (count); 0 without data."},
                       "distance": {"type": "number", "description": "distanceWalkingRunning sum (m)."},
                       "exerciseTime": {"type": "number", "description": "appleExerciseTime sum (min)."},
                       "activeEnergy": {"type": "number", "description": "activeEnergyBurned sum (kcal)."},
                       "averagePace": {"type": ["number", "null"], "description": "Seconds per metre: time covered by walking/running "
                                       "distance samples (their union, so overlapping sources count once) / distance; null without distance."}},
    },
})

statistics_options = qparam("options", "Comma list: cumulativeSum (cumulative types); discreteAverage, discreteMin, discreteMax, "
                            "mostRecent (discrete types); separateBySource with either. A mismatch with the type's aggregation is a 400.",
                            required=True)
statistics_range = [
    qparam("type", "A quantity type id (category, correlation and workout types are a 400).", required=True),
    qparam("start", "Interval start (RFC 3339), required.", {"type": "string", "format": "date-time"}, required=True),
    qparam("end", "Interval end, exclusive, required; must be after start.", {"type": "string", "format": "date-time"}, required=True),
]
statistics_unit = qparam("unit", "Unit of the figures (must fit the type); default the canonical unit.")

PATHS.update({
    "/v1/statistics": {"get": {
        "summary": "Statistics over one interval (HKStatisticsQuery)", "tags": ["statistics"],
        "description": "Without read permission for the type, the figures cover the calling app's own samples only.",
        "parameters": statistics_range + [statistics_options, statistics_unit],
        "responses": {"200": ok_json({"allOf": [{"type": "object", "required": ["type", "start", "end", "unit"], "properties": {
            "type": {"type": "string"}, "start": instant, "end": instant, "unit": {"type": "string"},
            "sources": {"type": "array", "items": ref("SourceFigures"), "description": "Only with separateBySource."}}},
            ref("StatisticsFigures")]}), **ERRORS_APP}}},
    "/v1/statistics/collection": {"get": {
        "summary": "Statistics per calendar bucket (HKStatisticsCollectionQuery)", "tags": ["statistics"],
        "description": "Every bucket intersecting [start, end), in order, aligned to `anchor` in `timeZone`; a day bucket spans 23 or 25 "
                       "hours across a DST change. Bucket instants carry the zone's offset. At most 50,000 buckets (400 beyond).",
        "parameters": statistics_range + [
            qparam("interval", "ISO 8601 duration of one calendar component: PT1M, PT15M, PT1H, P1D, P1W, P1M, P1Y.", required=True),
            qparam("anchor", "Bucket alignment (RFC 3339); default the start of start's day in timeZone.", {"type": "string", "format": "date-time"}),
            qparam("timeZone", "IANA zone name; default UTC; unknown is a 400."),
            statistics_options, statistics_unit],
        "responses": {"200": ok_json({"type": "object", "required": ["type", "unit", "buckets"], "properties": {
            "type": {"type": "string"}, "unit": {"type": "string"},
            "buckets": {"type": "array", "items": {"allOf": [
                {"type": "object", "required": ["start", "end"], "properties": {
                    "start": {"type": "string", "format": "date-time", "description": "With the zone's offset at that instant."},
                    "end": {"type": "string", "format": "date-time"},
                    "sources": {"type": "array", "items": ref("SourceFigures"), "description": "Only with separateBySource."}}},
                ref("StatisticsFigures")]}}}}), **ERRORS_APP}}},
    "/v1/sources/priority": {
        "get": {"summary": "The user's effective source order for a type", "tags": ["statistics"],
                "description": "The user's chosen order, then every other app that saved the type, first saver first. Without read "
                               "permission only the calling app itself can appear.",
                "parameters": [qparam("type", "A quantity type id.", required=True)],
                "responses": {"200": ok_json({"type": "object", "required": ["type", "order"], "properties": {
                    "type": {"type": "string"}, "order": {"type": "array", "items": {"type": "string"}}}}), **ERRORS_APP}},
        "put": {"summary": "Set a user's source order for a type (admin)", "tags": ["statistics"],
                "description": "Apps not listed rank after the listed ones, first saver first. Takes effect on the next query.",
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["user", "type", "order"], "additionalProperties": False,
                    "properties": {"user": {"type": "string", "description": "User id (or name)."},
                                   "type": {"type": "string", "description": "A quantity type id."},
                                   "order": {"type": "array", "items": {"type": "string"},
                                             "description": "App names, highest priority first; an app the user never authorized, "
                                                            "or one listed twice, is a 400 naming it."}}}}}},
                "responses": {"200": ok_json({"type": "object", "properties": {
                    "user": {"type": "string"}, "type": {"type": "string"},
                    "order": {"type": "array", "items": {"type": "string"}, "description": "The effective order now."}}}),
                    "415": problem("Not application/json."), **ERRORS_APP}},
    },
    "/v1/summary": {"get": {
        "summary": "Dashboard totals for the day, week (Monday first), month or year containing a date", "tags": ["statistics"],
        "description": "Merged across sources exactly as /v1/statistics merges them (read privacy per type).",
        "parameters": [qparam("date", "YYYY-MM-DD.", {"type": "string", "format": "date"}, required=True),
                       qparam("timeZone", "IANA zone name; default UTC."),
                       qparam("period", "Default day.", {"type": "string", "enum": ["day", "week", "month", "year"], "default": "day"})],
        "responses": {"200": ok_json({"allOf": [{"type": "object", "required": ["date", "period", "timeZone", "start", "end", "days", "dailyAverage"],
            "properties": {"date": {"type": "string", "format": "date"}, "period": {"type": "string"}, "timeZone": {"type": "string"},
                           "start": {"type": "string", "format": "date-time"}, "end": {"type": "string", "format": "date-time"},
                           "days": {"type": "integer", "description": "Days of the period begun by now (today included, at least 1): the divisor of dailyAverage."},
                           "dailyAverage": dict(ref("SummaryFigures"), description="Totals / days; averagePace as in the totals.")}},
            ref("SummaryFigures")]}), **ERRORS_APP}}},
    "/v1/activity-summaries": {"get": {
        "summary": "Move, Exercise and Stand per day (HKActivitySummary)", "tags": ["statistics"],
        "parameters": [qparam("start", "First day, YYYY-MM-DD.", {"type": "string", "format": "date"}, required=True),
                       qparam("end", "Last day, inclusive; at most 1,000 days.", {"type": "string", "format": "date"}, required=True),
                       qparam("timeZone", "IANA zone name; default UTC.")],
        "responses": {"200": ok_json({"type": "object", "required": ["summaries"], "properties": {"summaries": {"type": "array", "items": {
            "type": "object", "properties": {
                "date": {"type": "string", "format": "date"},
                "activeEnergyBurned": {"type": "number", "description": "kcal, merged across sources."},
                "activeEnergyBurnedGoal": {"type": "number", "description": "kcal: the day's goal if imported from Apple Health, else the user's (default 500)."},
                "appleExerciseTime": {"type": "number", "description": "Minutes."},
                "appleExerciseTimeGoal": {"type": "number", "description": "Minutes: imported day's goal, else the user's (default 30)."},
                "appleStandHours": {"type": "integer", "description": "Local hours in which an appleStandHour sample marked stood starts."},
                "appleStandHoursGoal": {"type": "number", "description": "Hours: imported day's goal, else the user's (default 12)."}}}}}}), **ERRORS_APP}}},
    "/v1/activity-goals": {"put": {
        "summary": "Set a user's activity goals (admin)", "tags": ["statistics"],
        "description": "Goals not given keep their value (defaults 500 kcal, 30 min, 12 h).",
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "required": ["user"], "additionalProperties": False, "minProperties": 2,
            "properties": {"user": {"type": "string"},
                           "activeEnergyBurnedGoal": {"type": "number", "minimum": 1, "maximum": 100000},
                           "appleExerciseTimeGoal": {"type": "number", "minimum": 1, "maximum": 1440},
                           "appleStandHoursGoal": {"type": "number", "minimum": 1, "maximum": 24}}}}}},
        "responses": {"200": ok_json({"type": "object", "properties": {
            "user": {"type": "string"}, "activeEnergyBurnedGoal": {"type": "number"},
            "appleExerciseTimeGoal": {"type": "number"}, "appleStandHoursGoal": {"type": "number"}}}),
            "415": problem("Not application/json."), **ERRORS_APP}}},
})
# Workout sessions (HKWorkoutSession) and their zone events.
SCHEMAS["WorkoutSession"] = {
    "type": "object", "required": ["id", "state", "activityType", "start", "end", "zone", "events", "workout"],
    "description": "A live workout of one app for one user. Only that app (any of its tokens for that user) sees it: "
                   "another app's or user's session is a 404.",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "state": {"type": "string", "enum": ["running", "paused", "ended"]},
        "activityType": {"type": "string", "description": "HKWorkoutActivityType case name (the long form is accepted on input)."},
        "start": instant,
        "end": {**instant, "type": ["string", "null"], "description": "Set by `end`."},
        "zone": {"type": ["object", "null"], "required": ["low", "high"], "description": "The target zone in count/min; null for a session without one.",
                 "properties": {"low": {"type": "number"}, "high": {"type": "number"}}},
        "events": {"type": "array", "description": "Pause and resume events in order; event dates never go backwards (the server clock, kept monotonic per session).",
                   "items": {"type": "object", "required": ["type", "date"],
                             "properties": {"type": {"type": "string", "enum": ["pause", "resume"]}, "date": instant}}},
        "workout": {"type": ["string", "null"], "format": "uuid", "description": "The uuid of the `workout` sample saved by `end`."},
    },
}
SESSION_ID = pparam("id", "The session id (a uuid).")
SESSION_ERRORS = {
    **ERRORS_APP,
    "403": problem("The token may not share `workout` (errorAuthorizationDenied): starting and ending save a workout as this app."),
    "404": problem("No such session of this app and user (errorNotFound): another app's or user's session is indistinguishable from none."),
    "409": problem("errorConflict: the session's state does not allow this (`errors[0].field` is `state`, `detail` the current state: "
                   "`running` cannot resume, `paused` cannot pause, `ended` cannot do anything), or, on start, this app already has a running or paused session."),
}
EMPTY_BODY = {"required": False, "content": {"application/json": {"schema": {"type": "object", "additionalProperties": False,
                                                                                 "description": "No fields: send no body or `{}`."}}}}
ZONE_EVENT_TEXT = (
    "While a session with a zone runs, every change stream (`GET /v1/changes/stream`) of the user's apps with read permission for "
    "`heartRate` (whatever `types` it follows) carries `event: zone` with `data: {\"session\",\"heartRate\",\"state\":\"below\"|\"in\"|\"above\",\"date\",\"zone\":{\"low\",\"high\"}}` "
    "(`heartRate` in count/min; `date` the reading's start; `zone` the session's target zone). Zone events have no `id` (they are not feed positions, so Last-Event-ID stays the last "
    "change's anchor) and follow the change event that carried their reading. Judged: every source's `heartRate` samples committed after the "
    "session started, in time order within a commit, whose start lies in a running stretch (not before the start, not while paused). "
    "The first such reading reports its state, later ones only a change; a reading older than the latest judged is stale and ignored. "
    "`in` is low <= bpm <= high. A resume forgets the state, so the first reading after it reports again. Judgement is persisted with the "
    "session, so a restart neither repeats nor loses state."
)
PATHS["/v1/workout-sessions"] = {
    "post": {"summary": "Start a workout session (HKWorkoutSession)", "tags": ["heart-rate"],
             "description": "Needs share permission for `workout`. One running or paused session per app and user. " + ZONE_EVENT_TEXT,
             "requestBody": {"required": True, "content": {"application/json": {"schema": {
                 "type": "object", "required": ["activityType"], "additionalProperties": False,
                 "properties": {
                     "activityType": {"type": "string", "example": "running"},
                     "zone": {"type": ["object", "null"], "required": ["low", "high"], "additionalProperties": False,
                              "description": "Target zone in count/min, 30 <= low < high <= 250. Omit it (or null) for a session without zone events.",
                              "properties": {"low": {"type": "number", "minimum": 30, "maximum": 250},
                                             "high": {"type": "number", "minimum": 30, "maximum": 250}}}}}}}},
             "responses": {"201": ok_json(ref("WorkoutSession"), "Started: `state` is `running`, `start` the server's time."),
                           "415": problem("Not application/json."), **SESSION_ERRORS}},
}
PATHS["/v1/workout-sessions/{id}"] = {
    "get": {"summary": "A workout session of this app (to recover after a lost answer or an app restart)", "tags": ["heart-rate"],
            "parameters": [SESSION_ID],
            "responses": {"200": ok_json(ref("WorkoutSession")), **SESSION_ERRORS}},
}
for action, summary in [("pause", "Pause a running session (adds a pause event)"),
                        ("resume", "Resume a paused session (adds a resume event; the zone state starts over)")]:
    PATHS[f"/v1/workout-sessions/{{id}}/{action}"] = {
        "post": {"summary": summary, "tags": ["heart-rate"], "parameters": [SESSION_ID], "requestBody": EMPTY_BODY,
                 "responses": {"200": ok_json(ref("WorkoutSession")), **SESSION_ERRORS}},
    }
PATHS["/v1/workout-sessions/{id}/end"] = {
    "post": {"summary": "End a running or paused session and save its workout", "tags": ["heart-rate"],
             "description": "Saves, atomically with the state change, a `workout` sample of the calling app: the session's activityType, start and end, "
                            "its pause/resume events, and `totalEnergyBurned` (kcal) / `totalDistance` (m): the sums of `activeEnergyBurned` / "
                            "`distanceWalkingRunning` over the session's running stretches (paused time excluded), pro-rated by time overlap "
                            "(a sample straddling the start, a pause or the end counts for its share inside), merged across sources exactly as "
                            "the statistics endpoints merge them. Read privacy applies: without read permission for a type only the app's own "
                            "samples count. A type with no sample there gives no total (absent, not 0). Needs share permission for `workout`.",
             "parameters": [SESSION_ID], "requestBody": EMPTY_BODY,
             "responses": {"200": ok_json(ref("WorkoutSession"), "Ended: `end` and `workout` (the saved sample's uuid) are set."), **SESSION_ERRORS}},
}


# People: the admin's lists and erasure (docs/api.md, "People: recent access, own data, erasure").
ERASURE_REPORT = {"type": "object", "required": ["user", "erased"], "properties": {
    "user": {"type": "string", "description": "The erased user's id."},
    "erased": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0},
               "description": "Rows deleted per kind: `samples`, `tombstones`, `sources`, `devices`, `statisticsRollups`, "
                              "`sampleKeyRuns` (SQLite), `sampleIndexes`, `sourcePriorities`, `characteristics`, `activityGoals`, "
                              "`activitySummaries`, `imuSessions`, `workoutSessions`, `authorizations`, `sessions`, `invitations`, `signInFailures`, `accessLog`, `user`, "
                              "and the kinds of tables added later (grants, device authorizations, webhooks)."}}}
PATHS["/v1/users"]["get"] = {
    "summary": "List users (admin)", "tags": ["authorization"],
    "responses": {"200": ok_json({"type": "object", "required": ["users"], "properties": {"users": {"type": "array", "items": {
        "type": "object", "required": ["id", "name", "created", "activated"],
        "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "created": instant,
                       "activated": {"type": "boolean", "description": "The person has set a password."}}}}}}),
                  **ERRORS_APP}}
PATHS.update({
    "/v1/users/{id}/authorizations": {"get": {
        "summary": "A user's live authorizations (admin): apps, types, created, lastUsed; never a token", "tags": ["authorization"],
        "parameters": [pparam("id", "User id (or name).")],
        "responses": {"200": ok_json({"type": "object", "required": ["authorizations"], "properties": {"authorizations": {
            "type": "array", "items": {"type": "object", "required": ["id", "app", "read", "share", "created", "lastUsed"],
                                       "properties": {"id": {"type": "string"}, "app": {"type": "string"},
                                                      "read": {"type": "array", "items": {"type": "string"}},
                                                      "share": {"type": "array", "items": {"type": "string"}},
                                                      "created": instant,
                                                      "lastUsed": {"oneOf": [instant, {"type": "null"}],
                                                                   "description": "When a token of the app was last used; null if never."}}}}}}),
                      "404": problem("No such user (errorNotFound)."), **ERRORS_APP}}},
    "/v1/users/{id}": {"delete": {
        "summary": "Erase a user (admin): every row that names them, in both stores, in one transaction", "tags": ["authorization"],
        "description": "As `DELETE /v1/me`: samples, tombstones, sources, devices, rollups and caches, key runs, IMU and workout "
                       "sessions, characteristics, goals, summaries, authorizations (their open streams end), sessions, "
                       "invitations, device authorizations, the access log and webhooks. The answer counts what went.",
        "parameters": [pparam("id", "User id (or name).")],
        "responses": {"200": ok_json(ERASURE_REPORT), "404": problem("No such user (errorNotFound)."), **ERRORS_APP}}},
})
ADMIN_ONLY_PEOPLE = {("get", "/v1/users"), ("get", "/v1/users/{id}/authorizations"), ("delete", "/v1/users/{id}")}

# People: sign-in and the signed-in person's routes (docs/api.md, People). These take the session
# cookie only: a bearer token on them is a 401, and a cookie never authorizes the app routes.
COOKIE_ERRORS = {
    "401": problem("No session cookie, a session that has ended (signed out, idle for 30 days, or ended by a password "
                   "change), or a bearer token (these routes take the cookie only) (errorAuthenticationRequired)."),
    "415": problem("A request that changes something with the session cookie must send `Content-Type: application/json`, "
                   "so a form on another site cannot act for the person (errorUnsupportedMediaType)."),
    "429": ERRORS_APP["429"],
}
SESSION_COOKIE_HEADER = {"Set-Cookie": {
    "description": "`healthd_session=<token>; Path=/; Max-Age=2592000; HttpOnly; SameSite=Strict` over http; over https "
                   "(a trusted proxy says so) `__Host-healthd_session=...; Secure`. A signed-in request sends it again, with "
                   "a new Max-Age, when the session was last used over an hour ago.",
    "schema": {"type": "string"}}}
PATHS["/v1/session"] = {
    "post": {"summary": "Sign in: a new session cookie", "tags": ["people"], "security": [],
             "description": "In order: failed sign-ins are limited per account name (10 in 15 minutes, from any address; unknown "
                            "names too) and per client address (30; IPv6 per /64), and while either is spent the answer is 429 with "
                            "`Retry-After`, even for the right password. Then the password is checked against its Argon2id hash, or, "
                            "for a name without an activated account, against a dummy hash: a wrong name and a wrong password take "
                            "the same time and get the same 401. The session is always new (a cookie the request carried is ended, "
                            "never kept). The name may be typed in another case or width than the account's (it reads alike: NFKC and "
                            "case folding), and such names share one failure budget.",
             "requestBody": {"required": True, "content": {"application/json": {"schema": {
                 "type": "object", "required": ["name", "password"], "additionalProperties": False,
                 "properties": {"name": {"type": "string", "maxLength": 200}, "password": {"type": "string", "maxLength": 1024}}}}}},
             "responses": {"204": {"description": "Signed in.", "headers": SESSION_COOKIE_HEADER},
                           "400": ERRORS_APP["400"],
                           "401": problem("The name or the password is wrong (errorAuthenticationRequired): one answer for both."),
                           "415": problem("Not application/json."),
                           "429": {**problem("Too many failed sign-ins for this name or from this address (errorRateLimited)."),
                                   "headers": {"Retry-After": {"description": "Seconds until a sign-in may be tried again.",
                                                               "schema": {"type": "integer", "minimum": 1}}}},
                           "503": problem("Too many sign-ins are being checked at once (errorUnavailable); retry after `Retry-After`.")}},
    "delete": {"summary": "Sign out: this session ends and the cookie is cleared", "tags": ["people"],
               "responses": {"204": {"description": "Signed out.", "headers": {"Set-Cookie": {
                   "description": "The session cookie with `Max-Age=0`.", "schema": {"type": "string"}}}}, **COOKIE_ERRORS}},
}
PATHS["/v1/users/{id}/invitation"] = {
    "post": {"summary": "A new invitation for a person (admin); the earlier one stops working", "tags": ["people"],
             "description": "For a person who is already active this resets the password: activating the new code sets it and "
                            "ends every session of the person.",
             "parameters": [pparam("id", "User id (or name).")],
             "responses": {"201": ok_json(ref("Invitation"), "Created"), "404": problem("No such user."), **ERRORS_APP}},
}
PATHS["/v1/people/activate"] = {
    "post": {"summary": "Activate an account: set the password with an invitation code", "tags": ["people"], "security": [],
             "description": "The code works once (a replay, or a second activation at the same moment, is refused), for 7 days, "
                            "and only while it is the person's newest. The password must have at least 10 characters and must not "
                            "be one of the 10,000 most common passwords (nor one with digits or symbols around it), a repetition, a run of letters or digits, or contain the "
                            "person's name; it is stored only as an Argon2id hash. Activation does not sign in.",
             "requestBody": {"required": True, "content": {"application/json": {"schema": {
                 "type": "object", "required": ["code", "password"], "additionalProperties": False,
                 "properties": {"code": {"type": "string"}, "password": {"type": "string", "minLength": 10, "maxLength": 1024}}}}}},
             "responses": {"200": ok_json({"type": "object", "required": ["id", "name"], "properties": {
                               "id": {"type": "string"}, "name": {"type": "string"}}}, "Activated."),
                           "400": problem("A malformed body, or a password the policy refuses; `detail` says why (errorInvalidArgument)."),
                           "401": problem("The code is unknown, used, replaced or expired: one answer for all (errorAuthenticationRequired)."),
                           "415": problem("Not application/json."),
                           "429": ERRORS_APP["429"],
                           "503": problem("Too many passwords are being hashed at once (errorUnavailable); retry after `Retry-After`.")}},
}
PATHS["/v1/me/password"] = {
    "put": {"summary": "Change the password; every other session of the person ends", "tags": ["people"],
            "description": "A wrong `current` is a 403 and counts as a failed sign-in (the same limits, 429 with `Retry-After`). "
                           "`new` follows the activation's policy. This session stays signed in.",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["current", "new"], "additionalProperties": False,
                "properties": {"current": {"type": "string"}, "new": {"type": "string", "minLength": 10, "maxLength": 1024}}}}}},
            "responses": {"204": {"description": "Changed; the person's other sessions have ended."},
                          "400": problem("A malformed body, or a new password the policy refuses (errorInvalidArgument)."),
                          "403": problem("The current password is wrong (errorAuthorizationDenied)."),
                          "503": problem("Too many passwords are being hashed at once (errorUnavailable)."),
                          **COOKIE_ERRORS}},
}
PATHS["/v1/me"] = {
    "get": {"summary": "Who is signed in", "tags": ["people"],
            "responses": {"200": ok_json({"type": "object", "required": ["id", "name"], "properties": {
                "id": {"type": "string"}, "name": {"type": "string"}}}), **COOKIE_ERRORS}},
}
# The person's reads for the dashboard: the same handlers and answers as the app routes, with the
# session cookie, over all of the person's own data (PersonReadRoutes.swift).
import copy
for app_path in ["/v1/summary", "/v1/statistics/collection", "/v1/samples", "/v1/activity-summaries", "/v1/workouts",
                 "/v1/heart-rate/zones", "/v1/changes/stream"]:
    mirrored = copy.deepcopy(PATHS[app_path]["get"])
    mirrored["summary"] = mirrored["summary"] + " (the signed-in person's own data)"
    mirrored["description"] = (f"The answer of `GET {app_path}` for the signed-in person (session cookie instead of a token): all of "
                               "their own data, from every source, read-only; no app's read permission narrows it. "
                               + mirrored.get("description", ""))
    mirrored["tags"] = ["people"]
    mirrored.pop("security", None)
    mirrored["responses"] = {**mirrored["responses"], **COOKIE_ERRORS}
    mirrored["responses"].pop("403", None)
    mirrored["responses"].pop("415", None)
    PATHS["/v1/me" + app_path[len("/v1"):]] = {"get": mirrored}
# RFC 8628's device grant as HealthKit's permission request, and the person's apps (the grants).
TYPE_LIST = {"type": "array", "items": {"type": "string"}}
OAUTH_ERROR = {"type": "object", "required": ["error"], "properties": {
    "error": {"type": "string", "enum": ["authorization_pending", "slow_down", "access_denied", "expired_token", "invalid_grant"]},
    "interval": {"type": "integer", "description": "With slow_down: the new interval in seconds (5 more each time)."},
    "error_description": {"type": "string"}}}
APP_GRANT = {"type": "object", "required": ["app", "displayName", "share", "read", "created", "lastUsed", "switches"], "properties": {
    "app": {"type": "string"}, "displayName": {"type": "string", "description": "As the app asked to be shown: text, never markup."},
    "share": {**TYPE_LIST, "description": "Switched on under \"Allow to write\", sorted."},
    "read": {**TYPE_LIST, "description": "Switched on under \"Allow to read\", sorted."},
    "created": {"type": "string", "format": "date-time"},
    "lastUsed": {"type": ["string", "null"], "format": "date-time",
                 "description": "When a token of the app last called (written at most once a minute per token); null when never."},
    "switches": {"type": "object", "description": "Every switch the app has, on (true) or off (false): the types it asked for "
                                                  "and the person answered, and those the admin turned on.",
                 "properties": {"share": {"type": "object", "additionalProperties": {"type": "boolean"}},
                                "read": {"type": "object", "additionalProperties": {"type": "boolean"}}}}}}
PATHS["/v1/authorization-requests"] = {
    "post": {"summary": "An app asks for permission (RFC 8628 device authorization; no token)", "tags": ["people"], "security": [],
             "description": "Shaped like HealthKit's `requestAuthorization(toShare:read:)`. The app shows `userCode` and "
                            "`verificationURI` (or opens `verificationURIComplete`); the person signs in to the dashboard and "
                            "answers on the sheet; the app polls `POST /v1/authorization-requests/token` every `interval` seconds. "
                            "An address may make 10 requests at once and then one every 5 s (429 with Retry-After).",
             "requestBody": {"required": True, "content": {"application/json": {"schema": {
                 "type": "object", "required": ["app", "reason"], "additionalProperties": False, "properties": {
                     "app": {"type": "string", "minLength": 1, "maxLength": 200,
                             "description": "The app's id: its samples' source. Visible text as a user's name is: no control or "
                                            "invisible formatting characters (bidirectional overrides, zero-width spaces), "
                                            "no space at either end."},
                     "displayName": {"type": "string", "minLength": 1, "maxLength": 100,
                                     "description": "The name the sheet shows (default: `app`); visible text as `app` is, shown as text."},
                     "share": {**TYPE_LIST, "description": "Types to write (no characteristics), in the order to show them."},
                     "read": {**TYPE_LIST, "description": "Types (and characteristics) to read."},
                     "reason": {"type": "string", "minLength": 1, "maxLength": 1000,
                                "description": "Why the app asks (HealthKit's usage description); line breaks and the marks U+200E and "
                                               "U+200F allowed, no other control character and no bidirectional embedding, override "
                                               "or isolate (U+202A-U+202E, U+2066-U+2069); shown as text."}}}}}},
             "responses": {"201": ok_json({"type": "object", "properties": {
                 "deviceCode": {"type": "string", "description": "What the app polls with (43 base64url characters; kept only as a hash)."},
                 "userCode": {"type": "string", "pattern": "^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$"},
                 "verificationURI": {"type": "string", "description": "The dashboard's sheet: `http(s)://<host>/#/authorize`."},
                 "verificationURIComplete": {"type": "string", "description": "The same with `?code=XXXX-XXXX`."},
                 "expiresIn": {"type": "integer", "const": 600}, "interval": {"type": "integer", "const": 5}}}, "Created"),
                           "415": problem("Not application/json."), **ERRORS_APP}},
}
PATHS["/v1/authorization-requests/token"] = {
    "post": {"summary": "The app polls for its token (RFC 8628 section 3.4)", "tags": ["people"], "security": [],
             "description": "400 with an OAuth `error` until the person allowed: `authorization_pending`; `slow_down` when polled "
                            "sooner than `interval` after the last poll (the interval then grows by 5 s); `access_denied`; "
                            "`expired_token` after 600 s; `invalid_grant` for a code this server did not issue or one already "
                            "exchanged. Once allowed, 200 with the token, exactly once. The answer names the granted share types "
                            "only: whether reading was allowed is never disclosed (refused data looks like data the app has not saved).",
             "requestBody": {"required": True, "content": {"application/json": {"schema": {
                 "type": "object", "required": ["deviceCode"], "additionalProperties": False,
                 "properties": {"deviceCode": {"type": "string"}}}}}},
             "responses": {"200": ok_json({"type": "object", "required": ["token", "user", "app", "share"], "properties": {
                 "token": {"type": "string", "description": "The app token, shown once; it follows the person's switches for the app."},
                 "user": {"type": "string"}, "app": {"type": "string"},
                 "share": {**TYPE_LIST, "description": "The asked share types the person allowed."}}}),
                           "400": {"description": "Not (yet) a token: an OAuth error, or a malformed body (problem+json).",
                                   "content": {"application/json": {"schema": OAUTH_ERROR},
                                               "application/problem+json": {"schema": ref("Problem")}}},
                           "415": problem("Not application/json."), "429": ERRORS_APP["429"]}},
}
PATHS["/v1/me/authorization-requests/{userCode}"] = {
    "get": {"summary": "The sheet: what an app asks for, by its user code", "tags": ["people"],
            "parameters": [pparam("userCode", "The code as shown (XXXX-XXXX) or typed (any case, dash optional).")],
            "description": "`share` and `read` list only the asked types the person has not decided yet (asking again shows the rest). "
                           "Unknown, malformed and expired codes are 404 and count against the person: after 10 in 15 minutes "
                           "even the right code is 429 with Retry-After.",
            "responses": {"200": ok_json({"type": "object", "properties": {
                "userCode": {"type": "string"}, "app": {"type": "string"}, "displayName": {"type": "string"},
                "reason": {"type": "string"}, "share": TYPE_LIST, "read": TYPE_LIST,
                "expiresIn": {"type": "integer", "description": "Seconds left to answer."},
                "allowedBefore": {"type": ["string", "null"], "format": "date-time",
                                  "description": "When the person first allowed this app, if it may read or write any type "
                                                 "now; null otherwise. Anyone can ask in an app's name, and Allow gives the "
                                                 "device showing the code the app's whole access: the sheet warns."},
                "readsLike": {"type": ["object", "null"], "required": ["app", "displayName"],
                              "properties": {"app": {"type": "string"}, "displayName": {"type": "string"}},
                              "description": "Another app the person allowed (it may read or write now) whose id or shown name "
                                             "reads like this request's id or shown name (another case, full-width letters, a "
                                             "decomposed accent); null when none. The sheet warns that this is another app."}}}),
                          "404": problem("No pending request has this code, or it expired (errorNotFound)."),
                          "409": problem("The request was already answered (errorConflict)."), **COOKIE_ERRORS}},
    "post": {"summary": "The sheet's answer: Allow with the switches turned on, or Don't Allow", "tags": ["people"],
             "parameters": [pparam("userCode", "The code as shown or typed.")],
             "description": "`share` and `read` are the switches turned on, a subset of what the app asked for (anything more is a "
                            "400). The types the sheet showed become decided: on as sent with Allow, off otherwise; types decided "
                            "before keep their switches (change them with `PUT /v1/me/apps/{app}`).",
             "requestBody": {"required": True, "content": {"application/json": {"schema": {
                 "type": "object", "required": ["allow"], "additionalProperties": False,
                 "properties": {"allow": {"type": "boolean"}, "share": TYPE_LIST, "read": TYPE_LIST}}}}},
             "responses": {"204": {"description": "Answered; the app's next poll gets its token (or access_denied)."},
                           "400": ERRORS_APP["400"],
                           "404": problem("No pending request has this code, or it expired (errorNotFound)."),
                           "409": problem("The request was already answered (errorConflict)."), **COOKIE_ERRORS}},
}
PATHS["/v1/me/apps"] = {
    "get": {"summary": "The person's apps and their switches (Settings > Health > Data Access & Devices)", "tags": ["people"],
            "responses": {"200": ok_json({"type": "object", "required": ["apps"], "properties": {
                "apps": {"type": "array", "items": APP_GRANT}}}), **COOKIE_ERRORS}},
}
PATHS["/v1/me/apps/{app}"] = {
    "put": {"summary": "Change an app's switches; a narrowing ends its open streams and long-polls at once", "tags": ["people"],
            "parameters": [pparam("app", "The app's id.")],
            "description": "The switches become exactly `share` and `read`, each a type the app has a switch for (400 otherwise). "
                           "Every token of the app follows them; its open change streams and parked long-polls end within a second "
                           "(an `event: error` ends a stream), on every node.",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["share", "read"], "additionalProperties": False,
                "properties": {"share": TYPE_LIST, "read": TYPE_LIST}}}}},
            "responses": {"200": ok_json(APP_GRANT), "400": ERRORS_APP["400"],
                          "404": problem("The person has no such app (errorNotFound)."), **COOKIE_ERRORS}},
    "delete": {"summary": "Revoke an app: all of its tokens, and its switches", "tags": ["people"],
               "parameters": [pparam("app", "The app's id.")],
               "responses": {"204": {"description": "Revoked; the app's streams and long-polls have ended."},
                             "404": problem("The person has no such app (errorNotFound)."), **COOKIE_ERRORS}},
}
# The signed-in person's routes: the session cookie only.
PERSON = {("post", "/v1/session"): False, ("delete", "/v1/session"): True, ("get", "/v1/me"): True}

# The person's own data (docs/api.md, "People: recent access, own data, erasure").
day_schema = {"type": "string", "format": "date"}
PATHS["/v1/me"]["delete"] = {
    "summary": "Erase the account: every row that names the person, in one transaction", "tags": ["people"],
    "description": "Takes the current password (checked as at sign-in, under the same limits: a wrong one is a 401 and counts as a "
                   "failed sign-in). Deletes what `DELETE /v1/users/{id}` does; open streams of the person's tokens end. The "
                   "answer clears the session cookie.",
    "requestBody": {"required": True, "content": {"application/json": {"schema": {
        "type": "object", "required": ["password"], "additionalProperties": False,
        "properties": {"password": {"type": "string", "maxLength": 1024}}}}}},
    "responses": {"200": {**ok_json(ERASURE_REPORT, "Erased."), "headers": {"Set-Cookie": {
                      "description": "The session cookie with `Max-Age=0`.", "schema": {"type": "string"}}}},
                  "400": ERRORS_APP["400"],
                  "503": problem("Too many passwords are being checked at once (errorUnavailable); retry after `Retry-After`."),
                  **COOKIE_ERRORS}}
PERSON[("delete", "/v1/me")] = True
PATHS.update({
    "/v1/me/access": {"get": {
        "summary": "Recent access: what each app read and wrote, per type and day (counts only)", "tags": ["people"],
        "description": "`reads`: answers that carried the type (a samples page, a sample, sources, a statistics query, a change-feed "
                       "page or stream event, an export of the type...); `samplesRead`: samples, deletions and statistics buckets in "
                       "them. `writes`: requests that saved or deleted the type; `samplesWritten`: samples in them. The person's own "
                       "reads are not counted. Kept `accessLogRetentionDays` (90). Latest day first, then app and type.",
        "parameters": [qparam("start", "First day (default: the first kept).", day_schema),
                       qparam("end", "Last day, included (default: today). At most 400 days from `start`, or `accessLogRetentionDays` when that is more.", day_schema),
                       qparam("timeZone", "IANA zone the days are in (default UTC).")],
        "responses": {"200": ok_json({"type": "object", "required": ["access"], "properties": {"access": {"type": "array", "items": {
            "type": "object", "required": ["app", "type", "day", "reads", "samplesRead", "writes", "samplesWritten", "lastAccess"],
            "properties": {"app": {"type": "string"}, "type": {"type": "string"}, "day": day_schema,
                           "reads": {"type": "integer", "minimum": 0}, "samplesRead": {"type": "integer", "minimum": 0},
                           "writes": {"type": "integer", "minimum": 0}, "samplesWritten": {"type": "integer", "minimum": 0},
                           "lastAccess": instant}}}}}),
                      "400": ERRORS_APP["400"], **COOKIE_ERRORS}}},
    "/v1/me/export": {"get": {
        "summary": "The person's backup: a settings line, then every sample of every app, oldest first (NDJSON)", "tags": ["people"],
        "responses": {"200": {"description": "`{\"healthdBackup\":{...}}`, then one sample per line, as `healthd export --user` writes "
                                             "it (`healthd import` restores it).",
                              "content": {"application/x-ndjson": {"schema": {"type": "string"}}}},
                      "400": ERRORS_APP["400"], **COOKIE_ERRORS}}},
    "/v1/me/apps/{app}/data": {"delete": {
        "summary": "Delete every sample one app saved for the person", "tags": ["people"],
        "description": "Correlations with their objects; tombstones for the change feed; statistics follow at once.",
        "parameters": [pparam("app", "The app's name.")],
        "responses": {"200": ok_json({"type": "object", "required": ["app", "deleted"], "properties": {
            "app": {"type": "string"}, "deleted": {"type": "integer", "minimum": 0}}}), "400": ERRORS_APP["400"], **COOKIE_ERRORS}}},
})

# Which token each operation takes. The Swift test `OpenAPIDocumentTests` checks this against the
# routes' `RouteAccess` (admin-only routes here, open routes with `"security": []` above).
ADMIN_ONLY = {("post", "/v1/users"), ("post", "/v1/users/{id}/invitation"), ("post", "/v1/authorizations"), ("delete", "/v1/authorizations/{id}"),
              ("put", "/v1/characteristics"), ("put", "/v1/sources/priority"), ("put", "/v1/activity-goals")}
ADMIN_ONLY |= ADMIN_ONLY_PEOPLE
# The type catalog is the same for everyone, so the admin token may read it too.
EITHER_TOKEN = {("get", "/v1/types"), ("get", "/v1/types/{id}")}


REQUEST_ID_HEADER = {"X-Request-Id": {"$ref": "#/components/headers/RequestId"}}
HEADERS = {"RequestId": {"description": "The request's id, on every response; the access log line and any error "
                                        "log line about the request carry the same id.",
                         "schema": {"type": "string"}}}
INTERNAL_ERROR = problem("The server failed (errorInternal): a generic `detail` and the `requestId`; the details are in the "
                         "server's log line with that id, never in the response.")
INSUFFICIENT_STORAGE = {**problem("The data directory's disk is full (errorInsufficientStorage): nothing of this request was "
                                  "stored; reads go on working, and the same request succeeds once space returns."),
                        "headers": {"Retry-After": {"description": "Seconds to wait before retrying (30).",
                                                    "schema": {"type": "integer", "minimum": 1}}}}
UNAVAILABLE = {**problem("Unavailable for now (errorUnavailable): the database cannot be reached (after retries), the "
                         "server or this client address is at its connection cap, the bodies being received fill the "
                         "server's budget, or the server is shutting down. Nothing of the request was stored; retry after "
                         "`Retry-After`."),
               "headers": {"Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer", "minimum": 1}}}}
RESPONSES = {"InternalError": {**INTERNAL_ERROR, "headers": REQUEST_ID_HEADER},
             "Unavailable": {**UNAVAILABLE, "headers": {**UNAVAILABLE["headers"], **REQUEST_ID_HEADER}},
             "InsufficientStorage": {**INSUFFICIENT_STORAGE, "headers": {**INSUFFICIENT_STORAGE["headers"], **REQUEST_ID_HEADER}}}


PATH_NAMES_NOTHING = problem("The path names nothing (errorNotFound): a segment whose escapes are not UTF-8 text or "
                             "decode to a control character (`%00`) matches no route.")


def with_common_responses(paths):
    """Every operation may fail on the server's side (500) or be turned away for now (503); every
    write may find the disk full (507); a path with a parameter may name nothing (404); every
    response carries X-Request-Id."""
    for path, operations in paths.items():
        for method, operation in operations.items():
            responses = operation["responses"]
            for code, response in list(responses.items()):
                response = dict(response)
                response["headers"] = {**response.get("headers", {}), **REQUEST_ID_HEADER}
                responses[code] = response
            responses.setdefault("500", {"$ref": "#/components/responses/InternalError"})
            responses.setdefault("503", {"$ref": "#/components/responses/Unavailable"})
            if "{" in path:
                responses.setdefault("404", PATH_NAMES_NOTHING)
            if method in ("post", "put", "delete"):
                responses.setdefault("507", {"$ref": "#/components/responses/InsufficientStorage"})
    return paths


def with_security(paths):
    for path, operations in paths.items():
        for method, operation in operations.items():
            if PERSON.get((method, path)) or path.startswith("/v1/me/"):
                operation["security"] = [{"sessionCookie": []}]
            elif (method, path) in ADMIN_ONLY:
                operation["security"] = [{"adminToken": []}]
            elif (method, path) in EITHER_TOKEN:
                operation["security"] = [{"appToken": []}, {"adminToken": []}]
    return paths


def healthd_version():
    """The one version string, from Sources/HealthdCommandLine/Version.swift (`healthd --version` prints it too)."""
    import re
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources", "HealthdCommandLine", "Version.swift")
    match = re.search(r'static let string = "([^"]+)"', open(path, encoding="utf-8").read())
    if match is None:
        sys.exit("openapi.py: no version string in " + path)
    return match.group(1)


def document():
    return {
        "openapi": "3.1.0",
        "info": {"title": "healthd", "version": healthd_version(),
                 "description": "HealthKit-style health data over HTTP. This document is the machine-readable API reference; "
                                "the project's docs/api.md describes the same routes in prose, docs/guide.md walks through "
                                "them and docs/decisions.md gives the reasons."},
        "servers": [{"url": "http://127.0.0.1:8080"}],
        "security": [{"appToken": []}],
        "tags": [{"name": n} for n in ["operations", "authorization", "samples", "types", "statistics", "changes", "webhooks", "motion", "ingest", "heart-rate", "export", "people"]],
        "paths": with_common_responses(with_security(PATHS)),
        "components": {"schemas": SCHEMAS, "responses": RESPONSES, "headers": HEADERS,
                       "securitySchemes": {
                           "appToken": {"type": "http", "scheme": "bearer",
                                        "description": "An app token: one app acting for one user, with the read and share types of its authorization (POST /v1/authorizations returns it once)."},
                           "sessionCookie": {"type": "apiKey", "in": "cookie", "name": "healthd_session",
                                             "description": "A signed-in person's session (POST /v1/session sets it; `__Host-healthd_session` over https). "
                                                            "Accepted only on the person's routes (/v1/me...); never on the app routes."},
                           "adminToken": {"type": "http", "scheme": "bearer",
                                          "description": "The server's admin token (HEALTHD_ADMIN_TOKEN, or printed at first start): users, authorizations, characteristics, source priority and goals."}}},
    }


if __name__ == "__main__":
    text = json.dumps(document(), indent=2, sort_keys=False) + "\n"
    if "--check" in sys.argv:
        current = open(OUT).read() if os.path.exists(OUT) else ""
        if current != text:
            print("Public/openapi.json is stale: run python3 Tools/openapi.py")
            sys.exit(1)
        print("Public/openapi.json is current")
    else:
        with open(OUT, "w") as f:
            f.write(text)
        print(f"wrote {OUT}")
