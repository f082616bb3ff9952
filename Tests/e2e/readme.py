#!/usr/bin/env python3
"""Runs the documents' shell walkthroughs, so they cannot rot: every ```sh block of README.md, then
of docs/guide.md, then of the other docs/*.md files (operations, api, architecture, decisions, then
any other, by name), in order, as one bash script with `set -euo pipefail`, against a fresh healthd
on a free port with a fresh data dir.

Usage: python3 Tests/e2e/readme.py --binary .build/debug/healthd [--doc FILE ...] [--list]

The convention for the documents' blocks (also in docs/architecture.md, "Tests and CI"):
- Every ```sh block runs, top to bottom, in one shell, document after document: variables and
  functions set in one block (HEALTHD, ADMIN, HK_USER, TOKEN, the `field` helper...) are there in
  the next, and in the next document's.
- Not run: the README's first block (the two set-up commands), and a block whose fence is preceded
  by the line `<!-- readme: not run (why) -->` (installs, Docker, your own files, loops that never
  end).
- The server's config file lists 127.0.0.1 in `webhookAllowedHosts` (the guide's webhook receiver
  runs on loopback).
- The shell starts in a fresh directory holding the server's data dir as `healthd-data` (so
  `cat healthd-data/admin-token` works), with HEALTHD set to the server's URL (blocks write
  `export HEALTHD=${HEALTHD:-http://127.0.0.1:8080}`), the repository's `Examples/` linked as
  `Examples`, and the built binary as `.build/debug/healthd` (where `swift build` puts it in a
  checkout) and on PATH as `healthd` (as after the install step).
- Every curl must fail on an HTTP error and show why: `curl -sS --fail-with-body ...` (curl 7.76
  or later; a bare `-f` prints only "error: 409" and drops the problem body that says what went
  wrong), or, where a document shows an error, print the status with `-w '%{http_code}'` and
  compare it. A curl without either is refused before anything runs, as is a block that uses a
  file the repository does not have, or a stream (`curl -N`, `/stream`) left in the foreground
  without --max-time.
- Every relative link of README.md, BENCHMARKS.md and docs/*.md must name a file the repository
  has and, with `#anchor`, a heading of it.
- Output shown in comments is checked loosely against what the block printed: every
  `"key":value` pair in a comment whose value is a number, a string, true, false or null must
  appear with that key in the block's output, a number as printed or rounded to the digits shown
  (35.6 for 35.586...), a string exactly; a value written `"…"` (or `...`) is not compared. So
  paste what the server printed, rounded where a person reads it.
"""
import argparse, os, re, shutil, socket, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
# The documents whose blocks run, in this order; any other docs/*.md follows, by name.
ORDER = ["README.md", "docs/guide.md", "docs/operations.md", "docs/api.md", "docs/architecture.md", "docs/decisions.md"]


def documents():
    """README.md and every docs/*.md, in the order their blocks run."""
    others = sorted(os.path.join("docs", name) for name in os.listdir(os.path.join(ROOT, "docs"))
                    if name.endswith(".md") and os.path.join("docs", name) not in ORDER)
    return [path for path in ORDER + others if os.path.exists(os.path.join(ROOT, path))]
NOT_RUN = re.compile(r"^\s*<!--\s*readme:\s*not run\b.*-->\s*$")


def blocks(text, first=True):
    """Every ```sh block as (first line number, source, runnable, why not); with `first`, the first
    block is the set-up commands and is not run."""
    lines = text.split("\n")
    found, index = [], 0
    while index < len(lines):
        fence = re.match(r"^(\s*)```sh\s*$", lines[index])
        if not fence:
            index += 1
            continue
        indent, start, body = fence.group(1), index + 1, []
        index += 1
        while index < len(lines) and lines[index].strip() != "```":
            line = lines[index]
            body.append(line[len(indent):] if line.startswith(indent) else line)
            index += 1
        previous = next((lines[i] for i in range(start - 2, -1, -1) if lines[i].strip()), "")
        if first:
            found.append((start + 1, "\n".join(body), False, "the set-up commands"))
        elif NOT_RUN.match(previous):
            found.append((start + 1, "\n".join(body), False, previous.strip()))
        else:
            found.append((start + 1, "\n".join(body), True, ""))
        first = False
        index += 1
    return found


def commands(source):
    """The block's commands, continuation lines joined, comments dropped."""
    joined, current = [], ""
    for line in source.split("\n"):
        code = re.sub(r"(^|\s)#.*$", "", line) if "'" not in line.split("#")[0] else line
        if code.rstrip().endswith("\\"):
            current += code.rstrip()[:-1] + " "
            continue
        joined.append(current + code)
        current = ""
    return joined + ([current] if current else [])


