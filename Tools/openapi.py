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


uuid_schema = {"type": "string", "format": "uuid"}
session_schema = {"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,128}$"}


ERRORS_APP = {
    "400": problem("Invalid argument (errorInvalidArgument): a malformed parameter, body field or unknown field, named in `detail`/`errors`."),
    "401": problem("Missing, unknown or revoked token (errorAuthenticationRequired)."),
    "403": problem("The token may not do this (errorAuthorizationDenied)."),
    "429": {**problem("Too many requests from this address or with this token (errorRateLimited): token buckets, "
                      "see README 'Abuse and privacy'. A failed authentication costs the address extra."),
            "headers": {"Retry-After": {"description": "Whole seconds until a request fits the bucket again.",
                                        "schema": {"type": "integer", "minimum": 1}}}},
}
# Open routes count against the per-address bucket too.
ERRORS_OPEN = {"429": ERRORS_APP["429"]}

instant = {"type": "string", "format": "date-time", "description": "RFC 3339 with an offset; responses are UTC with milliseconds."}

SCHEMAS = {
    "Problem": {
        "type": "object", "description": "RFC 9457 problem details with a HealthKit-style code.",
        "required": ["type", "title", "status", "detail", "code"],
        "properties": {
            "type": {"type": "string", "example": "about:blank"},
            "title": {"type": "string"}, "status": {"type": "integer"}, "detail": {"type": "string"},
            "code": {"type": "string", "enum": ["errorInvalidArgument", "errorAuthenticationRequired", "errorAuthorizationDenied",
                                                "errorNotFound", "errorConflict", "errorPayloadTooLarge",
                                                "errorUnsupportedMediaType", "errorRateLimited", "errorMethodNotAllowed",
                                                "errorAnchorExpired", "errorServiceUnavailable", "errorInternal"]},
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
    "SampleInput": {
        "type": "object", "additionalProperties": False, "required": ["type", "start"],
        "description": "A sample to save. Quantity samples: value (+ unit, default the canonical unit). Category samples: "
                       "value as the case name (or raw integer), no unit. Correlations: objects. Workouts: activityType, "
                       "totals, events. `end` defaults to `start`. `uuid` is assigned when missing.",
        "properties": {
            "uuid": {"type": "string", "format": "uuid"},
            "type": {"type": "string", "description": "Type id (stepCount) or HealthKit's long form."},
            "value": {"type": ["number", "string", "integer"]},
            "unit": {"type": "string", "description": "HKUnit syntax; must fit the type."},
            "start": instant, "end": instant,
            "metadata": ref("Metadata"), "device": ref("Device"),
            "objects": {"type": "array", "items": {"$ref": "#/components/schemas/SampleInput"}, "minItems": 1},
            "activityType": {"type": "string", "description": "HKWorkoutActivityType case name."},
            "totalEnergyBurned": ref("Quantity"), "totalDistance": ref("Quantity"),
            "events": {"type": "array", "items": ref("WorkoutEvent")},
        },
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
        },
    },
    "HealthType": {
        "type": "object", "required": ["id", "kind", "aggregation", "canonicalUnit", "units", "maximumDuration", "range"],
        "properties": {
            "id": {"type": "string"},
            "kind": {"type": "string", "enum": ["quantity", "category", "correlation", "workout", "characteristic"]},
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
        "type": "object", "required": ["id", "token", "user", "app", "read", "share"],
        "properties": {"id": {"type": "string"}, "token": {"type": "string", "description": "Shown once; only its hash is stored."},
                       "user": {"type": "string"}, "app": {"type": "string"},
                       "read": {"type": "array", "items": {"type": "string"}},
                       "share": {"type": "array", "items": {"type": "string"}}},
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
                                              "floorsAscended", "floorsDescended", "activity", "saved"],
              "properties": {"session": {"type": "string"}, "seq": {"type": "integer", "description": "The batch's seq (for /end: the last batch's)."},
                             "steps": {"type": "integer", "description": "Steps counted by this call."},
                             "totalSteps": {"type": "integer"}, "distance": {"type": "number", "description": "Metres, session total."},
                             "cadence": {"type": ["number", "null"], "description": "Steps per second over the last 8 s; null when not walking."},
                             "pace": {"type": ["number", "null"], "description": "Seconds per metre; null when not walking."},
                             "floorsAscended": {"type": "integer"}, "floorsDescended": {"type": "integer"},
                             "activity": {"type": "string", "enum": ["stationary", "walking", "running", "unknown"]},
                             "saved": {"type": "array", "items": {"type": "string", "format": "uuid"},
                                       "description": "stepCount, distanceWalkingRunning and flightsClimbed samples saved for this call."}}}

PATHS = {
    "/healthz": {"get": {"summary": "Liveness", "security": [], "tags": ["operations"],
                         "responses": {"200": ok_json({"type": "object", "properties": {"status": {"const": "ok"}}}), **ERRORS_OPEN}}},
    "/metrics": {"get": {"summary": "Prometheus metrics (text format 0.0.4)", "security": [], "tags": ["operations"],
                         "responses": {"200": {"description": "Requests by route and status, latency histogram, open connections, store size.",
                                               "content": {"text/plain": {"schema": {"type": "string"}}}},
                                       "400": ERRORS_APP["400"], **ERRORS_OPEN}}},
    "/openapi.json": {"get": {"summary": "This document", "security": [], "tags": ["operations"],
                              "responses": {"200": ok_json({"type": "object"}), **ERRORS_OPEN}}},
    "/v1/users": {"post": {
        "summary": "Create a user (admin)", "tags": ["authorization"],
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "required": ["name"], "additionalProperties": False, "properties": {"name": {"type": "string"}}}}}},
        "responses": {"201": ok_json({"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}, "Created"),
                      "409": problem("A user with that name exists (errorConflict)."),
                      "415": problem("Not application/json."), **ERRORS_APP}}},
    "/v1/authorizations": {"post": {
        "summary": "Authorize an app for a user (admin); returns the token once", "tags": ["authorization"],
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "required": ["user", "app"], "additionalProperties": False,
            "properties": {"user": {"type": "string", "description": "User id (or name)."}, "app": {"type": "string"},
                           "read": {"type": "array", "items": {"type": "string"}, "description": "Types (and characteristics) the app may read."},
                           "share": {"type": "array", "items": {"type": "string"}, "description": "Types the app may write and delete."}}}}}},
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
                    qparam("limit", "Page size.", {"type": "integer", "minimum": 1, "maximum": 10000, "default": 100}),
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
                       "answer and changes nothing; a gap is a 409 naming the expected seq. The pedometer's state, the saved "
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
                            "description": "t: seconds after t0, strictly increasing; x, y, z including gravity. At most 100,000.",
                            "properties": {k: {"type": "array", "items": {"type": "number"}} for k in ["t", "x", "y", "z"]}},
                "pressure": {"type": "object", "required": ["t", "hPa"], "additionalProperties": False,
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
                "responses": {"200": ok_json(ref("Characteristics")), "415": problem("Not application/json."), **ERRORS_APP}},
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
}


def document():
    return {
        "openapi": "3.1.0",
        "info": {"title": "healthd", "version": "1.0.0",
                 "description": "HealthKit-style health data over HTTP. See README.md for the decisions where API.md is silent."},
        "servers": [{"url": "http://127.0.0.1:8080"}],
        "security": [{"bearer": []}],
        "tags": [{"name": n} for n in ["operations", "authorization", "samples", "types", "statistics", "changes", "motion", "heart-rate", "export"]],
        "paths": PATHS,
        "components": {"schemas": SCHEMAS,
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                                      "description": "An app token (one app acting for one user) or the admin token."}}},
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
