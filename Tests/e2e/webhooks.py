#!/usr/bin/env python3
"""Webhooks end to end (docs/api.md, Webhooks): a real healthd and Python receivers on loopback,
with 127.0.0.1 in webhookAllowedHosts. Delivery, the Standard Webhooks signature verified here with
the specification's algorithm (hmac, base64, hashlib), commit order, retries (500 then 200), a
receiver down then up, kill -9 with a delivery in flight, read privacy, SSRF refusals (without the
allow-list), a 302 that is a failed attempt and never followed, and deletion and revocation
stopping deliveries, pending retries included.
Called from e2e.py main(); runs alone too: python3 Tests/e2e/webhooks.py --binary B --public P [--database URL]."""
import base64, hashlib, hmac, json, os, signal, socket, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402  (the shared results, when run alone)
from e2e import ADMIN, Server, check, http, js  # noqa: E402


class Receiver:
    """Records every POST; `behaviour[path]` says how to answer: a status, "hang" (no answer for 30 s)
    or ("redirect", location)."""

    def __init__(self, port=0, bound=None):
        self.requests = []
        self.behaviour = {}
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                              "body": body, "time": time.time()})
                    how = receiver.behaviour.get(self.path, 200)
                    if isinstance(how, list):
                        how = how.pop(0) if len(how) > 1 else how[0]
                if how == "hang":
                    time.sleep(30)
                    return
                if isinstance(how, tuple):
                    self.send_response(302)
                    self.send_header("Location", how[1])
                else:
                    self.send_response(how)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        if bound is None:
            self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        else:
            # A socket bound (not listening) beforehand: its port refused connections until now,
            # and no other program could take it meanwhile.
            self.server = ThreadingHTTPServer(bound.getsockname(), Handler, bind_and_activate=False)
            self.server.socket.close()
            self.server.socket = bound
            self.server.server_address = bound.getsockname()
            self.server.server_activate()
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def at(self, path):
        with self.lock:
            return [r for r in self.requests if r["path"] == path]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def verify(secret, headers, body):
    """Standard Webhooks: base64 HMAC-SHA256 of "id.timestamp.body" with the secret's bytes."""
    key = base64.b64decode(secret[len("whsec_"):])
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    fresh = abs(time.time() - int(headers["webhook-timestamp"])) < 300
    return fresh and any(s.split(",", 1)[1] == expected for s in headers["webhook-signature"].split() if s.startswith("v1,"))


