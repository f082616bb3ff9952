#!/usr/bin/env python3
"""End-to-end checks for healthd: a real server process, real sockets, real HTTP.

Each check prints one line; the run ends with 'e2e: N passed, N failed' and exits non-zero on
any failure. Standard library only, so it runs on a fresh Debian with python3.
"""
import argparse, calendar, json, os, re, uuid, select, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request

# Run as a script, this file is __main__; the suites in sibling files import it as "e2e" and must
# share its results rather than load a second copy.
sys.modules.setdefault("e2e", sys.modules[__name__])

ADMIN = "e2e-admin-token-0123456789abcdef"
results = {"passed": 0, "failed": 0}


def check(name, condition, detail=""):
    if condition:
        results["passed"] += 1
        print(f"  ok   {name}")
    else:
        results["failed"] += 1
        print(f"  FAIL {name} {detail}")


def fresh_database(base_url, prefix="healthd_e2e"):
    """Creates an empty database on the server of `base_url` (a postgres:// URL) and returns its URL,
    so every server a check starts begins from nothing, as with a fresh data directory. Uses psql."""
    name = f"{prefix}_{os.getpid()}_{int(time.time() * 1000) % 10**9}_{fresh_database.count}"
    fresh_database.count += 1
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", base_url, "-c", f"CREATE DATABASE {name}"],
                   check=True, capture_output=True, timeout=60)
    head, _, query = base_url.partition("?")
    return head.rsplit("/", 1)[0] + "/" + name + (("?" + query) if query else "")


fresh_database.count = 0

# With --database URL every server and command runs on PostgreSQL: each data directory gets a
# fresh database of its own on that server, so checks start from nothing as with SQLite.
DATABASE = {"base": None, "by_dir": {}}


def store_args(data_dir):
    """--data-dir DIR, plus --database with that data directory's own database under --database."""
    args = ["--data-dir", data_dir]
    if DATABASE["base"]:
        key = os.path.realpath(data_dir)
        if key not in DATABASE["by_dir"]:
            DATABASE["by_dir"][key] = fresh_database(DATABASE["base"])
        args += ["--database", DATABASE["by_dir"][key]]
    return args


def query_store(data_dir, sql):
    """The first column of the first row of `sql` on the store behind `data_dir` (SQLite file or
    its PostgreSQL database), as text."""
    if DATABASE["base"]:
        url = store_args(data_dir)[-1]
        out = subprocess.run(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", url, "-c", sql],
                             check=True, capture_output=True, text=True, timeout=60).stdout
        return out.strip().splitlines()[0] if out.strip() else None
    import sqlite3
    db = sqlite3.connect(os.path.join(data_dir, "healthd.sqlite"), timeout=10)
    try:
        row = db.execute(sql).fetchone()
        db.commit()
        return None if row is None else str(row[0])
    finally:
        db.close()


