#!/usr/bin/env python3
"""People: accounts and sign-in against the real binary, over real sockets (docs/api.md, People).

Each part is a function taking a `People` (a server with an admin, helpers for signing in); the
grants and access checks add theirs beside these, and `people_checks` runs them all:
- invitation, activation (and no replay), `healthd invite` and `healthd users` on the command line;
- a wrong name and a wrong password: byte-identical answers, and times within 25 % (median of 20);
- session fixation: a cookie sent at sign-in is never the one returned;
- a cookie on /v1/samples is a 401; a cookie write as text/plain or a form is refused;
- 429 and Retry-After after the per-name and per-address limits, even for the right password;
- a password change ends the other sessions; sign-out; an expired session;
- the person's reads (/v1/me/...) and their change stream ending at sign-out;
- a permission request (RFC 8628): pending, slow_down, the sheet (HTML as text, CSRF refused, no
  more than asked), the token once with share types only, a replay refused; the apps page narrowing
  and revoking end the app's stream within 1 s; guessing user codes is limited.
Called from e2e.py main() (so run.sh runs it on SQLite and on PostgreSQL); runs alone too:
python3 Tests/e2e/people.py --binary B --public P [--database URL]."""
import http.client, json, os, re, shutil, socket, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402  (the shared results, when run alone)
from e2e import ADMIN, ReadWatch, Server, check, query_store, read_until, store_args, stream_ended, wait_until  # noqa: E402

PASSWORD = "a long walk by the river"
# Loopback addresses: every client address counts separately for the per-address limit, so the
# checks that need many failures spread them over addresses the server sees as different clients.
_next_address = [10]


def fresh_address():
    _next_address[0] += 1
    n = _next_address[0]
    return f"127.0.{n // 250}.{n % 250 + 2}"


def call(port, method, path, body=None, cookie=None, headers=None, source="127.0.0.1", token=None, raw_body=None):
    """(status, headers as a dict of lists, body bytes). `body` is sent as JSON unless `raw_body` is given."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    hdrs = dict(headers or {})
    data = raw_body
    if body is not None:
        data = json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    if cookie:
        hdrs["Cookie"] = cookie
    if token:
        hdrs["Authorization"] = "Bearer " + token
    try:
        connection.request(method, path, body=data, headers=hdrs)
        response = connection.getresponse()
        answer = response.read()
        found = {}
        for name, value in response.getheaders():
            found.setdefault(name.lower(), []).append(value)
        return response.status, found, answer
    finally:
        connection.close()


def session_cookie(headers):
    """`name=value` of the answer's session cookie, or None."""
    for value in headers.get("set-cookie", []):
        pair = value.split(";", 1)[0]
        if pair.split("=", 1)[0] in ("healthd_session", "__Host-healthd_session") and pair.split("=", 1)[1]:
            return pair
    return None


class People:
    """A server and its people. `person(name)` invites and activates one (with PASSWORD)."""

    def __init__(self, binary, public, data_dir=None):
        self.binary, self.public = binary, public
        self.server = Server(binary, public, data_dir=data_dir, drain=True)
        self.port = self.server.port

    def invite(self, name):
        status, _, body = call(self.port, "POST", "/v1/users", {"name": name}, token=ADMIN)
        answer = json.loads(body) if status == 201 else {}
        return answer.get("id"), (answer.get("invitation") or {}).get("code")

    def person(self, name, password=PASSWORD):
        user, code = self.invite(name)
        status, _, body = call(self.port, "POST", "/v1/people/activate", {"code": code, "password": password})
        assert status == 200, (status, body)
        return user

    def sign_in(self, name, password=PASSWORD, source="127.0.0.1", cookie=None):
        return call(self.port, "POST", "/v1/session", {"name": name, "password": password}, source=source, cookie=cookie)

    def cookie(self, name, password=PASSWORD):
        status, headers, body = self.sign_in(name, password, source=fresh_address())
        assert status == 204, (status, body)
        return session_cookie(headers)

    def me(self, cookie):
        return call(self.port, "GET", "/v1/me", cookie=cookie)[0]

    def stop(self):
        self.server.stop()
        shutil.rmtree(self.server.data_dir, ignore_errors=True)


