#!/usr/bin/env python3
"""Two healthd nodes on one PostgreSQL database behave as one server.

Starts two real healthd processes (A and B) with --database on a fresh database and checks:
  - an authorization made on A works on B, and a change-feed anchor from A resumes on B;
  - a write on A wakes a long-poll parked on B within 200 ms, and reaches B's event stream;
  - statistics on B (after B cached the answer) reflect A's writes;
  - a workout session started on A: heart rates written to A and to B reach event streams on both
    nodes as one sequence of zone events each (judged once, broadcast to every node);
  - a revocation on A ends an open change stream and a parked long-poll of that token on B within
    1 s, and nothing saved after it (on either node) reaches them; so does a person narrowing the
    app's switches on A (PUT /v1/me/apps/{app});
  - a person's session made on A signs in on B; a sign-out or a password change on A refuses the
    cookie on B within 1 s (and ends the person's stream open on B), and failed sign-ins spread over
    both nodes share one budget;
  - one IMU session's batches alternate between the nodes: seq continues across them, a repeated
    seq replays the first answer byte for byte on the other node, a gap is a 409 on either;
  - kill -9 of A while clients write to both loses nothing acknowledged (checked on B, and on A
    once it is back), and no batch is partly stored;
  - database faults: every server connection killed is retried unseen; a database refusing
    connections is a 503 with Retry-After (no hang, no SQL in the body), and the nodes recover
    (long-polls wake again) once it takes connections again.
Standard library only, plus psql to create the database. Usage:
  two_nodes.py --binary .build/debug/healthd --public Public --database postgres://postgres@127.0.0.1:5432/postgres
"""
import argparse, calendar, json, os, random, signal, socket, subprocess, sys, threading, time, uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import ADMIN, ReadWatch, Server, check, fresh_database, http, js, read_until, results, statuses, stream_ended, wait_until  # noqa: E402
from people import PASSWORD, call, fresh_address, session_cookie  # noqa: E402
from crash import DISCRETE_TYPE, WRITER_TYPE, Ledger, imu_csv, imu_path, iso, request, sample_writer, verify  # noqa: E402

WAKE_LIMIT_SECONDS = 0.2


def node(binary, public, database):
    return Server(binary, public, extra=("--database", database), drain=True)


def user_and_token(port, name, types):
    status, body = request(port, "POST", "/v1/users", {"name": name}, token=ADMIN)
    assert status == 201, (status, body)
    user = json.loads(body)["id"]
    status, body = request(port, "POST", "/v1/authorizations", {"user": user, "app": "two-nodes", "read": types, "share": types},
                           token=ADMIN)
    assert status == 201, (status, body)
    return user, json.loads(body)["token"]


def session_checks(a, b):
    print("two nodes: a person's session across nodes")
    status, _, body = call(a.port, "POST", "/v1/users", {"name": "two-nodes-person"}, token=ADMIN)
    code = json.loads(body)["invitation"]["code"] if status == 201 else ""
    status, _, _ = call(b.port, "POST", "/v1/people/activate", {"code": code, "password": PASSWORD})
    check("an invitation made on A activates on B", status == 200, status)

    def sign_in(node):
        status, headers, _ = call(node.port, "POST", "/v1/session", {"name": "two-nodes-person", "password": PASSWORD}, source=fresh_address())
        return session_cookie(headers) if status == 204 else None

    def refused_within(node, cookie, seconds=1.0):
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            if call(node.port, "GET", "/v1/me", cookie=cookie)[0] == 401:
                return time.monotonic() - started
            time.sleep(0.02)
        return None

    first, second = sign_in(a), sign_in(b)
    check("a session made on A signs in on B, and one made on B on A",
          call(b.port, "GET", "/v1/me", cookie=first)[0] == 200 and call(a.port, "GET", "/v1/me", cookie=second)[0] == 200)
    stream = socket.create_connection(("127.0.0.1", b.port), timeout=10)
    stream.sendall(f"GET /v1/me/changes/stream?types=stepCount HTTP/1.1\r\nHost: x\r\nCookie: {first}\r\n\r\n".encode())
    data = read_until(stream, b"", lambda d: b"\r\n\r\n" in d, timeout=30)
    watch = ReadWatch(stream, data, stream_ended)
    status, _, _ = call(a.port, "DELETE", "/v1/session", cookie=first, headers={"Content-Type": "application/json"})
    # Another node learns of a change when it commits: its bound counts from A's answer.
    signed_out = time.monotonic()
    waited = refused_within(b, first)
    check("a sign-out on A refuses the cookie on B within 1 s", status == 204 and waited is not None, (status, waited))
    data, ended = watch.result(signed_out)
    check("and the person's stream open on B ends within 1 s", ended is not None and ended < 1.0, (ended, data[-200:]))
    stream.close()
    keeper = sign_in(a)
    status, _, _ = call(a.port, "PUT", "/v1/me/password", {"current": PASSWORD, "new": "two nodes, one new passphrase"}, cookie=keeper)
    waited = refused_within(b, second)
    check("a password change on A ends the other session on B within 1 s", status == 204 and waited is not None, (status, waited))
    check("the changing session stays signed in on B", call(b.port, "GET", "/v1/me", cookie=keeper)[0] == 200)
    for i in range(10):
        call((a, b)[i % 2].port, "POST", "/v1/session", {"name": "two-nodes-person", "password": f"wrong {i}"}, source=fresh_address())
    status, headers, _ = call(b.port, "POST", "/v1/session", {"name": "two-nodes-person", "password": "two nodes, one new passphrase"},
                              source=fresh_address())
    check("10 failures spread over both nodes lock the name on both (one budget, not one per node)",
          status == 429 and "retry-after" in headers, status)


