"""Malformed and hostile HTTP over raw sockets: smuggling patterns, bad framing, oversize
input, slow and half-closed clients. Each case states the answer a correct HTTP/1.1 server gives;
after all of them the server must still answer /healthz. Called from e2e.py main()."""
import re, socket, threading, time

from e2e import ADMIN, check, raw, statuses, http

H = b"Host: x\r\n"


def first_status(resp):
    found = statuses(resp)
    return found[0] if found else None


def head_and_body(resp):
    head, _, body = resp.partition(b"\r\n\r\n")
    return head, body


def read_to_close(port, data, seconds=30.0):
    """Sends `data` and reads until the server closes the connection: (bytes, whether it closed
    within `seconds`)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=seconds)
    got = b""
    try:
        s.sendall(data)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = s.recv(65536)
            if not chunk:
                return got, True
            got += chunk
    except socket.timeout:
        pass
    finally:
        s.close()
    return got, False


def slow_send(port, data, interval, read_timeout=10.0):
    """Sends one byte every `interval` seconds, then reads the answer until close."""
    s = socket.create_connection(("127.0.0.1", port), timeout=read_timeout)
    try:
        for i in range(len(data)):
            s.sendall(data[i:i + 1])
            time.sleep(interval)
        chunks = []
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except socket.timeout:
            pass
        return b"".join(chunks)
    finally:
        s.close()


# The start of a TLS 1.2/1.3 ClientHello record (what a client sends to https://localhost:8080).
TLS_CLIENT_HELLO = bytes([0x16, 0x03, 0x01, 0x00, 0x2f, 0x01, 0x00, 0x00, 0x2b, 0x03, 0x03]) + bytes(32) + bytes([0x00, 0x00, 0x02, 0x13, 0x01, 0x01, 0x00])

# (name, request bytes, acceptable first statuses, statuses the whole exchange must equal or None)
CASES = [
    # Request smuggling: every ambiguity between Content-Length and Transfer-Encoding is refused.
    ("CL.TE: Content-Length first, then chunked", b"POST /v1/users HTTP/1.1\r\n" + H + b"Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG", {400}, [400]),
    ("TE.CL: chunked first, then Content-Length", b"POST /v1/users HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n", {400}, [400]),
    ("TE.TE: space before the colon", b"POST /v1/users HTTP/1.1\r\n" + H + b"Transfer-Encoding : chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n", {400}, [400]),
    ("TE.TE: chunked then a second bogus Transfer-Encoding", b"POST /v1/users HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n0\r\n\r\n", {400}, None),
    ("TE.TE: tab before the value", b"POST /v1/users HTTP/1.1\r\n" + H + b"Transfer-Encoding:\tchunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n", {400}, [400]),
    ("TE.TE: tab-prefixed field line (folding)", b"POST /v1/users HTTP/1.1\r\n" + H + b"\tTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", {400}, [400]),
    ("TE.TE: quoted \"chunked\"", b"POST /v1/users HTTP/1.1\r\n" + H + b"Transfer-Encoding: \"chunked\"\r\n\r\n0\r\n\r\n", {400}, None),
    ("TE: gzip, chunked (a coding the server does not decode) is a framing 400, never 501", b"POST /v1/users HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", {400}, None),
    ("TE.TE: x-chunked is not chunked", b"POST /v1/users HTTP/1.1\r\n" + H + b"Transfer-Encoding: x-chunked\r\n\r\n0\r\n\r\n", {400}, None),
    ("TE.TE: chunked, identity", b"POST /v1/users HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", {400}, None),
    ("TE.TE: chunked with a trailing NUL", b"POST /v1/users HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\x00\r\n\r\n0\r\n\r\n", {400}, [400]),
    ("TE.TE: vertical tab in the value", b"POST /v1/users HTTP/1.1\r\n" + H + b"Transfer-Encoding: \x0bchunked\r\n\r\n0\r\n\r\n", {400}, None),
    ("TE on HTTP/1.0 with Content-Length", b"POST /v1/users HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", {400}, [400]),
    # Content-Length edge cases.
    ("two different Content-Lengths", b"POST /v1/users HTTP/1.1\r\n" + H + b"Content-Length: 1\r\nContent-Length: 2\r\n\r\nxx", {400}, [400]),
    ("comma-joined different lengths", b"POST /v1/users HTTP/1.1\r\n" + H + b"Content-Length: 1,2\r\n\r\nxx", {400}, [400]),
    ("negative Content-Length", b"POST /v1/users HTTP/1.1\r\n" + H + b"Content-Length: -1\r\n\r\n", {400}, [400]),
    ("Content-Length +5", b"POST /v1/users HTTP/1.1\r\n" + H + b"Content-Length: +5\r\n\r\nhello", {400}, [400]),
    ("hexadecimal Content-Length", b"POST /v1/users HTTP/1.1\r\n" + H + b"Content-Length: 0x5\r\n\r\nhello", {400}, [400]),
    ("Content-Length with a space inside", b"POST /v1/users HTTP/1.1\r\n" + H + b"Content-Length: 1 0\r\n\r\n0123456789", {400}, [400]),
    ("empty Content-Length", b"POST /v1/users HTTP/1.1\r\n" + H + b"Content-Length:\r\n\r\n", {400}, [400]),
    ("Content-Length beyond 64 bits", b"POST /v1/users HTTP/1.1\r\n" + H + b"Content-Length: 99999999999999999999999\r\n\r\n", {400, 413}, None),
    # Chunked edge cases.
    ("chunk size with a sign", b"POST /v1/users HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n", {400}, [400]),
    ("chunk data longer than its size", b"POST /v1/users HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n", {400}, [400]),
    ("chunk size line with a bare LF", b"POST /v1/users HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", {400}, [400]),
    # Framing errors are 400 and close the connection whatever the route, even one that does not
    # take the method (the pipelined request after them is never answered).
    ("space after the chunk size, to a route without PUT", b"PUT /healthz HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\n" + H + b"\r\n", {400}, [400]),
    ("bad chunk extension, to a route without PUT", b"PUT /healthz HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n5;\r\nhello\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\n" + H + b"\r\n", {400}, [400]),
    ("bad chunk extension, to an unknown path", b"DELETE /nowhere HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n5;a b\r\nhello\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\n" + H + b"\r\n", {400}, [400]),
    ("space after the chunk size, to a route that takes POST", b"POST /v1/users HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n2 \r\n{}\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\n" + H + b"\r\n", {400}, [400]),
    ("quoted chunk extension is fine (401: no token)", b"POST /v1/users HTTP/1.1\r\n" + H + b"Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n2;a=\"b c\"\r\n{}\r\n0\r\n\r\n", {401}, [401]),
    ("chunk size 0x-prefixed", b"POST /v1/users HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", {400}, [400]),
    # Line endings and request lines.
    ("bare CR as a line ending", b"GET /healthz HTTP/1.1\r" + H.replace(b"\r\n", b"\r") + b"\r\r", {400}, [400]),
    ("bare LF inside the header block", b"GET /healthz HTTP/1.1\r\nHost: x\nX-A: b\r\n\r\n", {400}, [400]),
    ("two spaces in the request line", b"GET  /healthz HTTP/1.1\r\n" + H + b"\r\n", {400}, [400]),
    # Methods are case-sensitive (RFC 9110 9.1): a known one in another case is a 400 that says so;
    # an unknown one is the router's 405 with Allow (docs/api.md: no 5xx for bad input).
    ("lowercase method", b"get /healthz HTTP/1.1\r\n" + H + b"\r\n", {400}, [400]),
    ("unknown method", b"BREW /healthz HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n", {405}, [405]),
    ("TLS ClientHello to the plain-HTTP port", TLS_CLIENT_HELLO, {400}, [400]),
    ("lowercase http version", b"GET /healthz http/1.1\r\n" + H + b"\r\n", {400}, [400]),
    ("HTTP/1.2 is not a version we speak (400: the API has no 505)", b"GET /healthz HTTP/1.2\r\n" + H + b"\r\n", {400}, [400]),
    ("the HTTP/2 connection preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", {400}, [400]),
    ("two Authorization fields", b"GET /v1/samples?type=stepCount HTTP/1.1\r\n" + H + b"Authorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n", {400}, [400]),
    ("HTTP/0.9 style request line", b"GET /healthz\r\n\r\n", {400}, [400]),
    ("NUL in the path", b"GET /heal\x00thz HTTP/1.1\r\n" + H + b"\r\n", {400}, [400]),
    ("percent-encoded NUL in the path", b"GET /v1/samples/%00 HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n", {400, 401, 404}, None),
    # An escaped control character names nothing a route could look up (PostgreSQL text cannot even
    # hold a NUL): the router's 404, before the token, on either store.
    ("percent-encoded NUL in a parameter of an admin route", b"GET /v1/users/a%00b/authorizations HTTP/1.1\r\n" + H
     + b"Authorization: Bearer " + ADMIN.encode() + b"\r\nConnection: close\r\n\r\n", {404}, [404]),
    ("raw space-free UTF-8 in the path", b"GET /\xc3\xa9 HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n", {400, 404}, None),
    # Absolute-form (RFC 9112 3.2.2) is valid: the path defaults to "/", the target's authority is the host.
    ("absolute-form target", b"GET http://x/healthz HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n", {200}, [200]),
    ("absolute-form with a query and no path", b"GET http://example.com?q=1 HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n", {200}, [200]),
    ("absolute-form with a port and a query, no path", b"GET http://example.com:8080?q=1 HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n", {200}, [200]),
    ("absolute-form with a port only", b"GET http://example.com:8080 HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n", {200}, [200]),
    ("absolute-form with userinfo is refused", b"GET http://u@x/healthz HTTP/1.1\r\n" + H + b"\r\n", {400}, [400]),
    ("OPTIONS * is answered", b"OPTIONS * HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n", {200, 204, 404, 405}, None),
    ("GET * is 400", b"GET * HTTP/1.1\r\n" + H + b"\r\n", {400}, [400]),
    ("CONNECT authority-form is refused", b"CONNECT x:443 HTTP/1.1\r\n" + H + b"\r\n", {400, 405}, None),
    ("two Host fields", b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", {400}, [400]),
    ("empty field name", b"GET /healthz HTTP/1.1\r\n" + H + b": v\r\n\r\n", {400}, [400]),
    ("field line without a colon", b"GET /healthz HTTP/1.1\r\n" + H + b"NoColon\r\n\r\n", {400}, [400]),
    ("DEL in a field value", b"GET /healthz HTTP/1.1\r\n" + H + b"X-A: a\x7fb\r\n\r\n", {400}, [400]),
    ("leading empty lines before a request are skipped", b"\r\n\r\nGET /healthz HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n", {200}, [200]),
    ("binary junk", bytes(range(256)), {400}, [400]),
    # Oversize everything.
    ("a single 20 KiB header value", b"GET /healthz HTTP/1.1\r\n" + H + b"X-A: " + b"a" * 20000 + b"\r\n\r\n", {431}, [431]),
    ("a 20 KiB field name", b"GET /healthz HTTP/1.1\r\n" + H + b"X" * 20000 + b": a\r\n\r\n", {431}, [431]),
    ("a 20 KiB method", b"G" * 20000 + b" / HTTP/1.1\r\n" + H + b"\r\n", {400, 414}, None),
    ("a 64 KiB query string", b"GET /healthz?" + b"a=1&" * 16000 + b" HTTP/1.1\r\n" + H + b"\r\n", {414}, [414]),
    ("a 20 MiB chunk size announced", b"POST /v1/users HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n1400000\r\n", {413}, [413]),
]


def malformed_http_checks(port):
    print("e2e: malformed and hostile HTTP")
    for name, data, acceptable, exact in CASES:
        resp = raw(port, data, read_timeout=3.0)
        status = first_status(resp)
        ok = status in acceptable and (exact is None or statuses(resp) == exact)
        # A refused request must never reach a handler: no 2xx/5xx on anything marked 4xx-only.
        check(f"{name}: {sorted(acceptable)}", ok, (statuses(resp), resp[:120]))

    # The details say what went wrong, and the server closes the connection (an end of input seen,
    # not a quiet socket: however late a loaded machine closes it).
    resp, closed = read_to_close(port, TLS_CLIENT_HELLO)
    check("TLS ClientHello: 400 saying the port speaks plain HTTP, then the close (not the read timeout)",
          statuses(resp) == [400] and b"not TLS: use http://" in resp and closed, (closed, resp[:400]))
    resp = raw(port, b"get /healthz HTTP/1.1\r\n" + H + b"\r\n", read_timeout=3.0)
    check("lowercase method: 400 saying methods are case-sensitive, suggesting GET",
          statuses(resp) == [400] and b"methods are case-sensitive: did you mean GET?" in resp, resp[:400])
    resp = raw(port, b"DELETE /healthz HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n", read_timeout=3.0)
    check("a known method a route does not take stays 405 with Allow",
          statuses(resp) == [405] and re.search(rb"(?i)\r\nallow: ", resp) is not None, resp[:400])

    # A framing error closes the connection (end of input, not a quiet open socket).
    got, closed = read_to_close(port, b"PUT /healthz HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n")
    check("a framing error to a route without the method: 400 and the server closes", statuses(got) == [400] and closed,
          (closed, got[:200]))

    # Pipelining: what follows a good request is parsed as a request of its own, never as its body.
    resp = raw(port, b"GET /healthz HTTP/1.1\r\n" + H + b"\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: -3\r\n\r\n")
    check("pipelined bad Content-Length after a good request: 200 then 400", statuses(resp) == [200, 400], resp[:200])
    resp = raw(port, b"GET /healthz HTTP/1.1\r\n" + H + b"Content-Length: 0\r\n\r\nGARBAGE / HTTP/1.1\r\n\r\n")
    check("pipelined unknown method after a good request: 200 then 4xx", statuses(resp)[:1] == [200] and len(statuses(resp)) == 2
          and statuses(resp)[1] in (400, 405), resp[:300])
    resp = raw(port, b"POST /v1/users HTTP/1.1\r\n" + H + b"Content-Length: 2\r\n\r\n{}GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    check("a body ends exactly at Content-Length: the next request is separate (401 then 200)", statuses(resp) == [401, 200], resp[:300])
    resp = raw(port, b"POST /v1/users HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    check("a chunked body ends at the last chunk: the next request is separate (401 then 200)", statuses(resp) == [401, 200], resp[:300])

    # HEAD: the same head as GET, never a body, and the next pipelined response is intact.
    resp = raw(port, b"HEAD /healthz HTTP/1.1\r\n" + H + b"\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    first_head, rest = head_and_body(resp)
    check("HEAD has no body (the next response follows its head at once)", statuses(resp) == [200, 200] and rest.startswith(b"HTTP/1.1 200"), resp[:400])

    # 100-continue: after the interim answer the body is read and the request is answered (with a
    # valid token: without one the 401 comes at the head, and no 100).
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        s.sendall(b"POST /v1/users HTTP/1.1\r\n" + H + b"Authorization: Bearer " + ADMIN.encode()
                  + b"\r\nContent-Length: 2\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
        interim = s.recv(4096)
        s.sendall(b"{}")
        rest = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            rest += chunk
        # The body {} lacks the user's name: the handler's 400 is the final answer.
        check("100-continue, then the body: 100 then the final answer", statuses(interim + rest) == [100, 400], (interim + rest)[:300])
    finally:
        s.close()

    # Half-closed: the client shuts its write side after a complete request; the answer still comes.
    resp = raw(port, b"GET /healthz HTTP/1.1\r\n" + H + b"\r\n", shutdown_write=True)
    check("half-closed after a complete request: the response still arrives", statuses(resp) == [200], resp[:120])
    resp = raw(port, b"GET /healthz HTTP/1.1\r\n" + H + b"\r\nGET /healthz HTTP/1.1\r\n" + H + b"\r\n", shutdown_write=True)
    check("half-closed after two pipelined requests: both answered", statuses(resp) == [200, 200], resp[:200])
    resp = raw(port, b"POST /v1/users HTTP/1.1\r\n" + H + b"Content-Length: 10\r\n\r\n{}", shutdown_write=True)
    check("half-closed in the middle of a body without a token: the 401 at the head", statuses(resp) == [401], resp[:120])
    resp = raw(port, b"POST /v1/users HTTP/1.1\r\n" + H + b"Authorization: Bearer " + ADMIN.encode() + b"\r\nContent-Length: 10\r\n\r\n{}",
               shutdown_write=True)
    check("half-closed in the middle of a body: 400 or a plain close, never a handler answer", statuses(resp) in ([], [400]), resp[:120])

    # Slow drip: a byte every 100 ms still completes within the header timeout, and another client
    # is served meanwhile.
    drip_result = {}
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    thread = threading.Thread(target=lambda: drip_result.setdefault("resp", slow_send(port, request, 0.1)))
    thread.start()
    time.sleep(0.5)
    st, _, _ = http(port, "GET", "/healthz")
    served_meanwhile = st == 200 and thread.is_alive()
    thread.join(30)
    check("slow-drip headers (a byte per 100 ms) complete", statuses(drip_result.get("resp", b"")) == [200], drip_result.get("resp", b"")[:120])
    check("another client is served during a slow drip", served_meanwhile)
    body = b'{"name":"x"}'
    request = b"POST /v1/users HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(request)
        for i in range(len(body)):
            s.sendall(body[i:i + 1])
            time.sleep(0.1)
        resp = s.recv(65536)
        check("slow-drip body (a byte per 100 ms) completes (401: no token)", statuses(resp) == [401], resp[:120])
    finally:
        s.close()

    # A client that opens a connection and sends nothing does not block others.
    idle = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        st, _, _ = http(port, "GET", "/healthz")
        check("an idle silent connection does not block other clients", st == 200)
    finally:
        idle.close()

    st, _, _ = http(port, "GET", "/healthz")
    check("server still serving after the hostile inputs", st == 200)