def activation_checks(people):
    print("e2e: people: invitation and activation")
    user, code = people.invite("ada")
    check("POST /v1/users answers an invitation code", user and code and len(code) == 43, code)
    status, _, body = call(people.port, "POST", "/v1/people/activate", {"code": code, "password": "password123"})
    check("a common password is refused with the reason", status == 400 and b"commonly used" in body, (status, body[:200]))
    status, _, body = call(people.port, "POST", "/v1/people/activate", {"code": code, "password": PASSWORD})
    check("activation sets the password", status == 200 and json.loads(body).get("name") == "ada", (status, body[:200]))
    replay = call(people.port, "POST", "/v1/people/activate", {"code": code, "password": "another fine password"})
    unknown = call(people.port, "POST", "/v1/people/activate", {"code": "A" * 43, "password": "another fine password"})
    check("a replayed code is refused, the same as an unknown one", replay[0] == 401 and replay[2] == unknown[2], (replay[0], replay[2][:200]))
    status, headers, _ = people.sign_in("ada")
    cookie = session_cookie(headers)
    check("the person signs in: 204 and an HttpOnly SameSite=Strict cookie",
          status == 204 and cookie and "HttpOnly" in headers["set-cookie"][0] and "SameSite=Strict" in headers["set-cookie"][0],
          (status, headers.get("set-cookie")))
    status, _, body = call(people.port, "GET", "/v1/me", cookie=cookie)
    check("GET /v1/me names the person", status == 200 and json.loads(body).get("id") == user, (status, body[:200]))


def command_line_invite_checks(binary, public):
    print("e2e: people: healthd invite and healthd users")
    data_dir = __import__("tempfile").mkdtemp(prefix="healthd-e2e-invite-")
    env = dict(os.environ, HEALTHD_ADMIN_TOKEN=ADMIN)
    done = subprocess.run([binary, "invite", "grace", *store_args(data_dir)], capture_output=True, text=True, env=env, timeout=180)
    code = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    check("healthd invite prints a code", done.returncode == 0 and len(code) == 43, (done.returncode, done.stdout, done.stderr))
    people = People(binary, public, data_dir=data_dir)
    try:
        # `healthd users` beside the running server, on the same store, before and after grace activates.
        def users(*flags):
            return subprocess.run([binary, "users", *flags, *store_args(data_dir)], capture_output=True, text=True,
                                  env=env, timeout=180)
        listed = users()
        check("healthd users lists grace, not activated yet, while the server runs",
              listed.returncode == 0 and len(listed.stdout.splitlines()) == 1
              and re.search(r"\bgrace\s+created \S+Z\s+not activated$", listed.stdout.strip()),
              (listed.returncode, listed.stdout, listed.stderr))
        status, _, body = call(people.port, "POST", "/v1/people/activate", {"code": code, "password": PASSWORD})
        check("the command line's code activates the account on the server", status == 200, (status, body[:200]))
        check("and the person signs in", people.sign_in("grace", source=fresh_address())[0] == 204)
        people.invite("hopper")
        listed, as_json = users(), users("--json")
        status, _, body = call(people.port, "GET", "/v1/users", token=ADMIN)
        check("healthd users --json prints what GET /v1/users answers",
              as_json.returncode == 0 and status == 200 and json.loads(as_json.stdout) == json.loads(body)
              and [(u["name"], u["activated"]) for u in json.loads(body)["users"]] == [("grace", True), ("hopper", False)],
              (as_json.returncode, as_json.stdout, as_json.stderr, status, body[:300]))
        lines = listed.stdout.splitlines()
        check("healthd users: a line per user, oldest first, with their ids",
              listed.returncode == 0 and len(lines) == 2 and lines[0].endswith("  activated") and lines[1].endswith("not activated")
              and [line.split()[0] for line in lines] == [u["id"] for u in json.loads(body)["users"]],
              (listed.returncode, listed.stdout, listed.stderr))
    finally:
        people.stop()


def timing_checks(people):
    print("e2e: people: a wrong name and a wrong password look and take the same")
    # Four accounts take five wrong passwords each (under the per-name limit of 10); twenty made-up
    # names one each; every attempt from an address of its own (under the per-address limit).
    names = [f"timing{i}" for i in range(4)]
    for name in names:
        people.person(name)
    wrong_password, wrong_name, bodies = [], [], set()
    for i in range(20):
        for kind in ("password", "name"):
            name = names[i % 4] if kind == "password" else f"nobody{i}"
            started = time.perf_counter()
            status, _, body = people.sign_in(name, "not the password, sorry", source=fresh_address())
            elapsed = time.perf_counter() - started
            (wrong_password if kind == "password" else wrong_name).append(elapsed)
            bodies.add((status, body))
    check("a wrong name and a wrong password get byte-identical 401s", len(bodies) == 1 and next(iter(bodies))[0] == 401, bodies)
    a, b = statistics.median(wrong_password), statistics.median(wrong_name)
    check(f"their median times are within 25 % ({a * 1000:.1f} ms against {b * 1000:.1f} ms)",
          abs(a - b) <= 0.25 * max(a, b), (a, b))