def parse_arguments():
    """`--binary B --public P [--database URL]`; every Server started afterwards uses the database."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--public", required=True)
    parser.add_argument("--database", help="a postgres:// URL: run on PostgreSQL, a fresh database per data directory")
    args = parser.parse_args()
    DATABASE["base"] = args.database
    return args


def run_alone(checks):
    """A script's checks run on their own (`parse_arguments`), then the totals, exiting 1 on any
    failure (e2e.py's main runs the same checks with the rest)."""
    args = parse_arguments()
    checks(args.binary, os.path.abspath(args.public))
    print(f"e2e: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


class Server:
    def __init__(self, binary, public, data_dir=None, extra=(), drain=True, preexec_fn=None):
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="healthd-e2e-")
        env = dict(os.environ, HEALTHD_ADMIN_TOKEN=ADMIN, HEALTHD_PUBLIC_DIR=public)
        self.proc = subprocess.Popen([binary, "serve", "--port", "0", *store_args(self.data_dir), *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True, preexec_fn=preexec_fn)
        self.port = None
        # A fresh data directory's migrations fsync about 28 times: on a slow disk that is seconds.
        deadline = time.time() + 120
        while time.time() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.5)
            if ready:
                line = self.proc.stdout.readline()
                m = re.search(r"listening on http://[^:]+:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                    break
            if self.proc.poll() is not None:
                raise RuntimeError("healthd exited: " + self.proc.stderr.read())
        if self.port is None:
            raise RuntimeError("healthd did not report its port")
        # drain: keep reading the access log so a full pipe never stalls the server; `log()` has it.
        self.log_lines = []
        if drain:
            import threading
            threading.Thread(target=lambda: self.log_lines.extend(self.proc.stdout), daemon=True).start()

    def log(self):
        return "".join(self.log_lines)

    def stop(self, sig=signal.SIGTERM, timeout=20):
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


def raw(port, data, read_timeout=5.0, shutdown_write=False, first_byte_timeout=30.0):
    """Sends raw bytes and returns everything the server sends until it closes or, once it has
    answered, goes quiet for `read_timeout`. The first byte may take up to `first_byte_timeout`: on a
    loaded machine an answer can be late, and only silence after an answer means it is complete."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(data)
    if shutdown_write:
        s.shutdown(socket.SHUT_WR)
    chunks = []
    s.settimeout(max(read_timeout, first_byte_timeout))
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            s.settimeout(read_timeout)
    except socket.timeout:
        pass
    s.close()
    return b"".join(chunks)


def wait_until(predicate, seconds=30.0, interval=0.05):
    """Polls `predicate` until it holds or `seconds` pass; its last value. A generous deadline costs
    nothing when the condition holds early, and a loaded machine may take seconds to get there."""
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def statuses(response_bytes):
    return [int(m) for m in re.findall(rb"HTTP/1\.[01] (\d{3})", response_bytes)]


def http(port, method, path, body=None, token=None, headers=None):
    data = None
    hdrs = dict(headers or {})
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    if token:
        hdrs["Authorization"] = "Bearer " + token
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            payload = r.read()
            return r.status, dict(r.headers), payload
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def js(payload):
    try:
        return json.loads(payload)
    except Exception:
        return None


def foundation_checks(port):
    print("e2e: operations")
    st, h, b = http(port, "GET", "/healthz")
    check("GET /healthz is 200 {status: ok}", st == 200 and js(b) == {"status": "ok"}, b)
    check("responses carry Date and X-Request-Id", "Date" in h and "X-Request-Id" in h, h)
    st, h, b = http(port, "GET", "/metrics")
    check("GET /metrics is Prometheus text", st == 200 and b"healthd_http_requests_total" in b and b"healthd_open_connections" in b)
    st, h, b = http(port, "GET", "/openapi.json")
    doc = js(b)
    check("GET /openapi.json is an OpenAPI 3.1 document", st == 200 and doc and doc.get("openapi", "").startswith("3.1"))
    st, h, b = http(port, "GET", "/")
    check("GET / serves the dashboard HTML", st == 200 and h.get("Content-Type", "").startswith("text/html") and b"<html" in b.lower())
    check("the dashboard has a Content-Security-Policy", "default-src 'self'" in h.get("Content-Security-Policy", ""))
    st, h, b = http(port, "GET", "/nope.html")
    check("a missing file is a problem+json 404", st == 404 and h.get("Content-Type") == "application/problem+json" and js(b)["code"] == "errorNotFound")
    for path in ["/../Package.swift", "/%2e%2e/Package.swift", "/..%2fPackage.swift", "/%2e%2e%2fPackage.swift",
                 "/css/..%2f..%2fPackage.swift", "/.git/config", "/%00index.html", "/..\\Package.swift"]:
        resp = raw(port, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        check(f"no way out of Public/: {path}", b"swift-tools-version" not in resp and statuses(resp)[:1] in ([400], [404]), resp[:80])
    st, h, b = http(port, "GET", "/v1/nothing-here", token=ADMIN)
    check("unknown /v1 route is 404 problem+json", st == 404 and js(b)["code"] == "errorNotFound")
    st, h, b = http(port, "DELETE", "/healthz")
    check("wrong method is 405 with Allow", st == 405 and "GET" in h.get("Allow", ""), h)

    print("e2e: HTTP/1.1 framing")
    resp = raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    check("pipelined requests answered in order on one connection", statuses(resp) == [200, 200, 200], resp[:200])
    resp = raw(port, b"GET /healthz HTTP/1.0\r\n\r\n")
    check("HTTP/1.0 request answered and closed", statuses(resp) == [200])
    resp = raw(port, b"POST /v1/users HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    check("Content-Length with Transfer-Encoding is 400 and closes", statuses(resp) == [400], resp[:120])
    resp = raw(port, b"POST /v1/users HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello")
    check("repeated Content-Length is 400", statuses(resp) == [400])
    resp = raw(port, b"POST /v1/users HTTP/1.1\r\nHost: x\r\nContent-Length: 1, 1\r\n\r\nx")
    check("comma-joined Content-Length is 400", statuses(resp) == [400])
    resp = raw(port, b"POST /v1/users HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n")
    check("unknown Transfer-Encoding is rejected", statuses(resp)[:1] == [400], resp[:80])
    resp = raw(port, b"GET /healthz HTTP/1.1\nHost: x\n\n")
    check("bare LF line endings are 400", statuses(resp) == [400], resp[:80])
    resp = raw(port, b"GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n")
    check("whitespace before the colon is 400", statuses(resp) == [400])
    resp = raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\r\n  folded\r\n\r\n")
    check("obsolete line folding is 400", statuses(resp) == [400])
    resp = raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n")
    check("control characters in a header are 400", statuses(resp) == [400])
    resp = raw(port, b"GET /healthz HTTP/1.1\r\n\r\n")
    check("HTTP/1.1 without Host is 400", statuses(resp) == [400])
    resp = raw(port, b"GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n")
    check("HTTP/2.0 request line is 400 (the API has no 505) and says what to send", statuses(resp) == [400]
          and b"HTTP/1.1" in resp.split(b"\r\n\r\n", 1)[-1], resp[:300])
    resp = raw(port, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    check("the HTTP/2 connection preface is 400 with a clear message", statuses(resp) == [400]
          and b"HTTP/2 connection preface" in resp, resp[:300])
    resp = raw(port, b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    check("over-long request line is 414", statuses(resp) == [414], resp[:80])
    resp = raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 17000 + b"\r\n\r\n")
    check("header block over 16 KiB is 431", statuses(resp) == [431], resp[:80])
    many = b"".join(b"X-%d: v\r\n" % i for i in range(101))
    resp = raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")
    check("more than 100 header fields is 431", statuses(resp) == [431], resp[:80])
    resp = raw(port, b"POST /v1/users HTTP/1.1\r\nHost: x\r\nContent-Length: 17000000\r\n\r\n")
    check("body over 16 MiB is 413 before it is sent", statuses(resp) == [413], resp[:80])
    resp = raw(port, b"POST /v1/users HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
    check("bad chunk size is 400", statuses(resp) == [400], resp[:80])
    resp = raw(port, b"POST /v1/users HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\n")
    check("chunk size overflow is 400 or 413", statuses(resp)[:1] in ([400], [413]), resp[:80])
    resp = raw(port, b"POST /v1/users HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ADMIN.encode()
               + b"\r\nContent-Length: 2\r\nExpect: 100-continue\r\nContent-Type: application/json\r\n\r\n", read_timeout=1.0)
    check("Expect: 100-continue with a valid token gets 100 Continue", statuses(resp)[:1] == [100], resp[:80])
    resp = raw(port, b"POST /v1/users HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\nContent-Type: application/json\r\n\r\n", read_timeout=1.0)
    check("Expect: 100-continue without a token gets the 401, not a 100", statuses(resp) == [401], resp[:80])
    resp = raw(port, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40)
    check("a TLS handshake on the plain port is 400", statuses(resp) == [400], resp[:80])
    resp = raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n\x00\x01garbage\r\n\r\n")
    check("garbage after a good pipelined request: 200 then 400", statuses(resp) == [200, 400], resp[:300])
    st, h, b = http(port, "GET", "/healthz")
    check("server still serving after the malformed inputs", st == 200)

    print("e2e: authentication")
    st, h, b = http(port, "POST", "/v1/users", {"name": "x"})
    check("no token is 401 errorAuthenticationRequired", st == 401 and js(b)["code"] == "errorAuthenticationRequired")
    st, h, b = http(port, "POST", "/v1/users", {"name": "x"}, token="wrong-token")
    check("a wrong token is 401", st == 401)


def api_checks(port):
    print("e2e: samples and motion")
    st, h, b = http(port, "POST", "/v1/users", {"name": "e2e-user"}, token=ADMIN)
    check("admin creates a user", st == 201, b)
    user = js(b)["id"]
    st, h, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": "e2e-phone",
                    "read": ["stepCount", "distanceWalkingRunning"], "share": ["stepCount", "distanceWalkingRunning", "flightsClimbed"]}, token=ADMIN)
    token = js(b)["token"]
    body = {"samples": [{"type": "stepCount", "value": 100, "unit": "count",
                         "start": "2026-03-08T09:00:00+01:00", "end": "2026-03-08T09:10:00+01:00"}]}
    st, h, b = http(port, "POST", "/v1/samples", body, token=token)
    check("POST /v1/samples saves", st == 201 and len(js(b)["saved"]) == 1, b)
    st, h, b = http(port, "GET", "/v1/samples?type=stepCount&start=2026-03-08T09:05:00+01:00", token=token)
    check("an unencoded + offset in the query works", st == 200 and len(js(b)["samples"]) == 1, b)
    idempotency_checks(port, token)
    import math
    rows = ["t,x,y,z"] + [f"{i/50},{0.3*3*math.sin(2*math.pi*1.8*i/50)},{6.9+2.1*math.sin(2*math.pi*1.8*i/50)},6.9" for i in range(1500)]
    csv = ("\n".join(rows) + "\n").encode()
    st, h, b = http(port, "POST", "/v1/ingest/imu?session=e2e&seq=0&unit=m/s2&t0=2026-03-08T10:00:00Z", csv, token=token,
                    headers={"Content-Type": "text/csv"})
    check("CSV IMU batch counts steps", st == 200 and js(b)["totalSteps"] > 0, b[:200])
    st2, h, b2 = http(port, "POST", "/v1/ingest/imu?session=e2e&seq=0&unit=m/s2&t0=2026-03-08T10:00:00Z", csv, token=token,
                      headers={"Content-Type": "text/csv"})
    check("a repeated seq returns the first answer", st2 == 200 and b2 == b)
    st, h, b = http(port, "POST", "/v1/ingest/imu/e2e/end", token=token)
    check("ending the session answers with the final total", st == 200 and js(b)["totalSteps"] > 0, b[:200])
def app_token(port, name):
    """A new user named `name` and a token of the app "phone" that reads and shares her steps."""
    st, _, b = http(port, "POST", "/v1/users", {"name": name}, token=ADMIN)
    user = js(b)["id"]
    st, _, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": "phone", "read": ["stepCount"],
                                                         "share": ["stepCount"]}, token=ADMIN)
    return js(b)["token"]


def idempotency_checks(port, token):
    """Saves by client uuid: a re-send stores nothing twice, other content is a 409 that keeps
    nothing of its batch, and a deleted uuid can be saved again (docs/api.md, Samples)."""
    def sample(u, value, minute):
        return {"uuid": u, "type": "stepCount", "value": value, "unit": "count",
                "start": f"2026-03-09T09:{minute:02d}:00Z", "end": f"2026-03-09T09:{minute:02d}:30Z"}
    uuids = [str(uuid.uuid4()) for _ in range(300)]
    batch = {"samples": [sample(u, i % 50 + 1, i % 60) for i, u in enumerate(uuids)]}
    st, h, b = http(port, "POST", "/v1/samples", batch, token=token)
    check("a batch with client uuids saves", st == 201 and js(b)["saved"] == uuids, b[:200])
    st, h, b = http(port, "POST", "/v1/samples", batch, token=token)
    check("re-sending it answers the same uuids", st == 201 and js(b)["saved"] == uuids, b[:200])
    upper = {"samples": [dict(s, uuid=s["uuid"].upper()) for s in batch["samples"][:10]]}
    st, h, b = http(port, "POST", "/v1/samples", upper, token=token)
    check("a re-send with upper-case uuids is the same samples", st == 201, b[:200])
    st, h, b = http(port, "GET", "/v1/samples?type=stepCount&start=2026-03-09T00:00:00Z&end=2026-03-10T00:00:00Z&limit=1000",
                    token=token)
    check("the re-sends stored nothing twice", st == 200 and len(js(b)["samples"]) == 300, len(js(b).get("samples", [])))
    new = str(uuid.uuid4())
    changed = {"samples": [sample(new, 1, 1), dict(batch["samples"][7], value=999)]}
    st, h, b = http(port, "POST", "/v1/samples", changed, token=token)
    check("other content under a stored uuid is a 409", st == 409, b[:300])
    st, h, b = http(port, "GET", f"/v1/samples/{new}", token=token)
    check("nothing of the conflicting batch is kept", st == 404, b[:200])
    st, h, b = http(port, "GET", f"/v1/samples/{uuids[7]}", token=token)
    check("GET by uuid finds a saved sample", st == 200 and js(b)["value"] == 8, b[:200])
    st, h, b = http(port, "DELETE", f"/v1/samples/{uuids[7]}", token=token)
    check("DELETE by uuid is 204", st == 204, b[:200])
    st, h, b = http(port, "GET", f"/v1/samples/{uuids[7]}", token=token)
    check("a deleted sample is not found", st == 404, b[:200])
    st, h, b = http(port, "DELETE", f"/v1/samples/{uuids[7]}", token=token)
    check("deleting it again is 404", st == 404, b[:200])
    st, h, b = http(port, "POST", "/v1/samples", {"samples": [dict(batch["samples"][7], value=999)]}, token=token)
    check("a deleted uuid can be saved again, with other content", st == 201, b[:200])
    st, h, b = http(port, "GET", f"/v1/samples/{uuids[7]}", token=token)
    check("and reads back as saved the second time", st == 200 and js(b)["value"] == 999, b[:200])
    # A quantity always names its unit: without one (or in a correlation's object) the batch is a
    # 400 naming the field and listing the type's units, and nothing of it is stored.
    unitless = str(uuid.uuid4())
    st, h, b = http(port, "POST", "/v1/samples", {"samples": [
        sample(str(uuid.uuid4()), 5, 2),
        {"uuid": unitless, "type": "stepCount", "value": 150, "start": "2026-03-09T09:03:00Z"}]}, token=token)
    errors = js(b).get("errors", []) if st == 400 else []
    check("a quantity sample without a unit is a 400 naming samples[1].unit and the units stepCount takes",
          st == 400 and errors[:1] == [{"index": 1, "field": "unit", "detail": "unit is required for a quantity sample: stepCount takes count"}]
          and "samples[1].unit" in js(b).get("detail", ""), b[:400])
    st, h, b = http(port, "GET", f"/v1/samples/{unitless}", token=token)
    check("nothing of the batch without a unit is stored", st == 404, b[:200])


def privacy_traffic(port):
    """Requests whose path, query and body carry a token and health values; the access log must
    show none of them (checked after the server stops). Returns the token."""
    st, h, b = http(port, "POST", "/v1/users", {"name": "privacy-user"}, token=ADMIN)
    user = js(b)["id"]
    st, h, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": "privacy-app", "read": ["bodyMass"],
                                                         "share": ["bodyMass"]}, token=ADMIN)
    token = js(b)["token"]
    st, h, b = http(port, "POST", "/v1/samples", {"samples": [{"type": "bodyMass", "value": 4242.4242 / 100, "unit": "kg",
                                                              "start": "2026-03-08T09:00:00Z", "metadata": {"note": "7070707"}}]}, token=token)
    check("privacy: a sample with a distinctive value is saved", st == 201, b)
    http(port, "GET", "/v1/samples?type=bodyMass&start=2026-03-08T09:00:00Z&note=4242.4242", token=token)
    http(port, "GET", f"/v1/no-such-route/{token}?value=4242.4242", token=token)
    http(port, "GET", f"/nope/{token}.html?value=4242.4242")
    return token


def dashboard_asset_checks(port):
    print("e2e: dashboard files")
    st, h, b = http(port, "GET", "/")
    scripts = re.findall(rb'<script[^>]*src="([^"]+)"', b)
    check("the dashboard loads its script from a file (no inline script under the CSP)",
          scripts and b"<script>" not in b and b"style=" not in b, scripts)
    for path, kind in (("/assets/dashboard.js", "text/javascript"), ("/assets/dashboard.css", "text/css"),
                       ("/assets/sse.js", "text/javascript"), ("/favicon.svg", "image/svg+xml")):
        st, h, b = http(port, "GET", path)
        check(f"GET {path} is {kind}", st == 200 and h.get("Content-Type", "").startswith(kind), (st, h.get("Content-Type")))


def cli_checks(binary, public, busy_port):
    print("e2e: command line")
    env = dict(os.environ, HEALTHD_ADMIN_TOKEN=ADMIN, HEALTHD_PUBLIC_DIR=public)
    def run(*args, timeout=20):
        p = subprocess.run([binary, *args], capture_output=True, text=True, env=env, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    code, out, err = run("--help")
    check("healthd --help lists the commands", code == 0 and "serve" in out and "--data-dir" in out)
    code, out, err = run("serve", "--help")
    check("healthd serve --help lists its flags", code == 0 and "--port" in out and "--demo" in out)
    code, out, err = run("serve", "--bogus")
    check("an unknown flag is a usage error (exit 2)", code == 2 and "unknown option" in err)
    tmp = tempfile.mkdtemp(prefix="healthd-e2e-cli-")
    try:
        code, out, err = run("serve", "--port", str(busy_port), *store_args(os.path.join(tmp, "d1")))
        check("a busy port is one clear line that says what to do", code == 1 and "another program is listening there" in err
              and "--port" in err and err.count("\n") == 1, err)
        code, out, err = run("serve", "--config", os.path.join(tmp, "missing.json"))
        check("an unreadable config file is one clear line", code == 1 and "config file" in err and err.count("\n") == 1, err)
        bad = os.path.join(tmp, "bad.json")
        open(bad, "w").write('{"prot": 1}')
        code, out, err = run("serve", "--config", bad, "--data-dir", os.path.join(tmp, "d2"))
        check("an unknown config key is named", code == 1 and "prot" in err, err)
        blocked = os.path.join(tmp, "file-not-dir")
        open(blocked, "w").write("x")
        if DATABASE["base"]:
            # The data directory only holds the admin token file then; the database must be reachable.
            code, out, err = run("serve", "--port", "0", "--data-dir", os.path.join(tmp, "d5"),
                                 "--database", "postgres://nobody@127.0.0.1:1/none")
            check("an unreachable database is one clear line", code == 1 and "PostgreSQL" in err and err.count("\n") == 1, err)
        else:
            code, out, err = run("serve", "--port", "0", "--data-dir", os.path.join(blocked, "data"))
            check("an unusable data directory is one clear line", code == 1 and "data directory" in err and err.count("\n") == 1, err)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
def read_until(sock, data, predicate, timeout=10.0):
    """Reads from sock into data until predicate(data) holds, the peer closes, or timeout."""
    deadline = time.time() + timeout
    while not predicate(data) and time.time() < deadline:
        ready, _, _ = select.select([sock], [], [], max(0.0, deadline - time.time()))
        if not ready:
            break
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


class ReadWatch:
    """Reads `sock` on a thread until predicate(data) holds (or the peer closes, or `timeout`), and
    stamps when that happened (time.monotonic()). Why: a check that first waits for a request and
    only then reads the socket measures that request's round trip, not when the bytes arrived (a
    disk with slow fsyncs made a stream that had ended at once look a second late)."""

    def __init__(self, sock, data, predicate, timeout=30.0):
        import threading
        self.data, self.at = data, None
        self.predicate = predicate
        self.thread = threading.Thread(target=self._read, args=(sock, timeout), daemon=True)
        self.thread.start()

    def _read(self, sock, timeout):
        self.data = read_until(sock, self.data, self.predicate, timeout)
        if self.predicate(self.data):
            self.at = time.monotonic()

    def result(self, since):
        """(data, seconds from `since` until the predicate held, or None if it never did)."""
        self.thread.join()
        return self.data, (None if self.at is None else self.at - since)


def stream_ended(data):
    """The chunked body's last chunk arrived."""
    return data.endswith(b"0\r\n\r\n")


def open_event_stream(port, token, last_event_id=None):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    extra = f"Last-Event-ID: {last_event_id}\r\n" if last_event_id else ""
    s.sendall(f"GET /v1/changes/stream?types=stepCount HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
              f"Accept: text/event-stream\r\n{extra}\r\n".encode())
    return s


def event_ids(data):
    return re.findall(rb"id: ([A-Za-z0-9_-]+)\nevent: change\n", data)


def change_feed_checks(port):
    """Returns an open event stream, to be checked for a clean end after the graceful stop."""
    print("e2e: change feed")
    st, _, b = http(port, "POST", "/v1/users", {"name": "feed"}, token=ADMIN)
    user = js(b)["id"]
    st, _, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": "e2e", "read": ["stepCount"], "share": ["stepCount"]}, token=ADMIN)
    token = js(b)["token"]

    def save(n):
        uid = "00000000-0000-4000-8000-%012d" % n
        sample = {"uuid": uid, "type": "stepCount", "value": n, "unit": "count",
                  "start": "2026-03-01T10:%02d:00Z" % n, "end": "2026-03-01T10:%02d:30Z" % n}
        st, _, _ = http(port, "POST", "/v1/samples", {"samples": [sample]}, token=token)
        return st, uid

    st, _, b = http(port, "GET", "/v1/changes?types=stepCount", token=token)
    anchor = js(b)["anchor"]
    check("GET /v1/changes without an anchor is 200 with an anchor", st == 200 and anchor and js(b)["added"] == [])

    # A long-poll on one connection, woken by a POST on another.
    poll = socket.create_connection(("127.0.0.1", port), timeout=30)
    poll.sendall(f"GET /v1/changes?types=stepCount&wait=30&anchor={anchor} HTTP/1.1\r\nHost: x\r\n"
                 f"Authorization: Bearer {token}\r\nConnection: close\r\n\r\n".encode())
    time.sleep(0.3)
    parked = read_until(poll, b"", lambda d: len(d) > 0, timeout=0.2)
    check("a long-poll with nothing new stays open", parked == b"", parked[:80])
    started = time.time()
    st, uid = save(1)
    answer = read_until(poll, b"", lambda d: b"\r\n\r\n" in d and uid.encode() in d, timeout=28)
    elapsed = time.time() - started
    poll.close()
    check("the long-poll answers 200 with the sample a POST from another connection saved",
          statuses(answer) == [200] and uid.encode() in answer, answer[:200])
    # Woken by the save, not by its 30 s wait running out (which answers an empty page): any time
    # well short of 30 s tells the two apart, however slow the machine.
    check("the long-poll answered well before its 30 s wait", elapsed < 20, elapsed)
    st, _, b = http(port, "GET", "/v1/changes?types=stepCount&wait=1&anchor=" + js(answer.split(b"\r\n\r\n", 1)[1])["anchor"], token=token)
    check("a long-poll with nothing new times out with an empty page", st == 200 and js(b)["added"] == [] and js(b)["more"] is False, b[:120])
    # A client that stops sending ends its long-poll: a half-closed one reads the (empty) answer
    # at once; one that hangs up leaves no waiter behind (the /metrics gauge goes back to 0).
    def parked_polls():
        _, _, text = http(port, "GET", "/metrics")
        line = [l for l in text.decode().splitlines() if l.startswith("healthd_change_long_polls ")]
        return int(float(line[0].split()[1])) if line else -1

    latest = js(answer.split(b"\r\n\r\n", 1)[1])["anchor"]
    half = socket.create_connection(("127.0.0.1", port), timeout=30)
    half.sendall(f"GET /v1/changes?types=stepCount&wait=30&anchor={latest} HTTP/1.1\r\nHost: x\r\n"
                 f"Authorization: Bearer {token}\r\n\r\n".encode())
    check("a parked long-poll shows in healthd_change_long_polls", wait_until(lambda: parked_polls() == 1), parked_polls())
    started = time.time()
    half.shutdown(socket.SHUT_WR)
    early = read_until(half, b"", lambda d: b"\r\n\r\n" in d and d.rstrip().endswith(b"}"), timeout=28)
    half.close()
    # "At once" against the 30 s it would otherwise wait: a bound well short of that holds on a
    # loaded machine and still fails a server that only answers when the wait runs out.
    check("a half-closed long-poll is answered at once with an empty page",
          statuses(early) == [200] and b'"added":[]' in early.replace(b" ", b"") and time.time() - started < 20,
          (time.time() - started, early[:160]))
    gone = socket.create_connection(("127.0.0.1", port), timeout=30)
    gone.sendall(f"GET /v1/changes?types=stepCount&wait=30&anchor={latest} HTTP/1.1\r\nHost: x\r\n"
                 f"Authorization: Bearer {token}\r\n\r\n".encode())
    wait_until(lambda: parked_polls() == 1)
    gone.close()
    check("a long-poll whose client hung up leaves no parked waiter", wait_until(lambda: parked_polls() == 0), parked_polls())

    st, _, b = http(port, "GET", "/v1/changes?types=stepCount&anchor=forged", token=token)
    check("a forged anchor is 400", st == 400 and js(b)["code"] == "errorInvalidArgument")

    # Server-Sent Events read off a raw socket, as curl -N would.
    stream = open_event_stream(port, token)
    data = read_until(stream, b"", lambda d: len(event_ids(d)) >= 1)
    head = data.split(b"\r\n\r\n", 1)[0].lower()
    check("the stream is 200 text/event-stream, chunked", statuses(data)[:1] == [200] and b"content-type: text/event-stream" in head
          and b"transfer-encoding: chunked" in head, data[:300])
    first_id = (event_ids(data) or [b""])[0].decode()
    st, uid2 = save(2)
    data = read_until(stream, data, lambda d: uid2.encode() in d)
    check("a POST on another connection arrives as an event: change", uid2.encode() in data and len(event_ids(data)) == 2, data[-300:])
    resumed = open_event_stream(port, token, last_event_id=first_id)
    replay = read_until(resumed, b"", lambda d: uid2.encode() in d)
    resumed.close()
    check("Last-Event-ID resumes with what came after it", uid2.encode() in replay and uid.encode() not in replay, replay[-300:])
    bad = raw(port, f"GET /v1/changes/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nLast-Event-ID: nope\r\nConnection: close\r\n\r\n".encode())
    check("a forged Last-Event-ID is 400", statuses(bad) == [400], bad[:80])
    return stream


def revocation_checks(port):
    """A revoked token's open stream and parked long-poll end within 1 s; nothing saved after reaches them."""
    print("e2e: revocation reaches open streams and long-polls")
    st, _, b = http(port, "POST", "/v1/users", {"name": "revoked"}, token=ADMIN)
    user = js(b)["id"]
    st, _, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": "follower", "read": ["stepCount"], "share": []}, token=ADMIN)
    token, authorization = js(b)["token"], js(b)["id"]
    st, _, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": "writer", "read": [], "share": ["stepCount"]}, token=ADMIN)
    writer = js(b)["token"]
    st, _, b = http(port, "GET", "/v1/changes?types=stepCount", token=token)
    anchor = js(b)["anchor"]
    stream = open_event_stream(port, token)
    data = read_until(stream, b"", lambda d: len(event_ids(d)) >= 1)
    poll = socket.create_connection(("127.0.0.1", port), timeout=30)
    poll.sendall(f"GET /v1/changes?types=stepCount&wait=30&anchor={anchor} HTTP/1.1\r\nHost: x\r\n"
                 f"Authorization: Bearer {token}\r\nConnection: close\r\n\r\n".encode())
    time.sleep(0.3)
    stream_watch = ReadWatch(stream, data, stream_ended)
    poll_watch = ReadWatch(poll, b"", lambda d: b"\r\n\r\n" in d)
    revoked_at = time.monotonic()
    st, _, _ = http(port, "DELETE", f"/v1/authorizations/{authorization}", token=ADMIN)
    later = "00000000-0000-4000-8000-0000000a11ce"
    http(port, "POST", "/v1/samples", {"samples": [{"uuid": later, "type": "stepCount", "value": 5, "unit": "count",
                                                     "start": "2026-03-01T11:00:00Z", "end": "2026-03-01T11:00:30Z"}]}, token=writer)
    data, ended = stream_watch.result(revoked_at)
    answer, answered = poll_watch.result(revoked_at)
    stream.close()
    poll.close()
    elapsed = max(ended if ended is not None else 99, answered if answered is not None else 99)
    check("a revocation ends the token's stream (event: error, last chunk) and answers its parked long-poll 401 within 1 s",
          st == 204 and b"event: error" in data and stream_ended(data) and statuses(answer) == [401] and elapsed < 1,
          (st, round(elapsed, 3), data[-120:], answer[:80]))
    check("nothing saved after the revocation reaches the stream or the poll", later.encode() not in data + answer)


def zone_events(data):
    return [js(m) for m in re.findall(rb"event: zone\ndata: (\{[^\n]*\})\n\n", data)]


def workout_session_checks(port):
    """A coaching app's session: zone events on a raw-socket stream, then the saved workout."""
    print("e2e: workout sessions and zone events")
    st, _, b = http(port, "POST", "/v1/users", {"name": "runner"}, token=ADMIN)
    user = js(b)["id"]
    st, _, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": "coach", "read": ["heartRate", "activeEnergyBurned"],
                                                         "share": ["workout", "heartRate", "activeEnergyBurned"]}, token=ADMIN)
    coach = js(b)["token"]
    st, _, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": "steps", "read": ["stepCount"], "share": []}, token=ADMIN)
    steps = js(b)["token"]

    st, _, b = http(port, "POST", "/v1/workout-sessions", {"activityType": "running", "zone": {"low": 120, "high": 150}}, token=coach)
    session = js(b) or {}
    check("POST /v1/workout-sessions is 201 running", st == 201 and session.get("state") == "running" and session.get("start"), b[:200])
    st, _, b = http(port, "POST", "/v1/workout-sessions", {"activityType": "running", "zone": {"low": 150, "high": 120}}, token=coach)
    check("a zone with low >= high is 400 naming zone.high", st == 400 and b"zone.high" in b, b[:200])
    st, _, b = http(port, "POST", "/v1/workout-sessions", {"activityType": "running"}, token=steps)
    check("starting without share permission for workout is 403", st == 403, b[:120])
    sid = session.get("id", "")
    start = session.get("start", "2026-01-01T00:00:00.000Z")
    # calendar.timegm reads the UTC time as UTC (mktime minus time.timezone is an hour off in a
    # local zone's summer time).
    base = calendar.timegm(time.strptime(start[:19], "%Y-%m-%dT%H:%M:%S")) + int(start[20:23]) / 1000

    def at(seconds):
        t = base + seconds
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % int(round((t % 1) * 1000) % 1000)

    def open_stream(token):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(f"GET /v1/changes/stream?types=heartRate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
        return s, read_until(s, b"", lambda d: b"event: change" in d)

    reader, data = open_stream(coach)
    other, other_data = open_stream(steps)
    for seconds, bpm in [(1, 100), (2, 110), (3, 135), (4, 170)]:
        sample = {"type": "heartRate", "value": bpm, "unit": "count/min", "start": at(seconds), "end": at(seconds)}
        http(port, "POST", "/v1/samples", {"samples": [sample]}, token=coach)
    data = read_until(reader, data, lambda d: len(zone_events(d)) >= 3)
    events = zone_events(data)
    check("the reader's stream carries event: zone below, in, above (110 bpm is no change)",
          [e.get("state") for e in events] == ["below", "in", "above"] and [e.get("heartRate") for e in events] == [100, 135, 170]
          and all(e.get("session") == sid for e in events), data[-400:])
    check("zone events carry no id (Last-Event-ID stays a change anchor)", b"id: " not in data.split(b"event: zone")[1].split(b"\n\n")[0], data[-200:])
    other_data = read_until(other, other_data, lambda d: b"event: zone" in d, timeout=1.0)
    check("an app that may not read heartRate gets no zone event", b"event: zone" not in other_data, other_data[-200:])
    reader.close()
    other.close()

    st, _, b = http(port, "POST", f"/v1/workout-sessions/{sid}/resume", token=coach)
    check("resume while running is 409 naming the state", st == 409 and b"running" in b, b[:200])
    st, _, b = http(port, "POST", f"/v1/workout-sessions/{sid}/pause", token=coach)
    check("pause is 200 paused", st == 200 and js(b)["state"] == "paused", b[:200])
    st, _, b = http(port, "POST", f"/v1/workout-sessions/{sid}/resume", body=b"{}", token=coach)
    check("resume is 200 running", st == 200 and js(b)["state"] == "running", b[:200])
    st, _, b = http(port, "POST", f"/v1/workout-sessions/{sid}/pause", token=steps)
    check("another app's session is 404", st == 404, b[:120])
    st, _, b = http(port, "POST", f"/v1/workout-sessions/{sid}/end", token=coach)
    ended = js(b) or {}
    check("end is 200 ended with the saved workout's uuid", st == 200 and ended.get("state") == "ended" and ended.get("workout"), b[:300])
    st, _, b = http(port, "GET", f"/v1/samples/{ended.get('workout')}", token=coach)
    workout = js(b) or {}
    check("the workout sample carries the activity type and pause/resume events",
          st == 200 and workout.get("activityType") == "running" and [e["type"] for e in workout.get("events", [])] == ["pause", "resume"], b[:300])


def check_stream_ended(stream):
    data = read_until(stream, b"", stream_ended, timeout=5)
    stream.close()
    check("an open event stream ends cleanly (last chunk) on graceful stop", stream_ended(data), data[-80:])
def start_and_read(argv, cwd, env, want, timeout=60):
    """Starts healthd, collects stdout and stderr until a stdout line matches `want` (a regex); returns
    (process, port, stdout text so far, stderr reader). The caller stops the process."""
    import queue, threading
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines, errors = queue.Queue(), []
    threading.Thread(target=lambda: [lines.put(l) for l in proc.stdout], daemon=True).start()
    threading.Thread(target=lambda: errors.extend(proc.stderr), daemon=True).start()
    out, port, deadline = [], None, time.time() + timeout
    while time.time() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            if proc.poll() is not None:
                break
            continue
        out.append(line)
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            port = int(m.group(1))
        if re.search(want, line):
            break
    return proc, port, "".join(out), errors


def first_start_checks(binary, public):
    """What a new user meets: --version, no command, the admin token's path, and the dashboard found
    from any working directory (a checkout's binary, an installed one), or a warning instead of its URL."""
    print("e2e: first start from elsewhere")
    binary = os.path.abspath(binary)
    env = {k: v for k, v in os.environ.items() if k not in ("HEALTHD_PUBLIC_DIR", "HEALTHD_ADMIN_TOKEN", "HEALTHD_PORT")}
    p = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=20)
    check("healthd --version prints the version", p.returncode == 0 and re.fullmatch(r"healthd \d+\.\d+\.\d+\n", p.stdout), p.stdout)
    p = subprocess.run([binary], capture_output=True, text=True, timeout=20)
    check("healthd with no command exits 2 with usage on stderr", p.returncode == 2 and "Usage: healthd COMMAND" in p.stderr, p)
    p = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True, timeout=20)
    check("serve --help lists --public-dir and HEALTHD_PUBLIC_DIR", "--public-dir" in p.stdout and "HEALTHD_PUBLIC_DIR" in p.stdout)
    tmp = tempfile.mkdtemp(prefix="healthd-e2e-elsewhere-")
    prefix = os.path.join(tmp, "prefix")
    os.makedirs(os.path.join(prefix, "bin"))
    os.makedirs(os.path.join(prefix, "share", "healthd"))
    shutil.copy2(binary, os.path.join(prefix, "bin", "healthd"))
    shutil.copytree(public, os.path.join(prefix, "share", "healthd", "Public"))
    try:
        for label, exe in (("the build's binary", binary), ("an installed binary", os.path.join(prefix, "bin", "healthd"))):
            for run in ("first", "second"):
                data = os.path.join(tmp, "data-" + label.split()[1])
                proc, port, out, errors = start_and_read([exe, "serve", "--port", "0", *store_args(data), "--demo"],
                                                         cwd="/", env=env, want=r"^dashboard: http")
                try:
                    token_file = os.path.join(data, "admin-token")
                    check(f"{label}, {run} start: the admin token file's path is printed", token_file in out, out)
                    where = "data: PostgreSQL, postgres" if DATABASE["base"] else f"data: SQLite, {os.path.join(data, 'healthd.sqlite')}"
                    check(f"{label}, {run} start: where the data is, in full, is printed", where in out, out)
                    if run == "second":
                        token = open(token_file).read().strip()
                        check(f"{label}: a later start does not print the token", token not in out, out)
                        continue
                    check(f"{label}, started in /: serve --demo prints the dashboard URL", "dashboard: http" in out, out + "".join(errors))
                    for path in ("/", "/openapi.json"):
                        st, _, _ = http(port, "GET", path) if port else (None, None, None)
                        check(f"{label}, started in /: GET {path} is 200", st == 200, st)
                finally:
                    proc.terminate()
                    proc.wait(20)
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        chosen = probe.getsockname()[1]
        probe.close()
        proc, port, out, errors = start_and_read([binary, "serve", *store_args(os.path.join(tmp, "d4"))], cwd=tmp,
                                                 env=dict(env, HEALTHD_PORT=str(chosen)), want=r"listening on")
        proc.terminate()
        proc.wait(20)
        check("HEALTHD_PORT sets the port", port == chosen, (port, chosen, out, errors))
        # A stop sent the moment the server says it listens must not be lost (it once was, now and
        # then, while the main thread had not yet started waiting for signals).
        stopped = []
        for attempt in range(12):
            proc, port, out, errors = start_and_read([binary, "serve", "--port", "0", *store_args(os.path.join(tmp, "d5"))],
                                                     cwd=tmp, env=env, want=r"listening on")
            proc.send_signal(signal.SIGTERM if attempt % 2 == 0 else signal.SIGINT)
            try:
                stopped.append(proc.wait(20))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                stopped.append("hung")
        check("SIGTERM or SIGINT right after 'listening on' stops the server cleanly, 12 times of 12",
              stopped == [0] * 12, stopped)
        proc, port, out, errors = start_and_read([binary, "serve", "--port", "0", *store_args(os.path.join(tmp, "d3")),
                                                  "--public-dir", os.path.join(tmp, "nowhere"), "--demo"],
                                                 cwd=tmp, env=env, want=r"^demo read token")
        try:
            check("a missing dashboard folder: no dashboard URL, a demo token instead",
                  "dashboard: http" not in out and "demo read token" in out, out)
            # Written before the stdout line above, but read by another thread: wait for it.
            check("a missing dashboard folder is a warning on stderr naming the fix",
                  wait_until(lambda: any("no dashboard files" in e and "--public-dir" in e for e in errors)), errors)
        finally:
            proc.terminate()
            proc.wait(20)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def seed_and_demo_checks(binary, public):
    """healthd seed twice stores nothing twice; serve --demo prints a dashboard URL whose token reads steps."""
    print("e2e: seed and demo")
    data_dir = tempfile.mkdtemp(prefix="healthd-e2e-seed-")
    try:
        def seed():
            run = subprocess.run([binary, "seed", "--user", "e2e-seed", "--days", "7", *store_args(data_dir)],
                                 capture_output=True, text=True, timeout=120)
            return run, int(query_store(data_dir, "SELECT count(*) FROM samples") or 0)
        first, first_count = seed()
        check("healthd seed exits 0 and prints a line per type", first.returncode == 0 and
              re.search(r"^stepCount\s+\d+ samples \(phone \d+, watch \d+\), \d+ new$", first.stdout, re.M) is not None,
              first.stdout[-300:] + first.stderr)
        second, second_count = seed()
        check("a second healthd seed stores nothing twice", second.returncode == 0 and first_count > 1000 and
              second_count == first_count and second.stdout.rstrip().endswith(", 0 new"), (first_count, second_count, second.stdout[-200:]))
        bad = subprocess.run([binary, "seed", "--days", "7", *store_args(data_dir)], capture_output=True, text=True, timeout=30)
        check("healthd seed without --user is a usage error (status 2)", bad.returncode == 2 and "--user" in bad.stderr, bad.stderr)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)

    for attempt in ("fresh", "rerun"):
        server = Server(binary, public, data_dir=None if attempt == "fresh" else demo_dir, extra=("--demo",), drain=False)
        demo_dir = server.data_dir
        try:
            # A reader thread: select() cannot see lines already buffered by the text wrapper.
            import queue, threading
            lines = queue.Queue()
            threading.Thread(target=lambda out=server.proc.stdout: [lines.put(l) for l in out], daemon=True).start()
            url, deadline = None, time.time() + 120
            while url is None and time.time() < deadline:
                try:
                    line = lines.get(timeout=0.5)
                except queue.Empty:
                    if server.proc.poll() is not None:
                        break
                    continue
                url = re.search(r"dashboard: (http://\S+/#(?:\S+&)?token=(\S+))", line)
            check(f"serve --demo ({attempt} data dir) prints a dashboard URL with a token", url is not None)
            if url is None:
                continue
            token = url.group(2)
            st, h, b = http(server.port, "GET", "/v1/samples?type=stepCount&limit=5", token=token)
            check(f"the demo token reads steps ({attempt})", st == 200 and len(js(b)["samples"]) == 5, b[:200])
            st, h, b = http(server.port, "GET", "/v1/heart-rate/zones?goal=cardio", token=token)
            zone = js(b) or {}
            check(f"heart-rate zones for the demo user use Karvonen and the stored birth date ({attempt})",
                  st == 200 and zone.get("method") == "karvonen" and zone.get("low", 0) < zone.get("high", 0), b[:200])
            st, h, b = http(server.port, "GET", "/v1/heart-rate/zones?goal=sprint", token=token)
            check("an unknown zone goal is a 400", st == 400 and js(b)["code"] == "errorInvalidArgument")
            st, h, b = http(server.port, "POST", "/v1/samples", {"samples": [{"type": "stepCount", "value": 1, "unit": "count",
                                                                             "start": "2026-01-01T00:00:00Z"}]}, token=token)
            check("the demo token is read-only", st == 403)
        finally:
            server.stop()
            if server.proc.poll() is None:
                server.proc.kill()
    users = query_store(demo_dir, "SELECT count(*) FROM users WHERE name = 'demo'")
    check("a rerun of serve --demo keeps one demo user", users == "1", users)
    shutil.rmtree(demo_dir, ignore_errors=True)

