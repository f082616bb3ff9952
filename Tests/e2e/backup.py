#!/usr/bin/env python3
"""A person's backup and restore, and the data directory, against the real binary.

- Round trip: the demo user and a user with every kind of type (quantity from two apps, one with a set
  source order and one without, category, correlation, workout with events and route, characteristics,
  activity goals, stored activity summaries) are exported with `healthd export`, imported into a fresh
  server twice, and every answer is compared, not counts: statistics and collections of every quantity
  type in two time zones, summaries, activity summaries, samples of every type, sources, source order,
  characteristics, workouts and the route, and the backup itself exported again.
- With --move-through URL: from SQLite to PostgreSQL and back to SQLite, comparing at each step.
- The data directory (SQLite): 0700 and files 0600, modes of an existing one repaired and logged, a
  second server refused naming the first one's pid and port; a large static file streamed with bounded
  memory.

Usage: backup.py --binary healthd --public Public [--database URL] [--move-through URL]
"""
import argparse, hashlib, json, os, shutil, signal, socket, stat, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import ADMIN, DATABASE, Server, check, http, js, fresh_database  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fixtures", "apple-health")
# One "now" for every question asked: the answers before and after a move are compared, and a run
# that crosses midnight UTC must ask both sides about the same days.
NOW = time.time()