def fixation_and_cookie_checks(people):
    print("e2e: people: session fixation, the cookie on app routes, forms")
    people.person("fixed")
    first = people.cookie("fixed")
    planted = "healthd_session=" + "Q" * 43
    for presented in (first, planted):
        status, headers, _ = people.sign_in("fixed", source=fresh_address(), cookie=presented)
        issued = session_cookie(headers)
        check("a cookie sent at sign-in is never the one returned", status == 204 and issued and issued != presented, (presented, issued))
        check("and the one sent no longer signs in", people.me(presented) == 401 and people.me(issued) == 200)
    cookie = people.cookie("fixed")
    status, _, _ = call(people.port, "GET", "/v1/samples?type=stepCount", cookie=cookie)
    check("a cookie on /v1/samples is a 401", status == 401, status)
    for content_type, body in (("text/plain", b'{"current":"x","new":"y"}'),
                               ("application/x-www-form-urlencoded", b"current=x&new=y")):
        status, _, answer = call(people.port, "PUT", "/v1/me/password", cookie=cookie, raw_body=body,
                                 headers={"Content-Type": content_type})
        check(f"a cookie write as {content_type} is refused (415)", status == 415, (status, answer[:200]))
    status, _, _ = call(people.port, "DELETE", "/v1/session", cookie=cookie, headers={"Content-Type": "text/plain"})
    check("a sign-out as text/plain is refused", status == 415 and people.me(cookie) == 200, status)


def limit_checks(people):
    print("e2e: people: 429 and Retry-After after the limits")
    people.person("limited")
    for i in range(10):
        people.sign_in("LIMITED" if i % 2 else "limited", "wrong password %d" % i, source=fresh_address())
    status, headers, _ = people.sign_in("limited", source=fresh_address())
    retry = headers.get("retry-after", ["0"])[0]
    check("after 10 failures for a name, the right password from a new address is a 429 with Retry-After",
          status == 429 and 0 < int(retry) <= 900, (status, retry))
    people.person("addressed")
    source = fresh_address()
    for i in range(30):
        people.sign_in(f"stranger{i}", "wrong password", source=source)
    status, headers, _ = people.sign_in("addressed", source=source)
    check("after 30 failures from one address, the right password from it is a 429 with Retry-After",
          status == 429 and int(headers.get("retry-after", ["0"])[0]) > 0, (status, headers.get("retry-after")))
    check("the same person signs in from another address", people.sign_in("addressed", source=fresh_address())[0] == 204)


def session_end_checks(people):
    print("e2e: people: password change, sign-out, expiry")
    people.person("changer")
    this, other = people.cookie("changer"), people.cookie("changer")
    status, _, body = call(people.port, "PUT", "/v1/me/password", {"current": PASSWORD, "new": "a brand new passphrase"}, cookie=this)
    check("the password change is accepted", status == 204, (status, body[:200]))
    check("it ends the other session", people.me(other) == 401)
    check("and keeps this one", people.me(this) == 200)
    check("the new password signs in, the old one does not",
          people.sign_in("changer", "a brand new passphrase", source=fresh_address())[0] == 204
          and people.sign_in("changer", source=fresh_address())[0] == 401)
    status, headers, _ = call(people.port, "DELETE", "/v1/session", cookie=this, headers={"Content-Type": "application/json"})
    check("sign-out: 204 and the cookie cleared", status == 204 and "Max-Age=0" in headers.get("set-cookie", [""])[0], status)
    check("the signed-out cookie is refused", people.me(this) == 401)
    expiring = people.cookie("changer", "a brand new passphrase")
    # Thirty days and a second without use, written behind the server's back.
    cutoff = int(time.time() * 1000) - 30 * 86_400_000 - 1000
    query_store(people.server.data_dir, f"UPDATE sessions SET last_used_ms = {cutoff}")
    check("a session unused for 30 days is refused", people.me(expiring) == 401)