def step_sample(n, minute):
    return {"uuid": str(uuid.UUID(int=(0xA5 << 120) | n, version=4)), "type": "stepCount", "value": n, "unit": "count",
            "start": "2026-03-02T%02d:%02d:00Z" % (minute // 60, minute % 60),
            "end": "2026-03-02T%02d:%02d:30Z" % (minute // 60, minute % 60)}


def feed_checks(a, b, token):
    print("two nodes: change feed")
    status, body = request(b.port, "GET", "/v1/changes?types=stepCount", token=token)
    check("a token made on A works on B", status == 200, body[:200])
    anchor = json.loads(body)["anchor"]
    delays = []
    for attempt in range(5):
        poll = socket.create_connection(("127.0.0.1", b.port), timeout=30)
        poll.sendall(f"GET /v1/changes?types=stepCount&wait=30&anchor={anchor} HTTP/1.1\r\nHost: x\r\n"
                     f"Authorization: Bearer {token}\r\nConnection: close\r\n\r\n".encode())
        time.sleep(0.3)
        parked = read_until(poll, b"", lambda d: len(d) > 0, timeout=0.1)
        sample = step_sample(attempt, attempt)
        status, _ = request(a.port, "POST", "/v1/samples", {"samples": [sample]}, token=token)
        acknowledged = time.time()
        answer = read_until(poll, b"", lambda d: b"\r\n\r\n" in d and sample["uuid"].encode() in d, timeout=10)
        delays.append(time.time() - acknowledged)
        poll.close()
        ok = parked == b"" and status == 201 and statuses(answer) == [200] and sample["uuid"].encode() in answer
        if not ok:
            check(f"long-poll {attempt} on B answers with A's write", False, (parked[:80], status, answer[:200]))
            return
        anchor = json.loads(answer.split(b"\r\n\r\n", 1)[1])["anchor"]
    check(f"a write on A wakes a long-poll on B within {int(WAKE_LIMIT_SECONDS * 1000)} ms of A's 201 "
          f"(5 tries, slowest {max(delays) * 1000:.0f} ms)", max(delays) < WAKE_LIMIT_SECONDS, [round(d * 1000) for d in delays])

    # An anchor handed out by B resumes on A: both sign with the secret kept in the database.
    status, body = request(a.port, "GET", f"/v1/changes?types=stepCount&anchor={anchor}", token=token)
    check("an anchor from B resumes on A", status == 200 and json.loads(body)["added"] == [], body[:200])

    stream = socket.create_connection(("127.0.0.1", b.port), timeout=30)
    stream.sendall(f"GET /v1/changes/stream?types=stepCount&anchor={anchor} HTTP/1.1\r\nHost: x\r\n"
                   f"Authorization: Bearer {token}\r\n\r\n".encode())
    opened = read_until(stream, b"", lambda d: b"\r\n\r\n" in d, timeout=30)
    sample = step_sample(99, 99)
    request(a.port, "POST", "/v1/samples", {"samples": [sample]}, token=token)
    events = read_until(stream, opened, lambda d: sample["uuid"].encode() in d, timeout=30)
    stream.close()
    check("A's write reaches an event stream on B", sample["uuid"].encode() in events, events[-300:])


def statistics_checks(a, b, token):
    print("two nodes: statistics")
    # The collection query runs on the rollups and their per-node cache: the path a stale cache would break.
    path = ("/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=P1D&timeZone=UTC"
            "&start=2026-03-01T00:00:00Z&end=2026-03-04T00:00:00Z")

    def total(port):
        status, body = request(port, "GET", path, token=token)
        if status != 200:
            return ("status", status, body[:200])
        return sum(bucket.get("sum") or 0 for bucket in json.loads(body).get("buckets", []))

    before = total(b.port)          # B reads, and may now cache, this answer
    samples = [step_sample(1000 + k, 200 + k) for k in range(20)]
    status, _ = request(a.port, "POST", "/v1/samples", {"samples": samples}, token=token)
    expected = before + sum(s["value"] for s in samples) if isinstance(before, (int, float)) else None
    after = total(b.port)
    check("statistics on B reflect A's write at once (B's cached answer is not served stale)",
          status == 201 and expected is not None and after == expected, (before, after, expected))
    status, _ = request(a.port, "DELETE", f"/v1/samples/{samples[0]['uuid']}", token=token)
    after_delete = total(b.port)
    check("statistics on B reflect a deletion on A",
          status == 204 and expected is not None and after_delete == expected - samples[0]["value"], (status, after_delete))


def zone_checks(a, b):
    print("two nodes: workout zone events on every node")
    _, coach = user_and_token(a.port, "two-nodes-runner", ["heartRate", "workout"])
    status, body = request(a.port, "POST", "/v1/workout-sessions", {"activityType": "running", "zone": {"low": 120, "high": 150}},
                           token=coach)
    session = json.loads(body) if status == 201 else {}
    check("a workout session starts on A", status == 201, body[:200])
    start = session.get("start", "2026-01-01T00:00:00.000Z")
    base = calendar.timegm(time.strptime(start[:19], "%Y-%m-%dT%H:%M:%S"))  # UTC read as UTC, whatever the local zone

    def open_stream(port):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(f"GET /v1/changes/stream?types=heartRate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {coach}\r\n\r\n".encode())
        return s, read_until(s, b"", lambda d: b"\r\n\r\n" in d, timeout=30)

    streams = {"A": open_stream(a.port), "B": open_stream(b.port)}
    # Written to both nodes, each reading a second apart: below, in, above.
    for seconds, bpm, node in [(1, 100, a), (2, 135, b), (3, 170, a)]:
        t = base + seconds
        sample = {"type": "heartRate", "value": bpm, "unit": "count/min",
                  "start": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t)), "end": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t))}
        request(node.port, "POST", "/v1/samples", {"samples": [sample]}, token=coach)
        time.sleep(0.2)

    def zone_states(data):
        states = []
        for block in data.split(b"\n\n"):
            if b"event: zone" in block:
                line = [l for l in block.split(b"\n") if l.startswith(b"data: ")]
                states.append((js(line[0][6:]) or {}).get("state") if line else None)
        return states

    for name, (sock, data) in streams.items():
        data = read_until(sock, data, lambda d: len(zone_states(d)) >= 3, timeout=30)
        data = read_until(sock, data, lambda d: len(zone_states(d)) > 3, timeout=0.5)   # nothing twice
        sock.close()
        check(f"the stream on {name} carries the zone events below, in, above once each", zone_states(data) == ["below", "in", "above"],
              (zone_states(data), data[-300:]))
    status, _ = request(b.port, "POST", f"/v1/workout-sessions/{session.get('id')}/end", token=coach)
    check("the session started on A ends on B", status == 200, status)


