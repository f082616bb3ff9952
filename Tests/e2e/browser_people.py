#!/usr/bin/env python3
"""Browser checks of the person's side of the dashboard, in headless Chromium against the real healthd:
activation with an invitation, sign-in (a wrong password, the 429 lock), the permission sheet at the
address an app is given (its name and reason shown as text, switches by keyboard, some types allowed
and others not), the app's token and what it may then do, the Apps page (a switch turned off ends
the app's open change stream), Recent access, the dashboard read through the session, own data
(export, an app's data deleted, the app removed), a password change, sign-out, and erasure.
Screenshots of the sheet, the apps page and recent access at 1280 and 390 px go to the artifacts folder.

Run by browser.py (browser.sh); alone: python3 Tests/e2e/browser_people.py --binary .build/debug/healthd
Standard library only.
"""
import argparse, json, os, re, shutil, socket, sys, time, urllib.parse
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import ADMIN, Server, check, http, js, read_until, results, stream_ended  # noqa: E402
from browser import DevTools, SHOWN_TEXT_PROBLEMS, LAYOUT_PROBLEMS, png_height  # noqa: E402

PASSWORD = "quiet-lantern-harbor-42"
NEW_PASSWORD = "violet-orchard-compass-17"
# An app's name and reason that would run script if the page put them in as HTML.
XSS_NAME = '<img src=x onerror="document.title=\'xss\'">Coach'
XSS_REASON = 'We plan your <b>training</b>.<script>document.title="xss"</script>\n<img src=x onerror=alert(1)>'
APP = "com.example.coach"


def rfc3339(moment):
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Page:
    """One DevTools page with the few gestures the checks need."""

    def __init__(self, chromium):
        self.tools = DevTools(chromium)
        self.tools.open("about:blank")
        self.tools.watch_console()
        self.width = 1280

    def size(self, width):
        self.width = width
        self.tools.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": 844 if width < 600 else 900,
                                                               "deviceScaleFactor": 1, "mobile": width < 600})

    def go(self, url):
        # The page being left says loaded too, and a loaded machine may not have replaced it within
        # a fixed pause: mark it first, as `hash` does, so only the new load counts.
        try:
            self.eval("document.body && (document.body.dataset.loaded = 'false')")
        except RuntimeError:
            pass  # no page context: nothing loaded to mistake for the new page
        self.tools.call("Page.navigate", {"url": url})
        return self.tools.wait_for("document.readyState === 'complete' && document.body.dataset.loaded === 'true'", 60)

    def hash(self, fragment):
        """Follows an in-page link (a hash change, as the nav does)."""
        self.eval(f"document.body.dataset.loaded = 'false'; location.hash = {json.dumps(fragment)}")
        return self.tools.wait_for("document.body.dataset.loaded === 'true'", 60)

    def eval(self, expression):
        return self.tools.evaluate(expression)

    def wait(self, expression, timeout=30):
        return self.tools.wait_for(expression, timeout)

    def fill(self, element_id, value):
        self.eval(f"document.getElementById({json.dumps(element_id)}).value = {json.dumps(value)}")

    def click(self, element_id):
        self.eval(f"document.getElementById({json.dumps(element_id)}).click()")

    def text(self, element_id):
        return self.eval(f"(document.getElementById({json.dumps(element_id)}) || {{}}).textContent")

    def visible(self, element_id):
        return self.eval(f"(() => {{ const e = document.getElementById({json.dumps(element_id)}); "
                         "return !!e && !e.closest('[hidden]') && e.getBoundingClientRect().height > 0; })()")

    def key(self, key, code, text=None):
        for kind in ("keyDown", "keyUp"):
            params = {"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": {"Tab": 9, " ": 32, "Enter": 13}.get(key, 0)}
            if text and kind == "keyDown":
                params["text"] = text
            self.tools.call("Input.dispatchKeyEvent", params)

    def focused(self):
        return self.eval("document.activeElement && (document.activeElement.id || document.activeElement.textContent)")

    def shot(self, artifacts, name, width):
        """A full-page screenshot at `width`, with the page's own checks: nothing wider than the
        window, no NaN/undefined/null shown, no console error."""
        self.size(width)
        time.sleep(0.4)
        path = os.path.abspath(os.path.join(artifacts, name))
        height = self.tools.full_page_screenshot(path, width)
        problems = json.loads(self.eval(SHOWN_TEXT_PROBLEMS) or "[]") + json.loads(self.eval(LAYOUT_PROBLEMS) or "[]")
        problems += self.tools.console_problems()
        if png_height(path) != height or height < 300:
            problems.append(f"the screenshot is {png_height(path)} px high, the page {height} px")
        check(f"screenshot {name} ({width} px): nothing too wide, no NaN/undefined, no console error", not problems, problems[:6])
        print(f"  artifact: {path} ({width}x{height})")
        self.size(1280)

    def close(self):
        self.tools.close()


