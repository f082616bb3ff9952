"""Server failures seen from outside: a store that fails under a running healthd (a table dropped
by another process) answers 500 with a generic detail and the request id, never SQL or SQLite's
message; the log line with that id has them. On SQLite or PostgreSQL. Called from e2e.py main()."""
from e2e import ADMIN, DATABASE, Server, check, http, js, query_store, wait_until


def internal_error_checks(binary, public):
    print("e2e: no internals in a 500")
    server = Server(binary, public, drain=True)
    try:
        port = server.port
        st, _, b = http(port, "POST", "/v1/users", {"name": "faulty"}, token=ADMIN)
        user = js(b)["id"]
        st, _, b = http(port, "POST", "/v1/authorizations", {"user": user, "app": "phone", "read": ["stepCount"], "share": []}, token=ADMIN)
        token = js(b)["token"]
        check("characteristics read before the fault", http(port, "GET", "/v1/characteristics", token=token)[0] == 200)
        query_store(server.data_dir, "DROP TABLE characteristics")
        st, h, b = http(port, "GET", "/v1/characteristics", token=token)
        problem = js(b) or {}
        text = b.decode(errors="replace")
        check("a store failure is 500 errorInternal", st == 500 and problem.get("code") == "errorInternal", (st, text[:200]))
        check("the 500 carries the request id in its body and X-Request-Id",
              problem.get("requestId") and problem.get("requestId") == h.get("X-Request-Id"), (problem, h.get("X-Request-Id")))
        check("no SQL or driver text reaches the client",
              not any(word in text for word in ("SELECT", "characteristics", "SQLite", "PostgreSQL", "no such table", "does not exist",
                                                "while running")), text[:300])
        message = 'relation \\"characteristics\\" does not exist' if DATABASE["base"] else "no such table: characteristics"

        def lines():
            return [line for line in server.log().splitlines() if f'"id":"{h.get("X-Request-Id")}"' in line and "internal error" in line]
        # The log is written in batches by a thread of its own and read by another here: wait for it.
        check("the log line with that request id holds the database's message",
              wait_until(lambda: any(message in line for line in lines())), lines())
    finally:
        server.stop()
