#!/usr/bin/env python3
"""Server CPU per GET /v1/samples/{uuid} right after a start (no uuid key run held), of stored and
of unknown uuids, beside GET /healthz (the HTTP floor) in the same run (BENCHMARKS.md, uuid keys).

  healthd-bench seed-store --work-dir DIR --store-samples 1000000 --batch-size 1000   # prints TOKEN
  cp -r DIR COPY; Benchmarks/uuid_reads.py BINARY COPY TOKEN PORT    (a copy per run: a newer
  binary migrates the store). SAMPLES (default 1000000) must match the store; N requests per phase.
Rate limits are turned off and the access log too (a config file next to the copy)."""
import atexit, http.client, json, os, random, subprocess, sys, time, uuid

binary, data, token, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
EPOCH, SPACING, COUNT = 1_767_225_600_000, 5_000, int(os.environ.get("SAMPLES", "1000000"))
N = int(os.environ.get("N", "2000"))

def iso(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)

config = os.path.join(data, "uuid-reads-config.json")
with open(config, "w") as f:
    json.dump({"rateLimitPerTokenPerSecond": 0, "rateLimitPerAddressPerSecond": 0, "accessLog": False}, f)
proc = subprocess.Popen([binary, "serve", "--config", config, "--data-dir", data, "--port", str(port)],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
conn = None
for _ in range(600):
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/healthz"); conn.getresponse().read(); break
    except OSError:
        time.sleep(0.1)
H = {"Authorization": "Bearer " + token}

def get(path):
    conn.request("GET", path, headers=H)
    r = conn.getresponse()
    return r.status, r.read()

def cpu():
    fields = open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

rng = random.Random(7)
stored = []
for _ in range(40):
    at = EPOCH + rng.randrange(COUNT) * SPACING
    status, body = get(f"/v1/samples?type=heartRate&limit=100&start={iso(at)}")
    assert status == 200, (status, body[:200])
    stored += [s["uuid"] for s in json.loads(body)["samples"]]
hits = [rng.choice(stored) for _ in range(N)]
misses = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(N)]

def measure(name, paths, want):
    before, began = cpu(), time.time()
    for path in paths:
        status, body = get(path)
        assert status == want, (name, status, body[:200])
    used, wall = cpu() - before, time.time() - began
    return used / len(paths) * 1e6, wall / len(paths) * 1e6

results = {}
atexit.register(lambda: (proc.poll() is None) and (proc.terminate(), proc.wait()))
assert proc.poll() is None, "the server did not start"
results["uuid hit"] = measure("hit", [f"/v1/samples/{u}" for u in hits], 200)
results["uuid miss"] = measure("miss", [f"/v1/samples/{u}" for u in misses], 404)
results["healthz"] = measure("healthz", ["/healthz"] * N, 200)
proc.terminate(); proc.wait()
floor = results["healthz"][0]
for name, (c, w) in results.items():
    print(f"{name:10s} CPU {c:7.1f} us/request ({c / floor:5.2f}x healthz)  wall {w:7.1f} us")
print("load", open("/proc/loadavg").read().split()[:3])
