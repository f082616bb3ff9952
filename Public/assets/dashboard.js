// The dashboard: a way in (the person's session cookie, or a pasted read token for a wall
// display), one small loader per card or chart, and a live change stream that re-runs the loaders
// its changes affect. A loader that meets a missing endpoint (404) marks only its own card "not
// available"; a 401, or a 403 for the token itself (the admin token pasted by mistake), sends the
// person back to sign-in or the token form; a network error shows the server-down banner with a
// retry. The address's fragment picks the view: the person's pages (#apps, #access, #data,
// #account), the permission sheet (#/authorize?code=CODE), activation (#activate=CODE), or the dashboard.

import { APIFailure, makeClient } from "./api.js";
import { EventStreamParser } from "./sse.js";
import { summarizeSleep } from "./sleep.js";
import { clearChart, drawBars, drawTrend, drawHeartRate, drawSleepStages, drawDailyLine, drawRings } from "./charts.js";
import {
  formatInteger, formatKilometres, formatHoursMinutes, formatClock, formatDay, formatWeekday, formatShortDate,
  formatMonth, formatOneDecimal, formatMinutesLong, localMidnight, localTime, dayKey, dateFromDayKey,
} from "./format.js";
import { periodRange, periodWords, PERIODS } from "./period.js";
import {
  wireSignIn, showSignIn, wireActivation, showActivation, openSheet, wireSheet, loadApps, loadAccess, loadOwnData,
  wireOwnData, wireAccount, signOut, whoAmI, describeErasure,
} from "./people.js";

const TOKEN_KEY = "healthd.token";
const SETTINGS_KEY = "healthd.dashboard.settings";
const STREAM_TYPES = ["stepCount", "distanceWalkingRunning", "appleExerciseTime", "activeEnergyBurned",
  "heartRate", "restingHeartRate", "sleepAnalysis", "workout", "bodyMass", "appleStandHour"];
// A reading older than this is history, not "live": it never raises the zone alert.
const LIVE_READING_AGE_MS = 10 * 60 * 1000;
// The stream sends a comment at least every 15 s; three missed ones mean a dead connection.
const STREAM_SILENCE_MS = 45 * 1000;
const POLL_MS = 60 * 1000;
const SERVER_DOWN_RETRY_MS = 15 * 1000;

const timeZone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
const $ = (id) => document.getElementById(id);

// Views shown one at a time; "start" is sign-in with the token form below it.
const VIEWS = {
  start: ["signin-panel", "token-panel"], signin: ["signin-panel"], activate: ["activate-panel"], token: ["token-panel"],
  dashboard: ["dashboard"], sheet: ["sheet"], apps: ["apps-page"], access: ["access-page"], data: ["data-page"],
  account: ["account-page"],
};
// Fragment keys naming a view of the person's (kept in the address; the rest is read and removed).
const PERSON_VIEWS = ["apps", "access", "data", "account"];

const state = {
  client: null,
  // "token" (a pasted read token), "session" (a signed-in person), or null (neither yet).
  mode: null,
  personName: "",
  view: null,
  generation: 0, // bumped when the token changes, so answers for an old token are dropped
  settings: { age: null, goal: "fatBurn", sound: false, period: "day" },
  // What the token was granted (GET /v1/authorizations/current); null when the server cannot say
  // (no such endpoint, or a token not allowed to learn its read list), and then every type is
  // treated as shared.
  grant: null,
  zone: null,
  // The target zone of a running workout session, from its `event: zone`; while set it wins over
  // the age/goal band, so the page and the server judge readings alike. A saved workout clears it.
  sessionZone: null,
  latestHeartRate: null,
  heartSamples: null,
  heartDay: null,
  stepDays: null,
  periodBars: null,
  readings: {},
  alertState: "none",
  audio: null,
  stream: null,
  pollTimer: null,
  dayTimer: null,
  retryTimer: null,
  shownDay: null,
  // A day from the address (`#date=YYYY-MM-DD`) shown instead of today: a demo opened in the
  // morning, or a walkthrough's data on its own dates. Not kept in settings: a later visit shows today.
  pinnedDay: null,
};

// ---------------------------------------------------------------- token and settings

/** Takes `#token=...` (and optional `age=`, `goal=`, `period=`, `date=`) from the address, stores
 *  them, and removes them; a view's key stays (an invitation code is taken into memory). */
function adoptFragment() {
  if (!location.hash || location.hash.length < 2 || location.hash.startsWith("#/")) return;
  const fragment = new URLSearchParams(location.hash.slice(1));
  const token = fragment.get("token");
  if (token) localStorage.setItem(TOKEN_KEY, token.trim());
  const age = Number(fragment.get("age"));
  if (fragment.has("age") && Number.isInteger(age) && age >= 1 && age <= 120) state.settings.age = age;
  const goal = fragment.get("goal");
  if (["fatBurn", "cardio", "peak"].includes(goal)) state.settings.goal = goal;
  const period = fragment.get("period");
  if (PERIODS.includes(period)) state.settings.period = period;
  const date = fragment.get("date");
  state.pinnedDay = date && /^\d{4}-\d{2}-\d{2}$/.test(date) && dayKey(dateFromDayKey(date)) === date ? date : null;
  saveSettings();
  // The token must not stay in the address bar, the history or a bookmark, nor the invitation code;
  // the day may (a reload shows the same day), and so may the view.
  const kept = state.pinnedDay ? [`date=${state.pinnedDay}`] : [];
  if (fragment.has("activate")) {
    state.activationCode = fragment.get("activate") || null;
    kept.push("activate");
  }
  if (fragment.has("authorize")) kept.push(fragment.get("authorize") ? `authorize=${encodeURIComponent(fragment.get("authorize"))}` : "authorize");
  for (const key of PERSON_VIEWS) if (fragment.has(key)) kept.push(key);
  history.replaceState(null, "", location.pathname + location.search + (kept.length ? `#${kept.join("&")}` : ""));
}

function loadSettings() {
  try {
    const saved = JSON.parse(localStorage.getItem(SETTINGS_KEY) || "{}");
    if (Number.isInteger(saved.age) && saved.age >= 1 && saved.age <= 120) state.settings.age = saved.age;
    if (["fatBurn", "cardio", "peak"].includes(saved.goal)) state.settings.goal = saved.goal;
    if (PERIODS.includes(saved.period)) state.settings.period = saved.period;
    // Sound starts off on every visit: browsers only allow audio after a gesture anyway.
  } catch {
    localStorage.removeItem(SETTINGS_KEY);
  }
}

function saveSettings() {
  localStorage.setItem(SETTINGS_KEY, JSON.stringify({ age: state.settings.age, goal: state.settings.goal,
    period: state.settings.period }));
}

/** Shows one view (VIEWS) and hides the others. */
function showView(name) {
  const shown = new Set(VIEWS[name]);
  for (const ids of Object.values(VIEWS)) for (const id of ids) $(id).hidden = !shown.has(id);
  state.view = name;
  document.body.dataset.view = name;
  $("live-status").hidden = name !== "dashboard";
  showHeader();
}

