#!/usr/bin/env python3
"""Browser test for the dashboard: the real healthd, a real headless Chromium.

Creates a user with a known set of samples through the API, opens the dashboard with the token
in the URL fragment, and compares what the page rendered (elements with stable ids and data
attributes) with the same figures fetched from the API here. Every endpoint the page reads must
exist: one that answers 404 fails the checks that depend on it (`skip` records those failures).
Then the person's side (browser_people.py): activation, sign-in, the permission sheet, apps, recent
access, own data. Writes screenshots to the artifacts folder.
Standard library only.
"""
import argparse, base64, decimal, fcntl, html.parser, json, math, os, re, select, shutil, socket, subprocess, sys, tempfile, threading, time, urllib.parse
from datetime import datetime, timedelta, timezone
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from zoneinfo import ZoneInfo

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import ADMIN, Server, check, http, js, results  # noqa: E402

# Run as a script, this file is __main__; browser_people imports it as "browser" and must share it.
sys.modules.setdefault("browser", sys.modules[__name__])

# A zone with daylight saving and a non-zero offset, so local-day arithmetic is really exercised.
TIME_ZONE = "America/New_York"
TYPES = ["stepCount", "distanceWalkingRunning", "appleExerciseTime", "activeEnergyBurned", "heartRate",
         "restingHeartRate", "sleepAnalysis", "bodyMass", "workout", "appleStandHour"]
# The fixture user's date of birth: the page takes its zone from it when no age is entered.
DATE_OF_BIRTH = "1990-06-15"
AGE, GOAL = 40, "fatBurn"


def skip(name, endpoint):
    """A check that could not run because `endpoint` answered 404: a missing endpoint is a failure."""
    check(name, False, f"(endpoint missing: {endpoint} answered 404)")


