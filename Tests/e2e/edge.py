#!/usr/bin/env python3
"""The edge against hostile clients and a small host, over real sockets, measuring the server
process (VmHWM, CPU time from /proc) rather than only status codes:
- strangers without a token sending large bodies slowly do not raise the server's peak memory,
  are answered 401 before their body (no 100 Continue), and a healthy client is served meanwhile;
- authenticated bodies share a budget (wait, then 503) and a minimum rate (408);
- one address at its connection cap leaves another served, also behind a trusted proxy;
- out of file descriptors (ulimit -n 1024), the server stays idle and still answers new clients;
- a log reader that stops reading (a full stdout pipe) stalls neither requests nor the graceful stop.
Called from e2e.py main(); runs alone too: python3 Tests/e2e/edge.py --binary B --public P."""
import json, os, resource, socket, sys, tempfile, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402  (the shared results, when run alone)
from e2e import Server, app_token, check, http, statuses, wait_until  # noqa: E402

MIB = 1024 * 1024


def vm_hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of the whole line; fields[0] here is field 3.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def connect(port, source="127.0.0.1", timeout=10):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s


def read_head(s, timeout=10):
    """Bytes up to the end of the first response head (or whatever came before a close/timeout)."""
    s.settimeout(timeout)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, OSError):
        pass
    return data


def read_response(s, timeout=10):
    """One whole response with a Content-Length body."""
    data = read_head(s, timeout)
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    try:
        while len(body) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
    except (socket.timeout, OSError):
        pass
    return head + b"\r\n\r\n" + body


def healthz_status(port):
    """GET /healthz's status, or None when the connection fails (out of descriptors, refused)."""
    try:
        return http(port, "GET", "/healthz")[0]
    except OSError:
        return None


def config_file(settings):
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(settings, f)
    f.close()
    return f.name


def one_sample():
    return {"samples": [{"type": "stepCount", "value": 12, "unit": "count",
                         "start": "2026-03-08T09:00:00Z", "end": "2026-03-08T09:01:00Z"}]}


def healthy_client(port, token, results):
    """A client with a token, timed: GET /healthz and a one-sample POST, each must come back fast."""
    for _ in range(3):
        started = time.time()
        st, _, _ = http(port, "GET", "/healthz")
        st2, _, b = http(port, "POST", "/v1/samples", one_sample(), token=token)
        results.append((st, st2, time.time() - started))
        time.sleep(1.0)


def stranger(port, path, declared, results, index, trickle_seconds):
    """No token: a head declaring a large body (waiting for 100 Continue), then as much body as the
    server takes fast, then a byte a second."""
    try:
        s = connect(port, timeout=5)
    except OSError as error:
        results[index] = ("connect failed", str(error))
        return
    try:
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\n"
                  "Expect: 100-continue\r\n\r\n".encode())
        head = read_head(s, timeout=30)
        results[index] = head
        s.settimeout(1.0)
        chunk = b"[" * (256 * 1024)
        try:
            for _ in range(32):  # up to 8 MiB as fast as the server takes it
                s.sendall(chunk)
        except OSError:
            pass
        deadline = time.time() + trickle_seconds
        while time.time() < deadline:
            try:
                s.sendall(b" ")
            except OSError:
                break
            time.sleep(1.0)
    finally:
        s.close()


def stranger_memory_checks(binary, public):
    print("e2e: edge: strangers with large slow bodies (peak memory, 401 at the head)")
    server = Server(binary, public, drain=True)
    try:
        port = server.port
        token = app_token(port, "healthy")
        answers = [http(port, "GET", "/healthz"), http(port, "GET", "/v1/samples?type=stepCount"),
                   http(port, "GET", "/v1/samples?type=stepCount", token=token)]
        check("API answers carry X-Content-Type-Options: nosniff (200, 401 and a token route)",
              [st for st, _, _ in answers] == [200, 401, 200]
              and all({k.lower(): v for k, v in h.items()}.get("x-content-type-options") == "nosniff" for _, h, _ in answers),
              [(st, h) for st, h, _ in answers][:1])
        for _ in range(20):
            http(port, "POST", "/v1/samples", one_sample(), token=token)
            http(port, "GET", "/v1/samples?type=stepCount&limit=10", token=token)
        time.sleep(0.5)
        base = vm_hwm_kib(server.proc.pid)
        heads = [None] * 16
        threads = [threading.Thread(target=stranger, args=(port, "/v1/ingest/health-auto-export", 120 * MIB, heads, i, 8))
                   for i in range(16)]
        healthy = []
        for t in threads:
            t.start()
        time.sleep(0.5)
        healthy_thread = threading.Thread(target=healthy_client, args=(port, token, healthy))
        healthy_thread.start()
        for t in threads:
            t.join()
        healthy_thread.join()
        peak = vm_hwm_kib(server.proc.pid)
        answered = [h for h in heads if isinstance(h, bytes)]
        check("16 strangers declaring 120 MiB bodies are each answered 401 before the body, with no 100 Continue",
              len(answered) == 16 and all(statuses(h) == [401] for h in answered), [h[:60] if isinstance(h, bytes) else h for h in heads][:4])
        check(f"16 strangers raise the server's peak memory (VmHWM) by less than 64 MiB ({(peak - base) / 1024:.1f} MiB)",
              peak - base < 64 * 1024, (base, peak))
        check("a healthy client is answered meanwhile (200 and 201, each round under 2 s)",
              len(healthy) == 3 and all(a == 200 and b == 201 and seconds < 2 for a, b, seconds in healthy), healthy)
        check("the server is still running", server.proc.poll() is None)
    finally:
        server.stop()


