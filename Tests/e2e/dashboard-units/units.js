// Checks of the dashboard's pure modules (event-stream parser, sleep rule, rounding), run in the
// same headless Chromium as the page by Tests/e2e/browser.py. Each check writes one line; the
// body's data-failed counts failures.

import { EventStreamParser } from "/Public/assets/sse.js";
import { summarizeSleep, ASLEEP_STAGES } from "/Public/assets/sleep.js";
import { formatInteger, formatKilometres, formatHoursMinutes, formatCompact, formatMinutesLong, localMidnight, dayKey }
  from "/Public/assets/format.js";
import { periodRange, periodWords } from "/Public/assets/period.js";
import { drawBars, drawSleepStages, niceAxis } from "/Public/assets/charts.js";
import { personPath, retryAfterSeconds } from "/Public/assets/api.js";
import { typeName, typeCategory, sortedTypes } from "/Public/assets/types.js";
import { normalizeUserCode, groupAccess, describeAccess, formatWait } from "/Public/assets/people-format.js";

const lines = [];
let failed = 0;

function check(name, actual, expected) {
  const same = JSON.stringify(actual) === JSON.stringify(expected);
  if (!same) failed++;
  lines.push(`${same ? "ok  " : "FAIL"} ${name}${same ? "" : `: got ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`}`);
}

function parse(chunks) {
  const events = [];
  const comments = [];
  const parser = new EventStreamParser((event) => events.push(event), (comment) => comments.push(comment));
  for (const chunk of chunks) parser.push(chunk);
  return { events, comments, parser };
}

// Event stream: framing.
check("one event with id and type", parse(["id: a1\nevent: change\ndata: {\"added\":[]}\n\n"]).events,
  [{ type: "change", data: "{\"added\":[]}", id: "a1" }]);
check("an event split across reads at every byte", parse([..."id: 7\r\nevent: zone\r\ndata: x\r\n\r\n"]).events,
  [{ type: "zone", data: "x", id: "7" }]);
check("CRLF split between two reads is one line end",
  parse(["data: a\r", "\n\r", "\n"]).events, [{ type: "message", data: "a", id: "" }]);
check("bare CR line ends, dispatched without waiting for the next read", parse(["data: a\rdata: b\r\r"]).events,
  [{ type: "message", data: "a\nb", id: "" }]);
check("CR then LF in separate reads is one line end, not two", parse(["data: a\r", "\ndata: b\r", "\n\r", "\n"]).events,
  [{ type: "message", data: "a\nb", id: "" }]);
check("multi-line data joins with LF", parse(["data: one\ndata: two\n\n"]).events[0].data, "one\ntwo");
check("comments are keep-alives, not events", (() => {
  const r = parse([": keep-alive\n\n", ":x\n"]);
  return [r.events.length, r.comments];
})(), [0, [" keep-alive", "x"]]);
check("no data, no event (id still kept)", (() => {
  const r = parse(["id: 9\nevent: change\n\n"]);
  return [r.events.length, r.parser.lastEventID];
})(), [0, "9"]);
check("the id carries over to later events", parse(["id: 1\ndata: a\n\ndata: b\n\n"]).events.map((e) => e.id), ["1", "1"]);
check("an incomplete event is not dispatched", parse(["data: a\n"]).events.length, 0);
check("retry is read; a non-number is ignored", [parse(["retry: 2500\n"]).parser.retry, parse(["retry: soon\n"]).parser.retry],
  [2500, null]);
check("one optional space after the colon", parse(["data:  two spaces\n\n"]).events[0].data, " two spaces");
check("unknown fields are ignored", parse(["foo: bar\ndata: a\n\n"]).events, [{ type: "message", data: "a", id: "" }]);

// Sleep: stages, window, overlaps.
const at = (hours, minutes = 0) => new Date(Date.UTC(2026, 2, 8, hours, minutes)).toISOString();
const windowStart = new Date(Date.UTC(2026, 2, 7, 18));
const windowEnd = new Date(Date.UTC(2026, 2, 8, 12));
const sample = (value, start, end) => ({ value, start, end });
check("in bed and awake do not count", summarizeSleep([sample("inBed", at(0), at(8)), sample("awake", at(2), at(3))],
  windowStart, windowEnd).totalSeconds, 0);
check("stages add up", summarizeSleep([sample("asleepCore", at(0), at(2)), sample("asleepDeep", at(2), at(3)),
  sample("asleepREM", at(3), at(3, 30))], windowStart, windowEnd).totalSeconds, 3.5 * 3600);