def import_export_checks(binary, public):
    """healthd import (zip and XML, twice), then GET /v1/export and healthd export agree."""
    print("e2e: Apple Health import and export")
    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fixtures", "apple-health")
    data_dir = tempfile.mkdtemp(prefix="healthd-e2e-import-")
    try:
        def run(*args):
            return subprocess.run([binary, *args, *store_args(data_dir)], capture_output=True, text=True, timeout=120)
        first = run("import", os.path.join(fixtures, "alxdrcirilo", "export.zip"), "--user", "me")
        check("import export.zip exits 0", first.returncode == 0, first.stderr)
        check("import export.zip stores 8 samples", "imported 8 new samples" in first.stdout, first.stdout)
        again = run("import", os.path.join(fixtures, "alxdrcirilo", "export.xml"), "--user", "me")
        check("importing the same export as XML stores nothing twice",
              again.returncode == 0 and "imported 0 new samples" in again.stdout and "8 already stored" in again.stdout, again.stdout)
        dtd = run("import", os.path.join(fixtures, "tdda", "export6s3sample.xml"), "--user", "me")
        check("import with an internal DTD", dtd.returncode == 0 and "imported 16 new samples" in dtd.stdout, dtd.stdout + dtd.stderr)
        bad_path = os.path.join(data_dir, "not-an-export.zip")
        with open(bad_path, "wb") as f:
            f.write(b"PK\x03\x04 this is no zip")
        bad = run("import", bad_path, "--user", "me")
        check("a broken zip is one clear error line, status 1", bad.returncode == 1 and bad.stderr.startswith("healthd:"), bad.stderr)
        empty_path = os.path.join(data_dir, "empty.ndjson")
        open(empty_path, "w").close()
        empty = run("import", empty_path, "--user", "me")
        check("an empty file is 'is empty', not 'neither an export nor NDJSON'", empty.returncode == 1
              and "empty.ndjson is empty" in empty.stderr and empty.stderr.count("\n") == 1, empty.stderr)
        out_path = os.path.join(data_dir, "export.ndjson")
        exported = run("export", "--user", "me", "--output", out_path)
        lines = [json.loads(l) for l in open(out_path)] if exported.returncode == 0 else []
        check("healthd export writes the person's settings, then every sample as NDJSON",
              len(lines) == 25 and "healthdBackup" in lines[0], exported.stdout + exported.stderr)
        lines = lines[1:]

        server = Server(binary, public, data_dir=data_dir)
        try:
            types = ["heartRate", "activeEnergyBurned", "appleExerciseTime", "appleStandTime", "sleepAnalysis",
                     "stepCount", "distanceWalkingRunning", "workout"]
            status, _, body = http(server.port, "POST", "/v1/authorizations",
                                   {"user": "me", "app": "e2e-export", "read": types, "share": []}, token=ADMIN)
            token = (js(body) or {}).get("token")
            check("authorization for the imported user", status == 201 and token, body)
            status, headers, body = http(server.port, "GET", "/v1/export", token=token)
            streamed = [json.loads(l) for l in body.decode().splitlines() if l]
            check("GET /v1/export streams NDJSON", status == 200 and headers.get("Content-Type") == "application/x-ndjson", headers)
            check("GET /v1/export has the same samples as healthd export",
                  [s["uuid"] for s in streamed] == [s["uuid"] for s in lines], (len(streamed), len(lines)))
            check("GET /v1/export is chunked", headers.get("Transfer-Encoding") == "chunked", headers)
            status, _, body = http(server.port, "GET", "/v1/export?types=sleepAnalysis", token=token)
            check("GET /v1/export?types= filters", status == 200 and len(body.decode().splitlines()) == 2, body[:200])
            status, _, body = http(server.port, "GET", "/v1/export?types=bogus", token=token)
            check("GET /v1/export with an unknown type is 400", status == 400, body)
        finally:
            server.stop()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def round_trip_checks(binary, public):
    """Backup and restore: healthd export, healthd import into a fresh data dir (twice), and every
    statistics answer is identical."""
    print("e2e: NDJSON round trip (export, import into a fresh server, same statistics)")
    tmp = tempfile.mkdtemp(prefix="healthd-e2e-roundtrip-")
    try:
        def run(data, *args):
            return subprocess.run([binary, *args, *store_args(os.path.join(tmp, data))], capture_output=True, text=True, timeout=300)
        seeded = run("old", "seed", "--user", "robin", "--days", "14")
        # A workout with its route (HKWorkoutRoute), as an app would save them: routes go through the
        # export and back too.
        run_workout = "0195c8a4-1f00-7000-8000-0000000000a1"
        extra = os.path.join(tmp, "route.ndjson")
        with open(extra, "w") as out:
            day = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 3 * 86400))
            out.write(json.dumps({"uuid": run_workout, "type": "workout", "activityType": "running",
                                  "start": f"{day}T07:00:00Z", "end": f"{day}T07:30:00Z", "source": {"app": "route-app"}}) + "\n")
            out.write(json.dumps({"uuid": "0195c8a4-1f00-7000-8000-0000000000a2", "type": "workoutRoute", "workout": run_workout,
                                  "start": f"{day}T07:00:00Z", "end": f"{day}T07:15:00Z", "source": {"app": "route-app"}, "locations": [
                                      {"date": f"{day}T07:00:00Z", "latitude": 40.7, "longitude": -74.0, "altitude": 10, "speed": 3.1},
                                      {"date": f"{day}T07:15:00Z", "latitude": 40.71, "longitude": -74.01, "altitude": 12}]}) + "\n")
        routed = run("old", "import", extra, "--user", "robin")
        check("a workout and its route import into the server to back up", routed.returncode == 0
              and "imported 2 new samples" in routed.stdout, routed.stdout[-300:] + routed.stderr)
        backup = os.path.join(tmp, "robin.ndjson")
        exported = run("old", "export", "--user", "robin", "--output", backup)
        check("seed and export for the round trip", seeded.returncode == 0 and exported.returncode == 0, seeded.stderr + exported.stderr)
        lines = sum(1 for _ in open(backup)) - 1  # the settings line
        first = run("new", "import", backup, "--user", "robin")
        check("healthd import reads healthd's own NDJSON export", first.returncode == 0 and
              f"imported {lines} new samples" in first.stdout and "0 skipped" in first.stdout, first.stdout[-400:] + first.stderr)
        again = run("new", "import", backup, "--user", "robin")
        check("importing the same export again stores nothing twice", again.returncode == 0 and
              "imported 0 new samples" in again.stdout and f"{lines} already stored" in again.stdout, again.stdout[-300:])
        home = run("old", "import", backup, "--user", "robin")
        check("importing an export into its own server stores nothing twice", home.returncode == 0 and
              "imported 0 new samples" in home.stdout, home.stdout[-300:])

        types = ["stepCount", "distanceWalkingRunning", "activeEnergyBurned", "heartRate", "restingHeartRate", "bodyMass",
                 "appleExerciseTime", "appleStandTime", "appleStandHour", "sleepAnalysis", "workout", "workoutRoute", "flightsClimbed"]
        answers = {}
        # One "now" for both servers: a run that crosses midnight UTC must ask both the same questions.
        now = time.time()
        end = time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime(now + 86400))
        start = time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime(now - 16 * 86400))
        today = time.strftime("%Y-%m-%d", time.gmtime(now))
        for name in ("old", "new"):
            server = Server(binary, public, data_dir=os.path.join(tmp, name))
            try:
                st, _, b = http(server.port, "POST", "/v1/authorizations", {"user": "robin", "app": "round-trip", "read": types,
                                                                             "share": []}, token=ADMIN)
                token = (js(b) or {}).get("token")
                got = []
                for kind, options in (("stepCount", "cumulativeSum,separateBySource"), ("distanceWalkingRunning", "cumulativeSum"),
                                      ("activeEnergyBurned", "cumulativeSum"), ("appleExerciseTime", "cumulativeSum"),
                                      ("heartRate", "discreteAverage,discreteMin,discreteMax,mostRecent"),
                                      ("restingHeartRate", "discreteAverage,mostRecent"), ("bodyMass", "discreteAverage,mostRecent")):
                    for path in (f"/v1/statistics?type={kind}&options={options}&start={start}&end={end}",
                                 f"/v1/statistics/collection?type={kind}&options={options}&interval=P1D&timeZone=Europe/Berlin"
                                 f"&start={start}&end={end}"):
                        got.append((path, *http(server.port, "GET", path, token=token)[::2]))
                for path in (f"/v1/summary?date={today}&period=week&timeZone=Europe/Berlin",
                             f"/v1/activity-summaries?start={start[:10]}&end={today}&timeZone=Europe/Berlin"):
                    got.append((path, *http(server.port, "GET", path, token=token)[::2]))
                path = f"/v1/workouts/{run_workout}/route"
                got.append((path, *http(server.port, "GET", path, token=token)[::2]))
                st, _, b = http(server.port, "GET", "/v1/export", token=token)
                got.append(("export uuids", st, sorted(json.loads(l)["uuid"] for l in b.decode().splitlines() if l)))
                answers[name] = got
            finally:
                server.stop()
        old, new = answers["old"], answers["new"]
        check("the compared answers hold figures", b'"sum"' in old[0][2] and b'"average"' in old[8][2], old[0][2][:200])
        check("... and the route's locations", b'"latitude":40.71' in old[-2][2], old[-2][2][:200])
        check("every statistics answer is 200 on both servers", all(a[1] == 200 for a in old + new),
              [a[:2] for a in old + new if a[1] != 200][:3])
        differing = [o[0] for o, n in zip(old, new) if o[2] != n[2]]
        check(f"{len(old)} statistics, summary and export answers are identical after the round trip", not differing
              and len(old) == len(new), differing[:3])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def statistics_checks(port):
    print("e2e: statistics")
    st, h, b = http(port, "POST", "/v1/users", {"name": "stats-e2e"}, token=ADMIN)
    user = js(b)["id"]
    types = ["stepCount", "heartRate"]
    _, _, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": "iphone", "read": types, "share": types}, token=ADMIN)
    phone = js(b)["token"]
    _, _, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": "watch", "read": [], "share": types}, token=ADMIN)
    watch = js(b)["token"]
    walk = {"type": "stepCount", "unit": "count", "start": "2024-03-10T10:00:00-04:00", "end": "2024-03-10T10:10:00-04:00"}
    http(port, "POST", "/v1/samples", {"samples": [dict(walk, value=1000)]}, token=phone)
    http(port, "POST", "/v1/samples", {"samples": [dict(walk, value=900)]}, token=watch)
    q = "/v1/statistics?type=stepCount&options=cumulativeSum,separateBySource&start=2024-03-10T00:00:00Z&end=2024-03-11T00:00:00Z"
    st, h, b = http(port, "GET", q, token=phone)
    body = js(b) or {}
    check("iPhone + Watch overlap counted once", st == 200 and body.get("sum") == 1000 and len(body.get("sources", [])) == 2, b)
    st, h, b = http(port, "GET", q, token=watch)
    check("without read permission only the app's own steps count", st == 200 and (js(b) or {}).get("sum") == 900, b)
    q = ("/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=P1D&timeZone=America/New_York"
         "&start=2024-03-09T05:00:00Z&end=2024-03-11T04:00:00Z")
    st, h, b = http(port, "GET", q, token=phone)
    buckets = (js(b) or {}).get("buckets", [])
    check("DST day bucket spans 23 hours with both offsets",
          st == 200 and len(buckets) == 2 and buckets[1]["start"] == "2024-03-10T00:00:00.000-05:00"
          and buckets[1]["end"] == "2024-03-11T00:00:00.000-04:00" and buckets[1].get("sum") == 1000 and "sum" not in buckets[0], b)
    st, h, b = http(port, "GET", "/v1/statistics?type=stepCount&options=discreteAverage&start=2024-03-10T00:00:00Z&end=2024-03-11T00:00:00Z", token=phone)
    check("option/aggregation mismatch is 400", st == 400 and js(b)["code"] == "errorInvalidArgument", b)
    st, h, b = http(port, "PUT", "/v1/sources/priority", {"user": user, "type": "stepCount", "order": ["watch"]}, token=ADMIN)
    check("PUT /v1/sources/priority (admin)", st == 200 and js(b)["order"] == ["watch", "iphone"], b)
    st, h, b = http(port, "GET", "/v1/statistics?type=stepCount&options=cumulativeSum&start=2024-03-10T00:00:00Z&end=2024-03-11T00:00:00Z", token=phone)
    check("priority change reaches the next query", st == 200 and js(b).get("sum") == 900, b)
    st, h, b = http(port, "PUT", "/v1/sources/priority", {"user": user, "type": "stepCount", "order": ["nobody"]}, token=ADMIN)
    check("unknown app in a priority order is 400 naming it", st == 400 and b"nobody" in b, b)
    st, h, b = http(port, "GET", "/v1/summary?date=2024-03-10&timeZone=America/New_York&period=week", token=phone)
    check("weekly summary merges sources", st == 200 and js(b).get("steps") == 900 and js(b)["start"].startswith("2024-03-04"), b)
    st, h, b = http(port, "GET", "/v1/activity-summaries?start=2024-03-09&end=2024-03-10&timeZone=America/New_York", token=phone)
    check("activity summaries list every day with default goals",
          st == 200 and [d["date"] for d in js(b)["summaries"]] == ["2024-03-09", "2024-03-10"]
          and js(b)["summaries"][0]["appleStandHoursGoal"] == 12, b)