def open_stream(port, token, types="stepCount"):
    stream = socket.create_connection(("127.0.0.1", port), timeout=10)
    stream.sendall(f"GET /v1/changes/stream?types={types} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                   "Accept: text/event-stream\r\n\r\n".encode())
    head = read_until(stream, b"", lambda d: b"\r\n\r\n" in d, timeout=10)
    return stream, head


def stream_ends_within(stream, seconds):
    """Whether the server ends the stream (last chunk or close) within `seconds`."""
    started = time.monotonic()
    data = read_until(stream, b"", stream_ended, timeout=seconds)
    ended = stream_ended(data)
    if not ended:
        stream.setblocking(False)
        try:
            ended = stream.recv(1) == b""
        except BlockingIOError:
            ended = False
        except OSError:
            ended = True
    stream.close()
    return ended, time.monotonic() - started


def invite(port, name):
    status, _, payload = http(port, "POST", "/v1/users", {"name": name}, token=ADMIN)
    body = js(payload) or {}
    check(f"the admin invites {name}: 201 with an invitation code", status == 201 and isinstance(body.get("invitation"), dict)
          and body["invitation"].get("code"), payload[:300])
    return body


def activation_checks(page, base, port, name):
    print("browser people: activation with the invitation code")
    code = invite(port, name)["invitation"]["code"]
    check("the activation link opens the activation form", page.go(f"{base}/#activate={urllib.parse.quote(code)}")
          and page.visible("activate-panel"))
    check("... and takes the code out of the address bar", page.eval("location.hash") == "#activate", page.eval("location.href"))
    check("... into the form", page.eval("document.getElementById('activate-code').value") == code)
    page.fill("activate-password", "short")
    page.fill("activate-repeat", "short")
    page.click("activate-submit")
    check("a password under 10 characters is refused before it is sent",
          "10 characters" in (page.text("activate-error") or ""), page.text("activate-error"))
    page.fill("activate-password", "1234567890")
    page.fill("activate-repeat", "1234567890")
    page.eval("document.getElementById('activate-error').textContent = ''")
    page.click("activate-submit")
    check("a common password: refused, the server's reason shown, the form kept",
          page.wait("document.getElementById('activate-error').textContent.length > 0 && !document.getElementById('activate-error').hidden")
          and page.visible("activate-panel"), (page.text("activate-error"), page.eval("document.body.dataset.view")))
    page.fill("activate-password", PASSWORD)
    page.fill("activate-repeat", PASSWORD)
    page.click("activate-submit")
    check("activated: the page asks to sign in and says the account is active",
          page.wait("document.body.dataset.view === 'signin'") and "active" in (page.text("person-message") or ""),
          (page.eval("document.body.dataset.view"), page.text("person-message"), page.text("activate-error")))


def sign_in(page, name, password, expect_view=None):
    page.fill("signin-name", name)
    page.fill("signin-password", password)
    page.eval("document.getElementById('signin-form').dataset.failed = ''")
    page.click("signin-submit")
    if expect_view:
        return page.wait(f"document.body.dataset.view === '{expect_view}' && document.body.dataset.loaded === 'true'", 20)
    return page.wait("document.getElementById('signin-form').dataset.failed !== ''", 20)


def signin_checks(page, base, name):
    print("browser people: sign-in")
    page.go(base + "/")
    check("a first visit offers sign-in and, below it, the token form", page.visible("signin-panel") and page.visible("token-panel"))
    sign_in(page, name, "not-the-password-at-all")
    check("a wrong password: 'do not match', the form stays", "do not match" in (page.text("signin-error") or "")
          and page.visible("signin-panel"), page.text("signin-error"))
    check("signed in, the dashboard opens with the person's pages in the header", sign_in(page, name, PASSWORD, "dashboard")
          and page.visible("person-nav") and name in (page.text("sign-out") or ""), (page.eval("document.body.dataset.view"), page.text("signin-error")))
    check("the session cookie is HttpOnly: the page's script cannot read it", "session" not in (page.eval("document.cookie") or ""))


def ask(port, share, read, reason=XSS_REASON, name=XSS_NAME):
    status, _, payload = http(port, "POST", "/v1/authorization-requests",
                              {"app": APP, "displayName": name, "share": share, "read": read, "reason": reason})
    body = js(payload) or {}
    check("an app asks: 201 with a user code XXXX-XXXX, the sheet's address and a device code",
          status == 201 and re.fullmatch(r"[A-Z]{4}-[A-Z]{4}", body.get("userCode", "")) and body.get("deviceCode")
          and body.get("verificationURIComplete"), payload[:300])
    return body


def sheet_checks(page, base, port, artifacts):
    print("browser people: the permission sheet")
    asked = ask(port, ["stepCount", "heartRate"], ["stepCount", "heartRate", "sleepAnalysis"])
    complete = asked["verificationURIComplete"]
    check("the sheet's address is this server's dashboard", complete.startswith(base + "/"), complete)
    page.go(complete)
    check("the sheet opens at the address the app was given", page.wait("document.getElementById('sheet').dataset.state === 'asking'"),
          (page.eval("document.body.dataset.view"), page.text("code-error")))
    check("the app's name is shown as text, exactly as sent (no element made from it)",
          page.text("sheet-app-name") == XSS_NAME and page.text("sheet-write-app") == XSS_NAME
          and page.eval("document.querySelectorAll('#sheet img, #sheet script, #sheet b').length") == 0, page.text("sheet-app-name"))
    check("the reason too, line breaks kept", page.text("sheet-reason") == XSS_REASON, page.text("sheet-reason"))
    check("nothing from the name or reason ran", page.eval("document.title") != "xss" and not page.tools.console_problems())
    rows = lambda list_id: page.eval(f"JSON.stringify([...document.querySelectorAll('#{list_id} .switch-row')].map((r) => "
                                     "[r.dataset.type, r.querySelector('label').textContent, r.querySelector('input').checked, "
                                     "r.querySelector('input').getAttribute('role')]))")
    check("one switch per type under 'Allow to write', named as people read them, all off",
          json.loads(rows("sheet-write-list")) == [["heartRate", "Heart Rate", False, "switch"], ["stepCount", "Steps", False, "switch"]],
          rows("sheet-write-list"))
    check("... and under 'Allow to read'", json.loads(rows("sheet-read-list")) == [
        ["heartRate", "Heart Rate", False, "switch"], ["sleepAnalysis", "Sleep", False, "switch"], ["stepCount", "Steps", False, "switch"]],
        rows("sheet-read-list"))
    check("every switch has a label", page.eval("[...document.querySelectorAll('#sheet input.switch')].every((i) => i.labels.length === 1 "
                                                "&& i.labels[0].textContent.trim().length > 0)"))
    check("... and when the request expires", re.fullmatch(r"This request expires at \d\d:\d\d\.", page.text("sheet-expires") or ""),
          page.text("sheet-expires"))
    check("a first request of an app has no warning that it has access already, nor that it reads like another",
          not page.visible("sheet-known") and not page.visible("sheet-lookalike"))
    page.shot(artifacts, "people-sheet.png", 1280)
    page.shot(artifacts, "people-sheet-phone.png", 390)
    # Keyboard: Turn On All, then Tab to the first switch, Space turns it on.
    page.click("sheet-all")
    check("Turn On All turns every switch on and becomes Turn Off All",
          page.eval("[...document.querySelectorAll('#sheet input.switch')].every((i) => i.checked)") and page.text("sheet-all") == "Turn Off All")
    page.click("sheet-all")
    page.eval("document.getElementById('sheet-all').focus()")
    page.key("Tab", "Tab")
    check("Tab from Turn On All reaches the first switch", page.focused() == "sheet-write-heartRate", page.focused())
    page.key(" ", "Space", " ")
    check("Space turns the focused switch on", page.eval("document.getElementById('sheet-write-heartRate').checked") is True)
    page.key(" ", "Space", " ")
    # Allow writing steps (not heart rate); allow reading heart rate (not steps, not sleep).
    page.click("sheet-write-stepCount")
    page.click("sheet-read-heartRate")
    page.click("sheet-allow")
    check("Allow: the sheet says what the app may now do", page.wait("document.getElementById('sheet').dataset.state === 'allowed'")
          and page.text("sheet-done-text") == f"“{XSS_NAME}” may now write Steps and read Heart Rate.", page.text("sheet-done-text"))
    return asked


def token_checks(port, asked):
    print("browser people: the app polls and gets its token")
    status, _, payload = http(port, "POST", "/v1/authorization-requests/token", {"deviceCode": asked["deviceCode"]})
    body = js(payload) or {}
    check("the poll gives the token with the granted write types only (the read decision is not told)",
          status == 200 and body.get("token") and body.get("share") == ["stepCount"] and "read" not in body, payload[:300])
    again, _, payload2 = http(port, "POST", "/v1/authorization-requests/token", {"deviceCode": asked["deviceCode"]})
    check("... exactly once", again != 200, (again, payload2[:200]))
    return body.get("token")


def ask_again_checks(page, port, artifacts):
    print("browser people: the app asks again")
    asked = ask(port, ["stepCount", "heartRate", "flightsClimbed"], ["heartRate", "sleepAnalysis"])
    page.go(asked["verificationURIComplete"])
    page.wait("document.getElementById('sheet').dataset.state === 'asking'")
    shown = page.eval("JSON.stringify([...document.querySelectorAll('#sheet input.switch')].map((i) => i.id))")
    check("a request in the name of an app with access warns that anyone can ask so, and since when it has access",
          page.visible("sheet-known") and page.text("sheet-known-app") == XSS_NAME
          and page.text("sheet-known-since").startswith("today at ") and "another app’s name" in page.text("sheet-known")
          and not page.visible("sheet-lookalike"),
          page.text("sheet-known"))
    page.shot(artifacts, "people-sheet-known-phone.png", 390)
    check("asking again shows only the types not answered yet", json.loads(shown or "[]") == ["sheet-write-flightsClimbed"]
          and not page.visible("sheet-read") and not page.visible("sheet-nothing"), shown)
    page.click("sheet-deny")
    check("... Don't Allow turns it off and keeps what was allowed", page.wait("document.getElementById('sheet').dataset.state === 'denied'")
          and page.text("sheet-done-text") == f"You did not allow “{XSS_NAME}” to access your Health data.", page.text("sheet-done-text"))
    asked = ask(port, ["stepCount", "flightsClimbed"], ["heartRate"])
    page.go(asked["verificationURIComplete"])
    page.wait("document.getElementById('sheet').dataset.state === 'asking'")
    check("asked only for answered types, the sheet says so and draws no switch", page.visible("sheet-nothing")
          and page.eval("document.querySelectorAll('#sheet input.switch').length") == 0 and not page.visible("sheet-all"))
    page.click("sheet-allow")
    check("... and Allow says the app has what was allowed before (not that it may read nothing)",
          page.wait("document.getElementById('sheet').dataset.state === 'allowed'")
          and page.text("sheet-done-text") == f"“{XSS_NAME}” has its token with what you allowed before. You can change that in Apps.",
          page.text("sheet-done-text"))
    # Another app, asking under the allowed app's shown name: the sheet says it is not that app.
    status, _, payload = http(port, "POST", "/v1/authorization-requests",
                              {"app": "com.example.c0ach", "displayName": XSS_NAME.upper(), "read": ["heartRate"], "reason": "Same coach."})
    impostor = js(payload) or {}
    check("an app asking under a name that reads like an allowed app's gets its code like any", status == 201, payload[:200])
    page.go(impostor.get("verificationURIComplete", ""))
    page.wait("document.getElementById('sheet').dataset.state === 'asking'")
    check("... and the sheet says it is not the allowed app, naming both identifiers",
          page.visible("sheet-lookalike") and page.text("sheet-lookalike-name") == XSS_NAME
          and page.text("sheet-lookalike-app") == APP and page.text("sheet-lookalike-asking") == "com.example.c0ach"
          and not page.visible("sheet-known"), page.text("sheet-lookalike"))
    page.shot(artifacts, "people-sheet-lookalike-phone.png", 390)
    page.click("sheet-deny")
    page.wait("document.getElementById('sheet').dataset.state === 'denied'")


def app_checks(port, token):
    now = datetime.now(timezone.utc)
    samples = [{"type": "stepCount", "value": 500 + i, "unit": "count", "start": rfc3339(now - timedelta(minutes=40 - i * 10)),
                "end": rfc3339(now - timedelta(minutes=35 - i * 10))} for i in range(3)]
    status, _, payload = http(port, "POST", "/v1/samples", {"samples": samples}, token=token)
    check("the app saves steps it was allowed to write", status == 201, payload[:300])
    status, _, _ = http(port, "POST", "/v1/samples", {"samples": [{"type": "heartRate", "value": 70, "unit": "count/min",
                                                                    "start": rfc3339(now)}]}, token=token)
    check("... and may not write heart rate, which the person left off (403)", status == 403, status)
    status, _, payload = http(port, "GET", "/v1/samples?type=stepCount&limit=10", token=token)
    check("it reads its own steps back", status == 200 and len((js(payload) or {}).get("samples", [])) == 3, payload[:200])
    return sum(s["value"] for s in samples)


def apps_checks(page, port, token, artifacts):
    print("browser people: Apps (Data Access & Devices)")
    stream, head = open_stream(port, token)
    check("the app follows its change stream", head.startswith(b"HTTP/1.1 200"), head[:80])
    check("the apps page lists the app", page.hash("apps") and page.wait(f"!!document.querySelector('#apps-list [data-app=\"{APP}\"]')"))
    card = f"document.querySelector('#apps-list [data-app=\"{APP}\"]')"
    check("its name is text there too", page.eval(f"{card}.querySelector('.app-name').textContent") == XSS_NAME
          and page.eval(f"{card}.querySelectorAll('img, script').length") == 0)
    switches = page.eval(f"JSON.stringify([...{card}.querySelectorAll('input.switch')].filter((i) => i.checked).map((i) => i.id))")
    check("its switches show what the person allowed", sorted(json.loads(switches)) ==
          sorted([f"app-{APP.replace('.', '_2e')}-share-stepCount", f"app-{APP.replace('.', '_2e')}-read-heartRate"]), switches)
    check("... with when it was allowed and last used", "Allowed " in (page.eval(f"{card}.querySelector('.app-meta').textContent") or ""),
          page.eval(f"{card}.querySelector('.app-meta').textContent"))
    page.shot(artifacts, "people-apps.png", 1280)
    page.shot(artifacts, "people-apps-phone.png", 390)
    page.eval(f"{card}.querySelector('input.switch[data-type=\"stepCount\"]').click()")
    saved = page.wait(f"{card}.querySelector('.app-status').textContent.startsWith('Saved')")
    check("turning 'Steps' (write) off is saved", saved, page.eval(f"{card}.querySelector('.app-status').textContent"))
    ended, seconds = stream_ends_within(stream, 3)
    check("... and the app's open change stream ends within a second or so", ended, f"after {seconds:.1f} s")
    status, _, payload = http(port, "GET", "/v1/authorizations/status?types=stepCount", token=token)
    check("the app's token now may not write steps", status == 200 and (js(payload) or {}).get("stepCount") == "sharingDenied", payload[:200])
    status, _, payload = http(port, "GET", "/v1/me/apps", token=token)
    check("an app token is no key to the person's routes (401)", status == 401, status)


def access_checks(page, artifacts):
    print("browser people: Recent access")
    check("the recent access page loads", page.hash("access") and page.wait("document.getElementById('access-page').dataset.state !== 'loading'"))
    group = f"document.querySelector('#access-list [data-app=\"{APP}\"]')"
    check("the app is listed, its name as text", page.eval(f"{group} && {group}.querySelector('.app-name').textContent") == XSS_NAME,
          page.text("access-status"))
    wrote = page.eval(f"{group} && [...{group}.querySelectorAll('.access-row[data-type=\"stepCount\"]')].map((r) => "
                      "Number(r.dataset.samplesWritten)).reduce((a, b) => a + b, 0)")
    check("... with the 3 steps samples it wrote today", wrote == 3, wrote)
    read = page.eval(f"{group} && [...{group}.querySelectorAll('.access-row[data-type=\"stepCount\"]')].map((r) => "
                     "Number(r.dataset.samplesRead)).reduce((a, b) => a + b, 0)")
    check("... and the 3 it read back", read == 3, read)
    check("... said in words", "wrote 3 samples in 1 request" in (page.eval(f"{group} && {group}.textContent") or ""))
    page.shot(artifacts, "people-access.png", 1280)
    page.shot(artifacts, "people-access-phone.png", 390)


def dashboard_checks(page, steps):
    print("browser people: the dashboard through the session")
    check("the Summary link opens the dashboard", page.hash("") and page.wait("document.body.dataset.view === 'dashboard' "
                                                                             "&& document.body.dataset.loaded === 'true'"))
    state = page.wait("(() => { const s = document.getElementById('card-steps').dataset.state; return s !== 'loading' && s; })()")
    check("signed in, the steps card shows the person's steps, read through the session (the /v1/me mirrors)",
          state == "ok" and page.eval("Number(document.getElementById('steps-value').dataset.value)") == steps,
          (state, page.text("steps-note"), page.eval("document.getElementById('steps-value').dataset.value")))
    check("no token is kept in this browser", page.eval("localStorage.getItem('healthd.token')") is None)


def own_data_checks(page, port, token):
    print("browser people: own data")
    check("the data page loads", page.hash("data") and page.wait("document.querySelectorAll('#delete-app-select option').length > 0"))
    export = page.tools.call("Runtime.evaluate", {"expression": "(async () => { const r = await fetch(document.getElementById('export-link').href); "
                                                  "const t = await r.text(); return JSON.stringify([r.status, r.headers.get('content-type'), "
                                                  "t.split('\\n').filter((l) => l.includes('stepCount')).length]); })()",
                                                  "awaitPromise": True, "returnByValue": True})["result"].get("value")
    status, kind, lines = json.loads(export or "[0, null, 0]")
    check("Download my data: the export answers with the person's samples", status == 200 and lines >= 3, (status, kind, lines))
    page.eval(f"document.getElementById('delete-app-select').value = {json.dumps(APP)}")
    page.click("delete-app-submit")
    check("deleting an app's data asks first", page.wait("document.getElementById('confirm-dialog').open")
          and XSS_NAME in (page.text("confirm-title") or ""))
    page.click("confirm-cancel")
    check("... Cancel deletes nothing", page.wait("!document.getElementById('confirm-dialog').open")
          and len((js(http(port, "GET", "/v1/samples?type=stepCount", token=token)[2]) or {}).get("samples", [])) == 3)
    page.click("delete-app-submit")
    page.wait("document.getElementById('confirm-dialog').open")
    page.click("confirm-ok")
    check("... Delete does, and says so", page.wait("document.getElementById('delete-app-status').textContent.startsWith('Deleted')"),
          page.text("delete-app-status"))
    status, _, payload = http(port, "GET", "/v1/samples?type=stepCount", token=token)
    check("the app's steps are gone", status == 200 and (js(payload) or {}).get("samples") == [], payload[:200])


def remove_checks(page, port, token):
    print("browser people: removing the app")
    page.hash("apps")
    card = f"document.querySelector('#apps-list [data-app=\"{APP}\"]')"
    page.wait(f"!!{card}")
    page.eval(f"[...{card}.querySelectorAll('button')].find((b) => b.textContent.startsWith('Remove')).click()")
    page.wait("document.getElementById('confirm-dialog').open")
    page.click("confirm-ok")
    check("Remove app: the card goes", page.wait(f"!{card} && document.getElementById('apps-status').textContent.startsWith('Removed')"),
          page.text("apps-status"))
    status, _, _ = http(port, "GET", "/v1/samples?type=stepCount", token=token)
    check("... and the app's token is refused (401)", status == 401, status)
    page.hash("data")
    option = page.wait(f"(() => {{ const o = [...document.querySelectorAll('#delete-app-select option')].find((o) => o.value === {json.dumps(APP)}); "
                       "return o && o.textContent; })()")
    check("a removed app that wrote lately can still have its data deleted", option == f"{APP} (removed)", option)


def account_checks(page, base, name):
    print("browser people: password, sign-out, erasure")
    page.hash("account")
    page.fill("password-current", "wrong-current-password")
    page.fill("password-new", NEW_PASSWORD)
    page.fill("password-repeat", NEW_PASSWORD)
    page.click("password-submit")
    check("a wrong current password is said so", page.wait("!document.getElementById('password-error').hidden")
          and page.visible("account-page"), page.text("password-error"))
    page.fill("password-current", PASSWORD)
    page.fill("password-new", NEW_PASSWORD)
    page.fill("password-repeat", NEW_PASSWORD)
    page.click("password-submit")
    check("the password changes", page.wait("document.getElementById('password-status').textContent.startsWith('Password changed')"),
          (page.text("password-status"), page.text("password-error")))
    page.click("sign-out")
    check("Sign out: back to sign-in, saying so", page.wait("document.body.dataset.view === 'start'")
          and "signed out" in (page.text("person-message") or ""))
    status = page.tools.call("Runtime.evaluate", {"expression": "fetch('/v1/me').then((r) => r.status)", "awaitPromise": True,
                                                  "returnByValue": True})["result"].get("value")
    check("... and the session is over on the server (GET /v1/me is 401)", status == 401, status)
    page.go(base + "/#data")
    check("the person's pages ask to sign in first", page.visible("signin-panel") and not page.visible("data-page"))
    check("... and open once signed in (the new password)", sign_in(page, name, NEW_PASSWORD, "data"))
    page.fill("erase-password", "not-my-password-at-all")
    page.click("erase-submit")
    page.wait("document.getElementById('confirm-dialog').open")
    page.click("confirm-ok")
    check("erasure with a wrong password erases nothing, and says so", page.wait("!document.getElementById('erase-error').hidden")
          and page.visible("data-page"), page.text("erase-error"))
    page.fill("erase-password", NEW_PASSWORD)
    page.click("erase-submit")
    page.wait("document.getElementById('confirm-dialog').open")
    page.click("confirm-ok")
    check("erasure with the password: back to the start, saying what was erased",
          page.wait("document.body.dataset.view === 'start'") and "erased" in (page.text("person-message") or ""), page.text("person-message"))
    sign_in(page, name, NEW_PASSWORD)
    check("the erased account cannot sign in", page.visible("signin-panel") and "do not match" in (page.text("signin-error") or ""),
          page.text("signin-error"))


def lockout_checks(page, base):
    print("browser people: too many sign-ins")
    page.go(base + "/")
    texts = []
    for _ in range(12):
        sign_in(page, "nobody-at-all", "wrong-password-again")
        texts.append(page.text("signin-error") or "")
        if "Too many" in texts[-1]:
            break
    check("after the failed attempts, the form says when to try again (429 with Retry-After)",
          re.search(r"Too many sign-in attempts\. Try again in \d+ (minute|second)s? \(at \d\d:\d\d\)\.", texts[-1]), texts[-2:])
    check("... and its button waits until then", page.eval("document.getElementById('signin-submit').disabled") is True)


def code_entry_checks(page, base, port):
    print("browser people: the sheet opened without its code")
    page.go(base + "/#/authorize")
    check("a box asks for the code", page.visible("code-input") and page.eval("document.activeElement.id") == "code-input")
    page.fill("code-input", "bcdf-ghjk")
    page.click("code-input")
    page.eval("document.getElementById('code-form').requestSubmit()")
    check("an unknown code is said so, and the box stays", page.wait("!document.getElementById('code-error').hidden")
          and "No request" in (page.text("code-error") or ""), page.text("code-error"))
    asked = ask(port, ["bodyMass"], ["bodyMass"], reason="Weight for your plan", name="Scale")
    page.fill("code-input", asked["userCode"].lower().replace("-", " "))
    page.eval("document.getElementById('code-form').requestSubmit()")
    check("the code typed in any case and spacing opens its sheet", page.wait("document.getElementById('sheet').dataset.state === 'asking'")
          and page.text("sheet-app-name") == "Scale")
    page.click("sheet-deny")
    check("Don't Allow: the sheet says so", page.wait("document.getElementById('sheet').dataset.state === 'denied'"))
    status, _, payload = http(port, "POST", "/v1/authorization-requests/token", {"deviceCode": asked["deviceCode"]})
    check("... and the app's poll gets access_denied", status == 400 and (js(payload) or {}).get("error") == "access_denied", payload[:200])


def people_checks(binary, public, chromium, artifacts):
    """The whole person's path in one browser, against a fresh server."""
    os.makedirs(artifacts, exist_ok=True)
    server = Server(binary, public, drain=True)
    page = Page(chromium)
    try:
        base = f"http://127.0.0.1:{server.port}"
        name = "pat-people"
        activation_checks(page, base, server.port, name)
        signin_checks(page, base, name)
        page.shot(artifacts, "people-dashboard.png", 1280)
        asked = sheet_checks(page, base, server.port, artifacts)
        token = token_checks(server.port, asked)
        steps = app_checks(server.port, token) if token else None
        ask_again_checks(page, server.port, artifacts)
        if token:
            apps_checks(page, server.port, token, artifacts)
            access_checks(page, artifacts)
            dashboard_checks(page, steps)
            own_data_checks(page, server.port, token)
        code_entry_checks(page, base, server.port)
        if token:
            remove_checks(page, server.port, token)
        account_checks(page, base, name)
        lockout_checks(page, base)
        page.shot(artifacts, "people-signin-locked-phone.png", 390)
    finally:
        page.close()
        server.stop()
        shutil.rmtree(server.data_dir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--public", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Public"))
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    parser.add_argument("--artifacts", default="ci-artifacts")
    args = parser.parse_args()
    people_checks(args.binary, os.path.abspath(args.public), args.chromium, args.artifacts)
    print(f"browser people: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