check("two sources recording the same hour count it once", summarizeSleep([sample("asleepCore", at(1), at(2)),
  sample("asleepCore", at(1, 30), at(2, 30))], windowStart, windowEnd).totalSeconds, 1.5 * 3600);
check("overlap goes to the staged record, stages sum to the total", (() => {
  const s = summarizeSleep([sample("asleepUnspecified", at(0), at(4)), sample("asleepDeep", at(1), at(2))], windowStart, windowEnd);
  return [s.totalSeconds, s.stages.map((x) => [x.stage, x.seconds])];
})(), [4 * 3600, [["asleepDeep", 3600], ["asleepCore", 0], ["asleepREM", 0], ["asleepUnspecified", 3 * 3600]]]);
check("clipped to the window", summarizeSleep([sample("asleepCore", at(11), at(13))], windowStart, windowEnd).totalSeconds, 3600);
check("outside the window: nothing", summarizeSleep([sample("asleepCore", at(12), at(14))], windowStart, windowEnd).totalSeconds, 0);

check("stages are listed in the order the bar stacks them: Deep, Core, REM, then unspecified",
  summarizeSleep([sample("asleepREM", at(3), at(4)), sample("asleepCore", at(0), at(1)), sample("asleepDeep", at(1), at(2))],
    windowStart, windowEnd).stages.map((s) => s.stage), ["asleepDeep", "asleepCore", "asleepREM", "asleepUnspecified"]);
check("the bar stacks in the same order, whatever order the stages come in", (() => {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  drawSleepStages(svg, [{ stage: "asleepREM", seconds: 60, label: "" }, { stage: "asleepCore", seconds: 60, label: "" },
    { stage: "asleepDeep", seconds: 60, label: "" }]);
  return [...svg.querySelectorAll("rect")].sort((a, b) => Number(a.getAttribute("x")) - Number(b.getAttribute("x")))
    .map((r) => r.dataset.stage);
})(), ASLEEP_STAGES.slice(0, 3));

// Axis tops: 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a power of ten, the least at or above the data.
check("data near 25k draws on a 25k axis, not 50k", [niceAxis(24_600), niceAxis(25_000)].map((a) => a.top), [25_000, 25_000]);
check("just above a step goes to the next one", [niceAxis(25_001), niceAxis(10_001), niceAxis(12_001), niceAxis(60_001)].map((a) => a.top),
  [30_000, 12_000, 15_000, 80_000]);
check("every step of a decade", [0.9, 1.1, 1.4, 1.9, 2.4, 2.9, 3.9, 4.9, 5.9, 7.9, 9.9].map((v) => niceAxis(v * 1000).top),
  [1000, 1200, 1500, 2000, 2500, 3000, 4000, 5000, 6000, 8000, 10_000]);
check("powers of ten are their own top, with no binary noise", [niceAxis(1000).top, niceAxis(100_000).top, niceAxis(0.3).top, niceAxis(1.2e-3).top],
  [1000, 100_000, 0.3, 0.0012]);
check("each top splits into round grid steps", [1000, 1200, 1500, 2000, 2500, 3000, 4000, 5000, 6000, 8000].map((v) => v / niceAxis(v).ticks),
  [200, 300, 500, 500, 500, 1000, 1000, 1000, 2000, 2000]);
check("no data, or nonsense, gives a 1 axis", [niceAxis(0), niceAxis(-5), niceAxis(NaN), niceAxis(Infinity)].map((a) => a.top), [1, 1, 1, 1]);
check("the step bars' axis for a 25k week tops at 25k", (() => {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.style.width = "600px";
  document.body.append(svg);
  drawBars(svg, [24_800, 21_000, 18_500].map((sum, i) => ({ key: String(i), label: String(i), title: String(i), sum, current: false, future: false })),
    "Steps");
  const labels = [...svg.querySelectorAll("text.axis-label")].map((t) => t.textContent);
  svg.remove();
  return [svg.dataset.axisTop, labels.slice(0, 6)];
})(), ["25000", ["0", "5k", "10k", "15k", "20k", "25k"]]);

// Display rounding (the page runs with --lang=en-US).
check("integers round halves up, with separators", [formatInteger(8123.5), formatInteger(8123.49), formatInteger(0.5), formatInteger(1234567)],
  ["8,124", "8,123", "1", "1,234,567"]);