def revocation_checks(a, b):
    print("two nodes: a revocation on A ends B's stream and long-poll within 1 s")
    status, body = request(a.port, "POST", "/v1/users", {"name": "two-nodes-revoked"}, token=ADMIN)
    user = json.loads(body)["id"] if status == 201 else ""
    status, body = request(a.port, "POST", "/v1/authorizations", {"user": user, "app": "follower", "read": ["stepCount"], "share": ["stepCount"]},
                           token=ADMIN)
    created = json.loads(body) if status == 201 else {}
    token, authorization = created.get("token", ""), created.get("id", "")
    status, body = request(a.port, "POST", "/v1/authorizations", {"user": user, "app": "writer", "read": [], "share": ["stepCount"]},
                           token=ADMIN)
    writer = json.loads(body).get("token", "") if status == 201 else ""
    status, body = request(b.port, "GET", "/v1/changes?types=stepCount", token=token)
    anchor = json.loads(body).get("anchor", "") if status == 200 else ""
    check("the follower's token made on A works on B", status == 200 and anchor, body[:200])
    stream = socket.create_connection(("127.0.0.1", b.port), timeout=10)
    stream.sendall(f"GET /v1/changes/stream?types=stepCount&anchor={anchor} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    data = read_until(stream, b"", lambda d: b"\r\n\r\n" in d, timeout=30)
    poll = socket.create_connection(("127.0.0.1", b.port), timeout=30)
    poll.sendall(f"GET /v1/changes?types=stepCount&wait=30&anchor={anchor} HTTP/1.1\r\nHost: x\r\n"
                 f"Authorization: Bearer {token}\r\nConnection: close\r\n\r\n".encode())
    request(a.port, "POST", "/v1/samples", {"samples": [step_sample(900, 900)]}, token=writer)
    data = read_until(stream, data, lambda d: step_sample(900, 900)["uuid"].encode() in d, timeout=30)
    check("B's stream has the write made on A before the revocation", step_sample(900, 900)["uuid"].encode() in data, data[-300:])
    polled = read_until(poll, b"", lambda d: b"\r\n\r\n" in d and d.endswith(b"}"), timeout=30)
    poll.close()
    poll = socket.create_connection(("127.0.0.1", b.port), timeout=10)
    status, body = request(b.port, "GET", "/v1/changes?types=stepCount", token=token)
    current = json.loads(body).get("anchor", "") if status == 200 else ""
    poll.sendall(f"GET /v1/changes?types=stepCount&wait=30&anchor={current} HTTP/1.1\r\nHost: x\r\n"
                 f"Authorization: Bearer {token}\r\nConnection: close\r\n\r\n".encode())
    time.sleep(0.3)
    stream_watch = ReadWatch(stream, data, stream_ended)
    poll_watch = ReadWatch(poll, b"", lambda d: b"\r\n\r\n" in d)
    status, _ = request(a.port, "DELETE", f"/v1/authorizations/{authorization}", token=ADMIN)
    # B learns of the revocation when A commits it: the bound counts from A's answer.
    revoked_at = time.monotonic()
    check("the admin revokes the follower on A", status == 204, status)
    # Saved right after the revocation, on both nodes: must reach neither the stream nor the poll.
    request(a.port, "POST", "/v1/samples", {"samples": [step_sample(901, 901)]}, token=writer)
    request(b.port, "POST", "/v1/samples", {"samples": [step_sample(902, 902)]}, token=writer)
    data, ended = stream_watch.result(revoked_at)
    check("B's stream ends with event: error within 1 s of the revocation on A",
          b"event: error" in data and ended is not None and ended < 1.0, (ended, data[-200:]))
    answer, answered = poll_watch.result(revoked_at)
    check("B's parked long-poll is answered 401 within 1 s", answer.startswith(b"HTTP/1.1 401") and answered is not None
          and answered < 1.0, (answered, answer[:120]))
    later = [step_sample(n, n)["uuid"].encode() for n in (901, 902)]
    check("nothing saved after the revocation reached B's stream or poll",
          not any(u in data or u in answer for u in later), data[-300:])
    stream.close()
    poll.close()
    status, _ = request(b.port, "GET", "/v1/changes?types=stepCount", token=token)
    check("the revoked token is refused on B", status == 401, status)


def narrowing_checks(a, b):
    print("two nodes: the person narrows an app's switches on A; its stream on B ends within 1 s")
    status, _, body = call(a.port, "POST", "/v1/users", {"name": "two-nodes-grants"}, token=ADMIN)
    created = json.loads(body) if status == 201 else {}
    call(a.port, "POST", "/v1/people/activate", {"code": (created.get("invitation") or {}).get("code", ""), "password": PASSWORD})
    status, headers, _ = call(a.port, "POST", "/v1/session", {"name": "two-nodes-grants", "password": PASSWORD}, source=fresh_address())
    cookie = session_cookie(headers) if status == 204 else None
    status, body = request(a.port, "POST", "/v1/authorizations",
                           {"user": created.get("id", ""), "app": "follower", "read": ["stepCount"], "share": ["stepCount"]}, token=ADMIN)
    token = json.loads(body).get("token", "") if status == 201 else ""
    stream = socket.create_connection(("127.0.0.1", b.port), timeout=10)
    stream.sendall(f"GET /v1/changes/stream?types=stepCount HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    data = read_until(stream, b"", lambda d: b"\r\n\r\n" in d, timeout=30)
    check("the app's stream opens on B", data.startswith(b"HTTP/1.1 200") and cookie, data[:200])
    watch = ReadWatch(stream, data, stream_ended)
    status, _, _ = call(a.port, "PUT", "/v1/me/apps/follower", {"share": ["stepCount"], "read": []}, cookie=cookie)
    narrowed = time.monotonic()  # A's answer: B learns of it at A's commit
    data, ended = watch.result(narrowed)
    check("a narrowing on A ends the app's stream on B within 1 s",
          status == 200 and b"event: error" in data and ended is not None and ended < 1.0, (status, ended, data[-200:]))
    stream.close()
    status, _, body = call(b.port, "GET", "/v1/me/apps", cookie=cookie)
    apps = json.loads(body).get("apps", []) if status == 200 else []
    check("B's apps page shows the narrowed switches", apps and apps[0].get("read") == [] and apps[0].get("share") == ["stepCount"],
          body[:300])


def imu_checks(a, b, token):
    print("two nodes: one IMU session across both nodes")
    rng = random.Random(15)
    nodes = [a, b]
    answers, failures = {}, []
    for seq in range(6):
        status, answer = request(nodes[seq % 2].port, "POST", imu_path("alternating", seq), imu_csv(seq, rng), token=token,
                                 content_type="text/csv")
        if status != 200:
            failures.append((seq, status, answer[:200]))
        answers[seq] = answer
    check("batches 0-5 alternate A, B, A... and are all accepted in order", not failures, failures)
    totals = [(js(answers[seq]) or {}).get("totalSteps") for seq in range(6)]
    check("totalSteps never goes back as the session moves between nodes",
          all(isinstance(t, int) for t in totals) and totals == sorted(totals), totals)
    rng = random.Random(15)
    bodies = [imu_csv(seq, rng) for seq in range(6)]
    status, replay = request(b.port, "POST", imu_path("alternating", 4), bodies[4], token=token, content_type="text/csv")
    check("seq 4 (answered by A) sent again to B replays A's answer byte for byte", status == 200 and replay == answers[4],
          (status, replay[:120], answers[4][:120]))
    status, body = request(a.port, "POST", imu_path("alternating", 8), bodies[0], token=token, content_type="text/csv")
    check("a gap is a 409 naming seq 6, whichever node answered last", status == 409 and b"6" in body, (status, body[:200]))
    status, _ = request(b.port, "POST", "/v1/ingest/imu/alternating/end", token=token)
    status2, body = request(a.port, "POST", imu_path("alternating", 6), bodies[0], token=token, content_type="text/csv")
    check("a session ended on B takes no batch on A (409)", status == 200 and status2 == 409, (status, status2, body[:200]))


def kill_checks(binary, public, database, a, b, token):
    print("two nodes: kill -9 of one node while clients write to both")
    ledger = Ledger()
    stop = threading.Event()
    threads = []
    for k in range(6):
        port = (a if k % 2 == 0 else b).port
        threads.append(threading.Thread(target=sample_writer, args=(port, token, ledger, random.Random(k), stop), daemon=True))
    for thread in threads:
        thread.start()

    def acked_count():
        return sum(1 for batch in ledger.batches if batch[2] == "acked")
    # Counted, not timed: a loaded machine acknowledges fewer batches in a fixed spell.
    wait_until(lambda: acked_count() >= 12, 60, 0.02)
    a.proc.send_signal(signal.SIGKILL)
    a.proc.wait(10)
    after_kill = acked_count()
    wait_until(lambda: acked_count() >= after_kill + 3, 60, 0.02)   # B's writers go on alone
    stop.set()
    for thread in threads:
        thread.join(30)
    acked = sum(1 for batch in ledger.batches if batch[2] == "acked")
    check(f"writes went on through the kill ({acked} batches acknowledged)", acked > 10, acked)
    verify(b.port, token, ledger, "after kill -9 of A, read on B")
    again = node(binary, public, database)
    try:
        verify(again.port, token, ledger, "A restarted on the same database")
    finally:
        again.stop()


def psql(base_url, sql):
    return subprocess.run(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", base_url, "-c", sql],
                          check=True, capture_output=True, text=True, timeout=60).stdout


def fault_checks(base_url, database, a, b, token):
    print("two nodes: database faults")
    name = database.split("?", 1)[0].rsplit("/", 1)[1]
    terminate = f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '{name}' AND pid <> pg_backend_pid()"
    killed = int(psql(base_url, terminate).strip() or 0)
    status, body = request(b.port, "GET", "/v1/changes?types=stepCount", token=token)
    check(f"after every database connection was killed ({killed}), the next request is answered (the pool reconnects)",
          killed >= 2 and status == 200, (killed, status, body[:200]))

    psql(base_url, f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
    try:
        psql(base_url, terminate)
        started = time.time()
        status, headers, body = http(a.port, "POST", "/v1/samples", {"samples": [step_sample(5000, 700)]}, token=token)
        elapsed = time.time() - started
        check("a database refusing connections is a 503 with Retry-After", status == 503 and headers.get("Retry-After"),
              (status, headers, body[:200]))
        check(f"the 503 comes quickly, not after a hang ({elapsed:.1f} s)", elapsed < 10, elapsed)
        text = body.decode(errors="replace")
        check("the 503's code is the contract's errorUnavailable", '"code":"errorUnavailable"' in text.replace(" ", ""), text[:300])
        check("no SQL or driver text in the 503", not any(word in text for word in ("PostgreSQL", "connect", "SELECT", "INSERT", name)),
              text[:300])
    finally:
        psql(base_url, f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
    status, _ = request(a.port, "POST", "/v1/samples", {"samples": [step_sample(5000, 700)]}, token=token)
    check("once the database takes connections again, the same write succeeds", status == 201, status)
    # The listeners lost their connections too: they reconnect and LISTEN again on their own.
    woke = None
    for attempt in range(25):                     # B's listener reconnects within a few seconds
        status, body = request(b.port, "GET", "/v1/changes?types=stepCount", token=token)
        anchor = json.loads(body)["anchor"]
        poll = socket.create_connection(("127.0.0.1", b.port), timeout=30)
        poll.sendall(f"GET /v1/changes?types=stepCount&wait=2&anchor={anchor} HTTP/1.1\r\nHost: x\r\n"
                     f"Authorization: Bearer {token}\r\nConnection: close\r\n\r\n".encode())
        time.sleep(0.1)
        sample = step_sample(6000 + attempt, 800 + attempt)
        request(a.port, "POST", "/v1/samples", {"samples": [sample]}, token=token)
        acknowledged = time.time()
        answer = read_until(poll, b"", lambda d: b"\r\n\r\n" in d and sample["uuid"].encode() in d, timeout=3)
        poll.close()
        if sample["uuid"].encode() in answer and time.time() - acknowledged < 1:
            woke = attempt
            break
    check("after the outage, a write on A wakes a long-poll on B again (B's listener reconnected)", woke is not None, woke)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--public", required=True)
    parser.add_argument("--database", required=True, help="a postgres:// URL; the test creates a fresh database on that server")
    parser.add_argument("--skip", default="", help="comma-separated parts to leave out: feed,statistics,zones,revocation,sessions,narrowing,imu,faults,kill")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    public = os.path.abspath(args.public)
    database = fresh_database(args.database, "healthd_two_nodes")
    a = node(args.binary, public, database)
    b = node(args.binary, public, database)
    try:
        _, token = user_and_token(a.port, "two-nodes", ["stepCount", "heartRate", WRITER_TYPE, DISCRETE_TYPE,
                                                        "distanceWalkingRunning", "flightsClimbed"])
        for part, run in (("feed", lambda: feed_checks(a, b, token)), ("statistics", lambda: statistics_checks(a, b, token)),
                          ("zones", lambda: zone_checks(a, b)), ("revocation", lambda: revocation_checks(a, b)),
                          ("sessions", lambda: session_checks(a, b)), ("narrowing", lambda: narrowing_checks(a, b)),
                          ("imu", lambda: imu_checks(a, b, token)), ("faults", lambda: fault_checks(args.database, database, a, b, token)),
                          ("kill", lambda: kill_checks(args.binary, public, database, a, b, token))):
            if part in skip:
                print(f"two nodes: {part}: skipped (--skip)")
            else:
                run()
    finally:
        for server in (a, b):
            if server.proc.poll() is None:
                server.proc.kill()
    print(f"two nodes: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
