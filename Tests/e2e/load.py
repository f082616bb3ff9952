#!/usr/bin/env python3
"""Load and soak: a mixed workload against the real healthd for a fixed time.

Many keep-alive connections, each a thread looping over a weighted mix: sample batch writes,
sample queries, single-sample reads, statistics and change-feed long-polls (when those routes
exist), the dashboard's static files and /healthz. Reports throughput, p50/p99/p999 latency per
kind and overall, errors (any non-2xx or connection failure; must be zero) and the server's RSS
sampled every second (must be flat: the last quarter's mean within --rss-growth of the second
quarter's). Exits non-zero on any error or RSS growth. Standard library only. Usage:
  load.py --binary .build/debug/healthd --public Public --seconds 20 --connections 32   (CI)
  load.py --binary .build/release/healthd --public Public --seconds 600 --connections 64 (soak)
"""
import argparse, http.client, json, os, random, shutil, sys, tempfile, threading, time, uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import ADMIN, Server, js, http as request  # noqa: E402

DAY_MS = 86_400_000
BASE_MS = 1_772_000_000_000


def iso(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def percentile(sorted_values, fraction):
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, int(fraction * len(sorted_values)))
    return sorted_values[index]


class Recorder:
    def __init__(self):
        self.lock = threading.Lock()
        self.latencies = {}
        self.errors = []

    def add(self, kind, seconds):
        with self.lock:
            self.latencies.setdefault(kind, []).append(seconds)

    def error(self, kind, detail):
        with self.lock:
            self.errors.append((kind, detail))