def person_read_checks(people):
    print("e2e: people: the person's reads and their stream")
    user = people.person("reader")
    status, _, body = call(people.port, "POST", "/v1/authorizations",
                           {"user": user, "app": "phone", "read": [], "share": ["stepCount"]}, token=ADMIN)
    token = json.loads(body)["token"]
    sample = {"type": "stepCount", "value": 4321, "unit": "count", "start": "2026-03-02T10:00:00Z", "end": "2026-03-02T10:30:00Z"}
    call(people.port, "POST", "/v1/samples", {"samples": [sample]}, token=token)
    cookie = people.cookie("reader")
    status, _, body = call(people.port, "GET", "/v1/me/samples?type=stepCount", cookie=cookie)
    check("GET /v1/me/samples shows the person an app's samples", status == 200 and b"4321" in body, (status, body[:200]))
    stream = socket.create_connection(("127.0.0.1", people.port), timeout=10)
    stream.sendall(f"GET /v1/me/changes/stream?types=stepCount HTTP/1.1\r\nHost: x\r\nCookie: {cookie}\r\n\r\n".encode())
    data = read_until(stream, b"", lambda d: b"\r\n\r\n" in d, timeout=30)
    check("the person's change stream opens with the cookie", data.startswith(b"HTTP/1.1 200"), data[:200])
    watch = ReadWatch(stream, data, stream_ended)
    signed_out = time.monotonic()
    call(people.port, "DELETE", "/v1/session", cookie=cookie, headers={"Content-Type": "application/json"})
    data, ended = watch.result(signed_out)
    check("it ends within 1 s of signing out", ended is not None and ended < 1.0, (ended, data[-200:]))
    stream.close()


