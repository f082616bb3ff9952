#!/usr/bin/env python3
"""Webhooks on two healthd nodes sharing one PostgreSQL database (docs/decisions.md, Webhooks:
several nodes): a node holds a subscription by a lease in its row, so
  - with writes arriving on both nodes, every page goes out once across the nodes, in commit order
    (subscriptions made on either node);
  - a node killed (kill -9) with a delivery in flight: the other node takes the subscription over
    once the lease expires and sends the stored page again, with the same webhook-id and body;
  - a webhook deleted on the node that does not hold it stops within about a second.
Usage: webhooks_two_nodes.py --binary .build/debug/healthd --public Public --database postgres://..."""
import argparse, json, os, signal, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import ADMIN, Server, check, fresh_database, http, js, results  # noqa: E402
from webhooks import Receiver, save, subscribe, values, verify, wait_for  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--public", required=True)
    parser.add_argument("--database", required=True)
    args = parser.parse_args()
    public = os.path.abspath(args.public)
    database = fresh_database(args.database, prefix="healthd_hooks2")
    work = tempfile.mkdtemp(prefix="healthd-e2e-hooks2-")
    config = os.path.join(work, "healthd.json")
    with open(config, "w") as f:
        json.dump({"webhookAllowedHosts": ["127.0.0.1"]}, f)

    def node():
        return Server(args.binary, public, extra=("--database", database, "--config", config), drain=True)

    receiver = Receiver()
    base = f"http://127.0.0.1:{receiver.port}"
    a, b = node(), node()
    try:
        print("two nodes: webhooks")
        _, _, body = http(a.port, "POST", "/v1/users", {"name": "hooks"}, token=ADMIN)
        user = js(body)["id"]
        _, _, body = http(a.port, "POST", "/v1/authorizations", {"user": user, "app": "hub", "read": ["stepCount"],
                                                                 "share": ["stepCount"]}, token=ADMIN)
        token = js(body)["token"]
        hooks = {}
        for name, server in (("a1", a), ("a2", a), ("b1", b), ("b2", b)):
            status, created = subscribe(server.port, token, f"{base}/{name}")
            hooks[name] = created
            check(f"webhook {name} made on node {'A' if server is a else 'B'}", status == 201, created)
        for n in range(20):
            save((a if n % 2 == 0 else b).port, token, 1000 + n, minute=n)
        expected = [1000 + n for n in range(20)]
        for name in hooks:
            wait_for(lambda: len(values(receiver.at(f"/{name}"))) >= 20, 60)
        time.sleep(1.5)
        for name, created in hooks.items():
            got = receiver.at(f"/{name}")
            check(f"{name}: every write on either node delivered once, in commit order", values(got) == expected, values(got))
            ids = [r["headers"]["webhook-id"] for r in got]
            check(f"{name}: no page went out twice across the nodes", len(ids) == len(set(ids)), len(ids) - len(set(ids)))
            check(f"{name}: signatures verify", all(verify(created["secret"], r["headers"], r["body"]) for r in got))

        # A node killed with a delivery in flight: the other takes over when the lease expires.
        receiver.behaviour["/crash"] = "hang"
        status, crash = subscribe(a.port, token, f"{base}/crash")
        save(b.port, token, 2000, minute=40)
        check("the page is on its way from node A", wait_for(lambda: receiver.at("/crash"), 30))
        first = receiver.at("/crash")[0]
        a.stop(signal.SIGKILL)
        receiver.behaviour["/crash"] = 200
        # A's lease runs 10 s from its last renewal, then B's next claim round takes it: the wait is
        # that and a wide margin for a loaded machine.
        check("after kill -9 of A, node B sends the page (once A's lease expired)", wait_for(lambda: len(receiver.at("/crash")) >= 2, 60),
              len(receiver.at("/crash")))
        again = receiver.at("/crash")[-1]
        check("with the same webhook-id and body", again["headers"]["webhook-id"] == first["headers"]["webhook-id"]
              and again["body"] == first["body"])
        save(b.port, token, 2001, minute=41)
        check("and B goes on delivering after it", wait_for(lambda: 2001 in values(receiver.at("/crash")), 30),
              values(receiver.at("/crash")))

        # A webhook held by B, deleted through a new node A: B stops within about a second.
        a = node()
        receiver.behaviour["/held"] = 500
        status, held = subscribe(b.port, token, f"{base}/held")
        # A control held by B too, failing alike and left alone: its retry shows when the held
        # webhook's would have come.
        receiver.behaviour["/control"] = 500
        status, control = subscribe(b.port, token, f"{base}/control")
        save(a.port, token, 3000, minute=50)
        check("the first attempts fail", wait_for(lambda: receiver.at("/held") and receiver.at("/control"), 30),
              (len(receiver.at("/held")), len(receiver.at("/control"))))
        status = http(a.port, "DELETE", f"/v1/webhooks/{held['id']}", token=token)[0]
        check("deleted on the other node (204)", status == 204, status)
        count = len(receiver.at("/held"))
        check("the control webhook is retried", wait_for(lambda: len(receiver.at("/control")) >= 2, 60), len(receiver.at("/control")))
        time.sleep(2)  # the held one's retry would have come with it, or within the moments its first attempt came later
        check("the holding node sends nothing more, its pending retry included", len(receiver.at("/held")) == count,
              len(receiver.at("/held")))
    finally:
        for server in (a, b):
            if server.proc.poll() is None:
                server.stop()
        receiver.close()
    print(f"two nodes webhooks: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