/** The header for the way in: the person's pages and sign-out, or the token's "Change token". */
function showHeader() {
  const session = state.mode === "session";
  // The sheet is a decision to finish (Allow or Don't Allow), as in the Health app: no way off it but those.
  $("person-nav").hidden = !session || state.view === "sheet";
  $("sign-out").hidden = !session;
  $("forget-token").hidden = !(state.mode === "token" && state.view === "dashboard");
  for (const link of document.querySelectorAll("#person-nav a[data-view]")) {
    if (link.dataset.view === state.view) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  $("sign-out").textContent = state.personName ? `Sign out ${state.personName}` : "Sign out";
  $("account-name").textContent = state.personName || "you";
}

/** Leaves the dashboard: its stream and timers stop, and answers still on the way are dropped. */
function closeDashboard() {
  stopLive();
  clearInterval(state.dayTimer);
  state.client = null;
  state.generation++;
  hideBanner();
  setAlert("none");
  setLiveStatus("off", "Not connected");
}

function showTokenPanel(message) {
  closeDashboard();
  showView("start");
  if (message) $("token-message").textContent = message;
  $("token-input").value = "";
  $("token-input").focus();
}

function badToken(message = "The server did not accept that token (401): it may be mistyped or revoked. Paste a valid token.") {
  if (state.mode === "session") {
    sessionEnded();
    return;
  }
  localStorage.removeItem(TOKEN_KEY);
  state.mode = null;
  showTokenPanel(message);
}

/** A token the server knows but that may not use app endpoints at all (the admin token, pasted by
 *  mistake: start-up prints it): every card would fail, so ask for an app token instead. */
function notAnAppToken(detail) {
  badToken(`The server refused that token (403: ${detail}). The dashboard needs an app token that may `
    + "read your data, such as the one in the address healthd serve --demo prints, or one made with "
    + "POST /v1/authorizations.");
}

/** Opens the dashboard with a pasted token (a string) or, signed in, the session ({ session: true }). */
function openDashboard(credentials) {
  closeDashboard();
  state.client = makeClient(credentials);
  showView("dashboard");
  // A signed-in person reads all of their own data: every type is theirs to see.
  const grant = state.client.session ? Promise.resolve(state.grant = { all: true }) : loadGrant();
  grant.then(refreshAll).then(() => {
    document.body.dataset.loaded = "true";
    if (state.client) startLive();
  });
  watchTheDay();
}

// ---------------------------------------------------------------- views and the person's session

/** The view the address names: the sheet at `#/authorize?code=XXXX-XXXX` (the verification URI the
 *  server gives apps; also `#authorize=CODE`, or a path /authorize?code=), `#activate=CODE`, `#apps`,
 *  `#access`, `#data`, `#account` (or `#/apps`...), else the dashboard. */
function currentRoute() {
  const raw = location.hash.slice(1);
  if (raw.startsWith("/")) {
    const [path, query] = raw.slice(1).split("?");
    const parameters = new URLSearchParams(query || "");
    return { view: path.replace(/\/$/, ""), code: parameters.get("code") || parameters.get("user_code") || "" };
  }
  const fragment = new URLSearchParams(raw);
  if (fragment.has("authorize")) return { view: "authorize", code: fragment.get("authorize") };
  if (fragment.has("activate")) return { view: "activate", code: fragment.get("activate") };
  for (const key of PERSON_VIEWS) if (fragment.has(key)) return { view: key };
  if (/^\/(authorize|device)\/?$/.test(location.pathname)) {
    const parameters = new URLSearchParams(location.search);
    return { view: "authorize", code: parameters.get("code") || parameters.get("user_code") || "" };
  }
  return { view: "dashboard" };
}

const PERSON_LOADERS = {
  apps: () => loadApps(sessionEnded),
  access: () => loadAccess(sessionEnded, timeZone),
  data: () => loadOwnData(sessionEnded),
  account: async () => {},
};

/** Shows what the address names, asking to sign in first where the view needs the person. */
async function route() {
  const { view, code } = currentRoute();
  if (view === "activate") {
    closeDashboard();
    showView("activate");
    showActivation(code || state.activationCode);
    state.activationCode = null;
    document.body.dataset.loaded = "true";
    return;
  }
  if (view === "authorize" || PERSON_VIEWS.includes(view)) {
    closeDashboard();
    if (state.mode !== "session") {
      showView("signin");
      showSignIn(view === "authorize" ? "Sign in to answer an app’s request for your Health data."
        : "Sign in to see your apps, recent access and data.");
      document.body.dataset.loaded = "true";
      return;
    }
    if (view === "authorize") {
      showView("sheet");
      await openSheet(code, sessionEnded);
    } else {
      showView(view);
      $(`${view === "account" ? "account" : view}-heading`).focus();
      await PERSON_LOADERS[view]();
    }
    document.body.dataset.loaded = "true";
    return;
  }
  if (state.mode === "session") {
    if (state.view !== "dashboard" || !state.client) openDashboard({ session: true });
  } else if (state.mode === "token") {
    if (state.view !== "dashboard" || !state.client) openDashboard(localStorage.getItem(TOKEN_KEY));
  } else {
    closeDashboard();
    showView("start");
    document.body.dataset.loaded = "true";
  }
}

/** Signed in (or activated and signed in): the session replaces any pasted token in this browser. */
async function signedIn(name) {
  localStorage.removeItem(TOKEN_KEY);
  state.mode = "session";
  state.personName = name || "";
  if (!state.personName) {
    try {
      const me = await whoAmI();
      state.personName = me ? me.name : "";
    } catch {
      // The name is only for the header.
    }
  }
  showMessage("");
  state.view = null;
  await route();
}

/** The session ended (signed out elsewhere, a password change, expiry): sign in again, then back here. */
function sessionEnded(message = "Your session has ended. Sign in again to continue.") {
  state.mode = null;
  state.personName = "";
  closeDashboard();
  showView("signin");
  showMessage(message);
  showSignIn("");
  document.body.dataset.loaded = "true";
}

function showMessage(text) {
  $("person-message").textContent = text || "";
  $("person-message").hidden = !text;
}

// ---------------------------------------------------------------- card states

function setPanel(id, stateName, note) {
  const panel = $(id);
  panel.dataset.state = stateName;
  const noteElement = panel.querySelector(".note");
  if (noteElement) noteElement.textContent = note || "";
}

function setValue(id, value, text) {
  const element = $(id);
  element.dataset.value = value === undefined || value === null ? "" : String(value);
  element.textContent = text;
}

/** Routes a loader's failure: only "unavailable" and "http" stay local to the card. */
function failed(panelID, error) {
  if (!(error instanceof APIFailure)) {
    setPanel(panelID, "error", `Could not show this: ${error && error.message ? error.message : error}`);
    return;
  }
  switch (error.kind) {
    case "unauthorized":
      badToken();
      break;
    case "network":
      setPanel(panelID, "error", "The server could not be reached.");
      serverDown();
      break;
    case "unavailable":
      setPanel(panelID, "unavailable", `Not available on this server (${error.path.split("?")[0]} answered 404).`);
      break;
    default:
      setPanel(panelID, "error", `The server answered ${error.status}: ${error.detail}`);
  }
}

/** Runs a loader for one card, ignoring answers that arrive after the token changed. */
async function run(panelIDs, loader) {
  const generation = state.generation;
  const client = state.client;
  if (!client) return;
  try {
    await loader(client, () => generation === state.generation);
  } catch (error) {
    if (generation !== state.generation) return;
    for (const id of panelIDs) failed(id, error);
  }
}

// ---------------------------------------------------------------- loaders, one per card or chart

/** Whether the page shows a day from the address that is not today (one in the future shows today). */
function pinned() {
  return state.pinnedDay !== null && state.pinnedDay < dayKey(new Date());
}

/** Local midnight of the day the page shows: today, or the day from the address. */
function shownDay() {
  return pinned() ? dateFromDayKey(state.pinnedDay) : localMidnight(new Date());
}

/** "today", or "on Fri, Nov 27" for a day from the address. */
function onShownDay() {
  return periodWords("day", shownDay(), localMidnight(new Date())).phrase;
}

/** "No data yet" for what is still going on (today, this week); "No data" for what is over. */
function noData(current = !pinned()) {
  return current ? "No data yet" : "No data";
}

/** "the last 28 days", or "the 28 days to Fri, Nov 27". */
function lastDays(count) {
  return pinned() ? `the ${count} days to ${formatDay(dayKey(shownDay()))}` : `the last ${count} days`;
}

/** The headings that name the shown day, and the line that says a day other than today is shown. */
function showDayWords() {
  const day = formatDay(dayKey(shownDay()));
  $("pinned-day").hidden = !pinned();
  $("pinned-day-text").textContent = day;
  $("sleep-heading").textContent = pinned() ? `Sleep, night to ${day}` : "Sleep last night";
  $("heart-chart-heading").textContent = `Heart rate ${onShownDay()}`;
  $("sleep-week-heading").textContent = pinned() ? `Sleep, 7 nights to ${day}` : "Sleep, last 7 nights";
  $("workouts-heading").textContent = pinned() ? `Workouts, 28 days to ${day}` : "Workouts, last 28 days";
}

const number = (v) => typeof v === "number" && Number.isFinite(v);

async function loadGrant() {
  const client = state.client;
  if (!client) return;
  try {
    const body = await client.getJSON("/v1/authorizations/current");
    // Without `read` (the admin did not let this token learn its read list, as in HealthKit) the
    // server cannot say what is not shared: a type missing from `share` may still be readable.
    state.grant = Array.isArray(body.read) ? { read: new Set(body.read), share: new Set(body.share || []) } : null;
  } catch (error) {
    // A server without the endpoint: every type counts as shared. A 401 or a 403 (not an app token)
    // goes back to the token form; other failures surface in the cards.
    state.grant = null;
    if (error instanceof APIFailure && error.kind === "unauthorized") badToken();
    if (error instanceof APIFailure && error.status === 403) notAnAppToken(error.detail);
  }
}

/** Whether the token may see any of the type's data: read permission, or its own samples (share). */
function shared(type) {
  return !state.grant || state.grant.all === true || state.grant.read.has(type) || state.grant.share.has(type);
}

/**
 * Marks a card or panel "not shared with this app" when none of `types` is shared, and says so
 * where its figure would be, so it can never read as zero. True when it did.
 */
function notShared(panelID, types, what, valueIDs = []) {
  if (types.some(shared)) return false;
  for (const id of valueIDs) setValue(id, null, "Not shared");
  const panel = $(panelID);
  for (const svg of panel.querySelectorAll("svg")) clearChart(svg);
  setPanel(panelID, "forbidden", `${what} not shared with this app (no read permission for ${types.join(", ")}).`);
  return true;
}

/**
 * A figure with its unit in `wrapperID`: shared, it shows its value; not shared, the whole
 * phrase says so ("distance not shared") instead of "–" or 0.
 */
function setFigure(wrapperID, id, type, value, format, unit, name) {
  const wrapper = $(wrapperID);
  if (!shared(type)) {
    wrapper.dataset.state = "forbidden";
    wrapper.textContent = `${name} not shared`;
    return;
  }
  if (wrapper.dataset.state === "forbidden" || !$(id)) {
    const span = document.createElement("span");
    span.id = id;
    wrapper.replaceChildren(span, ` ${unit}`);
  }
  wrapper.dataset.state = "ok";
  setValue(id, number(value) ? value : null, number(value) ? format(value) : "–");
}

async function loadSummary(client, current) {
  const period = state.settings.period;
  const daily = period !== "day";
  const range = periodRange(period, shownDay());
  // Days not begun have no data: the daily figures stop at tomorrow's midnight.
  const until = new Date(Math.min(range.end.getTime(), localMidnight(new Date(), 1).getTime()));
  const [body, stepDays, energyDays] = await Promise.all([
    client.getJSON("/v1/summary", { date: dayKey(shownDay()), timeZone, period }),
    daily && shared("stepCount") ? dailySums(client, "stepCount", "count", range.start, until) : null,
    daily && shared("activeEnergyBurned") ? dailySums(client, "activeEnergyBurned", "kcal", range.start, until) : null,
  ]);
  if (!current() || period !== state.settings.period) return;
  const { phrase, current: ongoing } = periodWords(period, shownDay(), localMidnight(new Date()));
  $("steps-heading").textContent = `Steps ${phrase}`;
  $("energy-heading").textContent = `Active energy ${phrase}`;
  const first = new Date(body.start), last = new Date(new Date(body.end).getTime() - 1);
  $("period-range").textContent = period === "day" ? formatDay(dayKey(first))
    : `${formatDay(dayKey(first))} – ${formatDay(dayKey(last))}`;
  if (!notShared("card-steps", ["stepCount"], "Your step count is", ["steps-value"])) {
    const any = number(body.steps) && body.steps > 0;
    setValue("steps-value", any ? body.steps : null, any ? formatInteger(body.steps) : "–");
    setPanel("card-steps", any ? "ok" : "empty", any ? "" : `${noData(ongoing)}: no steps recorded ${phrase}.`);
    const average = averageOfDaysWithData(stepDays);
    setValue("steps-average", average.value, number(average.value) ? formatInteger(average.value) : "–");
    setValue("period-days", average.days, average.days === 1 ? "1 day" : `${formatInteger(average.days)} days`);
    $("steps-average-line").hidden = !(daily && any && average.days > 0);
  } else {
    $("steps-average-line").hidden = true;
  }
  setFigure("distance-text", "distance-value", "distanceWalkingRunning", body.distance, formatKilometres, "km", "distance");
  setFigure("exercise-text", "exercise-value", "appleExerciseTime", body.exerciseTime, formatInteger, "min exercise", "exercise");
  if (!notShared("card-energy", ["activeEnergyBurned"], "Your active energy is", ["energy-value"])) {
    const any = number(body.activeEnergy) && body.activeEnergy > 0;
    setValue("energy-value", any ? body.activeEnergy : null, any ? formatInteger(body.activeEnergy) : "–");
    setPanel("card-energy", any ? "ok" : "empty", any ? "" : `${noData(ongoing)}: no active energy recorded ${phrase}.`);
    const average = averageOfDaysWithData(energyDays);
    setValue("energy-average", average.value, number(average.value) ? formatInteger(average.value) : "–");
    setValue("energy-days", average.days, average.days === 1 ? "1 day" : `${formatInteger(average.days)} days`);
    $("energy-average-line").hidden = !(daily && any && average.days > 0);
  } else {
    $("energy-average-line").hidden = true;
  }
}

/** The daily sums of a cumulative type from `start` to `end` (local midnights), in `unit`; days without data left out. */
async function dailySums(client, type, unit, start, end) {
  const body = await client.getJSON("/v1/statistics/collection", { type, start: start.toISOString(), end: end.toISOString(),
    interval: "P1D", timeZone, options: "cumulativeSum", unit });
  return body.buckets.filter((bucket) => number(bucket.sum)).map((bucket) => bucket.sum);
}

/**
 * A period's daily average over the days that have data, not over the days it has had: four weeks
 * of data in a year read as four weeks' average, not diluted by eleven empty months.
 */
function averageOfDaysWithData(sums) {
  if (!sums || sums.length === 0) return { value: null, days: 0 };
  return { value: sums.reduce((total, sum) => total + sum, 0) / sums.length, days: sums.length };
}

async function loadLatestHeartRate(client, current) {
  if (notShared("card-heart", ["heartRate"], "Your heart rate is", ["heart-value"])) { $("heart-time").textContent = ""; return; }
  const body = await client.getJSON("/v1/samples", { type: "heartRate", order: "desc", limit: "1" });
  if (!current()) return;
  const sample = body.samples[0];
  if (!sample) {
    state.latestHeartRate = null;
    setValue("heart-value", null, "–");
    $("heart-time").textContent = "";
    setPanel("card-heart", "empty", "No data yet: no heart-rate readings.");
    return;
  }
  showLatestHeartRate(sample);
}

function showLatestHeartRate(sample) {
  state.latestHeartRate = sample;
  setValue("heart-value", sample.value, formatInteger(sample.value));
  const taken = new Date(sample.end);
  const sameDay = dayKey(taken) === dayKey(new Date());
  $("heart-time").textContent = `at ${formatClock(taken)}${sameDay ? " today" : `, ${formatDay(dayKey(taken))}`}`;
  $("heart-time").dataset.instant = sample.end;
  setPanel("card-heart", "ok", "");
  evaluateZone(sample);
}

const STAGE_NAMES = { asleepCore: "Core", asleepDeep: "Deep", asleepREM: "REM", asleepUnspecified: "Asleep (unspecified)" };

async function loadSleep(client, current) {
  if (notShared("card-sleep", ["sleepAnalysis"], "Your sleep is", ["sleep-value"])) {
    $("sleep-stage-list").replaceChildren();
    return;
  }
  const day = shownDay();
  const windowStart = localTime(day, -1, 18);
  const windowEnd = localTime(day, 0, 12);
  const samples = await client.allSamples({ type: "sleepAnalysis", start: windowStart.toISOString(),
    end: windowEnd.toISOString(), limit: "10000" });
  if (!current()) return;
  const sleep = summarizeSleep(samples, windowStart, windowEnd);
  const stages = sleep.stages.map((s) => ({ ...s, label: `${STAGE_NAMES[s.stage]} ${formatHoursMinutes(s.seconds)}` }));
  drawSleepStages($("sleep-stages"), stages);
  const list = $("sleep-stage-list");
  list.replaceChildren(...stages.filter((s) => s.seconds > 0).map((s) => {
    const item = document.createElement("li");
    item.className = `stage-item stage-item-${s.stage}`;
    item.dataset.stage = s.stage;
    item.dataset.seconds = String(s.seconds);
    item.textContent = s.label;
    return item;
  }));
  if (sleep.totalSeconds > 0) {
    setValue("sleep-value", sleep.totalSeconds, formatHoursMinutes(sleep.totalSeconds));
    setPanel("card-sleep", "ok", pinned()
      ? `Between ${formatClock(windowStart)} the evening before and ${formatClock(windowEnd)} on ${formatDay(dayKey(day))}.`
      : `Between ${formatClock(windowStart)} yesterday and ${formatClock(windowEnd)} today.`);
  } else {
    setValue("sleep-value", null, "–");
    setPanel("card-sleep", "empty", pinned() ? `No data: no sleep recorded the night to ${formatDay(dayKey(day))}.`
      : "No data yet: no sleep recorded last night.");
  }
}

/** The seven nights ending this morning, each by the same rule as the sleep card. */
async function loadSleepWeek(client, current) {
  if (notShared("panel-sleep-week", ["sleepAnalysis"], "Your sleep is")) { $("sleep-nights").replaceChildren(); return; }
  const now = shownDay();
  const samples = await client.allSamples({ type: "sleepAnalysis", start: localTime(now, -7, 18).toISOString(),
    end: localTime(now, 0, 12).toISOString(), limit: "10000" });
  if (!current()) return;
  const nights = [];
  for (let offset = -6; offset <= 0; offset++) {
    const start = localTime(now, offset - 1, 18), end = localTime(now, offset, 12);
    nights.push({ day: dayKey(localMidnight(now, offset)), ...summarizeSleep(samples, start, end) });
  }
  const longest = Math.max(10 * 3600, ...nights.map((n) => n.totalSeconds));
  $("sleep-nights").replaceChildren(...nights.map((night) => {
    const item = document.createElement("li");
    item.className = "night";
    item.dataset.night = night.day;
    item.dataset.seconds = String(night.totalSeconds);
    const label = document.createElement("span");
    label.className = "night-day";
    label.textContent = formatWeekday(night.day);
    label.title = formatDay(night.day);
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("class", "night-bar");
    svg.setAttribute("role", "presentation");
    const stages = night.stages.map((s) => ({ ...s, label: `${STAGE_NAMES[s.stage]} ${formatHoursMinutes(s.seconds)}` }));
    drawSleepStages(svg, stages, (300 * night.totalSeconds) / longest);
    const total = document.createElement("span");
    total.className = night.totalSeconds > 0 ? "night-total" : "night-total night-total-empty";
    total.textContent = night.totalSeconds > 0 ? formatHoursMinutes(night.totalSeconds) : "no data";
    item.append(label, svg, total);
    item.setAttribute("aria-label", `Night to ${formatDay(night.day)}: ${night.totalSeconds > 0
      ? `${formatHoursMinutes(night.totalSeconds)} asleep (${stages.filter((s) => s.seconds > 0).map((s) => s.label).join(", ")})`
      : "no sleep recorded"}`);
    return item;
  }));
  const any = nights.some((n) => n.totalSeconds > 0);
  setPanel("panel-sleep-week", any ? "ok" : "empty", any ? "" : pinned()
    ? `No data: no sleep recorded in the 7 nights to ${formatDay(dayKey(now))}.` : "No data yet: no sleep recorded in the last 7 nights.");
}

/** The period chart: steps per hour (day), per day (week, month) or per month (year). */
async function loadPeriodChart(client, current) {
  const period = state.settings.period;
  const words = periodWords(period, shownDay(), localMidnight(new Date()));
  const { phrase, current: ongoing } = words;
  $("period-heading").textContent = `Steps by ${{ day: "hour", week: "day", month: "day", year: "month" }[period]}${words.current ? "," : ""} ${phrase}`;
  if (notShared("panel-period", ["stepCount"], "Your step count is")) return;
  const range = periodRange(period, shownDay());
  const body = await client.getJSON("/v1/statistics/collection", { type: "stepCount", start: range.start.toISOString(),
    end: range.end.toISOString(), interval: range.interval, timeZone, options: "cumulativeSum" });
  if (!current() || period !== state.settings.period) return;
  const now = new Date();
  const bars = body.buckets.map((bucket) => {
    const start = new Date(bucket.start), end = new Date(bucket.end);
    // Buckets start at local midnight with the zone's offset, so their first ten characters are the day.
    const day = String(bucket.start).slice(0, 10);
    const bar = { key: bucket.start, sum: number(bucket.sum) ? bucket.sum : undefined, current: start <= now && now < end,
      future: start > now };
    if (period === "day") return { ...bar, label: String(start.getHours()), title: `${formatClock(start)}–${formatClock(end)}` };
    if (period === "year") return { ...bar, label: formatMonth(day), title: `${formatMonth(day)} ${start.getFullYear()}` };
    return { ...bar, day, label: period === "week" ? formatWeekday(day) : String(dateFromDayKey(day).getDate()), title: formatDay(day) };
  });
  state.periodBars = bars;
  const any = bars.some((b) => b.sum !== undefined);
  setPanel("panel-period", any ? "ok" : "empty", any ? "" : `${noData(ongoing)}: no steps recorded ${phrase}.`);
  if (any) drawPeriodChart(); else clearChart($("chart-period"));
}

function drawPeriodChart() {
  if (state.periodBars && $("panel-period").dataset.state === "ok") drawBars($("chart-period"), state.periodBars, $("period-heading").textContent);
}

async function loadStepDays(client, current) {
  if (notShared("panel-trend", ["stepCount"], "Your step count is", ["trend-average"])) return;
  const first = localMidnight(shownDay(), -27);
  const end = localMidnight(shownDay(), 1);
  const body = await client.getJSON("/v1/statistics/collection", { type: "stepCount", start: first.toISOString(),
    end: end.toISOString(), interval: "P1D", timeZone, options: "cumulativeSum" });
  if (!current()) return;
  const sums = new Map(body.buckets.map((b) => [String(b.start).slice(0, 10), b.sum]));
  const days = [];
  for (let offset = -27; offset <= 0; offset++) {
    const key = dayKey(localMidnight(shownDay(), offset));
    const sum = sums.get(key);
    days.push({ day: key, sum: typeof sum === "number" ? sum : undefined });
  }
  state.stepDays = days;
  const withData = days.filter((d) => d.sum !== undefined);
  if (withData.length > 0) {
    const average = withData.reduce((total, d) => total + d.sum, 0) / withData.length;
    setValue("trend-average", average, formatInteger(average));
    setPanel("panel-trend", "ok", "");
    drawTrendChart();
  } else {
    setValue("trend-average", null, "–");
    clearChart($("chart-trend"));
    setPanel("panel-trend", "empty", `${noData()}: no steps in ${lastDays(28)}.`);
  }
}

function drawTrendChart() {
  if (state.stepDays && $("panel-trend").dataset.state === "ok") drawTrend($("chart-trend"), state.stepDays);
}

/** A daily average of a discrete type over 28 days as a line (resting heart rate, weight). */
function dailyReadingLoader({ panel, chart, latest, type, unit, what, noun, format, step, unitLabel }) {
  return async (client, current) => {
    if (notShared(panel, [type], what, [latest])) return;
    const first = localMidnight(shownDay(), -27);
    const body = await client.getJSON("/v1/statistics/collection", { type, start: first.toISOString(),
      end: localMidnight(shownDay(), 1).toISOString(), interval: "P1D", timeZone, options: "discreteAverage", unit });
    if (!current()) return;
    const averages = new Map(body.buckets.map((b) => [String(b.start).slice(0, 10), b.average]));
    const days = [];
    for (let offset = -27; offset <= 0; offset++) {
      const key = dayKey(localMidnight(shownDay(), offset));
      const value = averages.get(key);
      days.push({ day: key, value: number(value) ? value : undefined });
    }
    const withData = days.filter((d) => d.value !== undefined);
    state.readings[panel] = { chart, days, format, step, unit: unitLabel };
    if (withData.length === 0) {
      clearChart($(chart));
      setValue(latest, null, "–");
      setPanel(panel, "empty", `${noData()}: no ${noun} in ${lastDays(28)}.`);
      return;
    }
    const last = withData[withData.length - 1];
    setValue(latest, last.value, format(last.value));
    setPanel(panel, "ok", `Latest on ${formatDay(last.day)}.`);
    drawReadings(panel);
  };
}

function drawReadings(panel) {
  const shown = state.readings[panel];
  if (shown && $(panel).dataset.state === "ok") drawDailyLine($(shown.chart), shown.days, shown);
}

const loadResting = dailyReadingLoader({ panel: "panel-resting", chart: "chart-resting", latest: "resting-latest",
  type: "restingHeartRate", unit: "count/min", what: "Your resting heart rate is", noun: "resting heart rate", format: formatInteger, step: 2, unitLabel: "bpm" });
const loadWeight = dailyReadingLoader({ panel: "panel-weight", chart: "chart-weight", latest: "weight-latest",
  type: "bodyMass", unit: "kg", what: "Your weight is", noun: "weight", format: formatOneDecimal, step: 0.5, unitLabel: "kg" });

const RINGS = [
  { ring: "move", name: "Move", value: "activeEnergyBurned", goal: "activeEnergyBurnedGoal", unit: "kcal" },
  { ring: "exercise", name: "Exercise", value: "appleExerciseTime", goal: "appleExerciseTimeGoal", unit: "min" },
  { ring: "stand", name: "Stand", value: "appleStandHours", goal: "appleStandHoursGoal", unit: "h" },
];
const RING_TYPES = { move: "activeEnergyBurned", exercise: "appleExerciseTime", stand: "appleStandHour" };

/** HKActivitySummary rings for today, large, and the six days before it, small. */
async function loadRings(client, current) {
  if (notShared("panel-rings", Object.values(RING_TYPES), "Your activity is")) {
    $("ring-figures").replaceChildren();
    $("rings-week").replaceChildren();
    return;
  }
  const body = await client.getJSON("/v1/activity-summaries", { start: dayKey(localMidnight(shownDay(), -6)),
    end: dayKey(shownDay()), timeZone });
  if (!current()) return;
  const days = body.summaries.map((summary) => ({ day: summary.date,
    rings: RINGS.map((r) => ({ ring: r.ring, value: summary[r.value], goal: summary[r.goal] })) }));
  const any = days.some((d) => d.rings.some((r) => r.value > 0));
  const todayRings = days[days.length - 1];
  if (!any || !todayRings) {
    clearChart($("rings-today"));
    $("ring-figures").replaceChildren();
    $("rings-week").replaceChildren();
    setPanel("panel-rings", "empty", `${noData()}: no activity recorded in ${lastDays(7)}.`);
    return;
  }
  drawRings($("rings-today"), todayRings.rings, 140);
  $("rings-today").setAttribute("aria-label", `Activity rings ${onShownDay()}: ` + RINGS.map((r, i) =>
    `${r.name} ${formatInteger(todayRings.rings[i].value)} of ${formatInteger(todayRings.rings[i].goal)} ${r.unit}`).join(", "));
  $("ring-figures").replaceChildren(...RINGS.map((r, index) => {
    const figure = todayRings.rings[index];
    const item = document.createElement("li");
    item.className = `ring-figure ring-figure-${r.ring}`;
    item.dataset.ring = r.ring;
    item.dataset.value = String(figure.value);
    item.dataset.goal = String(figure.goal);
    item.textContent = shared(RING_TYPES[r.ring])
      ? `${r.name} ${formatInteger(figure.value)}/${formatInteger(figure.goal)} ${r.unit}` : `${r.name}: not shared`;
    return item;
  }));
  $("rings-week").replaceChildren(...days.map((d) => {
    const item = document.createElement("li");
    item.dataset.ringDay = d.day;
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("class", "rings rings-small");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", `${formatDay(d.day)}: ` + RINGS.map((r, i) =>
      `${r.name} ${formatInteger(d.rings[i].value)} of ${formatInteger(d.rings[i].goal)} ${r.unit}`).join(", "));
    drawRings(svg, d.rings, 44);
    const label = document.createElement("span");
    label.textContent = formatWeekday(d.day);
    item.append(svg, label);
    return item;
  }));
  setPanel("panel-rings", "ok", pinned() ? `${formatDay(dayKey(shownDay()))}, and the six days before.` : "Today, and the six days before.");
}

