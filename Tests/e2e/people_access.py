#!/usr/bin/env python3
"""People's access to their data over real sockets (docs/api.md, "People: recent access, own data, erasure": recent access, own data,
erasure, admin lists):
- every read and write an app makes is counted per app, type and day, and a graceful stop writes
  the counts still in memory (a kill -9 loses at most the last second of them);
- the admin lists users and each user's apps, never a token;
- erasing one user while another writes: the writer gets only 2xx and keeps all its data, the
  erased user's stream ends and no row names her afterwards; her own writes in flight are stored
  (and erased) or refused with a 401, never a 404 or 5xx;
- the signed-in person sees recent access, exports their backup, deletes what one app saved and
  erases the account with their password.
Called from e2e.py main(); runs alone too: python3 Tests/e2e/people_access.py --binary B --public P."""
import json, os, signal, socket, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402  (the shared results, when run alone)
from e2e import ADMIN, Server, check, http, js, query_store, wait_until  # noqa: E402
from people import People, call, fresh_address  # noqa: E402


def new_user(port, name, app, read, share):
    st, _, b = http(port, "POST", "/v1/users", {"name": name}, token=ADMIN)
    user = js(b)["id"]
    st, _, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": app, "read": read, "share": share}, token=ADMIN)
    return user, js(b)["token"]


def steps(value, minute, day="2026-03-08"):
    return {"type": "stepCount", "value": value, "unit": "count",
            "start": f"{day}T09:{minute:02d}:00Z", "end": f"{day}T09:{minute:02d}:30Z"}


def recent_access_checks(binary, public):
    """Counts per app and type, written by the graceful stop, and what the admin lists show."""
    print("e2e: recent access and the admin's lists")
    server = Server(binary, public)
    try:
        port = server.port
        alice, phone = new_user(port, "access-alice", "phone", ["stepCount", "heartRate"], ["stepCount", "heartRate"])
        st, _, b = http(port, "POST", "/v1/samples", {"samples": [steps(10, 0), steps(20, 1), steps(30, 2)]}, token=phone)
        check("an app saves three samples", st == 201, b)
        st, _, b = http(port, "GET", "/v1/samples?type=stepCount", token=phone)
        check("it reads them back", st == 200 and len(js(b)["samples"]) == 3, b[:200])
        st, _, b = http(port, "GET", "/v1/statistics/collection?type=stepCount&options=cumulativeSum&start=2026-03-08T00:00:00Z"
                        "&end=2026-03-09T00:00:00Z&anchor=2026-03-08T00:00:00Z&interval=PT6H", token=phone)
        check("and four buckets of statistics", st == 200 and len(js(b)["buckets"]) == 4, b[:200])
        st, _, b = http(port, "GET", "/v1/users", token=ADMIN)
        users = js(b)["users"] if st == 200 else []
        check("GET /v1/users lists the user (id, name, created, activated)",
              any(u["id"] == alice and u["name"] == "access-alice" and "created" in u and u["activated"] is False for u in users), b)
        st, _, b = http(port, "GET", f"/v1/users/{alice}/authorizations", token=ADMIN)
        apps = js(b)["authorizations"] if st == 200 else []
        check("GET /v1/users/{id}/authorizations lists the app with its types, never a token",
              len(apps) == 1 and apps[0]["app"] == "phone" and apps[0]["read"] == ["heartRate", "stepCount"]
              and "created" in apps[0] and "lastUsed" in apps[0] and phone.encode() not in b and b"hdt_" not in b, b)
        st, _, _ = http(port, "GET", "/v1/users", token=phone)
        check("an app token cannot list users", st == 403, st)
        code = server.stop()
        check("the server stops gracefully", code == 0, code)
        # The stop flushed the counts still in memory (well within the second they would wait).
        reads = query_store(server.data_dir, "SELECT coalesce(sum(reads), 0) FROM access_log WHERE app = 'phone' AND type = 'stepCount'")
        samples_read = query_store(server.data_dir, "SELECT coalesce(sum(samples_read), 0) FROM access_log WHERE type = 'stepCount'")
        written = query_store(server.data_dir, "SELECT coalesce(sum(samples_written), 0) FROM access_log WHERE type = 'stepCount'")
        check("the access log holds 2 reads of 7 steps samples and statistics, and 3 written", (reads, samples_read, written) == ("2", "7", "3"),
              (reads, samples_read, written))
        types = query_store(server.data_dir, "SELECT count(DISTINCT type) FROM access_log WHERE app = 'phone'")
        check("rows per app and type only: the phone touched steps alone", types == "1", types)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()


def open_stream(port, token):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall((f"GET /v1/changes/stream?types=stepCount HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n").encode())
    data = b""
    deadline = time.time() + 30
    while b"event: change" not in data and time.time() < deadline:
        data += s.recv(65536)
    return s