def health_auto_export_checks(port):
    """POST /v1/ingest/health-auto-export: a fixture written from the app's format, twice."""
    print("e2e: Health Auto Export")
    st, h, b = http(port, "POST", "/v1/users", {"name": "hae-e2e"}, token=ADMIN)
    user = js(b)["id"]
    types = ["stepCount", "distanceWalkingRunning", "activeEnergyBurned", "heartRate", "restingHeartRate", "bodyMass",
             "oxygenSaturation", "bloodGlucose", "bloodPressure", "bloodPressureSystolic", "bloodPressureDiastolic", "sleepAnalysis",
             "headache", "stateOfMind"]
    _, _, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": "health-auto-export", "read": types, "share": types}, token=ADMIN)
    token = js(b)["token"]
    fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fixtures", "health-auto-export", "metrics-aggregated.json")
    with open(fixture, "rb") as f:
        payload = f.read()
    st, h, b = http(port, "POST", "/v1/ingest/health-auto-export", payload, token=token)
    body = js(b) or {}
    check("the app's payload is saved (a symptom and a state of mind too), unknown metrics counted",
          st == 200 and body.get("saved") == 20 and body.get("duplicates") == 0
          and body.get("unmapped") == {"physical_effort": 2}, b)
    day = ("/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=P1D&timeZone=America/Los_Angeles"
           "&start=2024-02-06T00:00:00-08:00&end=2024-02-07T00:00:00-08:00")
    _, _, before = http(port, "GET", day, token=token)
    st, h, b = http(port, "POST", "/v1/ingest/health-auto-export", payload, token=token)
    body = js(b) or {}
    check("posting it again stores nothing twice", st == 200 and body.get("saved") == 0 and body.get("duplicates") == 20, b)
    st, h, after = http(port, "GET", day, token=token)
    buckets = (js(after) or {}).get("buckets", [])
    check("the same statistics after the re-send, in the user's local day",
          st == 200 and after == before and len(buckets) == 1 and buckets[0].get("sum") == 200, after)

    def twelve_hour(match):
        hour = int(match.group(2))
        return (f"{match.group(1)} {hour % 12 or 12}:{match.group(3)}\u202f{'PM' if hour >= 12 else 'AM'} {match.group(4)}")
    rewritten = re.sub(r"(\d{4}-\d{2}-\d{2}) (\d{2}):(\d{2}:\d{2}) ([+-]\d{4})", twelve_hour, payload.decode()).encode()
    st, h, b = http(port, "POST", "/v1/ingest/health-auto-export", rewritten, token=token)
    body = js(b) or {}
    check("the payload from a 12-hour phone (7:05:00\u202fPM) is the same samples: all duplicates",
          "\u202f".encode() in rewritten and st == 200 and body.get("saved") == 0 and body.get("duplicates") == 20, b)
    _, _, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": "second-automation", "read": [], "share": types},
                   token=ADMIN)
    st, h, b = http(port, "POST", "/v1/ingest/health-auto-export", payload, token=js(b)["token"])
    body = js(b) or {}
    check("another app's copy is its own (saved, not reported as another app's duplicate)",
          st == 200 and body.get("saved") == 20 and body.get("duplicates") == 0, b)
    st, h, after = http(port, "GET", day, token=token)
    check("statistics count the two apps' copies once (source merging)", st == 200 and after == before, after)
    st, h, b = http(port, "POST", "/v1/ingest/health-auto-export",
                    b'{"data":{"metrics":[{"name":"step_count","units":"count","data":[{"date":"06/02/2024","qty":1}]}]}}', token=token)
    errors = (js(b) or {}).get("errors", [])
    check("a malformed payload is a 400 naming the field", st == 400 and errors and errors[0]["field"] == "data.metrics[0].data[0].date", b)
    head = ("POST /v1/ingest/health-auto-export HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token
            + "\r\nContent-Type: application/json\r\nContent-Length: 200000000\r\n\r\n").encode()
    answer = raw(port, head)
    check("over the route's 128 MiB limit: 413 with advice", statuses(answer)[:1] == [413] and b"134217728" in answer
          and b"Health Auto Export" in answer, answer[:300])
    # The whole 20 MB body is sent (JSON padded with spaces): the server reading it and answering
    # shows the limit let it in, however long a loaded machine takes to say so.
    empty = b'{"data":{"metrics":[]}}'
    st, h, b = http(port, "POST", "/v1/ingest/health-auto-export", empty + b" " * (20_000_000 - len(empty)), token=token)
    check("a 20 MB body is within the route's limit (read and answered)", st != 413 and st < 500, (st, b[:300]))