def iso(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def run(binary, data_dir, *args, database=None):
    store = ["--data-dir", data_dir] + (["--database", database] if database else [])
    env = dict(os.environ, HEALTHD_ADMIN_TOKEN=ADMIN)
    return subprocess.run([binary, *args, *store], capture_output=True, text=True, timeout=600, env=env)


class Place:
    """A data directory and, for PostgreSQL, its own fresh database."""

    def __init__(self, root, name, database_base=None):
        self.data_dir = os.path.join(root, name)
        os.makedirs(self.data_dir, exist_ok=True)
        self.database = fresh_database(database_base) if database_base else None
        self.kind = "PostgreSQL" if self.database else "SQLite"

    def serve(self, binary, public, extra=(), drain=True):
        saved = DATABASE["base"]
        DATABASE["base"] = None  # this place's own database, not e2e's per-directory one
        try:
            return Server(binary, public, data_dir=self.data_dir,
                          extra=(["--database", self.database] if self.database else []) + list(extra), drain=drain)
        finally:
            DATABASE["base"] = saved

    def run(self, binary, *args):
        return run(binary, self.data_dir, *args, database=self.database)


def token_for(port, user, app, read, share=()):
    st, _, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": app, "read": read, "share": list(share)}, token=ADMIN)
    return (js(b) or {}).get("token")


def catalog(port, token):
    st, _, b = http(port, "GET", "/v1/types", token=token)
    types = (js(b) or {}).get("types", [])
    return types


def build_every_kind_user(binary, port, place):
    """A user with every kind of type, saved by three apps through the API, plus an Apple Health export
    (characteristics and stored activity summaries) through `healthd import`."""
    st, _, b = http(port, "POST", "/v1/users", {"name": "every"}, token=ADMIN)
    check("the every-kind user is created", st == 201, b)
    everything = [t["id"] for t in catalog(port, token_for(port, "every", "catalog-reader", []))]
    quantity = ["stepCount", "distanceWalkingRunning", "heartRate", "bodyMass", "activeEnergyBurned",
                "bloodPressureSystolic", "bloodPressureDiastolic"]
    kinds = quantity + ["sleepAnalysis", "bloodPressure", "workout", "workoutRoute"]
    phone = token_for(port, "every", "phone", kinds, kinds)
    watch = token_for(port, "every", "watch", [], kinds)
    scale = token_for(port, "every", "scale", ["bodyMass"], ["bodyMass", "stepCount"])
    day = NOW - 3 * 86400
    day -= day % 86400
    at = lambda h, m=0: iso(day + h * 3600 + m * 60)  # noqa: E731
    def save(token, samples):
        st, _, b = http(port, "POST", "/v1/samples", {"samples": samples}, token=token)
        check(f"saved {len(samples)} samples", st in (200, 201), b[:300])
    # The watch saves steps first, then the phone: without a set order the watch ranks first, and the
    # import (in time order) would save the phone's first.
    save(watch, [{"type": "stepCount", "value": 900 + i, "unit": "count", "start": at(9, 10 * i), "end": at(9, 10 * i + 10)}
                 for i in range(6)])
    save(phone, [{"type": "stepCount", "value": 1000 + i, "unit": "count", "start": at(9, 10 * i + 5), "end": at(9, 10 * i + 15)}
                 for i in range(6)] + [
        {"type": "stepCount", "value": 40, "unit": "count", "start": at(7, 0), "end": at(7, 5)}])
    save(scale, [{"type": "stepCount", "value": 77, "unit": "count", "start": at(6, 58), "end": at(7, 3)},
                 {"type": "bodyMass", "value": 71.3, "unit": "kg", "start": at(7, 30)}])
    save(watch, [{"type": "distanceWalkingRunning", "value": 0.7 + i / 10, "unit": "km", "start": at(9, 10 * i), "end": at(9, 10 * i + 10)}
                 for i in range(6)] + [{"type": "heartRate", "value": 60 + i, "unit": "count/min", "start": at(9, i)} for i in range(30)]
         + [{"type": "activeEnergyBurned", "value": 12.5, "unit": "kcal", "start": at(9, 0), "end": at(9, 30)}])
    save(phone, [{"type": "distanceWalkingRunning", "value": 0.75 + i / 10, "unit": "km", "start": at(9, 10 * i + 2), "end": at(9, 10 * i + 12)}
                 for i in range(6)] + [{"type": "heartRate", "value": 70 + i, "unit": "count/min", "start": at(9, i)}
                                       for i in range(0, 30, 3)]
         + [{"type": "bodyMass", "value": 71.9, "unit": "kg", "start": at(7, 31)},
            {"type": "sleepAnalysis", "value": "asleepCore", "start": at(1), "end": at(3)},
            {"type": "sleepAnalysis", "value": "asleepDeep", "start": at(3), "end": at(4)},
            {"type": "bloodPressure", "start": at(8), "objects": [
                {"type": "bloodPressureSystolic", "value": 121, "unit": "mmHg", "start": at(8)},
                {"type": "bloodPressureDiastolic", "value": 79, "unit": "mmHg", "start": at(8)}]}])
    workout = "0195c8a4-1f00-7000-8000-00000000e0a1"
    save(phone, [{"uuid": workout, "type": "workout", "activityType": "running", "start": at(18), "end": at(18, 40),
                  "totalDistance": {"value": 6.1, "unit": "km"}, "totalEnergyBurned": {"value": 420, "unit": "kcal"},
                  "events": [{"type": "pause", "date": at(18, 10)}, {"type": "resume", "date": at(18, 12)}]}])
    save(phone, [{"type": "workoutRoute", "workout": workout, "start": at(18), "end": at(18, 40), "locations": [
        {"date": at(18, i), "latitude": 52.52 + i / 1000, "longitude": 13.40 + i / 700, "altitude": 34 + i, "speed": 2.9}
        for i in range(40)]}])
    st, _, b = http(port, "PUT", "/v1/sources/priority", {"user": "every", "type": "distanceWalkingRunning",
                                                          "order": ["phone", "watch"]}, token=ADMIN)
    check("a set source order for distance", st == 200, b)
    st, _, b = http(port, "PUT", "/v1/activity-goals", {"user": "every", "activeEnergyBurnedGoal": 640, "appleExerciseTimeGoal": 45,
                                                         "appleStandHoursGoal": 10}, token=ADMIN)
    check("activity goals set", st == 200, b)
    imported = place.run(binary, "import", os.path.join(FIXTURES, "tdda", "export6s3sample.xml"), "--user", "every")
    check("an Apple Health export (characteristics, activity summaries) for the every-kind user",
          imported.returncode == 0 and "2 activity summaries" in imported.stdout, imported.stdout[-300:] + imported.stderr)
    st, _, b = http(port, "PUT", "/v1/characteristics", {"user": "every", "biologicalSex": "female", "bloodType": "oPositive",
                                                         "dateOfBirth": "1981-02-03", "wheelchairUse": "no"}, token=ADMIN)
    check("characteristics set", st == 200, b)
    return everything


def strip_server_fields(sample):
    sample = dict(sample)
    sample.pop("created", None)
    if isinstance(sample.get("source"), dict):
        sample["source"] = {k: v for k, v in sample["source"].items() if k != "user"}
    if "objects" in sample:
        sample["objects"] = [strip_server_fields(o) for o in sample["objects"]]
    return sample


def answers(port, user, types):
    """Every answer the comparison looks at, as (what, status, body) in a fixed order."""
    token = token_for(port, user, "backup-reader", types)
    got = []
    def get(path, transform=None):
        st, _, b = http(port, "GET", path, token=token)
        body = js(b) if transform else b
        got.append((path, st, transform(body) if transform and body is not None else body))
    info = {t["id"]: t for t in catalog(port, token)}
    recent = (iso(NOW - 35 * 86400)[:10] + "T00:00:00Z", iso(NOW + 86400)[:10] + "T00:00:00Z")
    old = ("2014-09-01T00:00:00Z", "2016-05-01T00:00:00Z")
    quantity = [t for t, d in info.items() if d.get("kind") == "quantity" and d.get("aggregation")]
    for type_id in quantity:
        options = "cumulativeSum" if info[type_id]["aggregation"] == "cumulative" else "discreteAverage,discreteMin,discreteMax,mostRecent"
        for start, end, interval in ((*recent, "P1D"), (*old, "P1W")):
            get(f"/v1/statistics?type={type_id}&options={options},separateBySource&start={start}&end={end}")
            for zone in ("Europe/Berlin", "America/New_York"):
                get(f"/v1/statistics/collection?type={type_id}&options={options}&interval={interval}&timeZone={zone}"
                    f"&start={start}&end={end}")
        hours = (iso(NOW - 4 * 86400)[:10] + "T00:00:00Z", iso(NOW - 2 * 86400)[:10] + "T00:00:00Z")
        get(f"/v1/statistics/collection?type={type_id}&options={options},separateBySource&interval=PT1H"
            f"&timeZone=Asia/Kolkata&start={hours[0]}&end={hours[1]}")
        get(f"/v1/sources/priority?type={type_id}")
    for type_id in types:
        if info.get(type_id, {}).get("kind") == "characteristic":
            continue
        cursor, pages = None, 0
        samples = []
        while pages < 200:
            path = f"/v1/samples?type={type_id}&limit=1000" + (f"&cursor={cursor}" if cursor else "")
            st, _, b = http(port, "GET", path, token=token)
            body = js(b) or {}
            samples += [strip_server_fields(s) for s in body.get("samples", [])]
            cursor = body.get("next")
            pages += 1
            if st != 200 or not cursor:
                break
        got.append((f"samples of {type_id}", st, samples))
        # HKSourceQuery answers a set: the order (first saver first) is history, not carried.
        get(f"/v1/sources?type={type_id}", lambda body: sorted(body.get("sources", []), key=lambda s: s["app"]))
    today = time.strftime("%Y-%m-%d", time.gmtime(NOW))
    for zone in ("Europe/Berlin", "America/Los_Angeles", "Pacific/Auckland"):
        for period in ("day", "week", "month"):
            for date in (today, iso(NOW - 3 * 86400)[:10], iso(NOW - 20 * 86400)[:10], "2016-04-14"):
                get(f"/v1/summary?date={date}&period={period}&timeZone={zone}")
        get(f"/v1/activity-summaries?start={recent[0][:10]}&end={today}&timeZone={zone}")
        get(f"/v1/activity-summaries?start=2016-04-01&end=2016-04-30&timeZone={zone}")
    get("/v1/characteristics")
    get(f"/v1/workouts?start={recent[0]}&end={recent[1]}", lambda body: [strip_server_fields(w) for w in body.get("workouts", body)]
        if isinstance(body, dict) else body)
    st, _, b = http(port, "GET", f"/v1/workouts?start={recent[0]}&end={recent[1]}", token=token)
    for workout in (js(b) or {}).get("workouts", []):
        get(f"/v1/workouts/{workout['uuid']}/route")
    return got


def backup_of(place, binary, user, path):
    out = place.run(binary, "export", "--user", user, "--output", path)
    check(f"healthd export --user {user} ({place.kind})", out.returncode == 0, out.stderr)
    with open(path) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    settings = lines[0].get("healthdBackup") if lines else None
    # Samples with the same start may come in another commit order after an import: compare them sorted.
    samples = sorted((strip_server_fields(s) for s in lines[1:]), key=lambda s: (s["start"], s["type"], s["uuid"]))
    return settings, samples


def difference(settings, again_settings, samples, again_samples):
    """What differs between a backup and the one exported again after restoring it, briefly."""
    keys = [k for k in set(settings or {}) | set(again_settings or {}) if (settings or {}).get(k) != (again_settings or {}).get(k)]
    parts = [f"{k}: {str((settings or {}).get(k))[:300]} != {str((again_settings or {}).get(k))[:300]}" for k in keys]
    if samples != again_samples:
        first = next((i for i, (a, b) in enumerate(zip(samples, again_samples)) if a != b), min(len(samples), len(again_samples)))
        parts.append(f"samples {len(samples)} vs {len(again_samples)}, first difference at {first}: "
                     f"{samples[first] if first < len(samples) else None} != {again_samples[first] if first < len(again_samples) else None}")
    return "; ".join(parts)[:1500]


def restore(place, binary, user, path, samples):
    first = place.run(binary, "import", path, "--user", user)
    check(f"healthd import of {user}'s backup into a fresh {place.kind} store", first.returncode == 0
          and f"imported {samples} new samples" in first.stdout and "settings: restored" in first.stdout,
          first.stdout[-600:] + first.stderr[-300:])
    again = place.run(binary, "import", path, "--user", user)
    check(f"a second import of {user}'s backup changes nothing ({place.kind})", again.returncode == 0
          and "imported 0 new samples" in again.stdout and "settings: as in the backup already" in again.stdout,
          again.stdout[-600:] + again.stderr[-300:])


def compare(label, before, after):
    check(f"{label}: every answer is 200", all(a[1] == 200 for a in before + after),
          [a[:2] for a in before + after if a[1] != 200][:5])
    differing = [(b[0], str(b[2])[:700], str(a[2])[:700]) for b, a in zip(before, after) if b[2] != a[2] or b[0] != a[0]]
    check(f"{label}: {len(before)} answers identical", not differing and len(before) == len(after), differing[:3])


def round_trip(binary, public, root, chain):
    """Builds the users on chain[0], then moves them along the chain, comparing everything at each step."""
    print(f"backup: round trip {' -> '.join(p.kind for p in chain)}")
    source = chain[0]
    server = source.serve(binary, public, extra=["--demo"], drain=False)
    try:
        deadline = time.time() + 300
        ready = False
        while time.time() < deadline and not ready:
            line = server.proc.stdout.readline()
            ready = "demo user ready" in line
            if not line and server.proc.poll() is not None:
                break
        check("the demo user is seeded", ready)
        threading.Thread(target=lambda: [None for _ in server.proc.stdout], daemon=True).start()
        types = build_every_kind_user(binary, server.port, source)
        expected = {user: answers(server.port, user, types) for user in ("demo", "every")}
    finally:
        server.stop()
    bodies = [a[2] for a in expected["every"] if isinstance(a[2], bytes)]
    for what, marker in (("merged steps", b'"sum"'), ("a route", b'"latitude"'), ("characteristics", b'"biologicalSex"'),
                         ("a stored activity summary's goal", b'"activeEnergyBurnedGoal":680'), ("set goals", b'640')):
        check(f"the compared answers hold {what}", any(marker in b for b in bodies))
    previous = source
    for step, place in enumerate(chain[1:], 1):
        for user in ("demo", "every"):
            path = os.path.join(root, f"{user}-{step}.ndjson")
            settings, samples = backup_of(previous, binary, user, path)
            check(f"{user}'s backup carries apps, source orders, characteristics, goals and no token",
                  settings and settings.get("apps") and settings.get("sourcePriorities") is not None
                  and "activityGoals" in settings and "token" not in json.dumps(settings), str(settings)[:300])
            restore(place, binary, user, path, len(samples))
            again_settings, again_samples = backup_of(place, binary, user, path + ".again")
            check(f"{user}'s backup exported again from the restored store is the same", again_settings == settings
                  and again_samples == samples, difference(settings, again_settings, samples, again_samples))
        server = place.serve(binary, public)
        try:
            for user in ("demo", "every"):
                compare(f"{user} after {previous.kind} -> {place.kind}", expected[user], answers(server.port, user, types))
        finally:
            server.stop()
        previous = place


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def vm_hwm(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def data_directory_checks(binary, public, root):
    print("backup: the data directory (SQLite): modes, one server, static files streamed")
    data_dir = os.path.join(root, "modes")
    os.makedirs(data_dir)
    os.chmod(data_dir, 0o755)
    stale = os.path.join(data_dir, "notes.txt")
    with open(stale, "w") as f:
        f.write("x")
    os.chmod(stale, 0o644)
    big_public = os.path.join(root, "public")
    shutil.copytree(public, big_public)
    size = 96 * 1024 * 1024 + 12345
    with open(os.path.join(big_public, "big.bin"), "wb") as f:
        f.write(hashlib.sha256(b"healthd").digest() * 1024)  # a recognisable start; the rest sparse
        f.truncate(size)
    saved = DATABASE["base"]
    DATABASE["base"] = None
    try:
        env = dict(os.environ, HEALTHD_PUBLIC_DIR=big_public)
        proc = subprocess.Popen([binary, "serve", "--port", "0", "--data-dir", data_dir], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
        port = None
        deadline = time.time() + 30
        while time.time() < deadline and port is None:
            line = proc.stdout.readline()
            if "listening on" in line:
                port = int(line.rsplit(":", 1)[1])
            elif not line and proc.poll() is not None:
                break
        check("the server starts on an existing 0755 data directory", port is not None, proc.stderr.read() if port is None else "")
        if port is None:
            return
        threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
        files = [n for n in os.listdir(data_dir) if os.path.isfile(os.path.join(data_dir, n))]
        check("the data directory is now 0700", mode(data_dir) == 0o700, oct(mode(data_dir)))
        check("every file in it is the owner's alone (the database, its -wal and -shm, the admin token, the lock)",
              all(mode(os.path.join(data_dir, n)) & 0o077 == 0 for n in files)
              and {"healthd.sqlite", "admin-token", "healthd.lock"} <= set(files),
              {n: oct(mode(os.path.join(data_dir, n))) for n in files})
        try:
            second = subprocess.run([binary, "serve", "--port", "0", "--data-dir", data_dir], capture_output=True, text=True,
                                    timeout=15, env=env)
        except subprocess.TimeoutExpired as running:  # it started: what the check is about
            second = subprocess.CompletedProcess(running.cmd, None, str(running.stdout), str(running.stderr))
        check("a second server on the same SQLite data directory refuses to start, naming the first one's pid and port",
              second.returncode == 1 and f"pid {proc.pid}" in second.stderr and f"port {port}" in second.stderr,
              second.stdout[-200:] + second.stderr)
        cli = run(binary, data_dir, "seed", "--user", "beside", "--days", "1")
        check("other commands still work beside the running server", cli.returncode == 0, cli.stderr)

        # Four clients download the large file at once; the server's peak memory stays far below one copy.
        before = vm_hwm(proc.pid)
        results = []
        def download():
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
            head = b""
            while b"\r\n\r\n" not in head:
                head += s.recv(4096)
            head, _, body = head.partition(b"\r\n\r\n")
            digest = hashlib.sha256(body)
            received = len(body)
            while received < size:
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                digest.update(chunk)
                received += len(chunk)
                time.sleep(0.001)
            s.close()
            results.append((head, received, digest.hexdigest()))
        threads = [threading.Thread(target=download) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        with open(os.path.join(big_public, "big.bin"), "rb") as f:
            want = hashlib.file_digest(f, "sha256").hexdigest() if hasattr(hashlib, "file_digest") else None
        grown = vm_hwm(proc.pid) - before
        print(f"  (peak memory grew by {grown / 1048576:.1f} MiB during the four downloads)")
        check("four downloads of a 96 MiB static file arrive whole with Content-Length and caching headers",
              len(results) == 4 and all(f"Content-Length: {size}".encode() in h and b"ETag:" in h and n == size
                                        and (want is None or d == want) for h, n, d in results),
              [(h[:200], n) for h, n, _ in results])
        check("... and the server's peak memory grows by less than 32 MiB (the file is streamed, not read whole)",
              grown < 32 * 1024 * 1024, f"{grown / 1048576:.1f} MiB")
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        log = proc.stderr.read()
        check("the repair of the modes is logged", "notes.txt 644 -> 600" in log and "755 -> 700" in log, log[-400:])
        check("the stale file's mode is repaired", mode(stale) == 0o600, oct(mode(stale)))
    finally:
        DATABASE["base"] = saved


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--public", required=True)
    parser.add_argument("--database", help="a postgres:// URL: the round trip from PostgreSQL to PostgreSQL")
    parser.add_argument("--move-through", help="a postgres:// URL: also SQLite -> PostgreSQL -> SQLite")
    args = parser.parse_args()
    public = os.path.abspath(args.public)
    root = tempfile.mkdtemp(prefix="healthd-e2e-backup-")
    try:
        if args.database:
            round_trip(args.binary, public, root, [Place(root, "pg-old", args.database), Place(root, "pg-new", args.database)])
        else:
            data_directory_checks(args.binary, public, root)
            round_trip(args.binary, public, root, [Place(root, "old"), Place(root, "new")])
        if args.move_through:
            round_trip(args.binary, public, root, [Place(root, "from-sqlite"), Place(root, "on-postgres", args.move_through),
                                                   Place(root, "back-on-sqlite")])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"backup: {e2e.results['passed']} passed, {e2e.results['failed']} failed")
    sys.exit(1 if e2e.results["failed"] else 0)


if __name__ == "__main__":
    main()