def lint(line_number, source):
    """Problems that would let a block pass while doing nothing, or fail without saying why: a curl
    that ignores HTTP errors or hides the problem body, an @file the repository does not have."""
    problems = []
    for command in commands(source):
        for match in re.finditer(r"(?:^|[\s|;&(`$])curl\s((?:[^|;&)`]|\$\()*)", command):
            arguments = match.group(1)
            fails = re.search(r"(^|\s)--fail-with-body(\s|$)", arguments)
            hides = re.search(r"(^|\s)(-[a-zA-Z]*f[a-zA-Z]*|--fail)(\s|$)", arguments)
            reports = "%{http_code}" in arguments or "%{response_code}" in arguments
            streams = re.search(r"(^|\s)(-N|--no-buffer)(\s|$)", arguments) or "/stream" in arguments
            if streams and not re.search(r"&\s*$", command) and not re.search(r"(^|\s)(-m|--max-time)\s", arguments):
                problems.append(f"{line_number}: a stream never ends: run it in the background (&) and kill it, "
                                f"give it --max-time, or mark the block not run: curl {arguments.strip()[:60]}")
            if hides and not fails:
                problems.append(f"{line_number}: curl -f hides the problem body on an error (use curl -sS "
                                f"--fail-with-body): curl {arguments.strip()[:80]}")
            elif not (fails or reports):
                problems.append(f"{line_number}: curl without --fail-with-body (use curl -sS --fail-with-body, "
                                f"or -w '%{{http_code}}' and compare): curl {arguments.strip()[:80]}")
        if re.search(r"(localhost|127\.0\.0\.1):8080", re.sub(r"\$\{HEALTHD:-[^}]*\}", "", command)):
            problems.append(f"{line_number}: write $HEALTHD, not a fixed address: {command.strip()[:80]}")
        for match in re.finditer(r"@([\w./-]+)", command):
            path = match.group(1)
            if "/" in path and not path.startswith(("http", "$")) and not os.path.exists(os.path.join(ROOT, path)):
                problems.append(f"{line_number}: @{path} is not in the repository")
    return problems


PAIR = re.compile(r'"([A-Za-z_]\w*)":\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null)')


def comments(source):
    """The comment part of each line (after a # that is not inside quotes)."""
    found = []
    for line in source.split("\n"):
        for match in re.finditer(r"(?:^|\s)#(?=\s|$)", line):
            before = line[:match.start()]
            if before.count("'") % 2 == 0 and before.count('"') % 2 == 0:
                found.append(line[match.end():])
                break
    return found


def shown_pairs(source):
    """The `"key":value` pairs the block's comments show as output, except placeholders."""
    pairs = []
    for text in comments(source):
        for key, value in PAIR.findall(text):
            if "…" in value or "..." in value:
                continue
            pairs.append((key, value))
    return pairs


def matches(shown, printed):
    """A printed value matches a shown one exactly, or a number rounded to the shown digits."""
    if shown == printed:
        return True
    if shown.startswith('"') or printed.startswith('"') or shown in ("true", "false", "null"):
        return False
    try:
        digits = len(shown.split(".")[1]) if "." in shown and "e" not in shown.lower() else 0
        return abs(float(printed) - float(shown)) <= 0.5 * 10 ** -digits + 1e-12
    except ValueError:
        return False


def output_problems(line_number, source, printed):
    """Shown output pairs the block's output does not hold."""
    found = {}
    for key, value in PAIR.findall(printed):
        found.setdefault(key, []).append(value)
    return [f"{line_number}: the comment shows \"{key}\":{value}, but the block printed "
            + (", ".join(sorted(set(found[key]))[:5]) if key in found else f"no \"{key}\"")
            for key, value in shown_pairs(source) if not any(matches(value, p) for p in found.get(key, []))]


def slug(heading):
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def link_problems():
    """Relative links in README.md, BENCHMARKS.md and docs/*.md that name a file the repository
    does not have, or a heading the file does not have: moved text must not leave dead links."""
    def headings(path):
        text = re.sub(r"```.*?```", "", open(path, encoding="utf-8").read(), flags=re.S)
        return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, flags=re.M)}
    problems = []
    for document in documents() + ["BENCHMARKS.md"]:
        path = os.path.join(ROOT, document)
        text = re.sub(r"```.*?```", "", open(path, encoding="utf-8").read(), flags=re.S)
        for match in re.finditer(r"\]\(([^)\s]+)\)", text):
            link = match.group(1)
            if re.match(r"^[a-z]+:", link):
                continue
            target, _, anchor = link.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
            if not os.path.exists(resolved):
                problems.append(f"{document}: the link {link} names a file the repository does not have")
            elif anchor and resolved.endswith(".md") and anchor not in headings(resolved):
                problems.append(f"{document}: the link {link} names a heading {os.path.relpath(resolved, ROOT)} does not have")
    return problems