def rfc3339(moment):
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_instant(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def round_half_up(value):
    """JavaScript's Math.round for the figures shown (Python's round() rounds halves to even)."""
    return math.floor(value + 0.5)


def thousands(value):
    return f"{round_half_up(value):,}"


def kilometres(metres):
    """Intl.NumberFormat rounds the shortest decimal form of the number, halves away from zero."""
    shown = decimal.Decimal(repr(metres / 1000)).quantize(decimal.Decimal("0.01"), rounding=decimal.ROUND_HALF_UP)
    return f"{shown:,}"


def hours_minutes(seconds):
    minutes = round_half_up(seconds / 60)
    return f"{minutes // 60}:{minutes % 60:02d}"


class DOM(html.parser.HTMLParser):
    """Elements by id (attributes and text), and every element's attributes, from --dump-dom output."""

    VOID = {"meta", "link", "input", "br", "img", "hr", "source", "area", "base", "col", "embed", "track", "wbr"}

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.by_id, self.elements, self.open = {}, [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        element = {"tag": tag, "attrs": dict(attrs), "text": ""}
        self.elements.append(element)
        if "id" in element["attrs"]:
            self.by_id[element["attrs"]["id"]] = element
        if tag not in self.VOID:
            self.open.append(element)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID and self.open:
            self.open.pop()

    def handle_endtag(self, tag):
        for index in range(len(self.open) - 1, -1, -1):
            if self.open[index]["tag"] == tag:
                del self.open[index:]
                break

    def handle_data(self, data):
        for element in self.open:
            element["text"] += data

    def text(self, element_id):
        element = self.by_id.get(element_id)
        return " ".join(element["text"].split()) if element else None

    def attr(self, element_id, name):
        element = self.by_id.get(element_id)
        return element["attrs"].get(name) if element else None

    def with_attribute(self, name):
        return [e for e in self.elements if name in e["attrs"]]


class Browser:
    def __init__(self, binary):
        self.binary = binary

    def run(self, url, *extra, timeout=120, budget_ms=15000):
        profile = tempfile.mkdtemp(prefix="healthd-chromium-")
        try:
            command = [self.binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--lang=en-US",
                       "--no-first-run", "--disable-extensions", "--disable-background-networking",
                       f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
                       f"--virtual-time-budget={budget_ms}", *extra, url]
            env = dict(os.environ, TZ=TIME_ZONE, LANG="en_US.UTF-8")
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
            return done.returncode, done.stdout, done.stderr
        finally:
            shutil.rmtree(profile, ignore_errors=True)

    def dom(self, url, budget_ms=15000):
        code, out, err = self.run(url, "--dump-dom", budget_ms=budget_ms)
        if code != 0 or "<html" not in out:
            raise RuntimeError(f"chromium --dump-dom failed ({code}): {err[-2000:]}")
        return DOM(out), err


class DevTools:
    """A page in headless Chromium driven over --remote-debugging-pipe (the DevTools protocol as
    NUL-separated JSON on fds 3 and 4), for checks that need the page to stay open while data changes."""

    def __init__(self, binary):
        self.profile = tempfile.mkdtemp(prefix="healthd-chromium-")
        to_child, self.to_browser = os.pipe()
        self.from_browser, from_child = os.pipe()

        def wire_pipes():
            # Move both ends clear of 3 and 4 first, so neither dup2 overwrites the other's source.
            read_end, write_end = fcntl.fcntl(to_child, fcntl.F_DUPFD, 10), fcntl.fcntl(from_child, fcntl.F_DUPFD, 10)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--lang=en-US", "--no-first-run",
             "--disable-extensions", "--disable-background-networking", f"--user-data-dir={self.profile}",
             "--remote-debugging-pipe", "--window-size=1280,1800", "about:blank"],
            # close_fds=False keeps the dup2'd 3 and 4 (Python's own descriptors are close-on-exec).
            close_fds=False, preexec_fn=wire_pipes, env=dict(os.environ, TZ=TIME_ZONE),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child)
        os.close(from_child)
        self.buffer, self.next_id, self.session = b"", 0, None
        self.events = []  # protocol events (console messages, exceptions) met while waiting for answers

    def call(self, method, params=None, session=True, timeout=30):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if "method" in reply:
                    self.events.append(reply)
                elif reply.get("id") == self.next_id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
            ready, _, _ = select.select([self.from_browser], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise RuntimeError(f"{method}: no answer from Chromium")
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self.buffer += chunk

    def open(self, url):
        target = self.call("Target.createTarget", {"url": url}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)["sessionId"]

    def watch_console(self):
        """From here on, console errors, uncaught exceptions and CSP reports are kept for `console_problems`."""
        self.call("Runtime.enable")
        self.call("Log.enable")

    def console_problems(self):
        """The page's console errors since the last call: uncaught exceptions, console.error, and the
        browser's own error entries (a CSP violation) other than failed loads, which the page
        reports itself (a 401 or 404 it shows as a message)."""
        problems = []
        for event in self.events:
            method, params = event["method"], event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                problems.append("uncaught: " + (details.get("exception", {}).get("description") or details.get("text", "")))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                problems.append("console.error: " + " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error" \
                    and params["entry"].get("source") != "network":
                problems.append(f"{params['entry'].get('source')}: {params['entry'].get('text')}")
        self.events = []
        return problems

    def full_page_screenshot(self, path, width):
        """A PNG of the whole document, however tall (beyond the viewport), at `width` CSS pixels;
        returns the document height captured."""
        height = int(self.evaluate("Math.ceil(document.documentElement.scrollHeight)") or 0)
        shot = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                    "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}})
        with open(path, "wb") as out:
            out.write(base64.b64decode(shot["data"]))
        return height

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result.get("result", {}).get("value")

    def wait_for(self, expression, timeout=30):
        """The expression's value once it is truthy, or None when it never becomes so within timeout
        (a bound on a wait for an event, not a measurement of speed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except RuntimeError:
                value = None  # no page context yet while the page is still loading
            if value:
                return value
            time.sleep(0.2)
        return None

    def close(self):
        try:
            self.call("Browser.close", session=False, timeout=5)
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        for fd in (self.to_browser, self.from_browser):
            os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)


def console_problems(stderr):
    """Console errors Chromium logged: CSP violations and uncaught exceptions are bugs in the page."""
    lines = [line for line in stderr.splitlines() if "CONSOLE" in line or "Content Security Policy" in line]
    # Failed loads the page handles (a 404 it reports itself) are not console bugs here; a missing
    # endpoint fails the checks that need it instead (`skip`).
    return [line for line in lines if "Content Security Policy" in line or "Uncaught" in line]


class Fixture:
    """A user with a known set of samples, relative to now in TIME_ZONE."""

    def __init__(self, port):
        self.port = port
        self.zone = ZoneInfo(TIME_ZONE)
        self.now = datetime.now(self.zone)
        self.today = self.now.replace(hour=0, minute=0, second=0, microsecond=0)

    def admin(self, path, body):
        status, _, payload = http(self.port, "POST", path, body, token=ADMIN)
        if status != 201:
            raise RuntimeError(f"POST {path}: {status} {payload[:300]}")
        return js(payload)

    def make_user(self, name, with_data):
        user = self.admin("/v1/users", {"name": name})
        writer = self.admin("/v1/authorizations", {"user": user["id"], "app": "browser-test-phone",
                                                   "read": TYPES, "share": TYPES})["token"]
        # A dashboard token opts in to learning its own read list, as `serve --demo`'s does.
        reader = self.admin("/v1/authorizations", {"user": user["id"], "app": "dashboard", "read": TYPES + ["dateOfBirth"],
                                                   "discloseRead": True})["token"]
        if with_data:
            self.writer = writer
            self.user = user["id"]
            self.save(writer, self.samples())
            status, _, payload = http(self.port, "PUT", "/v1/characteristics", {"user": user["id"], "dateOfBirth": DATE_OF_BIRTH},
                                      token=ADMIN)
            if status != 200:
                raise RuntimeError(f"PUT /v1/characteristics: {status} {payload[:300]}")
        return reader

    def token_reading(self, types, disclose_read=True):
        """A token of the data user that may read only `types` (and shares nothing); with `disclose_read`
        it may learn that read list (GET /v1/authorizations/current)."""
        return self.admin("/v1/authorizations", {"user": self.user, "app": "partial-dashboard", "read": types,
                                                 "discloseRead": disclose_read})["token"]

    def steps_today(self):
        """Whether today has steps yet: the first walk of a day ends at 07:25 (`samples`)."""
        return self.now >= self.local(0, 7, 25)

    def local(self, day_offset, hour, minute=0):
        day = (self.today + timedelta(days=day_offset)).date()
        return datetime(day.year, day.month, day.day, hour, minute, tzinfo=self.zone)

    def samples(self):
        out = []

        def quantity(kind, value, unit, start, end):
            if end <= self.now:  # nothing from the future
                out.append({"type": kind, "value": value, "unit": unit, "start": rfc3339(start), "end": rfc3339(end)})

        for offset in range(-27, 1):
            if offset in (-20, -9):  # days without steps: the charts must show them as gaps
                continue
            for hour in range(7, 22, 2):
                start = self.local(offset, hour, 5)
                steps = 400 + ((offset * 37 + hour * 11) % 23) * 40 + (0.5 if hour == 9 else 0)
                quantity("stepCount", steps, "count", start, start + timedelta(minutes=20))
                quantity("distanceWalkingRunning", round(steps * 0.72, 1), "m", start, start + timedelta(minutes=20))
                quantity("activeEnergyBurned", steps * 0.04, "kcal", start, start + timedelta(minutes=20))
                quantity("appleExerciseTime", 12, "min", start, start + timedelta(minutes=20))
        # Heart rate today every 20 minutes, and a latest reading well above any fat-burn zone.
        moment = self.today
        while moment <= self.now - timedelta(minutes=5):
            beats = 58 + (moment.hour * 7 + moment.minute) % 45
            out.append({"type": "heartRate", "value": beats, "unit": "count/min", "start": rfc3339(moment)})
            moment += timedelta(minutes=20)
        out.append({"type": "heartRate", "value": 171.4, "unit": "count/min",
                    "start": rfc3339(self.now - timedelta(minutes=1))})
        # A resting rate and a weight most mornings (two days without either: gaps in the lines).
        for offset in range(-27, 1):
            if offset in (-15, -4):
                continue
            morning = self.local(offset, 7, 0)
            if morning <= self.now:
                out.append({"type": "restingHeartRate", "value": 55 + (offset % 5), "unit": "count/min", "start": rfc3339(morning)})
                out.append({"type": "bodyMass", "value": round(72 + offset * 0.05, 1), "unit": "kg", "start": rfc3339(morning)})
        # Stand hours the last week: stood 08:00-20:00 except at noon.
        for offset in range(-6, 1):
            for hour in range(8, 21):
                start = self.local(offset, hour)
                if start + timedelta(hours=1) <= self.now:
                    out.append({"type": "appleStandHour", "value": "idle" if hour == 12 else "stood", "start": rfc3339(start),
                                "end": rfc3339(start + timedelta(hours=1))})
        # Two workouts with heart rate every minute: a run yesterday evening with a 2-minute pause,
        # and a ride three days ago.
        for offset, kind, hour, minutes, kcal, metres in ((-1, "running", 18, 40, 400, 6000), (-3, "cycling", 7, 45, 350, 15000)):
            start = self.local(offset, hour, 30)
            end = start + timedelta(minutes=minutes)
            workout = {"type": "workout", "activityType": kind, "start": rfc3339(start), "end": rfc3339(end),
                       "totalEnergyBurned": {"value": kcal, "unit": "kcal"}, "totalDistance": {"value": metres, "unit": "m"}}
            if kind == "running":
                workout["events"] = [{"type": "pause", "date": rfc3339(start + timedelta(minutes=10))},
                                     {"type": "resume", "date": rfc3339(start + timedelta(minutes=12))}]
            out.append(workout)
            for minute in range(minutes):
                out.append({"type": "heartRate", "value": 110 + (minute * 7) % 50, "unit": "count/min",
                            "start": rfc3339(start + timedelta(minutes=minute, seconds=20))})
        # Last night: in bed 22:30 to 06:45, stages inside, an awake spell, and a second record of
        # part of the night (as a phone would) that must not count twice.
        night = [("inBed", (-1, 22, 30), (0, 6, 45)), ("asleepCore", (-1, 23, 0), (0, 1, 0)),
                 ("asleepDeep", (0, 1, 0), (0, 2, 0)), ("asleepREM", (0, 2, 0), (0, 2, 45)),
                 ("awake", (0, 2, 45), (0, 3, 0)), ("asleepCore", (0, 3, 0), (0, 6, 30)),
                 ("asleepUnspecified", (-1, 23, 30), (0, 0, 30)),
                 # Two nights ago, outside the window: must not count.
                 ("asleepCore", (-2, 23, 0), (-1, 6, 0))]
        for value, start, end in night:
            out.append({"type": "sleepAnalysis", "value": value, "start": rfc3339(self.local(*start)),
                        "end": rfc3339(self.local(*end))})
        return out

    def save(self, token, samples):
        for index in range(0, len(samples), 5000):
            status, _, payload = http(self.port, "POST", "/v1/samples", {"samples": samples[index:index + 5000]}, token=token)
            if status != 201:
                raise RuntimeError(f"POST /v1/samples: {status} {payload[:500]}")


def api(port, token, path, **query):
    status, _, payload = http(port, "GET", path + "?" + urllib.parse.urlencode(query), token=token)
    return status, js(payload)


def all_samples(port, token, **query):
    samples, cursor = [], None
    while True:
        status, body = api(port, token, "/v1/samples", **(dict(query, cursor=cursor) if cursor else query))
        if status != 200:
            raise RuntimeError(f"GET /v1/samples: {status} {body}")
        samples += body["samples"]
        cursor = body["next"]
        if not cursor:
            return samples


def sleep_seconds(samples, window_start, window_end):
    """The dashboard's rule: asleep stages only, clipped to the window, overlaps counted once."""
    window_start, window_end = window_start.astimezone(timezone.utc), window_end.astimezone(timezone.utc)
    intervals = []
    for sample in samples:
        if sample["value"] not in ("asleepCore", "asleepDeep", "asleepREM", "asleepUnspecified"):
            continue
        start = max(parse_instant(sample["start"]), window_start)
        end = min(parse_instant(sample["end"]), window_end)
        if end > start:
            intervals.append((start, end))
    total, current = timedelta(0), None
    for start, end in sorted(intervals):
        if current and start <= current[1]:
            current[1] = max(current[1], end)
        else:
            if current:
                total += current[1] - current[0]
            current = [start, end]
    if current:
        total += current[1] - current[0]
    return total.total_seconds()


def stream_status(port, token):
    """The status of GET /v1/changes/stream, read from the status line (the body never ends)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall((f"GET /v1/changes/stream?types=heartRate HTTP/1.1\r\nHost: x\r\n"
                            f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n").encode())
        head = connection.recv(64)
    match = re.match(rb"HTTP/1\.1 (\d{3})", head)
    return int(match.group(1)) if match else None


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def days_with_data_average(port, token, type_id, unit, start, end):
    """The dashboard's daily average of a period: the mean of the daily sums over the days that have
    data, from `start` to `end` or tomorrow, whichever is first; and how many days those are."""
    tomorrow = datetime.combine(datetime.now(ZoneInfo(TIME_ZONE)).date() + timedelta(days=1), datetime.min.time(), ZoneInfo(TIME_ZONE))
    status, collection = api(port, token, "/v1/statistics/collection", type=type_id, start=rfc3339(start), end=rfc3339(min(end, tomorrow)),
                             interval="P1D", timeZone=TIME_ZONE, options="cumulativeSum", unit=unit)
    if status != 200:
        raise RuntimeError(f"GET /v1/statistics/collection: {status} {collection}")
    sums = [b["sum"] for b in collection["buckets"] if "sum" in b]
    total = 0
    for value in sums:  # left to right, as the page adds (Python 3.12's sum() compensates)
        total += value
    return (total / len(sums) if sums else None), len(sums)


def nice_axis_top(value):
    """The charts' axis top: the least of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^n at least `value`."""
    if not value > 0:
        return 1
    power = math.floor(math.log10(value)) - 1
    while True:
        for leading in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8):
            top = float(f"{leading * 10 ** power:.12g}")
            if top >= value:
                return top
        power += 1


def average_checks(label, port, token, dom, start, end):
    """A period's step and energy averages are over the days with data, and the card says so."""
    steps, step_days = days_with_data_average(port, token, "stepCount", "count", start, end)
    energy, energy_days = days_with_data_average(port, token, "activeEnergyBurned", "kcal", start, end)
    check(f"{label}: the daily step average is over the {step_days} days with data, and says so",
          number(dom.attr("steps-average", "data-value")) == steps and number(dom.attr("period-days", "data-value")) == step_days
          and (steps is None or (dom.text("steps-average") == thousands(steps)
                                 and f"over the {step_days} day{'s' if step_days != 1 else ''} with data" in dom.text("steps-average-line"))),
          (dom.text("steps-average-line"), steps, step_days))
    check(f"{label}: the daily energy average too",
          number(dom.attr("energy-average", "data-value")) == energy and number(dom.attr("energy-days", "data-value")) == energy_days
          and (energy is None or f"over the {energy_days} day" in dom.text("energy-average-line")),
          (dom.text("energy-average-line"), energy, energy_days))
    return step_days


def sleep_order_checks(dom):
    """The stage legend, the sleep card's list and every stacked bar name the stages in one order."""
    legend = [e["attrs"]["data-legend"] for e in dom.with_attribute("data-legend")]
    listed = [e["attrs"]["data-stage"] for e in dom.with_attribute("data-stage") if e["tag"] == "li"]
    bars = []
    for container in ["sleep-stages"] + [e["attrs"]["data-night"] for e in dom.with_attribute("data-night") if e["tag"] == "li"]:
        rects = [e for e in (dom_children(dom, container) if container == "sleep-stages" else night_children(dom, container))
                 if e["tag"] == "rect" and "data-stage" in e["attrs"]]
        bars.append([r["attrs"]["data-stage"] for r in sorted(rects, key=lambda r: float(r["attrs"]["x"]))])
    in_order = lambda stages: stages == sorted(stages, key=legend.index) if all(s in legend for s in stages) else False
    check("the sleep legend reads Deep, Core, REM, Asleep, as the bars stack", legend == ["asleepDeep", "asleepCore", "asleepREM", "asleepUnspecified"],
          legend)
    check("the sleep card's stage list and every night's bar follow the legend's order",
          in_order(listed) and all(in_order(bar) for bar in bars) and len(listed) >= 2 and any(len(bar) >= 2 for bar in bars), (listed, bars))


def night_children(dom, night):
    """The elements inside the sleep week's `li` for `night`."""
    start = next(e for e in dom.elements if e["tag"] == "li" and e["attrs"].get("data-night") == night)
    index = dom.elements.index(start)
    out = []
    for element in dom.elements[index + 1:]:
        if element["tag"] == "li":
            break
        out.append(element)
    return out


def dashboard_checks(port, browser, fixture, token, artifacts):
    base = f"http://127.0.0.1:{port}/"
    url = f"{base}#token={urllib.parse.quote(token)}&age={AGE}&goal={GOAL}"
    dom, stderr = browser.dom(url)
    print("browser: page")
    check("the dashboard finished its first load", any(e["tag"] == "body" and e["attrs"].get("data-loaded") == "true" for e in dom.elements))
    check("the token from the fragment opened the dashboard", "hidden" not in dom.by_id["dashboard"]["attrs"]
          and "hidden" in dom.by_id["token-panel"]["attrs"])
    problems = console_problems(stderr)
    check("no CSP violation or uncaught error in the console", not problems, "\n".join(problems[:5]))

    print("browser: latest heart rate")
    status, body = api(port, token, "/v1/samples", type="heartRate", order="desc", limit=1)
    latest = body["samples"][0]["value"]
    check("heart-rate card shows the API's latest value", number(dom.attr("heart-value", "data-value")) == latest
          and dom.text("heart-value") == thousands(latest), (dom.attr("heart-value", "data-value"), dom.text("heart-value"), latest))

    print("browser: sleep")
    window_start = fixture.local(-1, 18)
    window_end = fixture.local(0, 12)
    night = all_samples(port, token, type="sleepAnalysis", start=rfc3339(window_start), end=rfc3339(window_end), limit=10000)
    asleep = sleep_seconds(night, window_start, window_end)
    check("sleep card shows asleep time, in bed and awake excluded, overlaps once",
          number(dom.attr("sleep-value", "data-value")) == asleep and dom.text("sleep-value") == hours_minutes(asleep),
          (dom.attr("sleep-value", "data-value"), dom.text("sleep-value"), asleep))
    # Core 23:00-01:00, deep 01:00-02:00, REM 02:00-02:45, core 03:00-06:30 (the unspecified record
    # lies inside the first core stretch), measured in real time, so a DST night is right too.
    utc = lambda *local: fixture.local(*local).astimezone(timezone.utc)
    expected = ((utc(0, 1) - utc(-1, 23)) + (utc(0, 2) - utc(0, 1)) + (utc(0, 2, 45) - utc(0, 2))
                + (utc(0, 6, 30) - utc(0, 3))).total_seconds()
    check("the fixture's night counts as the sum of its asleep stages", asleep == expected, (asleep, expected))
    stages = {e["attrs"]["data-stage"]: number(e["attrs"]["data-seconds"]) for e in dom.with_attribute("data-stage")
              if e["tag"] == "li"}
    # The unspecified record lies inside a core stretch: the staged record wins that time.
    check("sleep stages listed, adding up to the total", set(stages) == {"asleepCore", "asleepDeep", "asleepREM"}
          and sum(stages.values()) == asleep, stages)
    sleep_order_checks(dom)

    print("browser: heart-rate chart")
    day_samples = all_samples(port, token, type="heartRate", start=rfc3339(fixture.today),
                              end=rfc3339(fixture.local(1, 0)), limit=10000)
    points = dom.with_attribute("data-hr-point")
    check("one chart point per heart-rate sample today", len(points) == len(day_samples)
          and dom.attr("chart-heart", "data-point-count") == str(len(day_samples)), (len(points), len(day_samples)))
    check("chart points carry the API's values", sorted(number(p["attrs"]["data-value"]) for p in points)
          == sorted(s["value"] for s in day_samples))

    print("browser: today's summary")
    date = fixture.today.date().isoformat()
    status, summary = api(port, token, "/v1/summary", date=date, timeZone=TIME_ZONE, period="day")
    if status == 404:
        for name in ("steps card", "active energy card", "distance and exercise"):
            skip(name + " equals GET /v1/summary", "GET /v1/summary")
        check("without /v1/summary the steps and energy cards say not available",
              dom.attr("card-steps", "data-state") == "unavailable" and dom.attr("card-energy", "data-state") == "unavailable",
              (dom.attr("card-steps", "data-state"), dom.attr("card-energy", "data-state")))
    else:
        def same(element_id, value, text, card_figure=False):
            # No figure for none, nor, on a card's main figure, for the summary's 0 of a day without data.
            if value is None or (card_figure and value == 0):
                return dom.attr(element_id, "data-value") == "" and dom.text(element_id) == "–"
            return number(dom.attr(element_id, "data-value")) == value and dom.text(element_id) == text
        steps, energy = summary.get("steps"), summary.get("activeEnergy")
        distance, exercise = summary.get("distance"), summary.get("exerciseTime")
        check("steps card equals GET /v1/summary steps", same("steps-value", steps, steps is not None and thousands(steps), card_figure=True),
              (dom.text("steps-value"), steps))
        check("active energy card equals GET /v1/summary activeEnergy (kcal)",
              same("energy-value", energy, energy is not None and thousands(energy), card_figure=True), (dom.text("energy-value"), energy))
        check("distance (km, 2 decimals) and exercise (min) equal the summary",
              same("distance-value", distance, distance is not None and kilometres(distance))
              and same("exercise-value", exercise, exercise is not None and thousands(exercise)),
              (dom.text("distance-value"), distance, dom.text("exercise-value"), exercise))

    print("browser: step charts")
    first = fixture.local(-27, 0)
    status, collection = api(port, token, "/v1/statistics/collection", type="stepCount", start=rfc3339(first),
                             end=rfc3339(fixture.local(1, 0)), interval="P1D", timeZone=TIME_ZONE, options="cumulativeSum")
    if status == 404:
        for name in ("weekly bars equal the collection", "28-day trend points equal the collection"):
            skip(name, "GET /v1/statistics/collection")
        check("without statistics the step charts say not available",
              dom.attr("panel-week", "data-state") == "unavailable" and dom.attr("panel-trend", "data-state") == "unavailable")
    else:
        sums = {b["start"][:10]: b["sum"] for b in collection["buckets"] if "sum" in b}
        days = [fixture.local(offset, 0).date().isoformat() for offset in range(-27, 1)]
        trend = [e for e in dom.with_attribute("data-trend-day")]
        check("one trend point per day with data in 28 days", [t["attrs"]["data-trend-day"] for t in trend]
              == [day for day in days if day in sums], (len(trend), len(sums)))
        check("trend points carry the sums", [number(t["attrs"]["data-value"]) for t in trend]
              == [sums[day] for day in days if day in sums])
        check("the fixture's gap days have no trend point", len([d for d in days if d in sums]) <= 26)
        highest = max(sums.values())
        top = number(dom.attr("chart-trend", "data-axis-top"))
        check("the trend's axis tops at the least of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^n above the highest day (not a 1-2-5 step)",
              top == nice_axis_top(highest) and highest <= top < 1.34 * highest, (top, highest))

    period_chart_checks(port, token, dom, "day", fixture.today, fixture.local(1, 0), "PT1H")
    new_card_checks(port, fixture, token, dom)

    print("browser: heart-rate zone and alert")
    status, zone = api(port, token, "/v1/heart-rate/zones", age=AGE, goal=GOAL)
    if status == 404:
        skip("zone band equals GET /v1/heart-rate/zones", "GET /v1/heart-rate/zones")
        skip("alert fires for a live reading above the zone", "GET /v1/heart-rate/zones")
        check("without zones the page says not available and raises no alert",
              dom.attr("zone-range", "data-state") == "unavailable" and dom.attr("zone-alert", "data-state") == "none")
    else:
        band = [e for e in dom.with_attribute("data-zone-low") if e["tag"] == "rect"]
        check("zone band equals GET /v1/heart-rate/zones", len(band) == 1
              and number(band[0]["attrs"]["data-zone-low"]) == zone["low"]
              and number(band[0]["attrs"]["data-zone-high"]) == zone["high"], (band, zone))
        expected = "above" if latest > zone["high"] else "below" if latest < zone["low"] else "none"
        shown = dom.attr("zone-alert", "data-state")
        check(f"alert state for the live {latest} bpm reading is '{expected}'",
              shown == expected or (expected == "none" and shown == "in"), shown)
        check("the alert is visible and names the reading", expected == "none" or
              ("hidden" not in dom.by_id["zone-alert"]["attrs"] and thousands(latest) in dom.text("zone-alert")))

    print("browser: live feed")
    live = dom.attr("live-status", "data-live")
    if stream_status(port, token) == 404:
        skip("the page follows GET /v1/changes/stream", "GET /v1/changes/stream")
        check("without the stream the page says so and polls", live == "polling", live)
    else:
        check("the page follows the change stream", live == "live", live)

    period_checks(port, browser, fixture, token)

    print("browser: every period at 1280 px (full-page screenshots)")
    view_checks(browser.binary, [(f"dashboard-{period}.png", f"{url}&period={period}", 1280, expect_period(period, fixture.today.date()))
                                 for period in ("day", "week", "month", "year")], artifacts)


def period_chart_checks(port, token, dom, period, start, end, interval):
    """The period chart's bars are the collection's buckets over the period, with their sums."""
    status, collection = api(port, token, "/v1/statistics/collection", type="stepCount", start=rfc3339(start), end=rfc3339(end),
                             interval=interval, timeZone=TIME_ZONE, options="cumulativeSum")
    check(f"{period}: the statistics collection answers", status == 200, status)
    buckets = collection.get("buckets", []) if status == 200 else []
    bars = [e for e in dom.with_attribute("data-bucket") if e["tag"] == "rect"]
    if not bars and not any(b.get("sum") for b in buckets):  # a period without steps yet: no chart, a sentence
        check(f"{period}: no steps in the period, no bars, and the panel says so", dom.attr("panel-period", "data-state") == "empty")
        return buckets
    check(f"{period}: one step bar per {interval} bucket of the period, in order",
          [b["attrs"]["data-bucket"] for b in bars] == [b["start"] for b in buckets], (len(bars), len(buckets)))
    check(f"{period}: each bar's value is its bucket's sum ('' for no data)",
          [number(b["attrs"]["data-value"]) for b in bars] == [b.get("sum") for b in buckets])
    return buckets


def new_card_checks(port, fixture, token, dom):
    """Rings, sleep over 7 nights, workouts, resting heart rate and weight, against the API."""
    print("browser: activity rings")
    today = fixture.today.date()
    status, rings = api(port, token, "/v1/activity-summaries", start=(today - timedelta(days=6)).isoformat(),
                        end=today.isoformat(), timeZone=TIME_ZONE)
    check("activity summaries answer", status == 200, status)
    latest = rings["summaries"][-1] if status == 200 else {}
    shown = {e["attrs"]["data-ring"]: (number(e["attrs"]["data-value"]), number(e["attrs"]["data-goal"]))
             for e in dom.with_attribute("data-ring") if e["tag"] == "li"}
    check("today's move, exercise and stand equal the activity summary, with their goals", shown == {
        "move": (latest.get("activeEnergyBurned"), latest.get("activeEnergyBurnedGoal")),
        "exercise": (latest.get("appleExerciseTime"), latest.get("appleExerciseTimeGoal")),
        "stand": (latest.get("appleStandHours"), latest.get("appleStandHoursGoal"))}, (shown, latest))
    check("the fixture's stand hours count (12 stood hours on a full day)", rings["summaries"][-2]["appleStandHours"] == 12,
          rings["summaries"][-2])
    check("seven small rings, one per day", [e["attrs"]["data-ring-day"] for e in dom.with_attribute("data-ring-day")]
          == [s["date"] for s in rings["summaries"]])

    print("browser: sleep, last 7 nights")
    nights = [e for e in dom.with_attribute("data-night") if e["tag"] == "li"]
    samples = all_samples(port, token, type="sleepAnalysis", start=rfc3339(fixture.local(-7, 18)),
                          end=rfc3339(fixture.local(0, 12)), limit=10000)
    expected = [(fixture.local(offset, 0).date().isoformat(), sleep_seconds(samples, fixture.local(offset - 1, 18), fixture.local(offset, 12)))
                for offset in range(-6, 1)]
    check("seven nights, each with the sleep card's rule", [(n["attrs"]["data-night"], number(n["attrs"]["data-seconds"]))
                                                            for n in nights] == expected, ([n["attrs"] for n in nights], expected))
    check("last night is in the week and has stages", expected[-1][1] > 0 and
          any(e["tag"] == "rect" and "data-stage" in e["attrs"] for e in dom.elements if e is not None))

    print("browser: workouts")
    status, listed = api(port, token, "/v1/workouts", start=rfc3339(fixture.local(-27, 0)), end=rfc3339(fixture.local(1, 0)),
                         goal=GOAL, age=AGE, limit=50)
    check("GET /v1/workouts answers", status == 200, (status, listed))
    workouts = listed.get("workouts", [])[:8]
    groups, current = [], None
    for element in dom.elements:
        if element["tag"] == "li" and "data-workout" in element["attrs"]:
            current = {"uuid": element["attrs"]["data-workout"]}
            groups.append(current)
        elif current is not None and "data-fact" in element["attrs"]:
            current[element["attrs"]["data-fact"]] = number(element["attrs"]["data-value"])
    check("one row per workout, newest first", [g["uuid"] for g in groups] == [w["uuid"] for w in workouts] and len(workouts) == 2,
          (groups, workouts))
    check("each row's duration, distance, energy, average heart rate and time in zone are the API's", all(
        g.get("duration") == w["duration"] and g.get("distance") == w["totalDistance"] and g.get("energy") == w["totalEnergyBurned"]
        and g.get("heartRate") == (w["heartRate"] or {}).get("average") and g.get("timeInZone") == w["timeInZone"]
        for g, w in zip(groups, workouts)), (groups, workouts))
    run = next((w for w in workouts if w["activityType"] == "running"), {})
    check("the run lasted 38 active minutes (a 2-minute pause) and spent time in the zone",
          run.get("duration") == 38 * 60 and (run.get("timeInZone") or 0) > 0, run)

    for panel, type_id, unit, label in (("chart-resting", "restingHeartRate", "count/min", "resting heart rate"),
                                        ("chart-weight", "bodyMass", "kg", "weight")):
        print(f"browser: {label} trend")
        status, collection = api(port, token, "/v1/statistics/collection", type=type_id, start=rfc3339(fixture.local(-27, 0)),
                                 end=rfc3339(fixture.local(1, 0)), interval="P1D", timeZone=TIME_ZONE,
                                 options="discreteAverage", unit=unit)
        averages = [(b["start"][:10], b["average"]) for b in collection.get("buckets", []) if "average" in b]
        points = [e for e in dom.with_attribute("data-reading-day") if e["tag"] == "circle"
                  and e in dom_children(dom, panel)]
        check(f"{label}: one point per day with a reading, carrying the daily average",
              [(p["attrs"]["data-reading-day"], number(p["attrs"]["data-value"])) for p in points] == averages and len(averages) >= 20,
              (len(points), len(averages)))


def dom_children(dom, element_id):
    """The elements after `element_id`'s start tag up to the next element with an id of the same tag (a chart's marks)."""
    start = dom.by_id.get(element_id)
    if start is None:
        return []
    index = dom.elements.index(start)
    out = []
    for element in dom.elements[index + 1:]:
        if element["tag"] == start["tag"] and "id" in element["attrs"]:
            break
        out.append(element)
    return out


def period_checks(port, browser, fixture, token):
    """The week and year views, and the zone from the stored date of birth (no age in the address)."""
    base = f"http://127.0.0.1:{port}/#token={urllib.parse.quote(token)}"
    monday = fixture.today - timedelta(days=fixture.today.weekday())
    monday = fixture.local((monday.date() - fixture.today.date()).days, 0)
    sunday_end = fixture.local((monday.date() - fixture.today.date()).days + 7, 0)
    print("browser: week view, zone from the date of birth")
    dom, _ = browser.dom(base + "&period=week")
    check("week: the switch shows Week pressed", [e["attrs"].get("data-period") for e in dom.elements
                                                  if e["attrs"].get("aria-pressed") == "true"] == ["week"])
    check("week: headings say this week", dom.text("steps-heading") == "Steps this week"
          and dom.text("period-heading") == "Steps by day, this week", (dom.text("steps-heading"), dom.text("period-heading")))
    status, summary = api(port, token, "/v1/summary", date=fixture.today.date().isoformat(), timeZone=TIME_ZONE, period="week")
    check("week: the steps card is the week's total from GET /v1/summary?period=week",
          number(dom.attr("steps-value", "data-value")) == summary["steps"] and dom.text("steps-value") == thousands(summary["steps"]),
          (dom.text("steps-value"), summary.get("steps")))
    average_checks("week", port, token, dom, monday, sunday_end)
    check("week: energy card total is the summary's", number(dom.attr("energy-value", "data-value")) == summary["activeEnergy"])
    buckets = period_chart_checks(port, token, dom, "week", monday, sunday_end, "P1D")
    check("week: seven day bars from Monday", len(buckets) == 7 and buckets[0]["start"][:10] == monday.date().isoformat())
    status, zone = api(port, token, "/v1/heart-rate/zones", goal=GOAL)
    born = datetime.fromisoformat(DATE_OF_BIRTH).date()
    utc_today = datetime.now(timezone.utc).date()
    age = utc_today.year - born.year - ((utc_today.month, utc_today.day) < (born.month, born.day))
    check("without an age the zone comes from the stored date of birth", status == 200 and zone["age"] == age
          and dom.attr("zone-range", "data-age") == str(age) and dom.attr("zone-range", "data-age-from") == "dateOfBirth"
          and f"age {age}, from your date of birth" in (dom.text("zone-range") or ""), (zone, dom.text("zone-range")))
    band = [e for e in dom.with_attribute("data-zone-low") if e["tag"] == "rect"]
    check("the band drawn is that zone", len(band) == 1 and number(band[0]["attrs"]["data-zone-low"]) == zone["low"]
          and number(band[0]["attrs"]["data-zone-high"]) == zone["high"])
    check("the age box offers the stored age and no reset", dom.attr("age-input", "placeholder") == str(age)
          and "hidden" in dom.by_id["age-reset"]["attrs"])

    print("browser: year view")
    dom, _ = browser.dom(base + "&period=year")
    year = fixture.today.year
    start = datetime(year, 1, 1, tzinfo=fixture.zone)
    end = datetime(year + 1, 1, 1, tzinfo=fixture.zone)
    buckets = period_chart_checks(port, token, dom, "year", start, end, "P1M")
    check("year: twelve month bars", len(buckets) == 12)
    status, summary = api(port, token, "/v1/summary", date=fixture.today.date().isoformat(), timeZone=TIME_ZONE, period="year")
    check("year: the steps card is the year's total", number(dom.attr("steps-value", "data-value")) == summary["steps"]
          and dom.text("steps-heading") == "Steps this year")
    with_data = average_checks("year", port, token, dom, start, end)
    check("year: four weeks of data average over those weeks' days, not over the days of the year so far",
          with_data <= 28 and "so far" not in (dom.text("steps-average-line") or ""), (with_data, dom.text("steps-average-line")))

    print("browser: month view")
    dom, _ = browser.dom(base + "&period=month")
    first = fixture.today.date().replace(day=1)
    following = (first + timedelta(days=32)).replace(day=1)
    start = datetime(first.year, first.month, 1, tzinfo=fixture.zone)
    end = datetime(following.year, following.month, 1, tzinfo=fixture.zone)
    buckets = period_chart_checks(port, token, dom, "month", start, end, "P1D")
    check("month: one day bar per day of the calendar month", len(buckets) == (following - first).days, len(buckets))
    status, summary = api(port, token, "/v1/summary", date=fixture.today.date().isoformat(), timeZone=TIME_ZONE, period="month")
    check("month: the steps card is GET /v1/summary?period=month's",
          status == 200 and number(dom.attr("steps-value", "data-value")) == summary["steps"]
          and dom.text("steps-heading") == "Steps this month" and dom.text("period-heading") == "Steps by day, this month",
          (dom.text("steps-value"), dom.text("steps-heading"), dom.text("period-heading"), summary))
    average_checks("month", port, token, dom, start, end)

    print("browser: a day from the address (#date=), three days ago")
    shown = fixture.local(-3, 0)
    day = shown.date().isoformat()
    page = DevTools(browser.binary)
    try:
        page.open(base + f"&period=day&date={day}")
        page.wait_for("document.body.dataset.loaded === 'true'")
        check("the day stays in the address, the token does not", page.evaluate("location.hash") == f"#date={day}",
              page.evaluate("location.hash"))
    finally:
        page.close()
    dom, _ = browser.dom(base + f"&period=day&date={day}")
    status, summary = api(port, token, "/v1/summary", date=day, timeZone=TIME_ZONE, period="day")
    check("#date: the steps card is that day's summary", number(dom.attr("steps-value", "data-value")) == summary["steps"] > 0,
          (dom.text("steps-value"), summary.get("steps")))
    check("#date: the headings name the day, and a line says it is not today, with the way back",
          dom.text("steps-heading").startswith("Steps on ") and dom.text("period-heading").startswith("Steps by hour on ")
          and "hidden" not in dom.by_id["pinned-day"]["attrs"] and "show-today" in dom.by_id,
          (dom.text("steps-heading"), dom.text("period-heading"), dom.by_id["pinned-day"]["attrs"]))
    trend = [e["attrs"]["data-trend-day"] for e in dom.with_attribute("data-trend-day")]
    check("#date: the 28-day trend ends on that day", trend and trend[-1] == day, trend[-3:])
    period_chart_checks(port, token, dom, "#date day", shown, fixture.local(-2, 0), "PT1H")


LAYOUT_PROBLEMS = """(() => {
  const problems = [];
  for (const svg of document.querySelectorAll("svg.chart")) {
    const texts = [...svg.querySelectorAll("text")].map((t) => ({ t: t.textContent, r: t.getBoundingClientRect() }))
      .filter((x) => x.r.width > 0);
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
      const a = texts[i].r, b = texts[j].r;
      if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5)
        problems.push(`${svg.id}: '${texts[i].t}' overlaps '${texts[j].t}'`);
    }
  }
  for (const list of document.querySelectorAll(".workout-facts, .ring-figures, .rings-week, .nights")) {
    if (list.scrollWidth > list.clientWidth + 1) problems.push(`${list.className} is wider than its card`);
  }
  if (document.documentElement.scrollWidth > window.innerWidth) problems.push(`the page is ${document.documentElement.scrollWidth} px wide`);
  return JSON.stringify(problems);
})()"""

# What a person would read as a bug: a figure or label the page rendered from a missing value, or a
# "Loading…" left standing after the page finished loading.
SHOWN_TEXT_PROBLEMS = r"""(() => {
  const shown = [document.body.innerText];
  for (const e of document.querySelectorAll("svg text, svg title")) shown.push(e.textContent);
  for (const e of document.querySelectorAll("[aria-label], [title]")) shown.push(e.getAttribute("aria-label") || "", e.getAttribute("title") || "");
  const bad = new Set();
  for (const text of shown) {
    for (const m of text.matchAll(/\b(NaN|undefined|Infinity|null)\b|\[object \w+\]|Loading…/g)) bad.add(`${m[0]} in '${text.trim().slice(0, 80)}'`);
  }
  return JSON.stringify([...bad]);
})()"""

# Every card and panel of a visible dashboard with its state (ok, empty, forbidden, error, loading...).
PANEL_STATES = """JSON.stringify(document.getElementById('dashboard').hidden ? {} :
  Object.fromEntries([...document.querySelectorAll('#dashboard [data-state]')].filter((e) => e.id).map((e) => [e.id, e.dataset.state])))"""


def period_bucket_count(period, today):
    """The step bars the period chart draws for the period holding `today` (a date in TIME_ZONE)."""
    zone = ZoneInfo(TIME_ZONE)
    if period == "day":
        start = datetime.combine(today, datetime.min.time(), zone)
        end = datetime.combine(today + timedelta(days=1), datetime.min.time(), zone)
        return round((end.astimezone(timezone.utc) - start.astimezone(timezone.utc)).total_seconds() / 3600)
    if period == "week":
        return 7
    if period == "month":
        following = today.replace(day=28) + timedelta(days=4)
        return (following - timedelta(days=following.day)).day
    return 12


def png_height(path):
    with open(path, "rb") as image:
        head = image.read(24)
    return int.from_bytes(head[20:24], "big") if head[:8] == b"\x89PNG\r\n\x1a\n" else 0


def expect_period(period, today, all_ok=False, strict=False):
    """A dashboard with data in `period`: one step bar per bucket of the period, some with a value, and
    the step card showing a figure; with `all_ok`, every card and panel has data (with `strict`,
    today's too: a demo link's day)."""
    # Just after midnight on the period's first day there may be no steps in it yet: then the panel says so.
    just_begun = not strict and {"day": True, "week": today.weekday() == 0, "month": today.day == 1,
                                 "year": (today.month, today.day) == (1, 1)}[period]

    def expectation(page, states):
        problems = []
        bars = json.loads(page.evaluate("JSON.stringify([...document.querySelectorAll('#chart-period rect[data-bucket]')]"
                                        ".map((r) => r.dataset.value))") or "[]")
        if states.get("panel-period") == "ok":
            if len(bars) != period_bucket_count(period, today):
                problems.append(f"{len(bars)} step bars, not {period_bucket_count(period, today)}")
            if not any(bars):
                problems.append("no step bar has a value")
        elif not (just_begun and states.get("panel-period") == "empty"):
            problems.append(f"the step chart is {states.get('panel-period')}")
        pressed = page.evaluate("document.querySelector('#period-switch [aria-pressed=true]').dataset.period")
        if pressed != period:
            problems.append(f"the period switch shows {pressed}")
        if not just_begun and page.evaluate("document.getElementById('steps-value').textContent") == "–":
            problems.append("the steps card shows no figure")
        if all_ok:  # the panels over 28 days or 7 nights have data; today's may still be empty just after midnight
            over_days = ("panel-trend", "panel-sleep-week", "panel-workouts", "panel-resting", "panel-weight")
            problems += [f"{panel} is {state}" for panel, state in states.items() if panel.startswith(("card-", "panel-"))
                         and state != "ok" and not (state == "empty" and panel not in over_days and not strict)]
        return problems
    return expectation


def expect_states(wanted, may_be_empty=(), hidden_dashboard=False):
    """Every card and panel in one of `wanted`, those in `may_be_empty` also empty (or the dashboard
    hidden behind the token form)."""
    def expectation(page, states):
        if hidden_dashboard:
            return [] if not states and page.evaluate("!document.getElementById('token-panel').hidden") else ["the token form is not shown"]
        panels = {panel: state for panel, state in states.items() if panel.startswith(("card-", "panel-"))}
        return [f"{panel} is {state}" for panel, state in panels.items()
                if state not in wanted and not (state == "empty" and panel in may_be_empty)]
    return expectation


def view_checks(chromium, views, artifacts, errors_expected=False):
    """Opens each view (name, url, width, expectation) in one headless page, checks it as a person
    would see it, and saves a screenshot of the whole page, however tall. Every view: the page
    finishes loading, logs no error, shows no NaN, undefined or null (nor a "Loading…" left standing), no chart label overlaps
    another, nothing is wider than the window, no card is left loading or in error; then what the
    view's expectation says (with `errors_expected`, cards in error are the point of the view).
    Settings persist in localStorage as in a browser, so every URL names its period."""
    os.makedirs(artifacts, exist_ok=True)
    page = DevTools(chromium)
    try:
        page.open("about:blank")
        page.watch_console()
        for name, url, width, expectation in views:
            page.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": 844 if width < 600 else 900,
                                                              "deviceScaleFactor": 1, "mobile": width < 600})
            page.call("Page.navigate", {"url": "about:blank"})
            if "#" not in url:  # the first visit: no token kept from an earlier view
                page.call("Page.navigate", {"url": url})
                page.wait_for("document.body.dataset.loaded === 'true'")
                page.evaluate("localStorage.clear()")
                page.call("Page.navigate", {"url": "about:blank"})
            page.events = []
            page.call("Page.navigate", {"url": url})
            loaded = page.wait_for("document.body.dataset.loaded === 'true'")
            time.sleep(0.4)  # a chart drawn after the flag, a resize's redraw
            states = json.loads(page.evaluate(PANEL_STATES) or "{}")
            problems = [] if loaded else ["the page never finished loading"]
            problems += page.console_problems()
            problems += json.loads(page.evaluate(SHOWN_TEXT_PROBLEMS) or "[]")
            problems += json.loads(page.evaluate(LAYOUT_PROBLEMS) or "[]")
            problems += [f"{panel} is {state}" for panel, state in states.items()
                         if state == "loading" or (state == "error" and not errors_expected)]
            problems += expectation(page, states)
            path = os.path.abspath(os.path.join(artifacts, name))
            height = page.full_page_screenshot(path, width)
            if png_height(path) != height or height < 300:
                problems.append(f"the screenshot is {png_height(path)} px high, the page {height} px")
            check(f"view {name} ({width} px): loads, no console error, no NaN/undefined, nothing overlaps, as expected",
                  not problems, problems[:6])
            print(f"  artifact: {path} ({width}x{height})")
    finally:
        page.close()