const ACTIVITY_NAMES = {
  running: "Running", cycling: "Cycling", walking: "Walking", hiking: "Hiking", swimming: "Swimming", yoga: "Yoga",
  traditionalStrengthTraining: "Strength training", functionalStrengthTraining: "Functional strength",
  highIntensityIntervalTraining: "HIIT", elliptical: "Elliptical", rowing: "Rowing",
};

function activityName(type) {
  return ACTIVITY_NAMES[type] || type.replace(/([a-z])([A-Z])/g, "$1 $2").replace(/^./, (c) => c.toUpperCase());
}

const WORKOUTS_SHOWN = 8;

/** The last 28 days of workouts, newest first, with heart rate and time in the chosen zone. */
async function loadWorkouts(client, current) {
  if (notShared("panel-workouts", ["workout"], "Your workouts are")) { $("workout-list").replaceChildren(); return; }
  const parameters = { start: localMidnight(shownDay(), -27).toISOString(), end: localMidnight(shownDay(), 1).toISOString(),
    goal: state.settings.goal, limit: "50" };
  if (state.settings.age) parameters.age = String(state.settings.age);
  const body = await client.getJSON("/v1/workouts", parameters);
  if (!current()) return;
  const zone = body.zone;
  $("workout-list").replaceChildren(...body.workouts.slice(0, WORKOUTS_SHOWN).map((workout) => {
    const item = document.createElement("li");
    item.className = "workout";
    item.dataset.workout = workout.uuid;
    const start = new Date(workout.start);
    const title = document.createElement("p");
    title.className = "workout-title";
    const name = document.createElement("strong");
    name.textContent = activityName(workout.activityType);
    const when = document.createElement("span");
    when.className = "workout-when";
    when.textContent = `${formatDay(dayKey(start))}, ${formatClock(start)}`;
    title.append(name, " ", when);
    const facts = document.createElement("dl");
    facts.className = "workout-facts";
    const fact = (key, label, value, text) => {
      const wrapper = document.createElement("div");
      wrapper.dataset.fact = key;
      wrapper.dataset.value = value === null || value === undefined ? "" : String(value);
      const term = document.createElement("dt");
      term.textContent = label;
      const detail = document.createElement("dd");
      detail.textContent = text;
      wrapper.append(term, detail);
      facts.append(wrapper);
    };
    fact("duration", "Duration", workout.duration, formatMinutesLong(workout.duration));
    fact("distance", "Distance", workout.totalDistance, number(workout.totalDistance) ? `${formatKilometres(workout.totalDistance)} km` : "–");
    fact("energy", "Energy", workout.totalEnergyBurned, number(workout.totalEnergyBurned) ? `${formatInteger(workout.totalEnergyBurned)} kcal` : "–");
    const heart = workout.heartRate;
    fact("heartRate", "Avg heart rate", heart ? heart.average : null,
      heart ? `${formatInteger(heart.average)} bpm` : shared("heartRate") ? "no readings" : "not shared");
    fact("timeInZone", zone ? `In zone ${formatInteger(zone.low)}–${formatInteger(zone.high)}` : "In zone", workout.timeInZone,
      number(workout.timeInZone) ? formatMinutesLong(workout.timeInZone) : "no zone");
    item.append(title, facts);
    return item;
  }));
  const count = body.workouts.length;
  const shownNote = count > WORKOUTS_SHOWN ? `The ${WORKOUTS_SHOWN} most recent of ${count}. ` : "";
  setPanel("panel-workouts", count ? "ok" : "empty", count === 0 ? `${noData()}: no workouts in ${lastDays(28)}.`
    : shownNote + (zone ? `Time in zone is for your ${$("goal-select").selectedOptions[0]?.textContent.toLowerCase() || state.settings.goal} zone.`
      : "Time in zone needs your age: enter it above."));
}

