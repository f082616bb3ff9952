#!/usr/bin/env python3
"""End-to-end checks for healthd: a real server process, real sockets, real HTTP.

Each check prints one line; the run ends with 'e2e: N passed, N failed' and exits non-zero on
any failure. Standard library only, so it runs on a fresh Debian with python3.
"""
import argparse, json, os, re, select, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request

ADMIN = "e2e-admin-token-0123456789abcdef"
results = {"passed": 0, "failed": 0}


def check(name, condition, detail=""):
    if condition:
        results["passed"] += 1
        print(f"  ok   {name}")
    else:
        results["failed"] += 1
        print(f"  FAIL {name} {detail}")


class Server:
    def __init__(self, binary, public, data_dir=None, extra=()):
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="healthd-e2e-")
        env = dict(os.environ, HEALTHD_ADMIN_TOKEN=ADMIN, HEALTHD_PUBLIC_DIR=public)
        self.proc = subprocess.Popen([binary, "serve", "--port", "0", "--data-dir", self.data_dir, *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        self.port = None
        deadline = time.time() + 30
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

    def stop(self, sig=signal.SIGTERM, timeout=20):
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


def raw(port, data, read_timeout=5.0, shutdown_write=False):
    """Sends raw bytes and returns everything the server sends until it closes or goes quiet."""
    s = socket.create_connection(("127.0.0.1", port), timeout=read_timeout)
    s.sendall(data)
    if shutdown_write:
        s.shutdown(socket.SHUT_WR)
    chunks = []
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    except socket.timeout:
        pass
    s.close()
    return b"".join(chunks)


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
    check("unknown Transfer-Encoding is rejected", statuses(resp)[:1] in ([400], [501]), resp[:80])
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
    check("HTTP/2.0 request line is 505", statuses(resp) == [505], resp[:80])
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
    resp = raw(port, b"POST /v1/users HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\nContent-Type: application/json\r\n\r\n", read_timeout=1.0)
    check("Expect: 100-continue gets 100 Continue", statuses(resp)[:1] == [100], resp[:80])
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


def import_export_checks(binary, public):
    """healthd import (zip and XML, twice), then GET /v1/export and healthd export agree."""
    print("e2e: Apple Health import and export")
    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fixtures", "apple-health")
    data_dir = tempfile.mkdtemp(prefix="healthd-e2e-import-")
    try:
        def run(*args):
            return subprocess.run([binary, *args, "--data-dir", data_dir], capture_output=True, text=True, timeout=120)
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
        out_path = os.path.join(data_dir, "export.ndjson")
        exported = run("export", "--user", "me", "--output", out_path)
        lines = [json.loads(l) for l in open(out_path)] if exported.returncode == 0 else []
        check("healthd export writes every sample as NDJSON", len(lines) == 24, exported.stdout + exported.stderr)

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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--public", required=True)
    args = parser.parse_args()
    server = Server(args.binary, os.path.abspath(args.public))
    try:
        foundation_checks(server.port)
        print("e2e: graceful stop")
        code = server.stop()
        check("SIGTERM stops the server with status 0", code == 0, code)
        import_export_checks(args.binary, os.path.abspath(args.public))
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
        shutil.rmtree(server.data_dir, ignore_errors=True)
    print(f"e2e: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
