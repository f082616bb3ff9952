#!/usr/bin/env python3
"""Crash safety: kill -9 healthd while clients write, restart it on the same data, check nothing was lost.

Each round starts the real binary, runs concurrent sample writers (client-chosen uuids), a client
deleting acknowledged batches by time range (so saves merge uuid key runs that drop deleted samples'
entries, and deletes compact them) and IMU ingest sessions, kills the server with SIGKILL at a
random moment, restarts it on the same data directory and verifies:
  - every sample of a batch that got a 2xx is stored unless a delete of it was sent; every sample
    whose delete got a 204 is gone and reads as 404 by uuid;
  - no batch is partly stored (all of its uuids or none), and nothing unknown is stored;
  - each IMU session continues at the right seq: the acknowledged last batch replays its first
    answer byte for byte, and the 409 for a later seq names the next expected seq, which is the
    acknowledged one plus one, or plus two when the batch in flight at the kill was committed;
  - the change feed from no anchor lists exactly the stored samples (when GET /v1/changes exists);
  - re-sending every acknowledged batch stores its deleted samples again and nothing twice;
  - cumulative and discrete statistics equal a recomputation from the stored samples (when
    GET /v1/statistics exists).
Standard library only. Usage:
  crash.py --binary .build/debug/healthd --public Public --rounds 3          (CI)
  crash.py --binary .build/debug/healthd --public Public --rounds 50 --seed 7  (long)
"""
import argparse, calendar, json, math, os, random, shutil, signal, socket, sys, threading, time, uuid, http.client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import ADMIN, Server, check, results  # noqa: E402

WRITER_TYPE = "distanceCycling"   # cumulative, only the writers save it: its sum is checkable
DISCRETE_TYPE = "heartRate"       # discrete: min/max/average checkable
BASE_MS = 1_772_000_000_000       # 2026-02-25, a fixed day so the statistics window is known


def request(port, method, path, body=None, token=None, content_type="application/json", timeout=30):
    """One request on a fresh connection; returns (status, body) or raises OSError/HTTPException."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {}
        if token:
            headers["Authorization"] = "Bearer " + token
        if body is not None:
            headers["Content-Type"] = content_type
            if not isinstance(body, bytes):
                body = json.dumps(body).encode()
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def iso(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)


class Ledger:
    """What the clients sent and what the server acknowledged, shared by the client threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.batches = []          # (uuids, values by uuid, state, samples) state: "acked" | "unknown" | "rejected"
        self.slot = 0              # a unique minute per sample, so cumulative sums never overlap
        self.imu = {}              # session -> {"acked": last acked seq or -1, "answers": {seq: bytes}, "bodies": {seq: bytes}, "inflight": seq or None}
        self.deletes = {}          # uuid -> "acked" (204) | "unknown" (sent, no answer) | an unexpected answer
        self.delete_from = 0       # batches before this index were considered by the deleter

    def next_slots(self, count):
        with self.lock:
            first = self.slot
            self.slot += count
            return first


def sample_writer(port, token, ledger, rng, stop):
    while not stop.is_set():
        count = rng.randint(1, 40)
        first = ledger.next_slots(count)
        samples, values = [], {}
        for i in range(count):
            sample_uuid = str(uuid.UUID(int=rng.getrandbits(128), version=4)).upper()
            start = BASE_MS + (first + i) * 60_000
            if rng.random() < 0.7:
                value = rng.randint(1, 5000)
                samples.append({"uuid": sample_uuid, "type": WRITER_TYPE, "value": value, "unit": "m",
                                "start": iso(start), "end": iso(start + 30_000)})
            else:
                value = rng.randint(40, 200)
                samples.append({"uuid": sample_uuid, "type": DISCRETE_TYPE, "value": value, "unit": "count/min",
                                "start": iso(start), "end": iso(start)})
            values[sample_uuid] = (samples[-1]["type"], value)
        entry = [list(values), values, "unknown", samples]
        with ledger.lock:
            ledger.batches.append(entry)
        try:
            status, body = request(port, "POST", "/v1/samples", {"samples": samples}, token=token)
        except (OSError, http.client.HTTPException):
            return  # the server is gone: this batch's fate is unknown (all or nothing)
        if 200 <= status < 300:
            saved = [u.upper() for u in json.loads(body)["saved"]]
            entry[2] = "acked" if saved == entry[0] else "mismatch"
        elif status >= 500:
            entry[2] = "server-error %d %s" % (status, body[:200])
        else:
            entry[2] = "rejected %d %s" % (status, body[:200])


