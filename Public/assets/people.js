// The person's pages: sign-in, activation, the permission sheet, apps, recent access, own data and
// the account. Everything an app or the server supplies (names, reasons, identifiers) is put on the
// page as text (textContent), never as HTML. Every state-changing call is JSON (`client.send`).

import { APIFailure, makeClient } from "./api.js";
import { typeName, typeCategory, sortedTypes } from "./types.js";
import { normalizeUserCode, groupAccess, describeAccess, formatWhen, formatDayHeading, formatWait } from "./people-format.js";
import { dayKey, localMidnight, formatClock } from "./format.js";

const $ = (id) => document.getElementById(id);
const person = makeClient({ session: true });

/** What to tell the person about a failed call. */
export function problemText(error, what = "That") {
  if (!(error instanceof APIFailure)) return `${what} did not work: ${error && error.message ? error.message : error}`;
  if (error.kind === "network") return "The server could not be reached. Check the connection and try again.";
  if (error.status === 429) return `Too many attempts. Try again ${formatWait(error.retryAfter)}.`;
  return error.detail;
}

function showError(id, text) {
  const element = $(id);
  element.textContent = text || "";
  element.hidden = !text;
}

function setStatus(id, text) {
  $(id).textContent = text || "";
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

/** "Steps", "Steps and Sleep", "Steps, Sleep and Weight". */
function listOfNames(types) {
  const names = sortedTypes(types).map(typeName);
  if (names.length <= 1) return names.join("");
  return `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
}

/** One type's row: its category's mark, its name as the label, and a switch. */
function switchRow(prefix, type, checked, onChange) {
  const row = element("li", "switch-row");
  row.dataset.type = type;
  const icon = element("span", `type-icon cat-${typeCategory(type)}`);
  icon.setAttribute("aria-hidden", "true");
  const id = `${prefix}-${type}`;
  const label = element("label", "type-name", typeName(type));
  label.htmlFor = id;
  const input = document.createElement("input");
  input.type = "checkbox";
  input.className = "switch";
  input.setAttribute("role", "switch");
  input.id = id;
  input.dataset.type = type;
  input.checked = checked;
  if (onChange) input.addEventListener("change", () => onChange(input));
  row.append(icon, label, input);
  return row;
}

function checkedTypes(list) {
  return [...list.querySelectorAll("input.switch")].filter((input) => input.checked).map((input) => input.dataset.type);
}

// ---------------------------------------------------------------- confirmation

/** Asks in a modal dialog (Escape or Cancel says no). */
export function confirmAction(title, text, confirmLabel) {
  const dialog = $("confirm-dialog");
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-ok").textContent = confirmLabel;
  dialog.returnValue = "cancel";
  return new Promise((resolve) => {
    // The close event is queued: one from an earlier showing (closed just before this one opened)
    // can arrive while this dialog is open, and is not this dialog's answer.
    const answered = () => {
      if (dialog.open) return;
      dialog.removeEventListener("close", answered);
      resolve(dialog.returnValue === "confirm");
    };
    dialog.addEventListener("close", answered);
    dialog.showModal();
    $("confirm-cancel").focus();
  });
}

// ---------------------------------------------------------------- sign-in and activation

let signInLockTimer = null;

/** Signs in; on success calls `done(name)`. A 429 keeps the button off until Retry-After passes. */
export function wireSignIn(done) {
  $("signin-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = $("signin-name").value.trim();
    const password = $("signin-password").value;
    if (!name || !password) {
      showError("signin-error", "Enter your name and your password.");
      (name ? $("signin-password") : $("signin-name")).focus();
      return;
    }
    showError("signin-error", "");
    $("signin-submit").disabled = true;
    try {
      await person.send("POST", "/v1/session", { name, password });
      $("signin-password").value = "";
      $("signin-submit").disabled = false;
      await done(name);
    } catch (error) {
      $("signin-submit").disabled = false;
      let text = problemText(error);
      if (error instanceof APIFailure && error.status === 401) text = "That name and password do not match an account.";
      if (error instanceof APIFailure && error.status === 429) {
        const seconds = error.retryAfter ?? 60;
        const until = new Date(Date.now() + seconds * 1000);
        text = `Too many sign-in attempts. Try again ${formatWait(seconds)} (at ${formatClock(until)}).`;
        $("signin-submit").disabled = true;
        clearTimeout(signInLockTimer);
        signInLockTimer = setTimeout(() => { $("signin-submit").disabled = false; }, seconds * 1000);
      }
      showError("signin-error", text);
      $("signin-form").dataset.failed = String(error instanceof APIFailure ? error.status : 0);
      $("signin-password").select();
      $("signin-password").focus();
    }
  });
}

/** The sign-in form, with a line saying why (the sheet or a page needs it), focused on the first empty field. */
export function showSignIn(context) {
  $("signin-context").textContent = context || "";
  $("signin-context").hidden = !context;
  showError("signin-error", "");
  ($("signin-name").value ? $("signin-password") : $("signin-name")).focus();
}

/** Activation: the invitation code and a new password; on success `done(name)` with the name the
 *  server answered, if any. */
export function wireActivation(done) {
  $("activate-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const code = $("activate-code").value.trim();
    const password = $("activate-password").value;
    if (!code) return activationProblem("Enter the invitation code.", "activate-code");
    if (password.length < 10) return activationProblem("Choose a password of at least 10 characters.", "activate-password");
    if (password !== $("activate-repeat").value) return activationProblem("The two passwords are not the same.", "activate-repeat");
    showError("activate-error", "");
    $("activate-submit").disabled = true;
    try {
      const answer = await person.send("POST", "/v1/people/activate", { code, password });
      for (const id of ["activate-code", "activate-password", "activate-repeat"]) $(id).value = "";
      await done(answer && typeof answer.name === "string" ? answer.name : null);
    } catch (error) {
      let text = problemText(error);
      if (error instanceof APIFailure && error.status === 404) text = "That invitation code is not valid: it may be mistyped, "
        + "used already, or older than 7 days. Ask for a new one.";
      activationProblem(text, error instanceof APIFailure && error.status === 400 ? "activate-password" : "activate-code");
    } finally {
      $("activate-submit").disabled = false;
    }
  });
}

function activationProblem(text, fieldID) {
  showError("activate-error", text);
  $(fieldID).focus();
}

export function showActivation(code) {
  if (code) $("activate-code").value = code;
  showError("activate-error", "");
  ($("activate-code").value ? $("activate-password") : $("activate-code")).focus();
}

// ---------------------------------------------------------------- the permission sheet

const sheetState = { code: null, request: null, busy: false };

/**
 * Shows the sheet for `code` (as linked or typed), or the box to type one. `onUnauthorized`
 * handles a session that ended meanwhile.
 */
export async function openSheet(rawCode, onUnauthorized) {
  const sheet = $("sheet");
  const code = normalizeUserCode(rawCode);
  for (const id of ["code-form", "sheet-form", "sheet-done"]) $(id).hidden = true;
  showError("sheet-error", "");
  showError("code-error", "");
  sheetState.code = code;
  sheetState.request = null;
  if (!code) {
    sheet.dataset.state = "code";
    $("code-form").hidden = false;
    if (rawCode) showError("code-error", "A code is 8 letters, such as WDJB-MJHT.");
    $("code-input").value = rawCode || "";
    $("code-input").focus();
    return;
  }
  sheet.dataset.state = "loading";
  let request;
  try {
    request = await person.getJSON(`/v1/me/authorization-requests/${encodeURIComponent(code)}`);
  } catch (error) {
    if (error instanceof APIFailure && error.kind === "unauthorized") return onUnauthorized();
    sheet.dataset.state = "code";
    $("code-form").hidden = false;
    $("code-input").value = code;
    showError("code-error", error instanceof APIFailure && error.status === 404
      ? `No request is waiting with the code ${code}. A code lasts 10 minutes and is answered once: check it, or ask the app for a new one.`
      : problemText(error));
    $("code-input").focus();
    return;
  }
  if (sheetState.code !== code) return;
  sheetState.request = request;
  renderSheet(request);
}

function renderSheet(request) {
  const name = typeof request.displayName === "string" && request.displayName ? request.displayName : String(request.app || "");
  const share = Array.isArray(request.share) ? sortedTypes(request.share) : [];
  const read = Array.isArray(request.read) ? sortedTypes(request.read) : [];
  for (const id of ["sheet-app-name", "sheet-write-app", "sheet-read-app"]) $(id).textContent = name;
  $("sheet-app-id").textContent = String(request.app || "");
  // The app has access already: this request may come from anyone using its name (the device flow
  // cannot tell), and Allow hands the app's access to the device showing the code.
  const since = typeof request.allowedBefore === "string" ? new Date(request.allowedBefore) : null;
  const known = since !== null && Number.isFinite(since.getTime());
  $("sheet-known").hidden = !known;
  $("sheet-known-app").textContent = name;
  $("sheet-known-since").textContent = known ? formatWhen(since) : "";
  // Another allowed app's name, read alike: this app may be passing for that one.
  const alike = request.readsLike && typeof request.readsLike === "object" ? request.readsLike : null;
  $("sheet-lookalike").hidden = alike === null;
  $("sheet-lookalike-name").textContent = alike ? String(alike.displayName || alike.app || "") : "";
  $("sheet-lookalike-app").textContent = alike ? String(alike.app || "") : "";
  $("sheet-lookalike-asking").textContent = String(request.app || "");
  $("sheet-reason").textContent = typeof request.reason === "string" && request.reason ? request.reason : "The app gave no reason.";
  $("sheet-write-list").replaceChildren(...share.map((type) => switchRow("sheet-write", type, false, updateTurnOnAll)));
  $("sheet-read-list").replaceChildren(...read.map((type) => switchRow("sheet-read", type, false, updateTurnOnAll)));
  $("sheet-write").hidden = share.length === 0;
  $("sheet-read").hidden = read.length === 0;
  $("sheet-all").hidden = share.length + read.length === 0;
  $("sheet-nothing").hidden = share.length + read.length > 0;
  const seconds = Number(request.expiresIn);
  const expires = new Date(Date.now() + seconds * 1000);
  $("sheet-expires").textContent = Number.isFinite(seconds) && seconds > 0
    ? `This request expires at ${formatClock(expires)}.` : "";
  updateTurnOnAll();
  $("sheet").dataset.state = "asking";
  $("sheet-form").hidden = false;
  $("sheet-title").focus();
}

function sheetSwitches() {
  return [...document.querySelectorAll("#sheet-write-list input.switch, #sheet-read-list input.switch")];
}

function updateTurnOnAll() {
  const switches = sheetSwitches();
  const allOn = switches.length > 0 && switches.every((input) => input.checked);
  $("sheet-all").textContent = allOn ? "Turn Off All" : "Turn On All";
  $("sheet-all").dataset.all = allOn ? "on" : "off";
}

async function answerSheet(allow, onUnauthorized) {
  const request = sheetState.request;
  if (!request || sheetState.busy) return;
  const share = allow ? checkedTypes($("sheet-write-list")) : [];
  const read = allow ? checkedTypes($("sheet-read-list")) : [];
  sheetState.busy = true;
  $("sheet-allow").disabled = $("sheet-deny").disabled = true;
  showError("sheet-error", "");
  try {
    await person.send("POST", `/v1/me/authorization-requests/${encodeURIComponent(sheetState.code)}`, { allow, share, read });
  } catch (error) {
    if (error instanceof APIFailure && error.kind === "unauthorized") return onUnauthorized();
    showError("sheet-error", error instanceof APIFailure && error.status === 404
      ? "This request is no longer waiting (it expired after 10 minutes, or was answered). Ask the app to ask again."
      : problemText(error));
    return;
  } finally {
    sheetState.busy = false;
    $("sheet-allow").disabled = $("sheet-deny").disabled = false;
  }
  const name = typeof request.displayName === "string" && request.displayName ? request.displayName : String(request.app || "");
  const askedNothing = !(Array.isArray(request.share) && request.share.length) && !(Array.isArray(request.read) && request.read.length);
  let text;
  if (!allow) {
    text = `You did not allow “${name}” to access your Health data.`;
  } else if (askedNothing) {
    // Every type was answered before: the app's token follows those answers, whatever they were.
    text = `“${name}” has its token with what you allowed before. You can change that in Apps.`;
  } else if (share.length + read.length === 0) {
    text = `“${name}” may not write or read any of your Health data. You can turn types on later in Apps.`;
  } else {
    const parts = [];
    if (share.length) parts.push(`write ${listOfNames(share)}`);
    if (read.length) parts.push(`read ${listOfNames(read)}`);
    text = `“${name}” may now ${parts.join(" and ")}.`;
  }
  $("sheet-done-text").textContent = text;
  $("sheet-form").hidden = true;
  $("sheet-done").hidden = false;
  $("sheet").dataset.state = allow ? "allowed" : "denied";
  sheetState.request = null;
  history.replaceState(null, "", location.pathname + "#/authorize");
  $("sheet-done").focus();
}

export function wireSheet(onUnauthorized, goToCode) {
  $("sheet-all").addEventListener("click", () => {
    const turnOn = $("sheet-all").dataset.all !== "on";
    for (const input of sheetSwitches()) input.checked = turnOn;
    updateTurnOnAll();
  });
  $("sheet-form").addEventListener("submit", (event) => {
    event.preventDefault();
    answerSheet(true, onUnauthorized);
  });
  $("sheet-deny").addEventListener("click", () => answerSheet(false, onUnauthorized));
  $("code-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const code = normalizeUserCode($("code-input").value);
    if (!code) {
      showError("code-error", "A code is 8 letters, such as WDJB-MJHT.");
      $("code-input").focus();
      return;
    }
    goToCode(code);
  });
}

// ---------------------------------------------------------------- apps (Data Access & Devices)

/** Types an app has a switch for: every type the person decided, on or off (`switches`), and
 *  those switched on. */
function appTypes(app, field) {
  const types = new Set(Array.isArray(app[field]) ? app[field] : []);
  const switches = app.switches && app.switches[field];
  if (switches && typeof switches === "object") for (const type of Object.keys(switches)) types.add(type);
  return sortedTypes(types);
}

export async function loadApps(onUnauthorized) {
  const page = $("apps-page");
  page.dataset.state = "loading";
  setStatus("apps-status", "");
  let body;
  try {
    body = await person.getJSON("/v1/me/apps");
  } catch (error) {
    if (error instanceof APIFailure && error.kind === "unauthorized") return onUnauthorized();
    page.dataset.state = "error";
    $("apps-list").replaceChildren();
    setStatus("apps-status", `Your apps could not be shown: ${problemText(error)}`);
    return;
  }
  const apps = Array.isArray(body.apps) ? body.apps : [];
  $("apps-list").replaceChildren(...apps.map((app) => appCard(app, onUnauthorized)));
  page.dataset.state = apps.length ? "ok" : "empty";
  if (!apps.length) setStatus("apps-status", "No app may read or write your data. When an app asks, you decide in a sheet like the Health app’s.");
}

function appCard(app, onUnauthorized) {
  const card = element("article", "app-card grouped");
  card.dataset.app = app.app;
  const displayName = typeof app.displayName === "string" && app.displayName ? app.displayName : app.app;
  const heading = element("h3", "app-name", displayName);
  const headingID = `app-${cssSafe(app.app)}`;
  heading.id = headingID;
  card.setAttribute("aria-labelledby", headingID);
  const meta = element("p", "app-meta");
  const when = [`Allowed ${app.created ? formatWhen(app.created) : "at an unknown time"}`,
    app.lastUsed ? `last used ${formatWhen(app.lastUsed)}` : "not used yet"];
  meta.append(element("span", "app-id", app.app), ` · ${when.join(" · ")}`);
  card.append(heading, meta);
  const status = element("p", "app-status");
  status.setAttribute("role", "status");
  let pending = Promise.resolve();
  const lists = {};
  const save = (input) => {
    // One change at a time per app, in the order they were made.
    pending = pending.then(() => saveSwitches(app, lists, status, onUnauthorized, input));
    return pending;
  };
  for (const [field, title] of [["share", "Allow to write"], ["read", "Allow to read"]]) {
    const types = appTypes(app, field);
    if (!types.length) continue;
    const current = new Set(Array.isArray(app[field]) ? app[field] : []);
    const titleID = `${headingID}-${field}`;
    const h4 = element("h4", "group-title", title);
    h4.id = titleID;
    const list = element("ul", "switch-list");
    list.setAttribute("aria-labelledby", titleID);
    list.append(...types.map((type) => switchRow(`app-${cssSafe(app.app)}-${field}`, type, current.has(type), save)));
    lists[field] = list;
    card.append(h4, list);
  }
  if (!lists.share && !lists.read) card.append(element("p", "hint", "This app may not write or read any type."));
  const actions = element("div", "app-actions");
  const offAll = element("button", "secondary", "Turn Off All");
  offAll.type = "button";
  offAll.addEventListener("click", () => {
    for (const input of card.querySelectorAll("input.switch")) input.checked = false;
    save(null);
  });
  const remove = element("button", "danger", "Remove app…");
  remove.type = "button";
  remove.addEventListener("click", async () => {
    const sure = await confirmAction(`Remove “${displayName}”?`, `“${displayName}” loses access to your Health data at once, `
      + "on every device, and any change stream it has open ends. The data it saved stays (delete it under Your data).",
    "Remove");
    if (!sure) return;
    try {
      await person.send("DELETE", `/v1/me/apps/${encodeURIComponent(app.app)}`);
    } catch (error) {
      if (error instanceof APIFailure && error.kind === "unauthorized") return onUnauthorized();
      status.textContent = `Not removed: ${problemText(error)}`;
      return;
    }
    card.remove();
    setStatus("apps-status", `Removed “${displayName}”.`);
    if (!$("apps-list").children.length) $("apps-page").dataset.state = "empty";
    $("apps-heading").focus();
  });
  actions.append(offAll, remove);
  card.append(actions, status);
  return card;
}

async function saveSwitches(app, lists, status, onUnauthorized, changed) {
  const share = lists.share ? checkedTypes(lists.share) : [];
  const read = lists.read ? checkedTypes(lists.read) : [];
  status.textContent = "Saving…";
  try {
    await person.send("PUT", `/v1/me/apps/${encodeURIComponent(app.app)}`, { share, read });
    app.share = share;
    app.read = read;
    status.textContent = changed ? `Saved: ${typeName(changed.dataset.type)} ${changed.checked ? "on" : "off"}.` : "Saved: all off.";
  } catch (error) {
    if (error instanceof APIFailure && error.kind === "unauthorized") return onUnauthorized();
    // Back to what the server holds.
    for (const [field, list] of Object.entries(lists)) {
      const held = new Set(app[field] || []);
      for (const input of list.querySelectorAll("input.switch")) input.checked = held.has(input.dataset.type);
    }
    status.textContent = `Not saved: ${problemText(error)}`;
  }
}

function cssSafe(text) {
  return String(text).replace(/[^A-Za-z0-9_-]/g, (c) => `_${c.charCodeAt(0).toString(16)}`);
}

// ---------------------------------------------------------------- recent access

export async function loadAccess(onUnauthorized, timeZone) {
  const page = $("access-page");
  page.dataset.state = "loading";
  setStatus("access-status", "");
  const days = Number($("access-range").value) || 90;
  const today = new Date();
  const parameters = { start: dayKey(localMidnight(today, 1 - days)), end: dayKey(today), timeZone };
  let body, names = {};
  try {
    const [access, apps] = await Promise.all([
      person.getJSON("/v1/me/access", parameters),
      person.getJSON("/v1/me/apps").catch(() => ({ apps: [] })),
    ]);
    body = access;
    for (const app of apps.apps || []) if (app.displayName) names[app.app] = app.displayName;
  } catch (error) {
    if (error instanceof APIFailure && error.kind === "unauthorized") return onUnauthorized();
    page.dataset.state = "error";
    $("access-list").replaceChildren();
    setStatus("access-status", `Recent access could not be shown: ${problemText(error)}`);
    return;
  }
  const groups = groupAccess(Array.isArray(body.access) ? body.access : [], names);
  const range = $("access-range").selectedOptions[0].textContent.toLowerCase();
  $("access-list").replaceChildren(...groups.map(accessCard));
  page.dataset.state = groups.length ? "ok" : "empty";
  setStatus("access-status", groups.length ? "" : `No app read or wrote your data ${range === "today" ? "today" : `in the ${range}`}.`);
}

function accessCard(group) {
  const card = element("article", "access-app grouped");
  card.dataset.app = group.app;
  const heading = element("h3", "app-name", group.displayName);
  const meta = element("p", "app-meta");
  meta.append(element("span", "app-id", group.app), group.lastAccess ? ` · last access ${formatWhen(group.lastAccess)}` : "");
  card.append(heading, meta);
  for (const day of group.days) {
    const section = element("section", "access-day");
    section.dataset.day = day.day;
    section.append(element("h4", "access-day-title", formatDayHeading(day.day)));
    const list = element("ul", "access-types");
    for (const entry of day.types) {
      const row = element("li", "access-row");
      row.dataset.type = entry.type;
      row.dataset.samplesRead = String(entry.samplesRead);
      row.dataset.samplesWritten = String(entry.samplesWritten);
      const icon = element("span", `type-icon cat-${typeCategory(entry.type)}`);
      icon.setAttribute("aria-hidden", "true");
      row.append(icon, element("span", "type-name", entry.name), element("span", "access-what", describeAccess(entry)));
      list.append(row);
    }
    section.append(list);
    card.append(section);
  }
  return card;
}

// ---------------------------------------------------------------- own data and the account

export async function loadOwnData(onUnauthorized) {
  const select = $("delete-app-select");
  setStatus("delete-app-status", "");
  showError("erase-error", "");
  try {
    // The apps with permissions, and any other app that wrote in the access log's days (a removed
    // app's data stays until deleted).
    const [body, access] = await Promise.all([
      person.getJSON("/v1/me/apps"),
      person.getJSON("/v1/me/access").catch(() => ({ access: [] })),
    ]);
    const apps = (Array.isArray(body.apps) ? body.apps : []).map((app) => ({ app: app.app, name: app.displayName || app.app,
      label: app.displayName && app.displayName !== app.app ? `${app.displayName} (${app.app})` : app.app }));
    const known = new Set(apps.map((app) => app.app));
    for (const row of Array.isArray(access.access) ? access.access : []) {
      if (typeof row.app !== "string" || known.has(row.app) || !(row.samplesWritten > 0)) continue;
      known.add(row.app);
      apps.push({ app: row.app, name: row.app, label: `${row.app} (removed)` });
    }
    select.replaceChildren(...apps.map((app) => {
      const option = element("option", null, app.label);
      option.value = app.app;
      option.dataset.name = app.name;
      return option;
    }));
    $("delete-app-submit").disabled = apps.length === 0;
    if (!apps.length) setStatus("delete-app-status", "No app has saved data of yours lately, or has access.");
  } catch (error) {
    if (error instanceof APIFailure && error.kind === "unauthorized") return onUnauthorized();
    setStatus("delete-app-status", `Your apps could not be listed: ${problemText(error)}`);
  }
}

export function wireOwnData(onUnauthorized, erased) {
  $("delete-app-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const option = $("delete-app-select").selectedOptions[0];
    if (!option) return;
    const name = option.dataset.name;
    const sure = await confirmAction(`Delete the data “${name}” saved?`,
      `Every sample “${name}” saved is deleted, on this server and from the statistics. This cannot be undone.`, "Delete");
    if (!sure) return;
    setStatus("delete-app-status", "Deleting…");
    try {
      const answer = await person.send("DELETE", `/v1/me/apps/${encodeURIComponent(option.value)}/data`);
      const count = answer && typeof answer.deleted === "number" ? answer.deleted : null;
      setStatus("delete-app-status", count === null ? `Deleted the data “${name}” saved.`
        : `Deleted ${count.toLocaleString("en-US")} sample${count === 1 ? "" : "s"} “${name}” saved.`);
    } catch (error) {
      if (error instanceof APIFailure && error.kind === "unauthorized") return onUnauthorized();
      setStatus("delete-app-status", `Nothing was deleted: ${problemText(error)}`);
    }
  });
  $("erase-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const password = $("erase-password").value;
    if (!password) {
      showError("erase-error", "Enter your password to erase your account.");
      $("erase-password").focus();
      return;
    }
    showError("erase-error", "");
    const sure = await confirmAction("Erase your account?", "Your account and all your health data are erased from this "
      + "server for good. Apps lose access at once.", "Erase");
    if (!sure) return;
    try {
      const answer = await person.send("DELETE", "/v1/me", { password });
      $("erase-password").value = "";
      erased(answer);
    } catch (error) {
      if (error instanceof APIFailure && error.status === 401 && error.path === "/v1/me") {
        showError("erase-error", "That password is not right. Nothing was erased.");
        $("erase-password").select();
        return;
      }
      if (error instanceof APIFailure && error.kind === "unauthorized") return onUnauthorized();
      showError("erase-error", `Nothing was erased: ${problemText(error)}`);
    }
  });
}

/** A sentence for what DELETE /v1/me answered it erased ("1,204 samples, 2 apps, …"). */
export function describeErasure(answer) {
  const erased = answer && typeof answer === "object" ? (answer.erased && typeof answer.erased === "object" ? answer.erased : answer) : {};
  const parts = Object.entries(erased).filter(([, value]) => typeof value === "number" && value > 0)
    .map(([key, value]) => `${value.toLocaleString("en-US")} ${key.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase()}`);
  return parts.length ? `Your account is erased (${parts.join(", ")}).` : "Your account is erased.";
}

export function wireAccount(onUnauthorized) {
  $("password-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const current = $("password-current").value;
    const next = $("password-new").value;
    setStatus("password-status", "");
    if (!current) return passwordProblem("Enter your current password.", "password-current");
    if (next.length < 10) return passwordProblem("Choose a new password of at least 10 characters.", "password-new");
    if (next !== $("password-repeat").value) return passwordProblem("The two new passwords are not the same.", "password-repeat");
    showError("password-error", "");
    $("password-submit").disabled = true;
    try {
      await person.send("PUT", "/v1/me/password", { current, new: next });
      for (const id of ["password-current", "password-new", "password-repeat"]) $(id).value = "";
      setStatus("password-status", "Password changed. Your other sessions are signed out.");
    } catch (error) {
      if (error instanceof APIFailure && error.kind === "unauthorized" && error.path !== "/v1/me/password") return onUnauthorized();
      passwordProblem(error instanceof APIFailure && (error.status === 401 || error.status === 403)
        ? "The current password is not right." : problemText(error),
      error instanceof APIFailure && error.status === 400 ? "password-new" : "password-current");
    } finally {
      $("password-submit").disabled = false;
    }
  });
}

function passwordProblem(text, fieldID) {
  showError("password-error", text);
  $(fieldID).focus();
}

/** Signs out (the server ends the session); a failure still forgets it here. */
export async function signOut() {
  try {
    await person.send("DELETE", "/v1/session");
  } catch {
    // Already ended, or the server is away: the page forgets the session either way.
  }
}

/** The signed-in person ({name}), or null when the browser holds no live session. A server without
 *  sign-in (GET /v1/me answers 404) is null too. Other failures throw. */
export async function whoAmI() {
  try {
    const body = await person.getJSON("/v1/me");
    return { name: body && typeof body.name === "string" ? body.name : "" };
  } catch (error) {
    if (error instanceof APIFailure && (error.kind === "unauthorized" || error.kind === "unavailable")) return null;
    throw error;
  }
}