def phone_checks(port, chromium, token, artifacts):
    """At 390 px, for each period, the views' checks (no chart label touches another, nothing is wider
    than the screen...); the week's step bar labels are abbreviated (12.1k) where the full figure would
    not fit."""
    print("browser: phone width (390 px)")
    today = datetime.now(ZoneInfo(TIME_ZONE)).date()

    def abbreviated(page, states):
        problems = expect_period("week", today)(page, states)
        labels = json.loads(page.evaluate("JSON.stringify([...document.querySelectorAll('#chart-period .bar-label')].map((t) => t.textContent))") or "[]")
        if states.get("panel-period") == "empty":  # a Monday before the first steps
            return problems
        if not labels or not all(re.fullmatch(r"\d+(\.\d)?k|\d{1,3}", label) for label in labels):
            problems.append(f"week bar labels are not abbreviated (12.1k): {labels}")
        return problems
    view_checks(chromium, [(f"dashboard-phone-{period}.png", f"http://127.0.0.1:{port}/#token={urllib.parse.quote(token)}&period={period}", 390,
                            abbreviated if period == "week" else expect_period(period, today))
                           for period in ("day", "week", "month", "year")], artifacts)


def live_checks(port, chromium, fixture, token):
    """With the page open: the token left the address bar; new readings saved now reach the page."""
    print("browser: open page (token handling, live updates without reload)")
    streaming = stream_status(port, token) != 404
    zones_status, zone = api(port, token, "/v1/heart-rate/zones", age=AGE, goal=GOAL)
    page = DevTools(chromium)
    try:
        page.open(f"http://127.0.0.1:{port}/#token={urllib.parse.quote(token)}&age={AGE}&goal={GOAL}")
        check("the page loads", bool(page.wait_for("document.body.dataset.loaded === 'true'")))
        check("the token is removed from the address bar", page.evaluate("location.href") == f"http://127.0.0.1:{port}/",
              page.evaluate("location.href"))
        check("the token is kept in localStorage", page.evaluate("localStorage.getItem('healthd.token')") == token)
        if not streaming:
            skip("a new reading reaches the open page through the stream", "GET /v1/changes/stream")
            return
        live = page.wait_for("document.getElementById('live-status').dataset.live === 'live' && document.body.dataset.loaded")
        check("the open page is following the stream", bool(live))
        page.evaluate("window.dashboardTestMarker = 'still the same page'")

        def save_and_watch(value):
            now = datetime.now(timezone.utc)
            fixture.save(fixture.writer, [{"type": "heartRate", "value": value, "unit": "count/min", "start": rfc3339(now)}])
            return page.wait_for(f"document.getElementById('heart-value').dataset.value === '{value}'")

        check("a new reading appears on the heart-rate card", bool(save_and_watch(63)))
        check("... without a reload", page.evaluate("window.dashboardTestMarker") == "still the same page")
        if zones_status == 404:
            skip("the alert fires and clears as the live rate leaves and re-enters the zone", "GET /v1/heart-rate/zones")
            return
        # Whole numbers, so the value written into the page reads back as the same text.
        below = math.floor(zone["low"]) - 5
        inside = round_half_up((zone["low"] + zone["high"]) / 2)
        check(f"a live {below} bpm reading reaches the page", bool(save_and_watch(below)))
        check(f"... and raises the 'below' alert",
              page.wait_for("document.getElementById('zone-alert').dataset.state === 'below'") is not None)
        check(f"a live {inside} bpm reading reaches the page", bool(save_and_watch(inside)))
        check(f"back in the zone clears the alert", page.wait_for(
            "document.getElementById('zone-alert').dataset.state === 'in' && document.getElementById('zone-alert').hidden")
            is not None)
    finally:
        page.close()