check("kilometres with two decimals", [formatKilometres(5234.5), formatKilometres(0), formatKilometres(12345)], ["5.23", "0.00", "12.35"]);
check("h:mm to the nearest minute", [formatHoursMinutes(7 * 3600 + 15 * 60), formatHoursMinutes(89.5), formatHoursMinutes(29), formatHoursMinutes(36000)],
  ["7:15", "0:01", "0:00", "10:00"]);
check("compact bar labels", [formatCompact(950), formatCompact(999.6), formatCompact(12100), formatCompact(12149), formatCompact(9960),
  formatCompact(123456), formatCompact(2500000)], ["950", "1k", "12.1k", "12.1k", "10k", "123k", "2.5M"]);
check("workout minutes", [formatMinutesLong(42 * 60 + 20), formatMinutesLong(3900)], ["42 min", "1 h 05 min"]);

// Periods, as /v1/summary counts them: a week from Monday, calendar months and years.
const span = (period, date) => { const r = periodRange(period, date); return [dayKey(r.start), dayKey(r.end), r.interval]; };
check("a day, by the hour", span("day", new Date(2026, 2, 8, 15)), ["2026-03-08", "2026-03-09", "PT1H"]);
check("a week from Monday (Sunday 8 March is in the week of 2 March)", span("week", new Date(2026, 2, 8, 15)),
  ["2026-03-02", "2026-03-09", "P1D"]);
check("a Monday starts its own week", span("week", new Date(2026, 2, 9, 0, 30)), ["2026-03-09", "2026-03-16", "P1D"]);
check("a month", span("month", new Date(2026, 1, 28)), ["2026-02-01", "2026-03-01", "P1D"]);
check("a year, by the month", span("year", new Date(2026, 11, 31, 23)), ["2026-01-01", "2027-01-01", "P1M"]);
check("the period holding today is named as such", ["day", "week", "month", "year"].map((p) =>
  periodWords(p, new Date(2026, 2, 8), new Date(2026, 2, 8)).phrase), ["today", "this week", "this month", "this year"]);
check("another period names itself", ["day", "week", "month", "year"].map((p) => periodWords(p, new Date(2026, 2, 8), new Date(2027, 0, 5))),
  [{ current: false, phrase: "on Sun, Mar 8" }, { current: false, phrase: "in the week of Mar 2" },
    { current: false, phrase: "in March 2026" }, { current: false, phrase: "in 2026" }]);
check("yesterday's week is this week unless today is a Monday", [[new Date(2026, 2, 9), new Date(2026, 2, 10)],
  [new Date(2026, 2, 8), new Date(2026, 2, 9)]].map(([yesterday, today]) => periodWords("week", yesterday, today).current), [true, false]);
check("local days step by calendar, not by 24 h", dayKey(localMidnight(new Date(2026, 2, 8, 12), 1)), "2026-03-09");

// Step bars at a phone's width: a 390 px screen gives the chart 324 px. Seven five-digit days (any
// weekday of the real page may have fewer) are abbreviated, and no label touches another (1 px air).
function drawnWeek(width, sums) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "chart");
  svg.style.width = `${width}px`;
  document.body.append(svg);
  const names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
  drawBars(svg, sums.map((sum, i) => ({ key: names[i], label: names[i], title: names[i], sum, current: i === 6, future: false })),
    "Steps by day");
  const boxes = [...svg.querySelectorAll("text")].map((t) => ({ text: t.textContent, box: t.getBoundingClientRect() }));
  const touching = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i].box, b = boxes[j].box;
    if (a.left < b.right + 1 && b.left < a.right + 1 && a.top < b.bottom && b.top < a.bottom) touching.push(`${boxes[i].text}|${boxes[j].text}`);
  }
  const labels = [...svg.querySelectorAll(".bar-label")].map((t) => t.textContent);
  svg.remove();
  return { labels, touching };
}
const week = [12100, 12740, 12960, 12456, 12049, 12111, 12999];  // a steady week: labels side by side
check("phone week: seven five-digit days read 12.1k and touch nothing", drawnWeek(324, week),
  { labels: week.map(formatCompact), touching: [] });
check("... a 12.1k label, not 12,100", drawnWeek(324, week).labels[0], "12.1k");
check("desktop week: the same days in full", drawnWeek(600, week), { labels: week.map(formatInteger), touching: [] });

