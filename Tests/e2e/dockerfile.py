#!/usr/bin/env python3
"""Checks the Dockerfile without a Docker engine: the build stage's COPY lines must bring in every
path the package manifest names (SwiftPM refuses a manifest whose target folder is missing, even
when building one product), the health check must use the port the server listens on, and the
Docker section of docs/operations.md must name every package the runtime stage installs.

It also checks that the build image's Swift is the one the code is built with here (the same
major.minor as `swift --version`, and not older than the manifest's tools version), and, given
`--binary` (a healthd built here), that the runtime stage installs the Debian package of every
library the binary links (`ldd`) or loads (`dlopen` in Sources/), beyond the Swift runtime, which
the image links statically (`--static-swift-stdlib`).

Usage: python3 Tests/e2e/dockerfile.py [--binary PATH/TO/healthd]   (from anywhere; needs `swift`)
"""
import argparse, glob, os, re, shutil, subprocess, sys, tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# In every Debian image (Essential or required by libc6), so the runtime stage need not install them.
BASE_PACKAGES = {"libc6", "libgcc-s1"}


def version(text):
    return tuple(int(part) for part in text.split("."))


def swift_version_problems(build):
    """The build image's tag against the manifest's tools version and the toolchain here."""
    image = re.match(r"\s*swift:(\d+(?:\.\d+)*)", build)
    if not image:
        return ["the build stage must start FROM swift:VERSION (a pinned official Swift image)"]
    problems = []
    tools = re.search(r"swift-tools-version:\s*(\d+(?:\.\d+)*)", open(os.path.join(ROOT, "Package.swift"), encoding="utf-8").read())
    if tools and version(image.group(1)) < version(tools.group(1)):
        problems.append(f"the build image has Swift {image.group(1)}, older than the manifest's tools version {tools.group(1)}")
    here = re.search(r"Swift version (\d+\.\d+(?:\.\d+)?)", subprocess.run(["swift", "--version"], capture_output=True, text=True).stdout
                     + subprocess.run(["swift", "--version"], capture_output=True, text=True).stderr)
    if here and version(image.group(1))[:2] != version(here.group(1))[:2]:
        problems.append(f"the build image has Swift {image.group(1)}, but the code is built and tested here with {here.group(1)}: "
                        "pin the image to that release")
    return problems


def package_of(path):
    """The Debian package holding a library file (dpkg -S; /lib is /usr/lib on merged-/usr Debian)."""
    for candidate in (path, os.path.realpath(path), "/usr" + path if path.startswith("/lib") else path):
        found = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
        if found.returncode == 0:
            return found.stdout.split(":", 1)[0]
    return None


def runtime_library_problems(binary, build, packages):
    """Every library the binary needs at run time, beyond the statically linked Swift runtime, must
    come from a package the runtime stage installs (or the base image has)."""
    if not shutil.which("dpkg") or not shutil.which("ldd"):
        print("dockerfile: no dpkg or ldd here: the runtime libraries are not checked")
        return []
    problems = []
    linked = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    paths = re.findall(r"=>\s+(/\S+)", linked)
    swift_runtime = os.path.dirname(os.path.dirname(os.path.realpath(shutil.which("swift") or "/")))
    static = "--static-swift-stdlib" in build
    loaded = []
    for source in glob.glob(os.path.join(ROOT, "Sources", "**", "*.[ch]"), recursive=True):
        loaded += re.findall(r'dlopen\("([^"]+\.so\.\d+)"', open(source, encoding="utf-8", errors="replace").read())
    for name in sorted(set(loaded)):
        found = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
        match = re.search(rf"^\s*{re.escape(name)} .*=> (\S+)", found, flags=re.M)
        if match:
            paths.append(match.group(1))
        else:
            print(f"dockerfile: {name} (loaded at run time) is not installed here: its package is not checked")
    for path in paths:
        if os.path.realpath(path).startswith(swift_runtime + os.sep):
            if not static:
                problems.append(f"the binary links {os.path.basename(path)} from the Swift toolchain: build with --static-swift-stdlib")
            continue
        package = package_of(path)
        if package is None:
            problems.append(f"no Debian package holds {path}, which the binary needs")
        elif package not in packages and package not in BASE_PACKAGES:
            problems.append(f"the binary needs {os.path.basename(path)} from {package}, which the runtime stage does not install")
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", help="a healthd built here, whose libraries the runtime stage must provide")
    args = parser.parse_args()
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
        # The Docker section of docs/operations.md says what the image carries: every package the runtime stage
        # installs must be named there (in backticks), so the two cannot drift apart.
        install = re.search(r"apt-get install[^&]*", runtime.replace("\\\n", " "))
        packages = [word for word in install.group(0).split()[2:] if not word.startswith("-")] if install else []
        operations = open(os.path.join(ROOT, "docs", "operations.md"), encoding="utf-8").read()
        section = operations.split("\n## Docker\n", 1)[-1].split("\n## ", 1)[0] if "\n## Docker\n" in operations else ""
        if not packages:
            problems.append("the runtime stage installs no packages with apt-get install (expected the runtime libraries)")
        for package in packages:
            if f"`{package}`" not in section:
                problems.append(f"the runtime stage installs {package}, which the Docker section of docs/operations.md does not name")
        problems += swift_version_problems(build)
        if args.binary:
            problems += runtime_library_problems(args.binary, build, packages)
        ignore = os.path.join(ROOT, ".dockerignore")
        if not os.path.exists(ignore) or ".build" not in open(ignore).read():
            problems.append(".dockerignore must leave out .build (gigabytes of build products)")
    finally:
        shutil.rmtree(context, ignore_errors=True)
    for problem in problems:
        print(f"dockerfile: {problem}")
    if problems:
        raise SystemExit(1)
    print("dockerfile: the build stage's files make the package with the Swift release used here; the health check reads "
          "HEALTHD_PORT; docs/operations.md names every runtime package" + ("; the runtime stage has every library the binary needs" if args.binary else ""))


if __name__ == "__main__":
    main()
