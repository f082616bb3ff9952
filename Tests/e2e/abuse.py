"""Abuse limits over real sockets: the per-address connection cap, per-address rate limit with
429 + Retry-After, CORS for a configured origin; what the default limits let through (an ordinary
load with a token, 1,000 idle keep-alive connections from one address); and client addresses
behind trusted reverse proxies. Called from e2e.py main()."""
import http.client as httpclient
import contextlib, json, os, socket, tempfile, threading, time

from e2e import ADMIN, Server, app_token, check, http, js, raw, statuses, wait_until


def healthz_answer(s):
    """Reads one /healthz answer (its JSON body ends in '}') from a kept-alive socket."""
    answer = b""
    while b"\r\n\r\n" not in answer or not answer.endswith(b"}"):
        chunk = s.recv(4096)
        if not chunk:
            break
        answer += chunk
    return answer


def abuse_checks(binary, public):
    print("e2e: abuse limits")
    config = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump({"maxConnectionsPerAddress": 4, "rateLimitPerAddressPerSecond": 1, "rateLimitPerAddressBurst": 40,
               "corsOrigins": ["https://dash.example.com"]}, config)
    config.close()
    server = Server(binary, public, extra=("--config", config.name), drain=True)
    try:
        port = server.port
        held = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(4)]
        # Each held connection answered once: the server has counted all four before the fifth.
        for s in held:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            healthz_answer(s)
        resp = raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", read_timeout=3)
        check("a fifth connection from one address gets 503 and is closed", statuses(resp) == [503], resp[:200])
        held.pop().close()
        # The server counts the connection gone once it reads the close, at its own pace: retry
        # (each early try is a 503 and is closed, so it holds no place) until a new one is served.
        resp = wait_until(lambda: (lambda r: r if statuses(r) == [200] else None)(
            raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", read_timeout=3)), 30, 0.2)
        check("after one closes, a new connection is served", resp and statuses(resp) == [200], resp)
        for s in held:
            s.close()

        st, h, b = http(port, "GET", "/healthz", headers={"Origin": "https://dash.example.com"})
        check("CORS: a listed origin is echoed", h.get("Access-Control-Allow-Origin") == "https://dash.example.com", h)
        st, h, b = http(port, "OPTIONS", "/v1/samples", headers={"Origin": "https://dash.example.com",
                                                                 "Access-Control-Request-Method": "POST",
                                                                 "Access-Control-Request-Headers": "authorization"})
        check("CORS: a preflight names the methods and Authorization", st == 204 and "POST" in h.get("Access-Control-Allow-Methods", "")
              and "Authorization" in h.get("Access-Control-Allow-Headers", ""), (st, h))
        st, h, b = http(port, "GET", "/healthz", headers={"Origin": "https://evil.example.net"})
        check("CORS: another origin gets no CORS header", "Access-Control-Allow-Origin" not in h, h)

        codes, retry, problem = [], None, {}
        # The burst is 40 and refills at one a second: however slowly a loaded machine answers,
        # requests come faster than that, so a 429 arrives well within 300.
        for _ in range(300):
            st, h, b = http(port, "GET", "/healthz")
            codes.append(st)
            if st == 429 and retry is None:
                retry = h.get("Retry-After")
                problem = json.loads(b)
                break
        check("the per-address rate limit answers 429 once the burst is spent", 200 in codes and 429 in codes, codes)
        check("the 429 is problem+json errorRateLimited with Retry-After", retry is not None and int(retry) >= 1
              and problem.get("code") == "errorRateLimited", (retry,))
        check("the server still runs after the limits were hit", server.proc.poll() is None)
    finally:
        server.stop()
        os.unlink(config.name)
    default_limit_checks(binary, public)
    trusted_proxy_checks(binary, public)


def default_limit_checks(binary, public):
    print("e2e: default limits let one busy client through")
    server = Server(binary, public, drain=True)
    try:
        port = server.port
        token = app_token(port, "busy")
        codes, lock = {}, threading.Lock()

        def load(requests):
            conn = httpclient.HTTPConnection("127.0.0.1", port, timeout=30)
            for _ in range(requests):
                conn.request("GET", "/v1/samples?type=stepCount&limit=10", headers={"Authorization": "Bearer " + token})
                response = conn.getresponse()
                response.read()
                with lock:
                    codes[response.status] = codes.get(response.status, 0) + 1
            conn.close()

        threads = [threading.Thread(target=load, args=(125,)) for _ in range(16)]
        started = time.time()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.time() - started
        check(f"default settings: 2,000 token requests from one address on 16 connections ({2000 / elapsed:.0f}/s) get no 429",
              codes == {200: 2000}, codes)

        held = []
        try:
            # From four loopback addresses: one address may hold 256 (edge.py checks that cap).
            for index in range(1000):
                held.append(socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(f"127.0.0.{index // 250 + 1}", 0)))
            for s in held:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            answered = 0
            for s in held:
                answered += statuses(healthz_answer(s)) == [200]
            time.sleep(1.0)
            for s in held[:50]:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            still_open = sum(statuses(s.recv(4096)) == [200] for s in held[:50])
            check("default settings: 1,000 keep-alive connections from four addresses are all accepted and answered",
                  answered == 1000, answered)
            check("default settings: idle keep-alive connections stay open and keep answering", still_open == 50, still_open)
        finally:
            for s in held:
                s.close()
    finally:
        server.stop()


def trusted_proxy_checks(binary, public):
    print("e2e: client addresses behind trusted reverse proxies")
    @contextlib.contextmanager
    def server_with(settings):
        config = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump({"rateLimitPerAddressPerSecond": 0.01, "rateLimitPerAddressBurst": 3, **settings}, config)
        config.close()
        server = Server(binary, public, extra=("--config", config.name), drain=True)
        try:
            yield server
        finally:
            server.stop()
            os.unlink(config.name)

    def healthz(port, header, value):
        st, h, b = http(port, "GET", "/healthz", headers={header: value})
        return st

    with server_with({"trustedProxies": ["127.0.0.0/8", "::1/128"]}) as server:
        port = server.port
        first = [healthz(port, "X-Forwarded-For", "1.2.3.4, 198.51.100.1") for _ in range(4)]
        check("behind a trusted proxy: one client's budget runs out (3 then 429)", first == [200, 200, 200, 429], first)
        check("behind a trusted proxy: another client named by X-Forwarded-For has its own budget",
              healthz(port, "X-Forwarded-For", "1.2.3.4, 198.51.100.2") == 200)
        check("behind a trusted proxy: the forged left part of X-Forwarded-For is not the client",
              healthz(port, "X-Forwarded-For", "198.51.100.2, 198.51.100.1") == 429)
        check("behind a trusted proxy: a Forwarded header is not read when X-Forwarded-For is configured",
              healthz(port, "X-Forwarded-For", "198.51.100.1") == 429 and http(port, "GET", "/healthz", headers={
                  "X-Forwarded-For": "198.51.100.1", "Forwarded": "for=198.51.100.9"})[0] == 429)
        # The access log is written in batches, off the request's path: wait for the line.
        check("the access log names the client, not the proxy",
              wait_until(lambda: any('"remote":"198.51.100.2"' in line for line in server.log().splitlines())))

    with server_with({"trustedProxies": ["127.0.0.0/8"], "trustedProxyHeader": "Forwarded"}) as server:
        port = server.port
        first = [healthz(port, "Forwarded", 'for="[2001:db8::7]:4711";proto=https') for _ in range(4)]
        check("behind a trusted proxy (Forwarded): one client's budget runs out", first == [200, 200, 200, 429], first)
        check("behind a trusted proxy (Forwarded): another client has its own budget",
              healthz(port, "Forwarded", "for=192.0.2.60") == 200)
        rotating = [healthz(port, "Forwarded", f'for="[2001:db8:0:9::{n:x}]"') for n in range(1, 5)]
        check("IPv6 clients are counted per /64: rotating addresses in one /64 share one budget",
              rotating == [200, 200, 200, 429], rotating)
        check("IPv6: the next /64 is another client", healthz(port, "Forwarded", 'for="[2001:db8:0:a::1]"') == 200)

    with server_with({}) as server:
        port = server.port
        spoofed = [healthz(port, "X-Forwarded-For", f"198.51.100.{n}") for n in range(1, 5)]
        check("no trusted proxies: X-Forwarded-For is ignored (a fresh header is no fresh budget)", spoofed == [200, 200, 200, 429], spoofed)
        check("no trusted proxies: Forwarded is ignored too", healthz(port, "Forwarded", "for=198.51.100.77") == 429)