async function loadHeartRateDay(client, current) {
  if (notShared("panel-heart", ["heartRate"], "Your heart rate is")) return;
  const start = shownDay();
  const end = localMidnight(start, 1);
  const samples = await client.allSamples({ type: "heartRate", start: start.toISOString(), end: end.toISOString(),
    limit: "10000" });
  if (!current()) return;
  state.heartSamples = samples;
  state.heartDay = { start, end };
  setPanel("panel-heart", samples.length ? "ok" : "empty", samples.length ? "" : `${noData()}: no heart-rate readings ${onShownDay()}.`);
  drawHeartChart();
}

function drawHeartChart() {
  if (!state.heartSamples || !state.heartDay) return;
  if (state.heartSamples.length === 0) { clearChart($("chart-heart")); return; }
  drawHeartRate($("chart-heart"), state.heartSamples, state.heartDay.start, state.heartDay.end, state.zone, new Date());
}

/**
 * The target zone: from the age typed in (an override), else from the date of birth the server
 * has (the zones endpoint works it out when no age is sent).
 */
async function loadZone(client, current) {
  const range = $("zone-range");
  const override = state.settings.age;
  // "Use my stored age" only where a stored date of birth could be read.
  $("age-reset").hidden = !override || !shared("dateOfBirth");
  try {
    const parameters = { goal: state.settings.goal };
    if (override) parameters.age = String(override);
    const body = await client.getJSON("/v1/heart-rate/zones", parameters);
    if (!current()) return;
    state.zone = { low: body.low, high: body.high };
    range.dataset.state = "ok";
    delete range.dataset.reason;
    range.dataset.low = String(body.low);
    range.dataset.high = String(body.high);
    range.dataset.age = String(body.age);
    range.dataset.ageFrom = override ? "override" : "dateOfBirth";
    if (!override) $("age-input").placeholder = String(body.age);
    const method = body.method === "karvonen" ? "Karvonen, from your resting heart rate" : "percent of maximum";
    const goalName = $("goal-select").selectedOptions[0]?.textContent || state.settings.goal;
    const age = override ? `age ${body.age}, as entered` : `age ${body.age}, from your date of birth`;
    range.textContent = `${goalName} zone: ${formatInteger(body.low)}–${formatInteger(body.high)} bpm ` +
      `(${age}; maximum ${formatInteger(body.maxHeartRate)} bpm, ${method}).`;
  } catch (error) {
    if (!current()) return;
    state.zone = null;
    if (error instanceof APIFailure && error.kind === "unavailable") {
      range.dataset.state = "unavailable";
      range.textContent = "Target zones are not available on this server (GET /v1/heart-rate/zones answered 404).";
    } else if (error instanceof APIFailure && error.kind === "http" && !override) {
      // No age sent and no date of birth to use: ask for one, saying whether none is stored or the
      // token may not read it (as the cards tell "No data yet" from "not shared with this app").
      range.dataset.state = "none";
      const reason = !state.grant ? "unknown" : shared("dateOfBirth") ? "empty" : "forbidden";
      range.dataset.reason = reason;
      range.textContent = "Enter your age to see your target zone (" + {
        empty: "no date of birth is stored yet",
        forbidden: "your date of birth is not shared with this app",
        unknown: "no date of birth is stored, or it is not shared with this app",
      }[reason] + ").";
    } else if (error instanceof APIFailure && error.kind === "http") {
      range.dataset.state = "error";
      range.textContent = `No zone: ${error.detail}`;
    } else {
      // The panel says what went wrong; the line must not keep saying "Loading…".
      range.dataset.state = "error";
      range.textContent = error instanceof APIFailure && error.kind === "network"
        ? "No zone: the server could not be reached." : "No zone could be shown.";
      throw error;
    }
  }
  drawHeartChart();
  evaluateZone(state.latestHeartRate);
}

