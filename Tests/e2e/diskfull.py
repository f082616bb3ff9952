"""A full disk under write load: healthd's data directory on a small tmpfs, filled until writes
are refused. Checks that a refused write is a 507 errorInsufficientStorage with Retry-After and no
internals, that reads go on working, that every acknowledged sample survives (also a kill -9),
and that writes succeed again by themselves once space returns.

Needs to mount a tmpfs (root, or CAP_SYS_ADMIN); where mount is not permitted it prints why and
skips (exit 0). Usage: python3 Tests/e2e/diskfull.py --binary .build/debug/healthd --public Public
"""
import argparse, os, shutil, signal, subprocess, sys, tempfile, time, uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import ADMIN, Server, check, http, js, results, wait_until  # noqa: E402

TMPFS_BYTES = 24 * 1024 * 1024
# Left free after the ballast file: a few batches fit, then the disk is full.
HEADROOM_BYTES = 1536 * 1024


def mount_tmpfs(directory):
    """Mounts a small tmpfs on `directory`; returns None, or the reason it could not."""
    if not shutil.which("mount"):
        return "no mount command"
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs", directory],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return (done.stderr or done.stdout).strip() or f"mount exited {done.returncode}"
    return None


def batch(count):
    """`count` step samples with client uuids and bulky metadata, so the disk fills in few batches."""
    samples = []
    for _ in range(count):
        samples.append({"uuid": str(uuid.uuid4()), "type": "stepCount", "value": 10, "unit": "count",
                        "start": "2026-03-08T09:00:00Z", "end": "2026-03-08T09:01:00Z",
                        "metadata": {f"k{i}": os.urandom(48).hex() for i in range(60)}})
    return {"samples": samples}


def stored_uuids(port, token):
    found, cursor = set(), None
    while True:
        path = "/v1/samples?type=stepCount&limit=1000" + (f"&cursor={cursor}" if cursor else "")
        st, _, b = http(port, "GET", path, token=token)
        if st != 200:
            return None
        page = js(b)
        found.update(s["uuid"] for s in page["samples"])
        cursor = page.get("next")
        if not cursor:
            return found


def fill_ballast(directory):
    """Writes a file that leaves HEADROOM_BYTES free on the tmpfs."""
    stats = os.statvfs(directory)
    free = stats.f_bavail * stats.f_frsize
    path = os.path.join(directory, "ballast")
    with open(path, "wb") as f:
        remaining = max(0, free - HEADROOM_BYTES)
        while remaining > 0:
            step = min(remaining, 1 << 20)
            f.write(b"\0" * step)
            remaining -= step
    return path


def disk_full_checks(binary, public):
    print("e2e: a full disk (data directory on a small tmpfs)")
    mount_point = tempfile.mkdtemp(prefix="healthd-diskfull-")
    reason = mount_tmpfs(mount_point)
    if reason:
        print(f"  skip the disk-full check: cannot mount a tmpfs here ({reason}); run as root to include it")
        os.rmdir(mount_point)
        return
    server = None
    try:
        data = os.path.join(mount_point, "data")
        server = Server(binary, public, data_dir=data, drain=True)
        port = server.port
        st, _, b = http(port, "POST", "/v1/users", {"name": "full"}, token=ADMIN)
        user = js(b)["id"]
        st, _, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": "phone", "read": ["stepCount"],
                                                             "share": ["stepCount"]}, token=ADMIN)
        token = js(b)["token"]
        ballast = fill_ballast(mount_point)

        acknowledged, refusal, refused_body = set(), None, None
        for _ in range(200):
            body = batch(20)
            st, h, b = http(port, "POST", "/v1/samples", body, token=token)
            if st == 201:
                acknowledged.update(s["uuid"] for s in body["samples"])
                continue
            refusal, refused_body = (st, h, b), body
            break
        check("writes were acknowledged before the disk filled", len(acknowledged) > 0, len(acknowledged))
        check("a write on a full disk is refused", refusal is not None, "the disk never filled")
        if refusal is None:
            return
        st, h, b = refusal
        problem = js(b) or {}
        check("the refusal is 507 errorInsufficientStorage", st == 507 and problem.get("code") == "errorInsufficientStorage", (st, b[:300]))
        check("the 507 has Retry-After in seconds", h.get("Retry-After", "").isdigit(), h)
        check("the 507 carries the request id (body and X-Request-Id)", problem.get("requestId") and problem.get("requestId") == h.get("X-Request-Id"), (problem, h))
        check("the 507 shows no internals (no SQL, no SQLite message)",
              not any(word in b.decode(errors="replace") for word in ("SQLite", "INSERT", "COMMIT", "database or disk is full", "while running")), b[:300])

        # Reads go on while nothing can be written.
        stored = stored_uuids(port, token)
        check("reads work while the disk is full", stored is not None)
        check("every acknowledged sample is readable while the disk is full", stored is not None and acknowledged <= stored,
              len(acknowledged - (stored or set())))
        check("nothing of the refused batch was stored", stored is not None and not (stored & {s["uuid"] for s in refused_body["samples"]}))
        st, sh, _ = http(port, "GET", "/v1/statistics?type=stepCount&options=cumulativeSum&start=2026-03-08T00:00:00Z&end=2026-03-09T00:00:00Z", token=token)
        if st != 200:  # the log says why; it is written in batches (every 200 ms), so wait for the line
            wait_until(lambda: any(sh.get("X-Request-Id", "-") in line for line in server.log().splitlines()), 10)
        check("statistics work while the disk is full", st == 200,
              (st, [line for line in server.log().splitlines() if sh.get("X-Request-Id", "-") in line]))
        request_id = h.get("X-Request-Id", "-")

        def lines():
            return [line for line in server.log().splitlines() if f'"id":"{request_id}"' in line and '"disk full"' in line]
        # The access log is flushed every 200 ms by a thread of its own: wait for the line.
        check("the log line with the 507's request id holds SQLite's message",
              wait_until(lambda: any("database or disk is full" in line for line in lines())), lines()[:2])

        # Space returns: the same request succeeds, without a restart.
        os.unlink(ballast)
        st, _, b = http(port, "POST", "/v1/samples", refused_body, token=token)
        check("once space returns the refused batch is accepted (201), no restart", st == 201, (st, b[:200]))
        if st == 201:
            acknowledged.update(s["uuid"] for s in refused_body["samples"])
        st, _, _ = http(port, "POST", "/v1/users", {"name": "after-the-disk-full"}, token=ADMIN)
        check("once space returns other writes work again", st == 201, st)

        # Nothing acknowledged is lost, also across kill -9.
        server.stop(signal.SIGKILL)
        server = Server(binary, public, data_dir=data, drain=True)
        stored = stored_uuids(server.port, token)
        check("after kill -9 and a restart every acknowledged sample is there", stored is not None and acknowledged <= stored,
              len(acknowledged - (stored or set())))
    finally:
        if server and server.proc.poll() is None:
            server.stop()
        subprocess.run(["umount", mount_point], capture_output=True)
        shutil.rmtree(mount_point, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--public", required=True)
    args = parser.parse_args()
    disk_full_checks(args.binary, os.path.abspath(args.public))
    print(f"e2e: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