def open_app_stream(port, token):
    """An app's change stream, its head read."""
    stream = socket.create_connection(("127.0.0.1", port), timeout=30)
    stream.sendall(f"GET /v1/changes/stream?types=stepCount HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    return stream, read_until(stream, b"", lambda d: b"\r\n\r\n" in d, timeout=30)


def grant_checks(people):
    """RFC 8628's permission request, the sheet and the apps page (docs/api.md, "Permission requests, the sheet and the apps page")."""
    print("e2e: people: an app asks, the person answers on the sheet, the apps page changes and revokes")
    port = people.port
    people.person("grace")
    cookie = people.cookie("grace")
    json_headers = {"Content-Type": "application/json"}
    name = '<img src=x onerror="alert(1)">'
    ask = {"app": "runner", "displayName": name, "share": ["stepCount", "heartRate"], "read": ["stepCount", "heartRate"],
           "reason": "</script><script>alert(2)</script>"}
    status, _, body = call(port, "POST", "/v1/authorization-requests", ask)
    request = json.loads(body) if status == 201 else {}
    check("POST /v1/authorization-requests answers the codes (no token)",
          status == 201 and re.fullmatch(r"[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}", request.get("userCode", ""))
          and request.get("expiresIn") == 600 and request.get("interval") == 5
          and request.get("verificationURIComplete", "").endswith("/#/authorize?code=" + request.get("userCode", "")), (status, body[:300]))
    device, user_code = request.get("deviceCode", ""), request.get("userCode", "")

    def poll(code=None):
        status, _, body = call(port, "POST", "/v1/authorization-requests/token", {"deviceCode": code or device})
        return status, (json.loads(body) if body.startswith(b"{") else {}), body

    status, answer, _ = poll()
    check("the poll says authorization_pending", status == 400 and answer == {"error": "authorization_pending"}, answer)

    status, _, body = call(port, "GET", f"/v1/me/authorization-requests/{user_code}", cookie=cookie)
    sheet = json.loads(body) if status == 200 else {}
    check("the sheet shows the app's name and reason as the same text (JSON, never markup)",
          status == 200 and sheet.get("displayName") == name and sheet.get("reason") == ask["reason"]
          and sheet.get("share") == ["stepCount", "heartRate"], (status, body[:300]))
    form = call(port, "POST", f"/v1/me/authorization-requests/{user_code}", cookie=cookie,
                headers={"Content-Type": "application/x-www-form-urlencoded"}, raw_body=b"allow=true&share=stepCount")
    text = call(port, "POST", f"/v1/me/authorization-requests/{user_code}", cookie=cookie,
                headers={"Content-Type": "text/plain"}, raw_body=b'{"allow":true,"share":["stepCount"]}')
    check("a cookie POST as a form or text/plain is refused (CSRF)", form[0] == 415 and text[0] == 415, (form[0], text[0]))
    status, _, body = call(port, "POST", f"/v1/me/authorization-requests/{user_code}",
                           {"allow": True, "share": ["stepCount", "bodyMass"], "read": []}, cookie=cookie)
    check("answering with more than was asked is a 400", status == 400 and b"bodyMass" in body, (status, body[:200]))
    status, _, _ = call(port, "POST", f"/v1/me/authorization-requests/{user_code}",
                        {"allow": True, "share": ["stepCount"], "read": ["heartRate"]}, cookie=cookie)
    check("the person allows writing steps and reading heart rate", status == 204, status)
    time.sleep(5.1)  # the interval since the last poll
    status, answer, body = poll()
    token = answer.get("token", "")
    check("the poll gives the token once, naming the granted share types only (never the reads)",
          status == 200 and sorted(answer) == ["app", "share", "token", "user"] and answer.get("share") == ["stepCount"], body[:300])
    status, answer, _ = poll()
    check("replaying the device code is invalid_grant", status == 400 and answer.get("error") == "invalid_grant", answer)
    status, _, body = call(port, "GET", "/v1/authorizations/status?types=stepCount,heartRate", token=token)
    check("the status route tells sharing only", json.loads(body) == {"stepCount": "sharingAuthorized", "heartRate": "sharingDenied"}
          if status == 200 else False, body[:200])
    sample = {"type": "stepCount", "value": 12, "unit": "count", "start": "2026-03-02T10:00:00Z", "end": "2026-03-02T10:01:00Z"}
    status, _, _ = call(port, "POST", "/v1/samples", {"samples": [sample]}, token=token)
    check("the app saves with its token", status == 201, status)

    # A token's use is written in the background, off the request's path: wait for it.
    def apps_page():
        status, _, body = call(port, "GET", "/v1/me/apps", cookie=cookie)
        apps = json.loads(body).get("apps", []) if status == 200 else []
        return body, apps, (apps[0] if apps else {})
    wait_until(lambda: apps_page()[2].get("lastUsed"), 30, 0.1)
    body, apps, runner = apps_page()
    check("the apps page lists the app with its switches, created and last used",
          len(apps) == 1 and runner.get("app") == "runner" and runner.get("displayName") == name and runner.get("share") == ["stepCount"]
          and runner.get("read") == ["heartRate"] and runner.get("switches", {}).get("share", {}).get("heartRate") is False
          and runner.get("created") and runner.get("lastUsed"), body[:400])

    stream, data = open_app_stream(port, token)
    check("the app's change stream opens", data.startswith(b"HTTP/1.1 200"), data[:200])
    watch = ReadWatch(stream, data, stream_ended)
    changed = time.monotonic()
    status, _, body = call(port, "PUT", "/v1/me/apps/runner", {"share": ["stepCount"], "read": []}, cookie=cookie)
    _, ended = watch.result(changed)
    check("narrowing a switch on the apps page ends the app's open stream within 1 s",
          status == 200 and ended is not None and ended < 1.0, (status, ended, body[:200]))
    stream.close()
    stream, data = open_app_stream(port, token)
    check("the narrowed token opens a stream again", data.startswith(b"HTTP/1.1 200"), data[:200])
    watch = ReadWatch(stream, data, stream_ended)
    revoked = time.monotonic()
    status, _, _ = call(port, "DELETE", "/v1/me/apps/runner", cookie=cookie, headers=json_headers)
    _, ended = watch.result(revoked)
    check("revoking the app ends its stream within 1 s, and its token is refused",
          status == 204 and ended is not None and ended < 1.0
          and call(port, "GET", "/v1/authorizations/status?types=stepCount", token=token)[0] == 401, (status, ended))
    stream.close()

    # Guessing user codes: 10 wrong ones, then even the right code waits.
    status, _, body = call(port, "POST", "/v1/authorization-requests", {"app": "guessed", "read": ["stepCount"], "reason": "r"},
                           source=fresh_address())
    right = json.loads(body).get("userCode", "") if status == 201 else ""
    other = json.loads(body).get("deviceCode", "") if status == 201 else ""
    first, second, third = poll(other), poll(other), poll(other)
    check("polling faster than the interval is slow_down, and the interval grows by 5 s each time",
          first[1].get("error") == "authorization_pending" and second[1] == {"error": "slow_down", "interval": 10}
          and third[1] == {"error": "slow_down", "interval": 15}, (first[1], second[1], third[1]))
    guesser = people.cookie("grace")
    wrong = [call(port, "GET", f"/v1/me/authorization-requests/BBBB-BB{a}{b}", cookie=guesser)[0] for a in "BC" for b in "BCDFG"]
    status, headers, _ = call(port, "GET", f"/v1/me/authorization-requests/{right}", cookie=guesser)
    check("guessing user codes: after 10 wrong codes even the right one is a 429 with Retry-After",
          wrong == [404] * 10 and status == 429 and "retry-after" in headers, (wrong, status))


def people_checks(binary, public):
    people = People(binary, public)
    try:
        for part in (activation_checks, timing_checks, fixation_and_cookie_checks, limit_checks, session_end_checks,
                     person_read_checks, grant_checks):
            part(people)
        check("the server is still running", people.server.proc.poll() is None)
    finally:
        people.stop()
    command_line_invite_checks(binary, public)


if __name__ == "__main__":
    e2e.run_alone(people_checks)