def wait_for(predicate, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def refusing_socket():
    """A loopback socket bound but not listening: connections to its port are refused, and the
    port stays this test's (a port probed free and closed could be taken by another program)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    return s


def setup(port):
    """A user, a phone app that writes steps and heart rate, and a hub app that reads steps only."""
    st, _, b = http(port, "POST", "/v1/users", {"name": f"hooks-{time.time_ns()}"}, token=ADMIN)
    user = js(b)["id"]

    def token(app, read, share):
        _, _, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": app, "read": read, "share": share}, token=ADMIN)
        return js(b)

    return token("phone", ["stepCount"], ["stepCount", "heartRate"]), token("hub", ["stepCount"], [])


def save(port, token, value, kind="stepCount", unit="count", minute=0):
    start = f"2026-03-08T09:{minute:02d}:00Z"
    return http(port, "POST", "/v1/samples", {"samples": [{"type": kind, "value": value, "unit": unit, "start": start, "end": start}]},
                token=token)[0]


def subscribe(port, token, url, types=("stepCount",)):
    st, _, b = http(port, "POST", "/v1/webhooks", {"url": url, "types": list(types)}, token=token)
    return st, js(b) or {}


def values(requests):
    return [s["value"] for r in requests for s in json.loads(r["body"])["added"]]


def deliveries(port, token, webhook):
    return (js(http(port, "GET", f"/v1/webhooks/{webhook}/deliveries", token=token)[2]) or {}).get("deliveries", [])


def ssrf_checks(binary, public):
    print("e2e: webhooks: SSRF refusals (no allow-list)")
    server = Server(binary, public, drain=True)
    try:
        _, hub = setup(server.port)
        for url, reason in [("http://127.0.0.1:8080/", "loopback"), ("http://localhost:8080/", "loopback"),
                            ("http://10.0.0.1/", "private"), ("http://169.254.169.254/latest/meta-data", "metadata"),
                            ("http://2130706433:8080/", "loopback"), ("http://0x7f000001:8080/", "loopback"),
                            ("http://0x7f.1:8080/", "loopback"), ("http://017700000001:8080/", "loopback"),
                            ("http://[::1]:8080/", "loopback"), ("http://[::ffff:127.0.0.1]:8080/", "loopback"),
                            ("http://100.64.0.1/", "carrier-grade NAT"), ("http://192.168.1.1:8080/", "private")]:
            st, body = subscribe(server.port, hub["token"], url)
            check(f"{url} is refused, naming why", st == 400 and reason in body.get("detail", ""), (st, body))
        st, body = subscribe(server.port, hub["token"], "http://no-such-host.invalid/")
        check("a name that does not resolve is refused", st == 400, (st, body))
        st, body = subscribe(server.port, hub["token"], "https://example.com/")
        check("https is refused (no forward proxy)", st == 400 and "proxy" in body.get("detail", ""), (st, body))
    finally:
        server.stop()


def webhook_checks(binary, public):
    ssrf_checks(binary, public)
    print("e2e: webhooks: deliveries to a loopback receiver (webhookAllowedHosts: 127.0.0.1)")
    work = tempfile.mkdtemp(prefix="healthd-e2e-hooks-")
    config = os.path.join(work, "healthd.json")
    with open(config, "w") as f:
        json.dump({"webhookAllowedHosts": ["127.0.0.1"]}, f)
    data_dir = os.path.join(work, "data")
    os.mkdir(data_dir)
    receiver = Receiver()
    base = f"http://127.0.0.1:{receiver.port}"
    server = Server(binary, public, data_dir=data_dir, extra=["--config", config], drain=True)
    try:
        port = server.port
        phone, hub = setup(port)

        # Delivery, signature, order.
        st, ok = subscribe(port, hub["token"], base + "/ok", ["stepCount", "heartRate"])
        check("POST /v1/webhooks answers 201 with a whsec_ secret", st == 201 and ok.get("secret", "").startswith("whsec_"), ok)
        listed = js(http(port, "GET", "/v1/webhooks", token=hub["token"])[2])
        check("GET /v1/webhooks lists it without the secret", listed["webhooks"][0]["id"] == ok["id"]
              and "secret" not in listed["webhooks"][0] and listed["webhooks"][0]["disabled"] is None, listed)
        for minute in range(6):
            save(port, phone["token"], 100 + minute, minute=minute)
        check("six saves are delivered", wait_for(lambda: len(values(receiver.at("/ok"))) >= 6, 60), values(receiver.at("/ok")))
        got = receiver.at("/ok")
        check("in commit order, each once", values(got) == [100, 101, 102, 103, 104, 105], values(got))
        check("every delivery's signature verifies (Standard Webhooks, computed here)",
              all(verify(ok["secret"], r["headers"], r["body"]) for r in got))
        check("a tampered body does not verify", not verify(ok["secret"], got[0]["headers"], got[0]["body"] + b" "))
        check("each page has its own webhook-id", len({r["headers"]["webhook-id"] for r in got}) == len(got))
        page = json.loads(got[-1]["body"])
        check("the body is the change feed's page", set(page) == {"added", "deleted", "anchor", "more"}, page)
        st, _, b = http(port, "GET", f"/v1/changes?types=heartRate,stepCount&anchor={page['anchor']}", token=hub["token"])
        check("its anchor resumes GET /v1/changes", st == 200 and js(b)["added"] == [], (st, b[:200]))

        # Privacy: heart rate the hub may not read never reaches its receiver.
        save(port, phone["token"], 71, kind="heartRate", unit="count/min", minute=10)
        save(port, phone["token"], 200, minute=11)
        # The steps saved after the heart rate arriving shows the heart rate's turn has passed.
        check("the steps saved after it arrive", wait_for(lambda: 200 in values(receiver.at("/ok")), 60), values(receiver.at("/ok")))
        check("a type the token may not read never appears", all(b"heartRate" not in r["body"] for r in receiver.at("/ok")))
        # The receiver records a request before it answers; the server records the attempt after
        # the answer: wait for the list to catch up with the receiver.
        last_id = receiver.at("/ok")[-1]["headers"]["webhook-id"]
        wait_for(lambda: (deliveries(port, hub["token"], ok["id"]) or [{}])[0].get("webhookId") == last_id, 30)
        listed = deliveries(port, hub["token"], ok["id"])
        check("the deliveries list shows the attempts, newest first", listed and listed[0]["status"] == 200
              and listed[0]["error"] is None and listed[0]["webhookId"] == receiver.at("/ok")[-1]["headers"]["webhook-id"], listed[:2])

        # Retries: 500, then 200 about 5 s later, same id and body.
        receiver.behaviour["/flaky"] = [500, 200]
        st, flaky = subscribe(port, hub["token"], base + "/flaky")
        save(port, phone["token"], 300, minute=20)
        check("a 500 is retried and then delivered", wait_for(lambda: len(receiver.at("/flaky")) >= 2, 60), len(receiver.at("/flaky")))
        tries = receiver.at("/flaky")
        if len(tries) >= 2:
            gap = tries[1]["time"] - tries[0]["time"]
            # 5 s after the failure, plus however late a loaded machine gets to it; under the next
            # step of the schedule (10 s), which a wrong first delay would reach.
            check("the retry comes about 5 s later", 4 <= gap < 9.5, gap)
            check("with the same webhook-id and body", tries[0]["headers"]["webhook-id"] == tries[1]["headers"]["webhook-id"]
                  and tries[0]["body"] == tries[1]["body"])
        wait_for(lambda: [d["status"] for d in deliveries(port, hub["token"], flaky["id"])][:2] == [200, 500], 30)
        listed = deliveries(port, hub["token"], flaky["id"])
        check("the list shows the 500 and the 200", [d["status"] for d in listed][:2] == [200, 500], listed)

        # A redirect is a failed attempt and is never followed.
        receiver.behaviour["/moved"] = ("redirect", base + "/moved-target")
        st, moved = subscribe(port, hub["token"], base + "/moved")
        save(port, phone["token"], 400, minute=25)
        wait_for(lambda: deliveries(port, hub["token"], moved["id"]), 30)
        listed = deliveries(port, hub["token"], moved["id"])
        check("a 302 is a failed attempt", listed and listed[0]["status"] == 302 and listed[0]["error"], listed)
        time.sleep(0.5)
        check("the redirect is not followed", receiver.at("/moved-target") == [])

        # A receiver down, then up: the retry finds it.
        down = refusing_socket()
        st, later = subscribe(port, hub["token"], f"http://127.0.0.1:{down.getsockname()[1]}/later")
        save(port, phone["token"], 500, minute=30)
        wait_for(lambda: deliveries(port, hub["token"], later["id"]), 30)
        listed = deliveries(port, hub["token"], later["id"])
        check("a receiver that is down is a failed attempt with no status", listed and listed[0]["status"] is None
              and listed[0]["error"], listed)
        second = Receiver(bound=down)
        try:
            # The next retry: 5 s after the failure, or 10 s after that if that one came too soon.
            check("once it is up the page arrives", wait_for(lambda: values(second.at("/later")) == [500], 60),
                  values(second.at("/later")))
        finally:
            second.close()

        # Deletion and revocation stop deliveries, pending retries included.
        receiver.behaviour["/gone"] = 500
        st, gone = subscribe(port, hub["token"], base + "/gone")
        receiver.behaviour["/revoked"] = 500
        _, reader = setup_token(port, hub["user"], "reader")
        st, revoked = subscribe(port, reader["token"], base + "/revoked")
        # A control, failing alike and left alone: its retry shows when theirs would have come.
        receiver.behaviour["/control"] = 500
        st, control = subscribe(port, hub["token"], base + "/control")
        save(port, phone["token"], 600, minute=35)
        check("the first attempts fail", wait_for(lambda: receiver.at("/gone") and receiver.at("/revoked") and receiver.at("/control"), 30),
              [len(receiver.at(path)) for path in ("/gone", "/revoked", "/control")])
        st = http(port, "DELETE", f"/v1/webhooks/{gone['id']}", token=hub["token"])[0]
        check("DELETE /v1/webhooks/{id} answers 204", st == 204, st)
        st = http(port, "DELETE", f"/v1/authorizations/{reader['id']}", token=ADMIN)[0]
        check("revoking the token answers 204", st == 204, st)
        gone_count, revoked_count = len(receiver.at("/gone")), len(receiver.at("/revoked"))
        save(port, phone["token"], 601, minute=36)
        check("the control webhook is retried", wait_for(lambda: len(receiver.at("/control")) >= 2, 60), len(receiver.at("/control")))
        time.sleep(2)  # theirs would have come with it, or within the moments their first attempts came later
        check("a deleted webhook sends nothing more, its pending retry included", len(receiver.at("/gone")) == gone_count,
              len(receiver.at("/gone")))
        check("a revoked token's webhook sends nothing more, its pending retry included",
              len(receiver.at("/revoked")) == revoked_count, len(receiver.at("/revoked")))
        check("the revoked token's webhooks are deleted",
              e2e.query_store(data_dir, f"SELECT count(*) FROM webhook_subscriptions WHERE id = '{revoked['id']}'") == "0")
        http(port, "DELETE", f"/v1/webhooks/{control['id']}", token=hub["token"])

        # kill -9 with a delivery in flight: the restarted server sends the stored page again.
        receiver.behaviour["/crash"] = "hang"
        st, crash = subscribe(port, hub["token"], base + "/crash")
        save(port, phone["token"], 700, minute=40)
        check("the page is on its way", wait_for(lambda: receiver.at("/crash"), 30))
        first = receiver.at("/crash")[0]
        server.stop(signal.SIGKILL)
        receiver.behaviour["/crash"] = 200
        server = Server(binary, public, data_dir=data_dir, extra=["--config", config], drain=True)
        port = server.port
        # On PostgreSQL the restarted server is a new node: it takes the webhook over once the dead
        # one's lease expires (10 s after its last renewal, docs/operations.md), then a claim round;
        # a loaded machine adds to both, so the wait is the lease and a wide margin.
        check("after kill -9 the page is sent again", wait_for(lambda: len(receiver.at("/crash")) >= 2, 60), len(receiver.at("/crash")))
        again = receiver.at("/crash")[-1]
        check("with the same webhook-id and body", again["headers"]["webhook-id"] == first["headers"]["webhook-id"]
              and again["body"] == first["body"])
        save(port, phone["token"], 701, minute=41)
        check("and deliveries go on after it", wait_for(lambda: 701 in values(receiver.at("/crash")), 30), values(receiver.at("/crash")))
    finally:
        server.stop()
        receiver.close()


def setup_token(port, user, app):
    _, _, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": app, "read": ["stepCount"], "share": []}, token=ADMIN)
    return None, js(b)


if __name__ == "__main__":
    e2e.run_alone(webhook_checks)