def ms_of(text):
    """The Unix ms of an instant written by iso()."""
    return calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")) * 1000 + int(text[20:23])


def sample_deleter(port, token, ledger, rng, stop):
    """Deletes about two thirds of the acknowledged batches, each with one
    DELETE /v1/samples?type=&start=&end= per type over the batch's own minutes, so more than half of
    the uuid keys are of deleted samples now and then (a compaction of the runs)."""
    while not stop.is_set():
        with ledger.lock:
            batches = ledger.batches[ledger.delete_from:]
            # Only batches answered already, in order: a batch still in flight is looked at again.
            waiting = next((i for i, b in enumerate(batches) if b[2] == "unknown"), len(batches))
            ledger.delete_from += waiting
            chosen = [b for b in batches[:waiting] if b[2] == "acked" and rng.random() < 0.67]
        if not chosen:
            time.sleep(0.005)
            continue
        for uuids, values, _, samples in chosen:
            starts = [ms_of(sample["start"]) for sample in samples]
            window = f"start={iso(min(starts))}&end={iso(max(starts) + 60_000)}"
            for type_name in (WRITER_TYPE, DISCRETE_TYPE):
                mine = [u for u in uuids if values[u][0] == type_name]
                if not mine:
                    continue
                with ledger.lock:
                    for sample_uuid in mine:
                        ledger.deletes[sample_uuid] = "unknown"
                try:
                    status, body = request(port, "DELETE", f"/v1/samples?type={type_name}&{window}", token=token)
                except (OSError, http.client.HTTPException):
                    return  # the server is gone: this delete's fate is unknown
                ok = status == 200 and json.loads(body).get("deleted") == len(mine)
                with ledger.lock:
                    for sample_uuid in mine:
                        ledger.deletes[sample_uuid] = "acked" if ok else "answered %d %s" % (status, body[:200])
                if stop.is_set():
                    return


def imu_csv(seq, rng):
    rate, seconds = 50, 20
    phase = rng.random()
    rows = ["t,x,y,z"]
    for i in range(rate * seconds):
        t = i / rate
        wave = math.sin(2 * math.pi * (1.8 * t + phase))
        rows.append(f"{t:.3f},{0.9 * wave:.4f},{6.9 + 2.1 * wave:.4f},6.9")
    return ("\n".join(rows) + "\n").encode()


def imu_path(session, seq):
    return f"/v1/ingest/imu?session={session}&seq={seq}&unit=m/s2&t0={iso(BASE_MS + 86_400_000 + seq * 20_000)}&device=crash"


def imu_client(port, token, ledger, session, rng, stop):
    state = {"acked": -1, "answers": {}, "bodies": {}, "inflight": None, "errors": []}
    with ledger.lock:
        ledger.imu[session] = state
    seq = 0
    while not stop.is_set():
        body = imu_csv(seq, rng)
        state["bodies"][seq] = body
        state["inflight"] = seq
        try:
            status, answer = request(port, "POST", imu_path(session, seq), body, token=token, content_type="text/csv")
        except (OSError, http.client.HTTPException):
            return
        if status != 200:
            state["errors"].append((seq, status, answer[:200]))
            return
        state["answers"][seq] = answer
        state["acked"] = seq
        state["inflight"] = None
        seq += 1