// The person's pages: reads through the cookie go to the /v1/me mirrors; the person's own routes stay.
check("a signed-in person reads the /v1/me mirror of an app route", ["/v1/summary?date=2026-03-08", "/v1/samples",
  "/v1/changes/stream?types=heartRate", "/v1/heart-rate/zones"].map(personPath),
["/v1/me/summary?date=2026-03-08", "/v1/me/samples", "/v1/me/changes/stream?types=heartRate", "/v1/me/heart-rate/zones"]);
check("the person's own routes are left as they are", ["/v1/me", "/v1/me/apps", "/v1/session", "/v1/people/activate",
  "/v1/authorization-requests/token", "/v1/me/authorization-requests/WDJB-MJHT"].map(personPath),
["/v1/me", "/v1/me/apps", "/v1/session", "/v1/people/activate", "/v1/authorization-requests/token",
  "/v1/me/authorization-requests/WDJB-MJHT"]);
check("Retry-After in seconds or as a date", [retryAfterSeconds("120"), retryAfterSeconds(null),
  retryAfterSeconds(new Date(Date.UTC(2026, 2, 8, 12, 1)).toUTCString(), Date.UTC(2026, 2, 8, 12, 0))], [120, null, 60]);
check("types read as in the Health app", ["stepCount", "heartRate", "bodyMass", "sleepAnalysis", "activeEnergyBurned"].map(typeName),
  ["Steps", "Heart Rate", "Weight", "Sleep", "Active Energy"]);
check("a type the list does not know reads as its words", ["shortnessOfBreath", "lowerBackPain", "someNewType"].map(typeName),
  ["Shortness of Breath", "Lower Back Pain", "Some New Type"]);
check("the sheet lists types alphabetically by the name people read, once each",
  sortedTypes(["stepCount", "heartRate", "bodyMass", "activeEnergyBurned", "stepCount"]),
  ["activeEnergyBurned", "heartRate", "stepCount", "bodyMass"]);
check("types have their Health categories", ["stepCount", "restingHeartRate", "sleepAnalysis", "dietaryWater", "bodyMass", "xyz"]
  .map(typeCategory), ["activity", "heart", "sleep", "nutrition", "body", "other"]);
check("user codes: typed or linked, any case or separator; not 8 letters is none",
  ["wdjb-mjht", "WDJB MJHT", "wdjbmjht", "WDJB-MJH", "WDJB-MJHTX", "", null].map(normalizeUserCode),
  ["WDJB-MJHT", "WDJB-MJHT", "WDJB-MJHT", null, null, null, null]);
const accessRows = [
  { app: "scale", type: "bodyMass", day: "2026-03-07", reads: 0, samplesRead: 0, writes: 1, samplesWritten: 1, lastAccess: "2026-03-07T07:00:00.000Z" },
  { app: "run", type: "stepCount", day: "2026-03-06", reads: 2, samplesRead: 50, writes: 0, samplesWritten: 0, lastAccess: "2026-03-06T09:00:00.000Z" },
  { app: "run", type: "heartRate", day: "2026-03-08", reads: 1, samplesRead: 60, writes: 2, samplesWritten: 12, lastAccess: "2026-03-08T10:00:00.000Z" },
  { app: "run", type: "stepCount", day: "2026-03-08", reads: 5, samplesRead: 240, writes: 0, samplesWritten: 0, lastAccess: "2026-03-08T09:00:00.000Z" },
];
const grouped = groupAccess(accessRows, { run: "Runner" });
check("recent access: apps newest first, with their display names", grouped.map((g) => [g.app, g.displayName, g.lastAccess]),
  [["run", "Runner", "2026-03-08T10:00:00.000Z"], ["scale", "scale", "2026-03-07T07:00:00.000Z"]]);
check("... each app's days newest first, types by most requests", grouped[0].days.map((d) => [d.day, d.types.map((t) => t.type)]),
  [["2026-03-08", ["stepCount", "heartRate"]], ["2026-03-06", ["stepCount"]]]);
check("... said in words", grouped[0].days[0].types.map(describeAccess),
  ["read 240 samples in 5 requests", "read 60 samples in 1 request; wrote 12 samples in 2 requests"]);
check("a wait said in words, rounded up", [formatWait(1), formatWait(59), formatWait(61), formatWait(900), formatWait(null)],
  ["in 1 second", "in 59 seconds", "in 2 minutes", "in 15 minutes", "in a moment"]);

document.getElementById("results").textContent = lines.join("\n");
document.body.dataset.failed = String(failed);
document.body.dataset.done = "true";
// browser.py looks for this line to know that console messages (and so CSP violations) reach it.
console.info("dashboard-units: console capture works");
