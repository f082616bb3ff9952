// The dashboard: a token, one small loader per card or chart, and a live change stream that
// re-runs the loaders its changes affect. A loader that meets a missing endpoint (404) marks only
// its own card "not available"; a 401 sends the person back to the token form; a network error
// shows the server-down banner with a retry.

import { APIFailure, makeClient } from "./api.js";
import { EventStreamParser } from "./sse.js";
import { summarizeSleep } from "./sleep.js";
import { drawDailyBars, drawTrend, drawHeartRate, drawSleepStages } from "./charts.js";
import {
  formatInteger, formatKilometres, formatHoursMinutes, formatClock, formatDay,
  localMidnight, localTime, dayKey,
} from "./format.js";

const TOKEN_KEY = "healthd.token";
const SETTINGS_KEY = "healthd.dashboard.settings";
const STREAM_TYPES = ["stepCount", "distanceWalkingRunning", "appleExerciseTime", "activeEnergyBurned",
  "heartRate", "restingHeartRate", "sleepAnalysis", "workout"];
// A reading older than this is history, not "live": it never raises the zone alert.
const LIVE_READING_AGE_MS = 10 * 60 * 1000;
// The stream sends a comment at least every 15 s; three missed ones mean a dead connection.
const STREAM_SILENCE_MS = 45 * 1000;
const POLL_MS = 60 * 1000;
const SERVER_DOWN_RETRY_MS = 15 * 1000;

const timeZone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
const $ = (id) => document.getElementById(id);

const state = {
  client: null,
  generation: 0, // bumped when the token changes, so answers for an old token are dropped
  settings: { age: null, goal: "fatBurn", sound: false },
  zone: null,
  // The target zone of a running workout session, from its `event: zone`; while set it wins over
  // the age/goal band, so the page and the server judge readings alike. A saved workout clears it.
  sessionZone: null,
  latestHeartRate: null,
  heartSamples: null,
  heartDay: null,
  stepDays: null,
  alertState: "none",
  audio: null,
  stream: null,
  pollTimer: null,
  dayTimer: null,
  retryTimer: null,
  shownDay: null,
};

// ---------------------------------------------------------------- token and settings

/** Takes `#token=...` (and optional `age=`, `goal=`) from the address, stores them, and removes them. */
function adoptFragment() {
  if (!location.hash || location.hash.length < 2) return;
  const fragment = new URLSearchParams(location.hash.slice(1));
  const token = fragment.get("token");
  if (token) localStorage.setItem(TOKEN_KEY, token.trim());
  const age = Number(fragment.get("age"));
  if (fragment.has("age") && Number.isInteger(age) && age >= 1 && age <= 120) state.settings.age = age;
  const goal = fragment.get("goal");
  if (["fatBurn", "cardio", "peak"].includes(goal)) state.settings.goal = goal;
  saveSettings();
  // The token must not stay in the address bar, the history or a bookmark.
  history.replaceState(null, "", location.pathname + location.search);
}

function loadSettings() {
  try {
    const saved = JSON.parse(localStorage.getItem(SETTINGS_KEY) || "{}");
    if (Number.isInteger(saved.age) && saved.age >= 1 && saved.age <= 120) state.settings.age = saved.age;
    if (["fatBurn", "cardio", "peak"].includes(saved.goal)) state.settings.goal = saved.goal;
    // Sound starts off on every visit: browsers only allow audio after a gesture anyway.
  } catch {
    localStorage.removeItem(SETTINGS_KEY);
  }
}

function saveSettings() {
  localStorage.setItem(SETTINGS_KEY, JSON.stringify({ age: state.settings.age, goal: state.settings.goal }));
}

function showTokenPanel(message) {
  stopLive();
  $("dashboard").hidden = true;
  $("forget-token").hidden = true;
  $("token-panel").hidden = false;
  if (message) $("token-message").textContent = message;
  $("token-input").value = "";
  $("token-input").focus();
}

function badToken() {
  localStorage.removeItem(TOKEN_KEY);
  state.client = null;
  state.generation++;
  hideBanner();
  setLiveStatus("off", "Not connected");
  showTokenPanel("The server did not accept that token (401): it may be mistyped or revoked. Paste a valid token.");
}