const LOADERS = {
  summary: [["card-steps", "card-energy"], loadSummary],
  periodChart: [["panel-period"], loadPeriodChart],
  latestHeartRate: [["card-heart"], loadLatestHeartRate],
  sleep: [["card-sleep"], loadSleep],
  sleepWeek: [["panel-sleep-week"], loadSleepWeek],
  stepDays: [["panel-trend"], loadStepDays],
  rings: [["panel-rings"], loadRings],
  heartRateDay: [["panel-heart"], loadHeartRateDay],
  zone: [["panel-heart"], loadZone],
  workouts: [["panel-workouts"], loadWorkouts],
  resting: [["panel-resting"], loadResting],
  weight: [["panel-weight"], loadWeight],
};

const LOADERS_FOR_TYPE = {
  stepCount: ["summary", "periodChart", "stepDays"],
  distanceWalkingRunning: ["summary"],
  appleExerciseTime: ["summary", "rings"],
  activeEnergyBurned: ["summary", "rings"],
  appleStandHour: ["rings"],
  heartRate: ["latestHeartRate", "heartRateDay", "workouts"],
  restingHeartRate: ["zone", "resting", "workouts"],
  sleepAnalysis: ["sleep", "sleepWeek"],
  workout: ["workouts"],
  bodyMass: ["weight"],
};