def all_samples(port, token, type_name):
    found, cursor = {}, None
    while True:
        path = f"/v1/samples?type={type_name}&limit=10000" + (f"&cursor={cursor}" if cursor else "")
        status, body = request(port, "GET", path, token=token)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {body[:200]}")
        page = json.loads(body)
        for sample in page["samples"]:
            found[sample["uuid"].upper()] = sample
        cursor = page.get("next")
        if not cursor:
            return found


def change_feed(port, token, types):
    """The change feed from no anchor: (added by uuid, deleted uuids). Any status but 200 fails."""
    added, deleted, anchor = {}, set(), None
    for _ in range(10_000):
        path = f"/v1/changes?types={','.join(types)}&limit=1000" + (f"&anchor={anchor}" if anchor else "")
        status, body = request(port, "GET", path, token=token)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {body[:200]}")
        page = json.loads(body)
        for sample in page.get("added", []):
            added[sample["uuid"].upper()] = sample
        for tombstone in page.get("deleted", []):
            deleted.add(tombstone["uuid"].upper())
        anchor = page.get("anchor")
        if not page.get("more"):
            return added, deleted
    raise RuntimeError("change feed did not end")


def verify(port, token, ledger, round_name):
    stored = {WRITER_TYPE: all_samples(port, token, WRITER_TYPE), DISCRETE_TYPE: all_samples(port, token, DISCRETE_TYPE)}
    stored_uuids = set(stored[WRITER_TYPE]) | set(stored[DISCRETE_TYPE])
    known, lost, partial, bad_states = set(), [], [], []
    acked = unknown_committed = unknown_absent = 0
    deletes_acked = {u for u, state in ledger.deletes.items() if state == "acked"}
    bad_deletes = [(u, state) for u, state in ledger.deletes.items() if state not in ("acked", "unknown")]
    for uuids, values, state, _ in ledger.batches:
        known.update(uuids)
        present = [u for u in uuids if u in stored_uuids]
        if state == "acked":
            acked += 1
            missing = [u for u in uuids if u not in stored_uuids and u not in ledger.deletes]
            if missing:
                lost.append((len(missing), missing[:2]))
        elif state == "unknown":
            if present and len(present) != len(uuids):
                partial.append((len(present), len(uuids)))
            elif present:
                unknown_committed += 1
            else:
                unknown_absent += 1
        else:
            bad_states.append(state)
    check(f"{round_name}: no write answered with an error or a mismatched saved list", not bad_states, bad_states[:3])
    check(f"{round_name}: every acknowledged batch is stored ({acked} batches)", acked > 0 and not lost, lost[:3])
    check(f"{round_name}: no batch is partly stored ({unknown_committed} in flight committed, {unknown_absent} not)",
          not partial, partial[:3])
    check(f"{round_name}: nothing stored that no client sent", stored_uuids <= known, list(stored_uuids - known)[:3])
    check(f"{round_name}: every delete answered 204 ({len(deletes_acked)} acknowledged, "
          f"{len(ledger.deletes) - len(deletes_acked)} in flight)", not bad_deletes, bad_deletes[:3])
    check(f"{round_name}: no acknowledged delete is undone", not (deletes_acked & stored_uuids), list(deletes_acked & stored_uuids)[:3])
    undone = []
    for sample_uuid in sorted(deletes_acked)[:50]:
        status, _ = request(port, "GET", f"/v1/samples/{sample_uuid}", token=token)
        if status != 404:
            undone.append((sample_uuid, status))
    check(f"{round_name}: deleted samples read as 404 by uuid", not undone, undone[:3])
    sent = {u: typed for (_, values, _, _) in ledger.batches for u, typed in values.items()}
    wrong_values = [u for u in stored_uuids & set(sent)
                    if float(stored[sent[u][0]][u]["value"]) != float(sent[u][1])]
    check(f"{round_name}: stored values are the values sent", not wrong_values, wrong_values[:3])

    for session, state in sorted(ledger.imu.items()):
        a = state["acked"]
        check(f"{round_name}: IMU {session} never answered an error before the kill", not state["errors"], state["errors"][:2])
        if a >= 0:
            status, answer = request(port, "POST", imu_path(session, a), state["bodies"][a], token=token, content_type="text/csv")
            check(f"{round_name}: IMU {session} seq {a} (acknowledged) replays its first answer",
                  status == 200 and answer == state["answers"][a], (status, answer[:200], state["answers"][a][:200]))
        status, body = request(port, "POST", imu_path(session, 1_000_000), state["bodies"].get(0, imu_csv(0, random.Random(0))),
                               token=token, content_type="text/csv")
        expected = None
        try:
            problem = json.loads(body)
            expected = int(problem["errors"][0]["detail"].split()[-1])
        except (ValueError, KeyError, IndexError, TypeError):
            pass
        inflight = state["inflight"]
        allowed = {a + 1} | ({a + 2} if inflight == a + 1 else set())
        check(f"{round_name}: IMU {session} continues at seq {sorted(allowed)} (server expects {expected})",
              status == 409 and expected in allowed, (status, body[:200]))
        if expected == a + 2:
            status, answer = request(port, "POST", imu_path(session, a + 1), state["bodies"][a + 1], token=token, content_type="text/csv")
            check(f"{round_name}: IMU {session} seq {a + 1} (committed in flight) replays as 200", status == 200, (status, answer[:200]))

    added, deleted = change_feed(port, token, [WRITER_TYPE, DISCRETE_TYPE])
    check(f"{round_name}: the change feed from no anchor lists exactly the stored samples",
          set(added) == stored_uuids, (len(added), len(stored_uuids), list(set(added) ^ stored_uuids)[:3]))

    window = f"start={iso(BASE_MS - 86_400_000)}&end={iso(BASE_MS + 20 * 86_400_000)}"
    status, body = request(port, "GET", f"/v1/statistics?type={WRITER_TYPE}&options=cumulativeSum&unit=m&{window}", token=token)
    expected_sum = sum(float(s["value"]) for s in stored[WRITER_TYPE].values())
    stats = json.loads(body) if status == 200 else {}
    got = stats.get("sumQuantity", stats.get("sum"))
    if isinstance(got, dict):
        got = got.get("value")
    check(f"{round_name}: cumulative sum equals a recomputation ({expected_sum:.0f} m)",
          status == 200 and got is not None and abs(float(got) - expected_sum) < 1e-6 * max(1.0, expected_sum), (status, body[:300]))
    status, body = request(port, "GET", f"/v1/statistics?type={DISCRETE_TYPE}&options=discreteMin,discreteMax&unit=count/min&{window}", token=token)
    values = [float(s["value"]) for s in stored[DISCRETE_TYPE].values()]
    stats = json.loads(body) if status == 200 else {}
    def number(key):
        v = stats.get(key)
        return v.get("value") if isinstance(v, dict) else v
    if values:
        check(f"{round_name}: discrete min/max equal a recomputation",
              status == 200 and number("minimum") == min(values) and number("maximum") == max(values), (status, body[:300]))

    # Every stored batch sent again (a client retrying after the crash) is idempotent: a sample never
    # lost the record of its uuid in the kill, so nothing is stored twice.
    resent = [(uuids, samples) for uuids, _, _, samples in ledger.batches if uuids and all(u in stored_uuids for u in uuids)]
    refused = []
    for uuids, samples in resent:
        status, body = request(port, "POST", "/v1/samples", {"samples": samples}, token=token)
        if not (200 <= status < 300 and [u.upper() for u in json.loads(body)["saved"]] == uuids):
            refused.append((status, body[:200]))
    after = len(all_samples(port, token, WRITER_TYPE)) + len(all_samples(port, token, DISCRETE_TYPE))
    check(f"{round_name}: re-sending the {len(resent)} stored batches is accepted and stores nothing twice",
          not refused and after == len(stored_uuids), (refused[:2], after, len(stored_uuids)))

    # Batches with deleted samples sent again: the deleted uuids are saved anew (as docs/api.md's
    # idempotency only covers stored uuids), the stored ones are not saved twice.
    partly = [(uuids, samples) for uuids, _, state, samples in ledger.batches
              if state == "acked" and not all(u in stored_uuids for u in uuids)]
    for uuids, samples in partly:
        status, body = request(port, "POST", "/v1/samples", {"samples": samples}, token=token)
        if not (200 <= status < 300 and [u.upper() for u in json.loads(body)["saved"]] == uuids):
            refused.append((status, body[:200]))
    everything = {**all_samples(port, token, WRITER_TYPE), **all_samples(port, token, DISCRETE_TYPE)}
    expected = stored_uuids | {u for uuids, _ in partly for u in uuids}
    count = len(all_samples(port, token, WRITER_TYPE)) + len(all_samples(port, token, DISCRETE_TYPE))
    check(f"{round_name}: re-sending the {len(partly)} batches with deleted samples saves those again, once",
          not refused and set(everything) == expected and count == len(expected), (refused[:2], count, len(expected)))