def authenticated_body(port, token, declared, fast_bytes, results, index):
    """With a token: a body declared large, `fast_bytes` of it sent at once, then a byte a second."""
    s = connect(port, timeout=15)
    try:
        s.sendall(f"POST /v1/samples HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                  f"Content-Type: application/json\r\nContent-Length: {declared}\r\n\r\n".encode())
        s.settimeout(2.0)
        try:
            sent = 0
            while sent < fast_bytes:
                s.sendall(b"[" * (64 * 1024))
                sent += 64 * 1024
        except OSError:
            pass
        s.settimeout(1.0)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                s.sendall(b" ")
            except OSError:
                break
            ready = read_head(s, timeout=1.0)
            if ready:
                results[index] = ready
                return
        results[index] = read_head(s, timeout=3)
    finally:
        s.close()


def body_budget_and_rate_checks(binary, public):
    print("e2e: edge: body budget (wait, then 503) and minimum body rate (408)")
    config = config_file({"maxBodyBytesInFlight": 32 * MIB, "minBodyRateSeconds": 3})
    server = Server(binary, public, extra=("--config", config), drain=True)
    try:
        port = server.port
        token = app_token(port, "uploader")
        time.sleep(0.3)
        base = vm_hwm_kib(server.proc.pid)
        answers = [None] * 16
        threads = [threading.Thread(target=authenticated_body, args=(port, token, 16 * MIB - 1, 4 * MIB, answers, i))
                   for i in range(16)]
        started = time.time()
        for t in threads:
            t.start()
        healthy = []
        healthy_thread = threading.Thread(target=healthy_client, args=(port, token, healthy))
        time.sleep(0.5)
        healthy_thread.start()
        for t in threads:
            t.join()
        healthy_thread.join()
        elapsed = time.time() - started
        peak = vm_hwm_kib(server.proc.pid)
        codes = sorted(statuses(a)[0] if a and statuses(a) else 0 for a in answers)
        check("16 slow uploads of 16 MiB with a 32 MiB budget: each ends in 503 (no room in time) or 408 (too slow)",
              set(codes) <= {503, 408} and 503 in codes and 408 in codes, codes)
        unavailable = [a for a in answers if a and statuses(a) == [503]]
        check("the 503 carries Retry-After", all(b"retry-after: 1" in a.lower() for a in unavailable), unavailable[:1])
        slow = [a for a in answers if a and statuses(a) == [408]]
        check("the 408 says the body was too slow", all(b"slower than 1024 bytes per second" in a for a in slow), slow[:1])
        check(f"the uploads raise peak memory by less than 64 MiB ({(peak - base) / 1024:.1f} MiB) and end within 20 s ({elapsed:.1f} s)",
              peak - base < 64 * 1024 and elapsed < 20, (base, peak))
        check("a healthy client is answered meanwhile", len(healthy) == 3 and all(a == 200 and b == 201 and s < 2 for a, b, s in healthy),
              healthy)
    finally:
        server.stop()
        os.unlink(config)


def address_cap_checks(binary, public):
    print("e2e: edge: connections per address (default 256), also per forwarded client")
    server = Server(binary, public, drain=True)
    held = []
    try:
        port = server.port
        for _ in range(256):
            held.append(connect(port, "127.0.0.1"))

        def over_the_cap():
            # Until the server has taken in all 256 a try may still be served: close it (it then
            # holds no place) and try again. A server without the cap never answers 503.
            s = connect(port, "127.0.0.1")
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = read_response(s, timeout=30)
            s.close()
            return answer if statuses(answer) == [503] else None
        over = wait_until(over_the_cap, 30, 0.2) or b""
        check("the 257th connection from 127.0.0.1 gets 503 (the default per-address cap is 256)", statuses(over) == [503], over[:200])
        head, _, body = over.partition(b"\r\n\r\n")
        document = json.load(open(os.path.join(public, "openapi.json")))
        check("the cap's 503 is a problem with Retry-After, and the OpenAPI document lists it for the route",
              b"application/problem+json" in head.lower() and b"retry-after:" in head.lower()
              and "503" in document["paths"]["/healthz"]["get"]["responses"], over[:300])
        s = connect(port, "127.0.0.2")
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        other = read_response(s, timeout=30)
        s.close()
        check("meanwhile a connection from 127.0.0.2 is served", statuses(other) == [200], other[:200])
    finally:
        for s in held:
            s.close()
        server.stop()

    config = config_file({"trustedProxies": ["127.0.0.3"], "maxConnectionsPerAddress": 4})
    server = Server(binary, public, extra=("--config", config), drain=True)
    held = []
    try:
        port = server.port

        def via_proxy(client, keep=True):
            s = connect(port, "127.0.0.3")
            s.sendall(f"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: {client}\r\n\r\n".encode())
            answer = read_response(s, timeout=30)
            if keep:
                held.append(s)
            else:
                s.close()
            return answer

        first = [statuses(via_proxy("10.0.0.1")) for _ in range(4)]
        check("behind a trusted proxy, 4 connections for client 10.0.0.1 are served", first == [[200]] * 4, first)
        fifth = via_proxy("10.0.0.1", keep=False)
        check("a fifth for 10.0.0.1 through the proxy gets 503 (counted per forwarded client)", statuses(fifth) == [503], fifth[:200])
        other = via_proxy("10.0.0.2", keep=False)
        check("another forwarded client through the same proxy is still served", statuses(other) == [200], other[:200])
    finally:
        for s in held:
            s.close()
        server.stop()
        os.unlink(config)


def descriptor_limit_checks(binary, public):
    print("e2e: edge: out of file descriptors under ulimit -n 1024 (no spinning, new clients answered)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 4096:
        check("the test process may open 1,300 descriptors (skipped: hard limit too low)", True)
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 4096), hard))

    def limit_server():
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

    server = Server(binary, public, drain=True, preexec_fn=limit_server)
    held = []
    try:
        port = server.port
        # Logged at start, but written by the log's own thread and read by another here: wait for it.
        wait_until(lambda: '"msg":"open file limit"' in server.log())
        startup = server.log()
        check("the server logs its open file limits at start (soft raised to hard)",
              '"msg":"open file limit"' in startup and '"soft":"1024"' in startup and '"hard":"1024"' in startup, startup[:400])
        # At the limit itself libdispatch can end the process (its thread-pool monitor opens /proc
        # files): connections stop 128 descriptors and the lingering refusals short of it.
        check("under ulimit -n 1024 the server takes at most 672 connections (docs/operations.md)",
              '"maxConnections":"672"' in startup, startup[:400])
        # Spread over loopback addresses so the per-address cap (256) is not what stops them.
        for index in range(1200):
            try:
                held.append(connect(port, f"127.0.1.{index // 200 + 1}", timeout=5))
            except OSError:
                break
        time.sleep(2.0)
        before = cpu_seconds(server.proc.pid)
        time.sleep(3.0)
        busy = (cpu_seconds(server.proc.pid) - before) / 3.0
        check(f"over the descriptor limit with 1,200 idle connections, the server uses under 20 % of a core ({busy * 100:.0f} %)",
              busy < 0.20, busy)
        started = time.time()
        s = connect(port, "127.0.2.1")
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = read_response(s, timeout=5)
        waited = time.time() - started
        s.close()
        check(f"a new client is answered within 2 s ({waited:.2f} s: {statuses(answer)})",
              statuses(answer) in ([503], [200]) and waited < 2, answer[:300])
        for s in held[:400]:
            s.close()
        del held[:400]
        # The server frees a descriptor once it reads that close, at its own pace: retry until served.
        st = wait_until(lambda: (lambda answer: answer if answer == 200 else None)(healthz_status(port)), 30, 0.2)
        check("with descriptors free again, new clients are served", st == 200, st)
        check("the server is still running", server.proc.poll() is None)
    finally:
        for s in held:
            s.close()
        server.stop()