function refresh(names) {
  return Promise.all([...names].map((name) => run(...LOADERS[name])));
}

function refreshAll() {
  state.shownDay = dayKey(new Date());
  showDayWords();
  return refresh(Object.keys(LOADERS));
}

// A new local day moves every "today" figure, stream or not.
function watchTheDay() {
  clearInterval(state.dayTimer);
  state.dayTimer = setInterval(() => {
    if (state.client && dayKey(new Date()) !== state.shownDay) refreshAll();
  }, 30 * 1000);
}

// ---------------------------------------------------------------- server down

function serverDown() {
  $("banner").hidden = false;
  $("banner").dataset.problem = "server-down";
  $("banner-text").textContent = `healthd cannot be reached at ${location.origin}. Trying again every ${SERVER_DOWN_RETRY_MS / 1000} s.`;
  if (!state.retryTimer) state.retryTimer = setTimeout(retryNow, SERVER_DOWN_RETRY_MS);
}

function hideBanner() {
  $("banner").hidden = true;
  $("banner").dataset.problem = "none";
  clearTimeout(state.retryTimer);
  state.retryTimer = null;
}

async function retryNow() {
  clearTimeout(state.retryTimer);
  state.retryTimer = null;
  if (!state.client) return;
  $("banner").dataset.problem = "none";
  await refreshAll();
  if ($("banner").dataset.problem === "none") {
    hideBanner();
    if (!state.stream && !state.pollTimer) startLive();
  }
}

