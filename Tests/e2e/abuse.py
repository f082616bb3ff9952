"""Abuse limits over real sockets (issue 9): the per-address connection cap, per-address rate
limit with 429 + Retry-After, and CORS for a configured origin. Called from e2e.py main()."""
import json, os, socket, tempfile, time

from e2e import Server, check, http, raw, statuses


def abuse_checks(binary, public):
    print("e2e: abuse limits")
    config = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump({"maxConnectionsPerAddress": 4, "rateLimitPerAddressPerSecond": 1, "rateLimitPerAddressBurst": 40,
               "corsOrigins": ["https://dash.example.com"]}, config)
    config.close()
    server = Server(binary, public, extra=("--config", config.name), drain=True)
    try:
        port = server.port
        held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(4)]
        time.sleep(0.2)
        resp = raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", read_timeout=3)
        check("a fifth connection from one address gets 503 and is closed", statuses(resp) == [503], resp[:200])
        held.pop().close()
        time.sleep(0.2)
        resp = raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", read_timeout=3)
        check("after one closes, a new connection is served", statuses(resp) == [200], resp[:200])
        for s in held:
            s.close()
        time.sleep(0.2)

        st, h, b = http(port, "GET", "/healthz", headers={"Origin": "https://dash.example.com"})
        check("CORS: a listed origin is echoed", h.get("Access-Control-Allow-Origin") == "https://dash.example.com", h)
        st, h, b = http(port, "OPTIONS", "/v1/samples", headers={"Origin": "https://dash.example.com",
                                                                 "Access-Control-Request-Method": "POST",
                                                                 "Access-Control-Request-Headers": "authorization"})
        check("CORS: a preflight names the methods and Authorization", st == 204 and "POST" in h.get("Access-Control-Allow-Methods", "")
              and "Authorization" in h.get("Access-Control-Allow-Headers", ""), (st, h))
        st, h, b = http(port, "GET", "/healthz", headers={"Origin": "https://evil.example.net"})
        check("CORS: another origin gets no CORS header", "Access-Control-Allow-Origin" not in h, h)

        codes, retry = [], None
        for _ in range(60):
            st, h, b = http(port, "GET", "/healthz")
            codes.append(st)
            if st == 429 and retry is None:
                retry = h.get("Retry-After")
                problem = json.loads(b)
        check("the per-address rate limit answers 429 once the burst is spent", 200 in codes and 429 in codes, codes)
        check("the 429 is problem+json errorRateLimited with Retry-After", retry is not None and int(retry) >= 1
              and problem.get("code") == "errorRateLimited", (retry,))
        check("the server still runs after the limits were hit", server.proc.poll() is None)
    finally:
        server.stop()
        os.unlink(config.name)