def run_round(args, round_index, rng):
    name = f"round {round_index}"
    server = Server(args.binary, args.public)
    data_dir = server.data_dir
    try:
        status, body = request(server.port, "POST", "/v1/users", {"name": f"crash-{round_index}"}, token=ADMIN)
        user = json.loads(body)["id"]
        types = ["stepCount", "distanceWalkingRunning", WRITER_TYPE, DISCRETE_TYPE]
        status, body = request(server.port, "POST", "/v1/authorizations",
                               {"user": user, "app": "crash-phone", "read": types, "share": types}, token=ADMIN)
        token = json.loads(body)["token"]
        ledger, stop = Ledger(), threading.Event()
        threads = [threading.Thread(target=sample_writer, args=(server.port, token, ledger, random.Random(rng.random()), stop))
                   for _ in range(args.writers)]
        threads += [threading.Thread(target=sample_deleter, args=(server.port, token, ledger, random.Random(rng.random()), stop))
                    for _ in range(args.deleters)]
        threads += [threading.Thread(target=imu_client, args=(server.port, token, ledger, f"walk-{i}", random.Random(rng.random()), stop))
                    for i in range(args.imu_sessions)]
        for thread in threads:
            thread.start()
        time.sleep(rng.uniform(args.min_seconds, args.max_seconds))
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait()
        stop.set()
        for thread in threads:
            thread.join(60)
        server.proc.stderr.close()
        print(f"crash: {name}: killed after {sum(1 for b in ledger.batches if b[2] == 'acked')} acknowledged batches, "
              f"{sum(1 for s in ledger.deletes.values() if s == 'acked')} acknowledged deletes, "
              f"{sum(s['acked'] + 1 for s in ledger.imu.values())} IMU batches")
        # drain: the re-sends below log a line each, more than a pipe holds.
        restarted = Server(args.binary, args.public, data_dir=data_dir, drain=True)
        try:
            verify(restarted.port, token, ledger, name)
        finally:
            code = restarted.stop()
            check(f"{name}: the restarted server stops cleanly", code == 0, code)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
        shutil.rmtree(data_dir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--public", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--deleters", type=int, default=2)
    parser.add_argument("--imu-sessions", type=int, default=2)
    parser.add_argument("--min-seconds", type=float, default=1.0)
    parser.add_argument("--max-seconds", type=float, default=4.0)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    args.public = os.path.abspath(args.public)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    print(f"crash: seed {seed} (rerun with --seed {seed})")
    rng = random.Random(seed)
    for round_index in range(1, args.rounds + 1):
        run_round(args, round_index, rng)
    print(f"crash: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