// ---------------------------------------------------------------- heart-rate zone alert

function evaluateZone(sample) {
  const band = state.sessionZone || state.zone;
  if (!band || !sample || Date.now() - new Date(sample.end).getTime() > LIVE_READING_AGE_MS) {
    setAlert("none");
    return;
  }
  const value = sample.value;
  // Below a zone only matters while training for it: a workout session's zone, or an age entered
  // for the purpose. The band from the stored date of birth warns only above it (a resting heart
  // is always "below" a fat-burn zone, and a standing red bar would mean nothing).
  const trainingFor = state.sessionZone !== null || state.settings.age !== null;
  if (value < band.low && !trainingFor) { setAlert("in", value); return; }
  setAlert(value < band.low ? "below" : value > band.high ? "above" : "in", value);
}

/** state: "below" | "above" raise the alert; "in" | "none" clear it. */
function setAlert(newState, bpm) {
  const alert = $("zone-alert");
  const previous = state.alertState;
  state.alertState = newState;
  alert.dataset.state = newState;
  if (newState === "below" || newState === "above") {
    const band = state.sessionZone || state.zone;
    const zone = band ? ` (${formatInteger(band.low)}–${formatInteger(band.high)} bpm)` : "";
    alert.textContent = `Heart rate ${formatInteger(bpm)} bpm is ${newState} your target zone${zone}. ` +
      (newState === "above" ? "Ease off." : "Pick up the pace.");
    alert.hidden = false;
    if (previous !== newState) beep(newState);
  } else {
    alert.textContent = "";
    alert.hidden = true;
  }
}

function beep(direction) {
  if (!state.settings.sound || !state.audio) return;
  const context = state.audio;
  const now = context.currentTime;
  // Two short tones: rising when too low, falling when too high.
  const tones = direction === "above" ? [880, 660] : [660, 880];
  tones.forEach((frequency, index) => {
    const oscillator = context.createOscillator();
    const gain = context.createGain();
    oscillator.frequency.value = frequency;
    gain.gain.setValueAtTime(0.0001, now + index * 0.2);
    gain.gain.exponentialRampToValueAtTime(0.2, now + index * 0.2 + 0.02);
    gain.gain.exponentialRampToValueAtTime(0.0001, now + index * 0.2 + 0.18);
    oscillator.connect(gain).connect(context.destination);
    oscillator.start(now + index * 0.2);
    oscillator.stop(now + index * 0.2 + 0.2);
  });
}

// ---------------------------------------------------------------- live updates

function setLiveStatus(mode, text) {
  const status = $("live-status");
  status.dataset.live = mode;
  status.textContent = text;
}

function startLive() {
  stopLive();
  const stream = { controller: null, lastEventID: "", delay: 1000, stopped: false, silenceTimer: null, pending: new Set(), debounce: null };
  state.stream = stream;
  followStream(stream);
}

function stopLive() {
  const stream = state.stream;
  if (stream) {
    stream.stopped = true;
    clearTimeout(stream.silenceTimer);
    clearTimeout(stream.debounce);
    clearTimeout(stream.reconnectTimer);
    if (stream.controller) stream.controller.abort();
  }
  state.stream = null;
  clearInterval(state.pollTimer);
  state.pollTimer = null;
}

function pollInstead(reason) {
  state.stream = null;
  setLiveStatus("polling", `${reason}; refreshing every ${POLL_MS / 1000} s`);
  clearInterval(state.pollTimer);
  state.pollTimer = setInterval(() => { if (state.client) refreshAll(); }, POLL_MS);
}

async function followStream(stream) {
  const client = state.client;
  if (!client || stream.stopped) return;
  stream.controller = new AbortController();
  const armSilenceTimer = () => {
    clearTimeout(stream.silenceTimer);
    stream.silenceTimer = setTimeout(() => stream.controller.abort(), STREAM_SILENCE_MS);
  };
  setLiveStatus("connecting", stream.lastEventID ? "Reconnecting…" : "Connecting…");
  try {
    const headers = { Accept: "text/event-stream" };
    if (stream.lastEventID) headers["Last-Event-ID"] = stream.lastEventID;
    const query = new URLSearchParams({ types: STREAM_TYPES.join(",") }).toString();
    const response = await client.request(`/v1/changes/stream?${query}`, { headers, signal: stream.controller.signal });
    setLiveStatus("live", "Live");
    hideBanner();
    armSilenceTimer();
    const parser = new EventStreamParser((event) => {
      stream.delay = 1000;
      if (event.id) stream.lastEventID = event.id;
      onStreamEvent(stream, event);
    });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      armSilenceTimer();
      parser.push(value);
    }
    if (parser.retry !== null) stream.delay = parser.retry;
  } catch (error) {
    if (stream.stopped) return;
    if (error instanceof APIFailure) {
      if (error.kind === "unauthorized") { badToken(); return; }
      if (error.kind === "unavailable") { pollInstead("Live updates are not available on this server"); return; }
      if (error.kind === "network") serverDown();
    }
    // Anything else (a dropped connection, the silence timer) falls through to a reconnect.
  } finally {
    clearTimeout(stream.silenceTimer);
  }
  if (stream.stopped) return;
  const seconds = Math.round(stream.delay / 1000);
  setLiveStatus("reconnecting", `Connection lost; reconnecting in ${seconds} s`);
  stream.reconnectTimer = setTimeout(() => followStream(stream), stream.delay);
  stream.delay = Math.min(stream.delay * 2, 30 * 1000);
}