def start_server(binary, workdir):
    data = os.path.join(workdir, "healthd-data")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEALTHD_")}
    env["HEALTHD_PUBLIC_DIR"] = os.path.join(ROOT, "Public")
    log = open(os.path.join(workdir, "..", "server.log"), "w")
    # The guide's webhook receiver runs on loopback, which the server refuses unless allowed.
    config = os.path.join(workdir, "..", "healthd.json")
    with open(config, "w") as f:
        f.write('{"webhookAllowedHosts": ["127.0.0.1"]}\n')
    # Port 0: the kernel picks a free port and the server says which (a port probed free here could
    # be taken by another program before the server binds it).
    proc = subprocess.Popen([binary, "serve", "--port", "0", "--data-dir", data, "--config", config], cwd=workdir, env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit("readme: healthd exited: " + open(log.name).read())
        found = re.search(r"listening on http://[^:]+:(\d+)", open(log.name).read())
        if found and os.path.exists(os.path.join(data, "admin-token")):
            port = int(found.group(1))
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5):
                    return proc, port, log.name
            except OSError:
                pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("readme: healthd did not start")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--doc", action="append", help="run only these documents' blocks, in this order (default: "
                        "README.md, docs/guide.md, then the other docs/*.md)")
    parser.add_argument("--list", action="store_true", help="show which blocks run and stop")
    args = parser.parse_args()
    # Every block as ("DOCUMENT line N", source, runnable, why not); only the README's first block
    # is the set-up commands.
    found = []
    for document in args.doc or documents():
        path = document if os.path.isabs(document) else os.path.join(ROOT, document)
        name = os.path.relpath(path, ROOT)
        text = open(path, encoding="utf-8").read()
        found += [(f"{name} line {line}", source, runnable, why)
                  for line, source, runnable, why in blocks(text, first=(name == "README.md"))]
    for line, source, runnable, why in found:
        print(f"readme: {line}: " + ("run" if runnable else f"not run ({why})"))
    problems = [p for line, source, runnable, _ in found if runnable for p in lint(line, source)] + link_problems()
    if problems:
        print("\n".join(problems))
        raise SystemExit(f"readme: {len(problems)} problem(s) before running anything")
    if args.list:
        return

    top = tempfile.mkdtemp(prefix="healthd-readme-")
    workdir = os.path.join(top, "work")
    os.makedirs(os.path.join(top, "bin"))
    os.makedirs(workdir)
    os.symlink(os.path.abspath(args.binary), os.path.join(top, "bin", "healthd"))
    os.symlink(os.path.join(ROOT, "Examples"), os.path.join(workdir, "Examples"))
    os.makedirs(os.path.join(workdir, ".build", "debug"))
    os.symlink(os.path.abspath(args.binary), os.path.join(workdir, ".build", "debug", "healthd"))
    proc, port, server_log = start_server(os.path.abspath(args.binary), workdir)
    # A block that fails leaves its background jobs (a `curl -N` stream) holding the output pipes
    # open, and this run would wait for them until its timeout: they end with the script.
    script = ["set -euo pipefail", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT"]
    for line, source, runnable, _ in found:
        if runnable:
            # A marker per block, so a failure names the document and line it came from.
            script.append(f"echo '--- {line}' >&2; echo; echo '--- {line}'")
            script.append(source)
    path = os.path.join(top, "readme.sh")
    open(path, "w").write("\n".join(script) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEALTHD_")}
    env.update(HEALTHD=f"http://127.0.0.1:{port}", PATH=os.path.join(top, "bin") + os.pathsep + env.get("PATH", ""))
    env.pop("ADMIN", None)
    try:
        started = time.time()
        run = subprocess.run(["bash", path], cwd=workdir, env=env, capture_output=True, text=True, timeout=600)
        sys.stdout.write(run.stdout)
        sys.stderr.write(run.stderr)
        if run.returncode != 0:
            last = [l for l in run.stderr.splitlines() if re.match(r"^--- \S+ line \d+$", l)]
            print(f"readme: FAIL: exit status {run.returncode} in the block at {last[-1][4:] if last else '?'}"
                  f" (server log: {server_log})")
            raise SystemExit(1)
        # Each block's output, split at the markers the script printed before each block.
        printed = dict((m.group(1), m.group(2)) for m in
                       re.finditer(r"^--- (\S+ line \d+)\n(.*?)(?=^--- \S+ line \d+$|\Z)", run.stdout, re.S | re.M))
        shown = [p for line, source, runnable, _ in found if runnable for p in output_problems(line, source, printed.get(line, ""))]
        if shown:
            print("\n".join(shown))
            print(f"readme: FAIL: {len(shown)} output(s) shown in comments differ from what the blocks printed")
            raise SystemExit(1)
        ran = sum(1 for block in found if block[2])
        compared = sum(len(shown_pairs(source)) for _, source, runnable, _ in found if runnable)
        print(f"readme: {ran} blocks ran in {time.time() - started:.1f} s, all passed; {compared} values shown in comments match the output")
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        if proc.returncode in (0, -15) and os.environ.get("KEEP") is None:
            shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
