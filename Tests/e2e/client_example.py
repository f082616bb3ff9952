#!/usr/bin/env python3
"""The Swift client as a Swift developer meets it: Examples/HealthClientExample (its own package, the
HealthClient product through a path dependency) is built and run against a live server, and its
main.swift is the snippet the documentation shows, character for character.

Usage: client_example.py --binary healthd --public Public
"""
import argparse, os, re, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import ADMIN, Server, check, http, js  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PACKAGE = os.path.join(ROOT, "Examples", "HealthClientExample")
MAIN = os.path.join(PACKAGE, "Sources", "HealthClientExample", "main.swift")


def swift_blocks(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return re.findall(r"```swift\n(.*?)```", f.read(), re.S)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--public", required=True)
    args = parser.parse_args()
    print("client example: Examples/HealthClientExample against a live server")
    with open(MAIN) as f:
        snippet = f.read()
    documents = [os.path.join(ROOT, "docs", "guide.md"), os.path.join(ROOT, "README.md")]
    shown = [d for d in documents if snippet in swift_blocks(d)]
    check("the documentation shows main.swift exactly (docs/guide.md or README.md)", shown, documents)
    with open(os.path.join(PACKAGE, "Package.swift")) as f:
        manifest = f.read()
    lines = [l.strip() for l in manifest.splitlines() if (".package(" in l or ".product(" in l) and not l.strip().startswith("//")]
    check("... and the Package.swift lines it needs", shown and all(l in open(shown[0]).read() for l in lines), lines)

    built = subprocess.run(["swift", "build", "--package-path", PACKAGE], capture_output=True, text=True, timeout=1800)
    check("the example package builds with the Swift release in use", built.returncode == 0,
          (built.stdout + built.stderr)[-1500:])
    if built.returncode != 0:
        return
    binary_dir = subprocess.run(["swift", "build", "--package-path", PACKAGE, "--show-bin-path"], capture_output=True,
                                text=True, timeout=600).stdout.strip()
    example = os.path.join(binary_dir, "HealthClientExample")

    server = Server(args.binary, os.path.abspath(args.public), drain=True)
    try:
        http(server.port, "POST", "/v1/users", {"name": "swift-dev"}, token=ADMIN)
        st, _, b = http(server.port, "POST", "/v1/authorizations", {"user": "swift-dev", "app": "example",
                                                                     "read": ["stepCount"], "share": ["stepCount"]}, token=ADMIN)
        token = (js(b) or {}).get("token")
        check("an app token for the example", st == 201 and token, b)
        env = dict(os.environ, HEALTHD_URL=f"http://127.0.0.1:{server.port}", HEALTHD_TOKEN=token)
        ran = subprocess.run([example], capture_output=True, text=True, timeout=120, env=env)
        out = ran.stdout
        check("the example saves, reads, sums and follows the change feed", ran.returncode == 0
              and "saved 3 samples" in out and "read 3 samples" in out and "steps today: 3600" in out
              and "changes: 3 added" in out, out + ran.stderr)
        check("the refused sample comes back as a problem with its status and code",
              re.search(r"refused: 400 errorInvalidArgument: .+", out) is not None, out)
        usage = subprocess.run([example], capture_output=True, text=True, timeout=60,
                               env={k: v for k, v in os.environ.items() if k not in ("HEALTHD_URL", "HEALTHD_TOKEN")})
        check("without a token it says how to run it", usage.returncode == 2 and "usage:" in usage.stdout, usage.stdout)
        by_arguments = subprocess.run([example, f"http://127.0.0.1:{server.port}", token], capture_output=True, text=True,
                                      timeout=120, env={k: v for k, v in os.environ.items() if k not in ("HEALTHD_URL", "HEALTHD_TOKEN")})
        check("the server and token may be given as arguments", by_arguments.returncode == 0 and "saved 3 samples" in by_arguments.stdout,
              by_arguments.stdout + by_arguments.stderr)
    finally:
        server.stop()
    print(f"client example: {e2e.results['passed']} passed, {e2e.results['failed']} failed")
    sys.exit(1 if e2e.results["failed"] else 0)


if __name__ == "__main__":
    main()
