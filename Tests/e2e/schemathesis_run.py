#!/usr/bin/env python3
"""Runs schemathesis (PyPI) against a real healthd and its /openapi.json.

Starts the binary on a fresh data directory, creates a user and an app token that may read and
share every type, and runs every schemathesis check against every documented operation that token
may call (the document's per-operation security; `--admin`: the admin token and its operations).
Zero failures required. Usage:
  schemathesis_run.py --binary .build/debug/healthd --public Public --max-examples 10   (CI)
  schemathesis_run.py --binary .build/debug/healthd --public Public --max-examples 500  (long)
"""
import argparse, json, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import ADMIN, Server, http, js  # noqa: E402


def operations_without(public, scheme):
    """The operations (as schemathesis names them, `METHOD /path`) that need a token but not `scheme`."""
    document = json.load(open(os.path.join(public, "openapi.json")))
    default = document.get("security", [])
    names = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            schemes = {key for requirement in operation.get("security", default) for key in requirement}
            if schemes and scheme not in schemes:
                names.append(f"{method.upper()} {path}")
    return names


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--public", required=True)
    parser.add_argument("--max-examples", type=int, default=10)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--admin", action="store_true", help="use the admin token instead of an app token")
    args = parser.parse_args()
    public = os.path.abspath(args.public)
    # The abuse limits would turn a fuzzer's flood of 401s into 429s; they have their own tests.
    config = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump({"rateLimitPerAddressPerSecond": 0, "rateLimitPerTokenPerSecond": 0, "accessLog": False}, config)
    config.close()
    server = Server(args.binary, public, extra=("--config", config.name), drain=True)
    try:
        st, _, body = http(server.port, "GET", "/v1/types", token=ADMIN)
        types = [t["id"] for t in js(body)["types"]]
        st, _, body = http(server.port, "POST", "/v1/users", {"name": "schemathesis"}, token=ADMIN)
        user = js(body)["id"]
        st, _, body = http(server.port, "POST", "/v1/authorizations",
                           {"user": user, "app": "schemathesis", "read": types, "share": types}, token=ADMIN)
        token = ADMIN if args.admin else js(body)["token"]
        command = ["schemathesis", "run", f"http://127.0.0.1:{server.port}/openapi.json",
                   "--url", f"http://127.0.0.1:{server.port}",
                   "-H", f"Authorization: Bearer {token}",
                   # Every check but positive_data_acceptance: JSON Schema cannot say which unit fits
                   # which type, or that an age is needed only without a stored birth date, so
                   # schema-valid requests the server rightly refuses with 400 are expected.
                   "--checks", "all", "--exclude-checks", "positive_data_acceptance",
                   "--max-examples", str(args.max_examples),
                   # The change feed's long-poll (wait up to 60 s) and SSE stream are held open by
                   # design: they exceed schemathesis's time limits and its SSE data model; the
                   # e2e and Swift tests cover them.
                   "--exclude-path-regex", "^/v1/changes",
                   # Each run takes the operations its token may call (the document's per-operation
                   # security): the app run skips admin-only routes, the admin run the app routes.
                   "--request-timeout", "30",
                   # One worker: CPython 3.11's ast.parse is not thread-safe ("AST constructor recursion
                   # depth mismatch" inside hypothesis when two workers describe strategies at once).
                   "--workers", "1"]
        for name in operations_without(public, "adminToken" if args.admin else "appToken"):
            command += ["--exclude-name", name]
        if args.seed is not None:
            command += ["--seed", str(args.seed)]
        print("schemathesis:", " ".join(c if token not in c else "'Authorization: Bearer ...'" for c in command), flush=True)
        code = subprocess.call(command)
        alive = server.proc.poll() is None
        print(f"schemathesis: exit {code}; server alive afterwards: {alive}")
        sys.exit(0 if code == 0 and alive else 1)
    finally:
        server.stop()
        shutil.rmtree(server.data_dir, ignore_errors=True)
        os.unlink(config.name)


if __name__ == "__main__":
    main()