function openDashboard(token) {
  state.client = makeClient(token);
  state.generation++;
  $("token-panel").hidden = true;
  $("dashboard").hidden = false;
  $("forget-token").hidden = false;
  refreshAll().then(() => {
    document.body.dataset.loaded = "true";
    if (state.client) startLive();
  });
  watchTheDay();
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

function today() {
  return localMidnight(new Date());
}

async function loadSummary(client, current) {
  const body = await client.getJSON("/v1/summary", { date: dayKey(today()), timeZone, period: "day" });
  if (!current()) return;
  const number = (v) => typeof v === "number" && Number.isFinite(v);
  if (number(body.steps)) {
    setValue("steps-value", body.steps, formatInteger(body.steps));
    setPanel("card-steps", "ok", body.steps === 0 ? "No steps recorded yet today." : "");
  } else {
    setValue("steps-value", null, "–");
    setPanel("card-steps", "empty", "No steps recorded yet today.");
  }
  setValue("distance-value", number(body.distance) ? body.distance : null, number(body.distance) ? formatKilometres(body.distance) : "–");
  setValue("exercise-value", number(body.exerciseTime) ? body.exerciseTime : null,
    number(body.exerciseTime) ? formatInteger(body.exerciseTime) : "–");
  if (number(body.activeEnergy)) {
    setValue("energy-value", body.activeEnergy, formatInteger(body.activeEnergy));
    setPanel("card-energy", "ok", "");
  } else {
    setValue("energy-value", null, "–");
    setPanel("card-energy", "empty", "No active energy recorded yet today.");
  }
}

async function loadLatestHeartRate(client, current) {
  const body = await client.getJSON("/v1/samples", { type: "heartRate", order: "desc", limit: "1" });
  if (!current()) return;
  const sample = body.samples[0];
  if (!sample) {
    state.latestHeartRate = null;
    setValue("heart-value", null, "–");
    $("heart-time").textContent = "";
    setPanel("card-heart", "empty", "No heart-rate readings yet.");
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

async function loadSleep(client, current) {
  const now = new Date();
  const windowStart = localTime(now, -1, 18);
  const windowEnd = localTime(now, 0, 12);
  const samples = await client.allSamples({ type: "sleepAnalysis", start: windowStart.toISOString(),
    end: windowEnd.toISOString(), limit: "10000" });
  if (!current()) return;
  const sleep = summarizeSleep(samples, windowStart, windowEnd);
  const names = { asleepCore: "Core", asleepDeep: "Deep", asleepREM: "REM", asleepUnspecified: "Asleep (unspecified)" };
  const stages = sleep.stages.map((s) => ({ ...s, label: `${names[s.stage]} ${formatHoursMinutes(s.seconds)}` }));
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
    setPanel("card-sleep", "ok", `Between ${formatClock(windowStart)} yesterday and ${formatClock(windowEnd)} today.`);
  } else {
    setValue("sleep-value", null, "–");
    setPanel("card-sleep", "empty", "No sleep recorded last night.");
  }
}

async function loadStepDays(client, current) {
  const first = localMidnight(new Date(), -27);
  const end = localMidnight(new Date(), 1);
  const body = await client.getJSON("/v1/statistics/collection", { type: "stepCount", start: first.toISOString(),
    end: end.toISOString(), interval: "P1D", timeZone, options: "cumulativeSum" });
  if (!current()) return;
  // Buckets start at local midnight with the zone's offset, so their first ten characters are the day.
  const sums = new Map(body.buckets.map((b) => [String(b.start).slice(0, 10), b.sum]));
  const days = [];
  for (let offset = -27; offset <= 0; offset++) {
    const key = dayKey(localMidnight(new Date(), offset));
    const sum = sums.get(key);
    days.push({ day: key, sum: typeof sum === "number" ? sum : undefined });
  }
  state.stepDays = days;
  drawStepCharts();
  const week = days.slice(-7);
  const withData = days.filter((d) => d.sum !== undefined);
  if (withData.length > 0) {
    const average = withData.reduce((total, d) => total + d.sum, 0) / withData.length;
    setValue("trend-average", average, formatInteger(average));
  } else {
    setValue("trend-average", null, "–");
  }
  const weekHasData = week.some((d) => d.sum !== undefined);
  setPanel("panel-week", weekHasData ? "ok" : "empty", weekHasData ? "" : "No steps in the last 7 days.");
  setPanel("panel-trend", withData.length ? "ok" : "empty", withData.length ? "" : "No steps in the last 28 days.");
}

function drawStepCharts() {
  if (!state.stepDays) return;
  drawDailyBars($("chart-week"), state.stepDays.slice(-7), dayKey(today()));
  drawTrend($("chart-trend"), state.stepDays);
}

async function loadHeartRateDay(client, current) {
  const start = today();
  const end = localMidnight(new Date(), 1);
  const samples = await client.allSamples({ type: "heartRate", start: start.toISOString(), end: end.toISOString(),
    limit: "10000" });
  if (!current()) return;
  state.heartSamples = samples;
  state.heartDay = { start, end };
  drawHeartChart();
  setPanel("panel-heart", samples.length ? "ok" : "empty", samples.length ? "" : "No heart-rate readings today.");
}

function drawHeartChart() {
  if (!state.heartSamples || !state.heartDay) return;
  drawHeartRate($("chart-heart"), state.heartSamples, state.heartDay.start, state.heartDay.end, state.zone, new Date());
}

async function loadZone(client, current) {
  const range = $("zone-range");
  if (!state.settings.age) {
    state.zone = null;
    range.dataset.state = "none";
    range.textContent = "Enter your age to see your target zone.";
    drawHeartChart();
    evaluateZone(state.latestHeartRate);
    return;
  }
  try {
    const body = await client.getJSON("/v1/heart-rate/zones", { age: String(state.settings.age), goal: state.settings.goal });
    if (!current()) return;
    state.zone = { low: body.low, high: body.high };
    range.dataset.state = "ok";
    range.dataset.low = String(body.low);
    range.dataset.high = String(body.high);
    const method = body.method === "karvonen" ? "Karvonen, from your resting heart rate" : "percent of maximum";
    const goalName = $("goal-select").selectedOptions[0]?.textContent || state.settings.goal;
    range.textContent = `${goalName} zone: ${formatInteger(body.low)}–${formatInteger(body.high)} bpm ` +
      `(maximum ${formatInteger(body.maxHeartRate)} bpm, ${method}).`;
  } catch (error) {
    if (!current()) return;
    state.zone = null;
    if (error instanceof APIFailure && error.kind === "unavailable") {
      range.dataset.state = "unavailable";
      range.textContent = "Target zones are not available on this server (GET /v1/heart-rate/zones answered 404).";
    } else if (error instanceof APIFailure && error.kind === "http") {
      range.dataset.state = "error";
      range.textContent = `No zone: ${error.detail}`;
    } else {
      throw error;
    }
  }
  drawHeartChart();
  evaluateZone(state.latestHeartRate);
}

const LOADERS = {
  summary: [["card-steps", "card-energy"], loadSummary],
  latestHeartRate: [["card-heart"], loadLatestHeartRate],
  sleep: [["card-sleep"], loadSleep],
  stepDays: [["panel-week", "panel-trend"], loadStepDays],
  heartRateDay: [["panel-heart"], loadHeartRateDay],
  zone: [["panel-heart"], loadZone],
};

const LOADERS_FOR_TYPE = {
  stepCount: ["summary", "stepDays"],
  distanceWalkingRunning: ["summary"],
  appleExerciseTime: ["summary"],
  activeEnergyBurned: ["summary"],
  heartRate: ["latestHeartRate", "heartRateDay"],
  restingHeartRate: ["zone"],
  sleepAnalysis: ["sleep"],
};

function refresh(names) {
  return Promise.all([...names].map((name) => run(...LOADERS[name])));
}

function refreshAll() {
  state.shownDay = dayKey(new Date());
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
    openDashboard(token);
  });
  $("forget-token").addEventListener("click", () => {
    localStorage.removeItem(TOKEN_KEY);
    state.client = null;
    state.generation++;
    hideBanner();
    setAlert("none");
    setLiveStatus("off", "Not connected");
    showTokenPanel("Paste an access token that may read your data.");
  });
  $("retry").addEventListener("click", retryNow);
  const age = $("age-input");
  const goal = $("goal-select");
  if (state.settings.age) age.value = String(state.settings.age);
  goal.value = state.settings.goal;
  $("zone-form").addEventListener("submit", (event) => event.preventDefault());
  age.addEventListener("change", () => {
    const value = Number(age.value);
    state.settings.age = Number.isInteger(value) && value >= 1 && value <= 120 ? value : null;
    age.setAttribute("aria-invalid", age.value !== "" && !state.settings.age ? "true" : "false");
    saveSettings();
    run(...LOADERS.zone);
  });
  goal.addEventListener("change", () => {
    state.settings.goal = goal.value;
    saveSettings();
    run(...LOADERS.zone);
  });
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
  resizeTimer = setTimeout(() => { drawStepCharts(); drawHeartChart(); }, 150);
});

function main() {
  loadSettings();
  adoptFragment();
  wire();
  const token = localStorage.getItem(TOKEN_KEY);
  if (token) {
    openDashboard(token);
  } else {
    document.body.dataset.loaded = "true";
    showTokenPanel();
  }
}

main();