CHARTS = ("chart-period", "chart-trend", "chart-heart", "chart-resting", "chart-weight")
PANELS = ("card-steps", "card-heart", "card-energy", "card-sleep", "panel-period", "panel-trend", "panel-rings",
          "panel-sleep-week", "panel-heart", "panel-workouts", "panel-resting", "panel-weight")


def empty_and_bad_token_checks(port, browser, fixture, artifacts):
    print("browser: no data")
    token = fixture.make_user("browser-empty", with_data=False)
    url = f"http://127.0.0.1:{port}/#token={urllib.parse.quote(token)}"
    dom, _ = browser.dom(url)
    check("heart rate and sleep show their no-data state",
          dom.attr("card-heart", "data-state") == "empty" and dom.attr("card-sleep", "data-state") == "empty",
          (dom.attr("card-heart", "data-state"), dom.attr("card-sleep", "data-state")))
    check("an empty day draws no heart-rate points", len(dom.with_attribute("data-hr-point")) == 0)
    states = {panel: dom.attr(panel, "data-state") for panel in PANELS}
    check("every card and panel says it has no data yet", set(states.values()) == {"empty"}, states)
    check("... in words: 'No data yet'", all((dom.text(panel.replace("card-", "").replace("panel-", "") + "-note") or
                                             " ".join(e["text"] for e in dom_children(dom, panel) if e["attrs"].get("class") == "note"))
                                             .startswith("No data yet") for panel in PANELS if panel != "panel-heart"),
          {panel: [e["text"] for e in dom_children(dom, panel) if e["attrs"].get("class") == "note"] for panel in PANELS})
    marks = {chart: len([e for e in dom_children(dom, chart) if e["tag"] in ("text", "line", "rect", "circle", "polyline")])
             for chart in CHARTS}
    check("no chart draws axes without data (no 1, 1, 1, 0, 0)", set(marks.values()) == {0}, marks)
    check("no zero figures pretend to be data", dom.text("steps-value") == "–" and dom.text("energy-value") == "–"
          and dom.attr("trend-average", "data-value") == "", (dom.text("steps-value"), dom.text("energy-value")))
    check("no date of birth stored: the zone asks for an age and says none is stored, not 'not shared'",
          dom.attr("zone-range", "data-state") == "none" and dom.attr("zone-range", "data-reason") == "empty"
          and "no date of birth is stored yet" in (dom.text("zone-range") or ""), dom.text("zone-range"))
    view_checks(browser.binary, [(name, url + "&period=day", width, expect_states({"empty"}))
                                 for name, width in (("dashboard-empty.png", 1280), ("dashboard-empty-phone.png", 390))], artifacts)

    print("browser: types not shared with the token")
    partial = fixture.token_reading(["stepCount", "heartRate"])
    url = f"http://127.0.0.1:{port}/#token={urllib.parse.quote(partial)}&age={AGE}"
    dom, _ = browser.dom(url)
    forbidden = ("card-energy", "card-sleep", "panel-rings", "panel-sleep-week", "panel-workouts", "panel-resting", "panel-weight")
    states = {panel: dom.attr(panel, "data-state") for panel in PANELS}
    check("cards for types the token may not read say 'not shared with this app'",
          all(states[p] == "forbidden" for p in forbidden) and all("not shared with this app" in " ".join(
              e["text"] for e in dom_children(dom, p) if e["attrs"].get("class") == "note") for p in forbidden), states)
    check("... never 0: the energy figure reads 'Not shared'", dom.text("energy-value") == "Not shared"
          and dom.attr("energy-value", "data-value") == "", dom.text("energy-value"))
    today = "ok" if fixture.steps_today() else "empty"  # just after midnight there are no steps today yet
    check("shared types still show their data", states["card-steps"] == today and states["card-heart"] == "ok"
          and states["panel-period"] == today and states["panel-trend"] == "ok", states)
    check("distance and exercise in the steps card say 'not shared'",
          dom.text("distance-text") == "distance not shared" and dom.text("exercise-text") == "exercise not shared",
          (dom.text("distance-text"), dom.text("exercise-text")))
    check("no date of birth shared: the page asks for an age... unless one is given", dom.attr("zone-range", "data-state") == "ok"
          and dom.attr("zone-range", "data-age-from") == "override")
    check("... and offers no 'Use my stored age' when the token may not read the date of birth",
          "hidden" in dom.by_id["age-reset"]["attrs"])
    bare, _ = browser.dom(f"http://127.0.0.1:{port}/#token={urllib.parse.quote(partial)}")
    check("without an age typed in, the zone says the date of birth is not shared with this app (not 'none stored')",
          bare.attr("zone-range", "data-state") == "none" and bare.attr("zone-range", "data-reason") == "forbidden"
          and "not shared with this app" in (bare.text("zone-range") or ""), bare.text("zone-range"))
    view_checks(browser.binary, [(name, url + "&period=day", width, expect_states({"ok", "forbidden"},
                                                                                  {"card-steps", "panel-period"} if not fixture.steps_today() else ()))
                                 for name, width in (("dashboard-forbidden.png", 1280), ("dashboard-forbidden-phone.png", 390))], artifacts)
    print("browser: a token that may not learn its read list")
    hidden = fixture.token_reading(["stepCount", "heartRate"], disclose_read=False)
    status, _, payload = http(port, "GET", "/v1/authorizations/current", token=hidden)
    check("without the opt-in the server leaves `read` out", status == 200 and "read" not in js(payload), payload[:300])
    dom, _ = browser.dom(f"http://127.0.0.1:{port}/#token={urllib.parse.quote(hidden)}&age={AGE}")
    states = {panel: dom.attr(panel, "data-state") for panel in PANELS}
    check("the page cannot tell 'not shared', so no card claims it", "forbidden" not in states.values()
          and "not shared" not in " ".join(e["text"] for p in PANELS for e in dom_children(dom, p)), states)
    check("types it may not read look empty (read privacy), never 0", states["card-energy"] == "empty"
          and dom.text("energy-value") == "–" and states["panel-weight"] == "empty", (states, dom.text("energy-value")))
    check("types it may read still show their data", states["card-steps"] == today and states["card-heart"] == "ok"
          and states["panel-period"] == today and states["panel-trend"] == "ok", states)
    print("browser: bad token")
    dom, _ = browser.dom(f"http://127.0.0.1:{port}/#token=not-a-real-token")
    check("a rejected token brings back the token form with a 401 message",
          "hidden" not in dom.by_id["token-panel"]["attrs"] and "hidden" in dom.by_id["dashboard"]["attrs"]
          and "401" in (dom.text("token-message") or ""), dom.text("token-message"))
    # Start-up prints the admin token, so a new user pastes it: it reads no health data (403 on
    # every app route), and the page says so once instead of a red 403 in every card.
    dom, _ = browser.dom(f"http://127.0.0.1:{port}/#token={urllib.parse.quote(ADMIN)}")
    check("the admin token brings back the token form, asking for an app token",
          "hidden" not in dom.by_id["token-panel"]["attrs"] and "hidden" in dom.by_id["dashboard"]["attrs"]
          and "403" in (dom.text("token-message") or "") and "app token" in (dom.text("token-message") or ""),
          dom.text("token-message"))
    print("browser: the token form (a first visit, a rejected token, the admin token pasted)")
    form = expect_states(set(), hidden_dashboard=True)
    view_checks(browser.binary, [("dashboard-token-form.png", f"http://127.0.0.1:{port}/", 1280, form),
                                 ("dashboard-token-form-phone.png", f"http://127.0.0.1:{port}/", 390, form),
                                 ("dashboard-bad-token.png", f"http://127.0.0.1:{port}/#token=not-a-real-token", 1280, form),
                                 ("dashboard-admin-token.png", f"http://127.0.0.1:{port}/#token={urllib.parse.quote(ADMIN)}", 1280, form)],
                artifacts)