function onStreamEvent(stream, event) {
  let payload;
  try {
    payload = JSON.parse(event.data);
  } catch {
    return; // A malformed event changes nothing on screen.
  }
  if (event.type === "zone") {
    // The server's own judgement during a workout session.
    if (["below", "in", "above"].includes(payload.state) && typeof payload.heartRate === "number") {
      const zone = payload.zone;
      if (zone && typeof zone.low === "number" && typeof zone.high === "number") {
        state.sessionZone = { low: zone.low, high: zone.high };
      }
      setAlert(payload.state, payload.heartRate);
    }
    return;
  }
  if (event.type !== "change") return;
  const added = Array.isArray(payload.added) ? payload.added : [];
  const deleted = Array.isArray(payload.deleted) ? payload.deleted : [];
  // Ending a session saves its workout: back to the age/goal band.
  if (added.some((s) => s.type === "workout")) state.sessionZone = null;
  const newestHeartRate = added.filter((s) => s.type === "heartRate")
    .sort((a, b) => new Date(b.end) - new Date(a.end))[0];
  if (newestHeartRate && (!state.latestHeartRate || new Date(newestHeartRate.end) >= new Date(state.latestHeartRate.end))) {
    showLatestHeartRate(newestHeartRate);
  }
  for (const item of [...added, ...deleted]) {
    for (const name of LOADERS_FOR_TYPE[item.type] || []) stream.pending.add(name);
  }
  // A burst of events (a phone syncing a day) refreshes each figure once.
  clearTimeout(stream.debounce);
  stream.debounce = setTimeout(() => {
    const names = stream.pending;
    stream.pending = new Set();
    refresh(names);
  }, 300);
}

// ---------------------------------------------------------------- wiring

function wire() {
  $("time-zone").textContent = timeZone;
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token-input").value.trim();
    if (!token) return;
    localStorage.setItem(TOKEN_KEY, token);
    state.mode = "token";
    openDashboard(token);
  });
  $("forget-token").addEventListener("click", () => {
    localStorage.removeItem(TOKEN_KEY);
    state.mode = null;
    showTokenPanel("Paste an access token that may read your data.");
  });
  wireSignIn(signedIn);
  wireActivation(async (name) => {
    showView("signin");
    if (name) $("signin-name").value = name;
    showMessage("Your account is active. Sign in with your name and the password you chose.");
    history.replaceState(null, "", location.pathname + location.search);
    showSignIn("");
  });
  wireSheet(sessionEnded, (code) => {
    const next = `#/authorize?code=${code}`;
    if (location.hash === next) route();
    else location.hash = next;
  });
  wireOwnData(sessionEnded, (answer) => {
    state.mode = null;
    state.personName = "";
    history.replaceState(null, "", location.pathname + location.search);
    closeDashboard();
    showView("start");
    showMessage(describeErasure(answer));
  });
  wireAccount(sessionEnded);
  $("sign-out").addEventListener("click", async () => {
    await signOut();
    state.mode = null;
    state.personName = "";
    history.replaceState(null, "", location.pathname + location.search);
    closeDashboard();
    showView("start");
    showMessage("You are signed out.");
    showSignIn("");
  });
  $("access-range").addEventListener("change", () => loadAccess(sessionEnded, timeZone));
  window.addEventListener("hashchange", () => {
    showMessage("");
    route();
  });
  $("retry").addEventListener("click", retryNow);
  $("show-today").addEventListener("click", () => {
    state.pinnedDay = null;
    history.replaceState(null, "", location.pathname + location.search);
    if (state.client) refreshAll();
  });
  const age = $("age-input");
  const goal = $("goal-select");
  if (state.settings.age) age.value = String(state.settings.age);
  goal.value = state.settings.goal;
  $("zone-form").addEventListener("submit", (event) => event.preventDefault());
  // An age typed in overrides the stored date of birth; an empty box goes back to it.
  age.addEventListener("change", () => {
    const value = Number(age.value);
    state.settings.age = Number.isInteger(value) && value >= 1 && value <= 120 ? value : null;
    age.setAttribute("aria-invalid", age.value !== "" && !state.settings.age ? "true" : "false");
    saveSettings();
    refresh(["zone", "workouts"]);
  });
  $("age-reset").addEventListener("click", () => {
    age.value = "";
    age.setAttribute("aria-invalid", "false");
    state.settings.age = null;
    saveSettings();
    refresh(["zone", "workouts"]);
  });
  goal.addEventListener("change", () => {
    state.settings.goal = goal.value;
    saveSettings();
    refresh(["zone", "workouts"]);
  });
  for (const button of document.querySelectorAll("#period-switch .period")) {
    button.addEventListener("click", () => choosePeriod(button.dataset.period));
  }
  showPeriodChoice();
  $("sound-toggle").addEventListener("change", (event) => {
    state.settings.sound = event.target.checked;
    if (state.settings.sound && !state.audio && typeof AudioContext === "function") state.audio = new AudioContext();
    if (state.audio && state.audio.state === "suspended") state.audio.resume();
  });
}

// Charts draw in their own pixel width (readable text on a phone), so a new width redraws them.
let resizeTimer = null;
window.addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    drawPeriodChart();
    drawTrendChart();
    drawHeartChart();
    for (const panel of Object.keys(state.readings)) drawReadings(panel);
  }, 150);
});

// A page the browser keeps in its back/forward cache keeps its fetches open: the change stream
// would hold one of the browser's six connections to this server per visit, and the seventh page
// would wait for a connection forever. So the stream stops when the page is hidden that way, and
// a page shown again from the cache reloads its figures (it missed the changes) and follows anew.
window.addEventListener("pagehide", () => stopLive());
window.addEventListener("pageshow", (event) => {
  if (!event.persisted || !state.client) return;
  refreshAll().then(() => {
    if (state.client) startLive();
  });
});

function showPeriodChoice() {
  for (const button of document.querySelectorAll("#period-switch .period")) {
    button.setAttribute("aria-pressed", String(button.dataset.period === state.settings.period));
  }
}

function choosePeriod(period) {
  if (!PERIODS.includes(period) || period === state.settings.period) return;
  state.settings.period = period;
  saveSettings();
  showPeriodChoice();
  refresh(["summary", "periodChart"]);
}

async function main() {
  loadSettings();
  adoptFragment();
  wire();
  // A pasted token (a wall display, the demo's link) is used as before; otherwise a signed-in
  // person's cookie, if the browser holds a live one.
  if (localStorage.getItem(TOKEN_KEY)) {
    state.mode = "token";
  } else {
    try {
      const me = await whoAmI();
      if (me) {
        state.mode = "session";
        state.personName = me.name;
      }
    } catch {
      // The server could not be reached: sign-in says so when tried.
    }
  }
  await route();
}

main();