def stream_ends(s, timeout=30):
    s.settimeout(timeout)
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk or chunk.endswith(b"0\r\n\r\n"):
                return True
    except (socket.timeout, OSError):
        return False


def erasure_checks(binary, public):
    """Erasing one user while another writes."""
    print("e2e: erasure while another user writes")
    server = Server(binary, public)
    try:
        port = server.port
        alice, alice_token = new_user(port, "erase-alice", "watch", ["stepCount"], ["stepCount"])
        bob, bob_token = new_user(port, "erase-bob", "phone", ["stepCount"], ["stepCount"])
        for batch in range(10):
            http(port, "POST", "/v1/samples", {"samples": [steps(1, m, f"2026-02-{batch + 1:02d}") for m in range(50)]}, token=alice_token)
        stream = open_stream(port, alice_token)
        statuses, stop = [], threading.Event()

        def write():
            day = 0
            while not stop.is_set():
                day += 1
                st, _, _ = http(port, "POST", "/v1/samples", {"samples": [steps(day, day % 60, "2026-01-01")]}, token=bob_token)
                statuses.append(st)

        writer = threading.Thread(target=write)
        writer.start()
        # Writes answered before the erasure and after it, counted rather than timed: a loaded
        # machine may answer only a few in a fixed spell.
        wait_until(lambda: len(statuses) >= 3, 60, 0.02)
        st, _, b = http(port, "DELETE", f"/v1/users/{alice}", token=ADMIN)
        erased = js(b) or {}
        after_erasure = len(statuses)
        wait_until(lambda: len(statuses) >= after_erasure + 3, 60, 0.02)
        stop.set()
        writer.join()
        check("DELETE /v1/users/{id} erases and says what", st == 200 and erased.get("erased", {}).get("samples", 0) >= 500
              and erased["erased"].get("user") == 1, b[:300])
        check("the other user's concurrent writes all succeed", len(statuses) > 3 and set(statuses) == {201}, sorted(set(statuses)))
        st, _, b = http(port, "GET", "/v1/samples?type=stepCount&limit=1000", token=bob_token)
        check("and are all kept", st == 200 and len(js(b)["samples"]) == len(statuses), (len(js(b)["samples"]), len(statuses)))
        check("the erased user's open stream ends", stream_ends(stream))
        st, _, _ = http(port, "GET", "/v1/samples?type=stepCount", token=alice_token)
        check("the erased user's token is refused", st == 401, st)
        own_writes_checks(port)
        code = server.stop()
        check("the server stops gracefully", code == 0, code)
        left = {table: query_store(server.data_dir, f"SELECT count(*) FROM {table}")
                for table in ["samples", "deleted_samples", "statistics_series", "access_log", "authorizations", "sources"]}
        # Bob's rows stay: one source, one authorization, his samples; nothing of alice's.
        check("no row of the erased user is left", left["authorizations"] == "1" and left["sources"] == "1"
              and left["samples"] == str(len(statuses)) and left["deleted_samples"] == "0" and left["statistics_series"] == "1", left)
        names = query_store(server.data_dir, "SELECT count(*) FROM users WHERE name = 'erase-alice'")
        check("her name is gone", names == "0", names)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()


def own_writes_checks(port):
    """Erasing a user while her own writes are in flight: each is stored and erased with the rest,
    or refused as from a revoked token (401); never a 404 naming an internal row or a 5xx (the
    Health Auto Export path made her source first and met the erasure's missing user). Rounds
    erase at different moments of the writes."""
    answers = []
    for round_number in range(4):
        user, token = new_user(port, f"erase-carol-{round_number}", "exporter", [], ["stepCount", "heartRate"])

        def write(worker):
            for i in range(12):
                minute = (worker * 12 + i) % 60
                if i % 2:
                    body = {"data": {"metrics": [{"name": "step_count", "units": "count",
                                                  "data": [{"date": f"2026-03-06 10:{minute:02d}:00 +0000", "qty": 5}]}]}}
                    st, _, b = http(port, "POST", "/v1/ingest/health-auto-export", body, token=token)
                else:
                    st, _, b = http(port, "POST", "/v1/samples", {"samples": [steps(worker + 1, minute, "2026-03-05")]}, token=token)
                answers.append((st, b[:160]))

        workers = [threading.Thread(target=write, args=(w,)) for w in range(4)]
        for worker in workers:
            worker.start()
        time.sleep(0.05 + 0.1 * round_number)
        http(port, "DELETE", f"/v1/users/{user}", token=ADMIN)
        for worker in workers:
            worker.join()
    unexpected = [a for a in answers if a[0] not in (200, 201, 401, 429)]
    check("the erased user's own writes in flight: each stored or a 401, never a 404 or 5xx",
          len(answers) == 4 * 4 * 12 and not unexpected, unexpected[:3])
    # The row counts checked after the stop below find none of hers either.