def file_server(directory, api=None):
    """A quiet static file server over `directory` on a free port, serving from a thread; given `api`,
    `api(handler)` answers every GET /v1/... instead (a healthd that is down, or lacks the API)."""
    class Files(SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=directory, **kwargs)

        def log_message(self, *args):
            pass

        def do_GET(self):
            if api and self.path.startswith("/v1/"):
                return api(self)
            return super().do_GET()

    files = ThreadingHTTPServer(("127.0.0.1", 0), Files)
    threading.Thread(target=files.serve_forever, daemon=True).start()
    return files


def unit_checks(browser, repository):
    """The dashboard's pure modules, checked in Chromium from a plain file server over the repository."""
    print("browser: dashboard modules (Tests/e2e/dashboard-units)")

    files = file_server(repository)
    try:
        dom, stderr = browser.dom(f"http://127.0.0.1:{files.server_address[1]}/Tests/e2e/dashboard-units/index.html")
    finally:
        files.shutdown()
    body = next(e for e in dom.elements if e["tag"] == "body")
    for line in (dom.text("results") and dom.by_id["results"]["text"].splitlines()) or []:
        check(line[5:], line.startswith("ok"), "")
    check("the module checks ran to the end", body["attrs"].get("data-done") == "true" and body["attrs"].get("data-failed") == "0",
          body["attrs"])
    check("Chromium's console reaches this script (so the page's CSP check can see violations)",
          "dashboard-units: console capture works" in stderr)