def main():
    from malformed import malformed_http_checks  # modules of their own; they import this one
    from abuse import abuse_checks
    from faults import internal_error_checks
    from edge import edge_checks
    from people import people_checks
    from people_access import people_access_checks
    from webhooks import webhook_checks
    args = parse_arguments()
    if args.database:
        print(f"e2e: on PostgreSQL ({args.database})")
    server = Server(args.binary, os.path.abspath(args.public), drain=True)
    try:
        foundation_checks(server.port)
        malformed_http_checks(server.port)
        check("the server process is alive after the hostile inputs", server.proc.poll() is None)
        api_checks(server.port)
        privacy_token = privacy_traffic(server.port)
        dashboard_asset_checks(server.port)
        statistics_checks(server.port)
        health_auto_export_checks(server.port)
        cli_checks(args.binary, os.path.abspath(args.public), server.port)
        first_start_checks(args.binary, os.path.abspath(args.public))
        feed_stream = change_feed_checks(server.port)
        workout_session_checks(server.port)
        revocation_checks(server.port)
        print("e2e: graceful stop")
        code = server.stop()
        check("SIGTERM stops the server with status 0", code == 0, code)
        log = server.log()
        check("the access log has a line per request", log.count('"msg":"request"') > 20, log[-300:])
        check("no token and no health value in the access log", privacy_token not in log and ADMIN not in log
              and "4242.4242" not in log and "42.424242" not in log and "7070707" not in log, [l for l in log.splitlines() if privacy_token in l or "4242" in l][:3])
        check_stream_ended(feed_stream)
        seed_and_demo_checks(args.binary, os.path.abspath(args.public))
        import_export_checks(args.binary, os.path.abspath(args.public))
        round_trip_checks(args.binary, os.path.abspath(args.public))
        abuse_checks(args.binary, os.path.abspath(args.public))
        edge_checks(args.binary, os.path.abspath(args.public))
        people_checks(args.binary, os.path.abspath(args.public))
        internal_error_checks(args.binary, os.path.abspath(args.public))
        people_access_checks(args.binary, os.path.abspath(args.public))
        webhook_checks(args.binary, os.path.abspath(args.public))
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
        shutil.rmtree(server.data_dir, ignore_errors=True)
    print(f"e2e: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