def client(port, token, features, recorder, deadline, rng, saved_uuids):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Authorization": "Bearer " + token}
    mix = [("write", 15), ("query", 25), ("read-one", 10), ("static", 15), ("healthz", 10)]
    if features.get("statistics"):
        mix.append(("statistics", 15))
    if features.get("changes"):
        mix.append(("long-poll", 5))
    kinds = [k for k, w in mix for _ in range(w)]
    while time.time() < deadline:
        kind = rng.choice(kinds)
        method, path, body, hdrs = "GET", "/healthz", None, {}
        if kind == "write":
            start = BASE_MS + rng.randrange(30) * DAY_MS + rng.randrange(1440) * 60_000
            samples = [{"uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)), "type": "stepCount",
                        "value": rng.randint(1, 200), "unit": "count",
                        "start": iso(start + i * 60_000), "end": iso(start + i * 60_000 + 30_000)} for i in range(rng.randint(1, 20))]
            method, path, body = "POST", "/v1/samples", json.dumps({"samples": samples}).encode()
            hdrs = dict(headers, **{"Content-Type": "application/json"})
        elif kind == "query":
            day = BASE_MS + rng.randrange(30) * DAY_MS
            path, hdrs = f"/v1/samples?type=stepCount&start={iso(day)}&end={iso(day + DAY_MS)}&limit=100", headers
        elif kind == "read-one":
            if not saved_uuids:
                continue
            path, hdrs = f"/v1/samples/{rng.choice(saved_uuids)}", headers
        elif kind == "statistics":
            day = BASE_MS + rng.randrange(30) * DAY_MS
            path = f"/v1/statistics?type=stepCount&start={iso(day)}&end={iso(day + DAY_MS)}&options=cumulativeSum"
            hdrs = headers
        elif kind == "long-poll":
            path, hdrs = "/v1/changes?types=stepCount&limit=100", headers
        elif kind == "static":
            path = rng.choice(["/", "/assets/dashboard.js", "/assets/dashboard.css", "/favicon.svg", "/openapi.json"])
        began = time.perf_counter()
        try:
            conn.request(method, path, body=body, headers=hdrs)
            response = conn.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as error:
            recorder.error(kind, repr(error))
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            continue
        elapsed = time.perf_counter() - began
        if not 200 <= response.status < 300:
            recorder.error(kind, f"{response.status} {path[:80]} {payload[:120]!r}")
            continue
        recorder.add(kind, elapsed)
        if kind == "write" and len(saved_uuids) < 10_000:
            saved_uuids.extend(json.loads(payload)["saved"][:2])
    conn.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--public", required=True)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rss-growth", type=float, default=0.25, help="largest allowed growth of mean RSS, late vs early")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    config = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    # One loopback address drives everything: the abuse limits are off here (they have their own tests).
    json.dump({"accessLog": False, "rateLimitPerAddressPerSecond": 0, "rateLimitPerTokenPerSecond": 0,
               "maxConnectionsPerAddress": 10_000}, config)
    config.close()
    server = Server(args.binary, os.path.abspath(args.public), extra=("--config", config.name), drain=True)
    failed = False
    try:
        st, _, body = request(server.port, "POST", "/v1/users", {"name": "load"}, token=ADMIN)
        user = js(body)["id"]
        st, _, body = request(server.port, "POST", "/v1/authorizations", {"user": user, "app": "load", "read": ["stepCount"],
                                                                      "share": ["stepCount"]}, token=ADMIN)
        token = js(body)["token"]
        window = f"start={iso(BASE_MS)}&end={iso(BASE_MS + DAY_MS)}"
        features = {
            "statistics": request(server.port, "GET", f"/v1/statistics?type=stepCount&{window}&options=cumulativeSum", token=token)[0] == 200,
            "changes": request(server.port, "GET", "/v1/changes?types=stepCount&limit=1", token=token)[0] == 200,
        }
        print(f"load: {args.connections} connections for {args.seconds:.0f} s; optional routes present: {features}", flush=True)
        recorder, saved_uuids = Recorder(), []
        deadline = time.time() + args.seconds
        rng = random.Random(args.seed)
        threads = [threading.Thread(target=client, args=(server.port, token, features, recorder, deadline,
                                                         random.Random(rng.random()), saved_uuids))
                   for _ in range(args.connections)]
        began = time.time()
        for thread in threads:
            thread.start()
        rss = []
        while any(t.is_alive() for t in threads):
            value = rss_kib(server.proc.pid)
            if value is not None:
                rss.append((round(time.time() - began), value))
            time.sleep(1)
        elapsed = time.time() - began
        all_latencies = sorted(l for values in recorder.latencies.values() for l in values)
        total = len(all_latencies)
        print(f"load: {total} requests in {elapsed:.1f} s = {total / elapsed:.0f} req/s; errors: {len(recorder.errors)}")
        print(f"load: {'kind':<12}{'count':>8}{'p50 ms':>10}{'p99 ms':>10}{'p999 ms':>10}")
        for kind, values in sorted(recorder.latencies.items()) + [("all", all_latencies)]:
            values = sorted(values)
            print(f"load: {kind:<12}{len(values):>8}{percentile(values, .5) * 1e3:>10.2f}"
                  f"{percentile(values, .99) * 1e3:>10.2f}{percentile(values, .999) * 1e3:>10.2f}")
        for kind, detail in recorder.errors[:10]:
            print(f"load: error {kind}: {detail}")
        quarter = max(1, len(rss) // 4)
        early = rss[quarter:2 * quarter] or rss[:1]
        late = rss[-quarter:]
        early_mean = sum(v for _, v in early) / len(early)
        late_mean = sum(v for _, v in late) / len(late)
        step = max(1, len(rss) // 12)
        print("load: RSS MiB over time: " + ", ".join(f"{t}s {v / 1024:.1f}" for t, v in rss[::step]))
        growth = late_mean / early_mean - 1
        print(f"load: RSS second quarter {early_mean / 1024:.1f} MiB, last quarter {late_mean / 1024:.1f} MiB ({growth:+.1%})")
        alive = server.proc.poll() is None
        failed = bool(recorder.errors) or growth > args.rss_growth or not alive or total == 0
        print(f"load: {'FAIL' if failed else 'ok'} (errors {len(recorder.errors)}, RSS growth {growth:+.1%} "
              f"allowed {args.rss_growth:+.0%}, server alive {alive})")
    finally:
        server.stop()
        shutil.rmtree(server.data_dir, ignore_errors=True)
        os.unlink(config.name)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