def server_down_checks(browser, public, artifacts):
    """The page from a file server whose API connections drop without an answer, as when healthd is down."""
    print("browser: server down")

    def drop(handler):
        handler.close_connection = True
        handler.connection.shutdown(socket.SHUT_RDWR)

    files = file_server(public, drop)

    def banner_and_errors(page, states):
        problems = [] if page.evaluate("document.getElementById('banner').dataset.problem === 'server-down'"
                                       " && !document.getElementById('banner').hidden") else ["no server-down banner"]
        return problems + [f"{panel} is {state}" for panel, state in states.items()
                           if panel.startswith(("card-", "panel-")) and state != "error"]
    try:
        # Under the page's 15 s retry interval, so the dump shows the banner, not a retry in flight.
        dom, _ = browser.dom(f"http://127.0.0.1:{files.server_address[1]}/#token=some-token", budget_ms=8000)
        view_checks(browser.binary, [("dashboard-server-down.png", f"http://127.0.0.1:{files.server_address[1]}/#token=some-token&period=day",
                                      1280, banner_and_errors)], artifacts, errors_expected=True)
    finally:
        files.shutdown()
    check("an unreachable server shows the banner with a retry button",
          dom.attr("banner", "data-problem") == "server-down" and "hidden" not in dom.by_id["banner"]["attrs"]
          and "retry" in dom.by_id, dom.text("banner-text"))
    check("the cards say the server could not be reached, not 'no data'",
          dom.attr("card-heart", "data-state") == "error" and dom.attr("card-sleep", "data-state") == "error",
          (dom.attr("card-heart", "data-state"), dom.attr("card-sleep", "data-state")))
    check("the token is kept (a network error is not a bad token)", "hidden" in dom.by_id["token-panel"]["attrs"])