def kill_checks(binary, public):
    """A kill -9 loses at most the counts of the last second: what was counted a second and a half
    before is in the store."""
    print("e2e: recent access survives a kill -9 after a second")
    server = Server(binary, public)
    try:
        port = server.port
        _, phone = new_user(port, "kill-alice", "phone", ["stepCount"], ["stepCount"])
        http(port, "POST", "/v1/samples", {"samples": [steps(5, 0)]}, token=phone)
        http(port, "GET", "/v1/samples?type=stepCount", token=phone)
        time.sleep(1.5)
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(10)
        counted = query_store(server.data_dir, "SELECT coalesce(sum(reads), 0) || ',' || coalesce(sum(writes), 0) FROM access_log")
        check("the counts of 1.5 s before the kill are stored", counted == "1,1", counted)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()


def person_data_checks(binary, public):
    """The signed-in person's recent access, export, one app's data deleted, and erasure."""
    print("e2e: the person's recent access, export, deletion and erasure")
    people = People(binary, public)
    try:
        port = people.port
        user = people.person("owner")
        st, _, b = call(port, "POST", "/v1/authorizations", {"user": user, "app": "phone", "read": ["stepCount"],
                                                             "share": ["stepCount"]}, token=ADMIN)
        phone = json.loads(b)["token"]
        call(port, "POST", "/v1/samples", {"samples": [steps(1111, 0), steps(2222, 1)]}, token=phone)
        call(port, "GET", "/v1/samples?type=stepCount", token=phone)
        cookie = people.cookie("owner")
        st, _, b = call(port, "GET", "/v1/me/access?timeZone=Asia/Kathmandu", cookie=cookie)
        access = (js(b) or {}).get("access", [])
        check("GET /v1/me/access: the phone read 2 and wrote 2 steps samples today", st == 200 and len(access) == 1
              and access[0]["app"] == "phone" and access[0]["type"] == "stepCount"
              and (access[0]["reads"], access[0]["samplesRead"], access[0]["writes"], access[0]["samplesWritten"]) == (1, 2, 1, 2), b)
        check("no values in it", b"1111" not in b and b"2222" not in b)
        st, _, b = call(port, "GET", "/v1/me/access", token=phone)
        check("an app token cannot read it", st == 401, st)
        st, h, b = call(port, "GET", "/v1/me/export", cookie=cookie)
        lines = b.decode().splitlines()
        check("GET /v1/me/export: the settings line, then the samples", st == 200 and h.get("content-type") == ["application/x-ndjson"]
              and lines[0].startswith('{"healthdBackup":') and len(lines) == 3 and "1111" in b.decode(), (st, lines[:2]))
        json_header = {"Content-Type": "application/json"}
        st, _, b = call(port, "DELETE", "/v1/me/apps/phone/data", cookie=cookie)
        check("a cookie DELETE that is not JSON is refused", st == 415, st)
        st, _, b = call(port, "DELETE", "/v1/me/apps/phone/data", cookie=cookie, headers=json_header)
        check("DELETE /v1/me/apps/phone/data deletes what the phone saved", st == 200 and js(b) == {"app": "phone", "deleted": 2}, b)
        st, _, b = call(port, "GET", "/v1/samples?type=stepCount", token=phone)
        check("the phone finds none left", st == 200 and js(b)["samples"] == [], b[:200])
        st, _, b = call(port, "DELETE", "/v1/me", {"password": "not my password, surely"}, cookie=cookie)
        check("DELETE /v1/me with a wrong password: 401", st == 401, (st, b))
        st, h, b = call(port, "DELETE", "/v1/me", {"password": "a long walk by the river"}, cookie=cookie)
        erased = (js(b) or {}).get("erased", {})
        check("DELETE /v1/me erases the account and says what", st == 200 and erased.get("user") == 1 and erased.get("sessions", 0) >= 1
              and erased.get("tombstones") == 2, b)
        check("and clears the cookie", any("Max-Age=0" in v for v in h.get("set-cookie", [])), h.get("set-cookie"))
        check("the session is gone", people.me(cookie) == 401)
        st, _, _ = people.sign_in("owner", source=fresh_address())
        check("the name signs in no more", st == 401, st)
        st, _, _ = call(port, "GET", "/v1/samples?type=stepCount", token=phone)
        check("the app's token is gone", st == 401, st)
    finally:
        people.stop()


def people_access_checks(binary, public):
    recent_access_checks(binary, public)
    kill_checks(binary, public)
    erasure_checks(binary, public)
    person_data_checks(binary, public)


if __name__ == "__main__":
    e2e.run_alone(people_access_checks)