def stalled_log_checks(binary, public):
    print("e2e: edge: nothing reads the server's stdout (a paused log pipe)")
    server = Server(binary, public, drain=False)  # stdout is never read: the pipe fills at 64 KiB
    try:
        port = server.port
        token = app_token(port, "stalled-log")
        answered = 0
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            for _ in range(3000):  # about 450 KiB of access log lines, seven pipes full
                s.sendall(f"GET /v1/samples?type=stepCount&limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
                if statuses(read_response(s, timeout=10)) == [200]:
                    answered += 1
        check(f"3,000 requests are answered while nothing reads the log ({answered})", answered == 3000, answered)
        started = time.time()
        code = server.stop(timeout=15)
        # A graceful stop waits at most a second for each event line the stuck reader does not take
        # (docs/operations.md, Logs): two seconds here, and a margin for a loaded machine; a stop
        # that hung on the pipe would run into the 15 s above.
        check(f"and SIGTERM stops the server gracefully, within 10 s ({time.time() - started:.1f} s)",
              code == 0 and time.time() - started < 10, code)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()


def edge_checks(binary, public):
    stranger_memory_checks(binary, public)
    body_budget_and_rate_checks(binary, public)
    address_cap_checks(binary, public)
    descriptor_limit_checks(binary, public)
    stalled_log_checks(binary, public)


if __name__ == "__main__":
    e2e.run_alone(edge_checks)
