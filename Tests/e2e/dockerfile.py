#!/usr/bin/env python3
"""Checks the Dockerfile without a Docker engine: the build stage's COPY lines must bring in every
path the package manifest names (SwiftPM refuses a manifest whose target folder is missing, even
when building one product), the health check must use the port the server listens on, and the
README's Docker section must name every package the runtime stage installs.

Usage: python3 Tests/e2e/dockerfile.py   (from anywhere; needs `swift`)
"""
import os, re, shutil, subprocess, sys, tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def main():
    text = open(os.path.join(ROOT, "Dockerfile"), encoding="utf-8").read()
    stages = re.split(r"^FROM\s", text, flags=re.M)[1:]
    problems = []
    if len(stages) < 2:
        raise SystemExit("dockerfile: expected a build stage and a runtime stage")
    build, runtime = stages[0], stages[-1]
    context = tempfile.mkdtemp(prefix="healthd-docker-context-")
    try:
        for source, _ in re.findall(r"^COPY\s+(?!--from)(\S+)\s+(\S+)", build, flags=re.M):
            path = os.path.join(ROOT, source)
            if os.path.isdir(path):
                shutil.copytree(path, os.path.join(context, source), ignore=shutil.ignore_patterns(".build"))
            elif os.path.exists(path):
                shutil.copy(path, os.path.join(context, source))
            else:
                problems.append(f"COPY {source}: not in the repository")
        described = subprocess.run(["swift", "package", "describe"], cwd=context, capture_output=True, text=True, timeout=300)
        if described.returncode != 0:
            problems.append("the build stage's files do not make a package: " + (described.stderr or described.stdout).strip()[:300])
        for source, _ in re.findall(r"^COPY\s+(?!--from)(\S+)\s+(\S+)", runtime, flags=re.M):
            if not os.path.exists(os.path.join(ROOT, source)):
                problems.append(f"runtime COPY {source}: not in the repository")
        check = re.search(r"^HEALTHCHECK.*$", runtime.replace("\\\n", " "), flags=re.M)
        if not check or "${HEALTHD_PORT}" not in check.group(0):
            problems.append("the HEALTHCHECK must read HEALTHD_PORT, the port the server listens on")
        if not re.search(r"^ENV HEALTHD_PORT=\d+", runtime, flags=re.M):
            problems.append("the runtime stage must set a default HEALTHD_PORT")
        # The README's Docker section says what the image carries: every package the runtime stage
        # installs must be named there (in backticks), so the two cannot drift apart.
        install = re.search(r"apt-get install[^&]*", runtime.replace("\\\n", " "))
        packages = [word for word in install.group(0).split()[2:] if not word.startswith("-")] if install else []
        readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
        section = readme.split("\n## Docker\n", 1)[-1].split("\n## ", 1)[0] if "\n## Docker\n" in readme else ""
        if not packages:
            problems.append("the runtime stage installs no packages with apt-get install (expected the runtime libraries)")
        for package in packages:
            if f"`{package}`" not in section:
                problems.append(f"the runtime stage installs {package}, which the README's Docker section does not name")
        ignore = os.path.join(ROOT, ".dockerignore")
        if not os.path.exists(ignore) or ".build" not in open(ignore).read():
            problems.append(".dockerignore must leave out .build (gigabytes of build products)")
    finally:
        shutil.rmtree(context, ignore_errors=True)
    for problem in problems:
        print(f"dockerfile: {problem}")
    if problems:
        raise SystemExit(1)
    print("dockerfile: the build stage's files make the package; the health check reads HEALTHD_PORT; "
          "the README names every runtime package")


if __name__ == "__main__":
    main()