def unavailable_checks(browser, public, artifacts):
    """The page from a server without any of the API it reads (every /v1/ route answers 404, as an
    older or different server would): each card says which endpoint is missing, none shows data."""
    print("browser: a server without the endpoints the page reads")

    def not_found(handler):
        body = json.dumps({"title": "Not Found", "status": 404, "detail": "no such route"}).encode()
        handler.send_response(404)
        handler.send_header("Content-Type", "application/problem+json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def every_card_unavailable(page, states):
        problems = [f"{panel} is {state}" for panel, state in states.items()
                    if panel.startswith(("card-", "panel-")) and state != "unavailable"]
        live = page.evaluate("document.getElementById('live-status').dataset.live")
        return problems + ([] if live == "polling" else [f"the live status is {live}, not polling"])

    files = file_server(public, not_found)
    try:
        view_checks(browser.binary, [("dashboard-unavailable.png", f"http://127.0.0.1:{files.server_address[1]}/#token=some-token&period=day",
                                      1280, every_card_unavailable)], artifacts)
    finally:
        files.shutdown()


def demo_checks(binary, public, browser, artifacts):
    """The README's first command: `healthd serve --demo` prints a URL; the page it opens shows the
    demo user's figures exactly as the API answers them."""
    print("browser: serve --demo --time-zone America/New_York (the README's first command, a person in New York)")
    demo = Server(binary, public, extra=("--demo", "--time-zone", TIME_ZONE), drain=False)
    try:
        found = {}

        def read_lines():
            # Lines may already sit in the pipe's text buffer, where select() cannot see them.
            # Then keep reading: the access log would fill the pipe and stall the server.
            for line in demo.proc.stdout:
                match = re.search(r"dashboard: (http://\S+#date=(\d{4}-\d{2}-\d{2})&token=(\S+))", line)
                if match and "url" not in found:
                    found["url"], found["date"], found["token"] = match.group(1), match.group(2), match.group(3)
                    found["printed"] = datetime.now(ZoneInfo(TIME_ZONE))
                    ready.set()
            ready.set()
        ready = threading.Event()
        reader = threading.Thread(target=read_lines, daemon=True)
        reader.start()
        started = datetime.now(ZoneInfo(TIME_ZONE))
        ready.wait(90)
        url, token = found.get("url"), found.get("token")
        check("serve --demo prints a dashboard URL with the day to open and a token in its fragment", url is not None)
        if url is None:
            return
        # The day the link opens on: yesterday before noon in New York, today from noon (a whole day
        # or a day with its morning at any hour, whenever CI runs). Either side of noon while it ran: either.
        opening = lambda moment: (moment.date() - timedelta(days=1) if moment.hour < 12 else moment.date()).isoformat()
        check("demo: the link opens on yesterday before noon in New York, on today from noon",
              found["date"] in {opening(found["printed"]), opening(started)}, (found["date"], found["printed"].isoformat()))
        status, _, payload = http(demo.port, "GET", "/v1/authorizations/current", token=urllib.parse.unquote(token))
        grant = js(payload) if status == 200 else {}
        check("demo: the dashboard token opted in to learning its read list (the user's own viewer)",
              grant.get("discloseRead") is True and "stepCount" in (grant.get("read") or []), payload[:300])
        dom, _ = browser.dom(url + "&period=week")
        zone = ZoneInfo(TIME_ZONE)
        today = datetime.now(zone).date()
        shown = datetime.fromisoformat(found["date"]).date()
        check("demo: a day before today says so, with a way back to today; today does not",
              ("hidden" in dom.by_id["pinned-day"]["attrs"]) == (shown >= today), (shown, today, dom.text("pinned-day")))
        week = [(shown - timedelta(days=shown.weekday()) + timedelta(days=offset)).isoformat() for offset in range(7)]
        days = [(shown - timedelta(days=offset)).isoformat() for offset in range(27, -1, -1)]
        start = datetime.combine(shown - timedelta(days=27), datetime.min.time(), zone)
        end = datetime.combine(shown + timedelta(days=1), datetime.min.time(), zone)
        status, collection = api(demo.port, token, "/v1/statistics/collection", type="stepCount", start=rfc3339(start),
                                 end=rfc3339(end), interval="P1D", timeZone=TIME_ZONE, options="cumulativeSum")
        sums = {b["start"][:10]: b["sum"] for b in (collection or {}).get("buckets", []) if "sum" in b}
        check("demo: the statistics collection has four weeks of steps to the day shown", status == 200 and len(sums) == 28,
              (status, len(sums)))
        average_checks("demo week", demo.port, token, dom, datetime.combine(shown - timedelta(days=shown.weekday()), datetime.min.time(), zone),
                       datetime.combine(shown - timedelta(days=shown.weekday() - 7), datetime.min.time(), zone))
        sleep_order_checks(dom)
        bars = [e for e in dom.with_attribute("data-day") if e["tag"] == "rect"]
        # The week runs past the day shown when that is yesterday: today's bar holds the morning so
        # far, which the four weeks above (they end with the day shown) do not.
        monday = datetime.combine(shown - timedelta(days=shown.weekday()), datetime.min.time(), zone)
        status, week_collection = api(demo.port, token, "/v1/statistics/collection", type="stepCount", start=rfc3339(monday),
                                      end=rfc3339(monday + timedelta(days=7)), interval="P1D", timeZone=TIME_ZONE,
                                      options="cumulativeSum")
        week_sums = {b["start"][:10]: b["sum"] for b in (week_collection or {}).get("buckets", []) if "sum" in b}
        check("demo: the week's 7 day bars (Monday first) equal the API's daily sums",
              status == 200 and [b["attrs"]["data-day"] for b in bars] == week
              and [number(b["attrs"]["data-value"]) for b in bars] == [week_sums.get(day) for day in week],
              [(b["attrs"]["data-day"], b["attrs"].get("data-value")) for b in bars])
        # The person lives in New York: yesterday began at about 06:25-09:00 and ended by midnight
        # New York time, and the night before it started in the evening there (a UTC day would put
        # waking at 01:30 and bed at 17:30 in New York, and clip the night at the page's 18:00).
        day = lambda offset, hour=0: datetime.combine(today + timedelta(days=offset), datetime.min.time(), zone) + timedelta(hours=hour)
        steps = all_samples(demo.port, token, type="stepCount", start=rfc3339(day(-1)), end=rfc3339(day(0)), limit=10000)
        first = min(parse_instant(s["start"]) for s in steps).astimezone(zone)
        last = max(parse_instant(s["end"]) for s in steps).astimezone(zone)
        check("demo: yesterday's steps run from the New York morning to the evening",
              6 <= first.hour + first.minute / 60 <= 9.5 and 19 <= last.hour and last.date() == today - timedelta(days=1),
              (first.isoformat(), last.isoformat()))
        night = all_samples(demo.port, token, type="sleepAnalysis", start=rfc3339(day(-2, 18)), end=rfc3339(day(-1, 12)), limit=10000)
        in_bed = [parse_instant(s["start"]).astimezone(zone) for s in night if s["value"] == "inBed"]
        asleep = sleep_seconds(night, day(-2, 18), day(-1, 12))
        check("demo: the night before last starts in the New York evening and is 6-10 h asleep, whole in the page's window",
              len(in_bed) == 1 and (in_bed[0].hour >= 21 or in_bed[0].hour == 0) and 6 * 3600 <= asleep <= 10 * 3600,
              (in_bed, asleep))
        trend = dom.with_attribute("data-trend-day")
        check("demo: one 28-day trend point per day with data, carrying the API's sums",
              [number(t["attrs"]["data-value"]) for t in trend] == [sums[day] for day in days if day in sums] and len(trend) >= 27,
              (len(trend), len(sums)))
        print("browser: the demo in every period, at 1280 and 390 px (full-page screenshots)")
        # Whatever the hour, every card and panel of every period has data: the link's day is a whole
        # day, or today from noon on.
        view_checks(browser.binary, [(f"dashboard-demo-{period}{suffix}.png", f"{url}&period={period}", width,
                                      expect_period(period, shown, all_ok=True, strict=True))
                                     for suffix, width in (("", 1280), ("-phone", 390)) for period in ("day", "week", "month", "year")],
                    artifacts)
    finally:
        demo.stop()
        shutil.rmtree(demo.data_dir, ignore_errors=True)


def clear_of_midnight(zone, minutes=20):
    """Waits until just after midnight in `zone` when it is less than `minutes` away. The fixture
    and the page each take "today" from the clock: a run across midnight would compare the page
    of one day with the API's answers for the day before."""
    now = datetime.now(zone)
    midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), zone)
    if midnight - now < timedelta(minutes=minutes):
        wait = (midnight - now).total_seconds() + 30
        print(f"browser: midnight in {zone} is {wait:.0f} s away: the checks begin on the new day")
        time.sleep(wait)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--public", required=True)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    parser.add_argument("--artifacts", default="ci-artifacts")
    args = parser.parse_args()
    browser = Browser(args.chromium)
    server = Server(args.binary, os.path.abspath(args.public), drain=True)  # drained: the access log must not fill the pipe
    try:
        clear_of_midnight(ZoneInfo(TIME_ZONE))
        fixture = Fixture(server.port)
        token = fixture.make_user("browser-demo", with_data=True)
        unit_checks(browser, os.path.abspath(os.path.join(args.public, "..")))
        dashboard_checks(server.port, browser, fixture, token, args.artifacts)
        live_checks(server.port, args.chromium, fixture, token)
        phone_checks(server.port, args.chromium, token, args.artifacts)
        empty_and_bad_token_checks(server.port, browser, fixture, args.artifacts)
        server_down_checks(browser, os.path.abspath(args.public), args.artifacts)
        unavailable_checks(browser, os.path.abspath(args.public), args.artifacts)
        demo_checks(args.binary, os.path.abspath(args.public), browser, args.artifacts)
        from browser_people import people_checks
        people_checks(args.binary, os.path.abspath(args.public), args.chromium, args.artifacts)
    finally:
        server.stop()
        shutil.rmtree(server.data_dir, ignore_errors=True)
    print(f"browser: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
