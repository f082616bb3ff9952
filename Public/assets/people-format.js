// Pure helpers for the person's pages: user codes, recent access grouped for reading, and times
// said the way a person reads them.

import { formatClock, formatDay, dayKey, localMidnight } from "./format.js";
import { typeName } from "./types.js";

const USER_CODE_LETTERS = /[^A-Z]/g;

/** The user code as typed or linked ("wdjb mjht", "WDJB-MJHT") in its shown form "WDJB-MJHT", or null
 *  when it is not 8 letters. */
export function normalizeUserCode(text) {
  const letters = String(text || "").toUpperCase().replace(USER_CODE_LETTERS, "");
  return letters.length === 8 ? `${letters.slice(0, 4)}-${letters.slice(4)}` : null;
}

/**
 * GET /v1/me/access rows grouped for reading: one entry per app (newest access first), each with
 * its days (newest first), each with its types (most requests first, then by name).
 * `names` maps an app id to its display name.
 */
export function groupAccess(rows, names = {}) {
  const apps = new Map();
  for (const row of rows) {
    if (!row || typeof row.app !== "string" || typeof row.day !== "string") continue;
    let app = apps.get(row.app);
    if (!app) {
      app = { app: row.app, displayName: names[row.app] || row.app, lastAccess: null, days: new Map() };
      apps.set(row.app, app);
    }
    if (typeof row.lastAccess === "string" && (!app.lastAccess || row.lastAccess > app.lastAccess)) app.lastAccess = row.lastAccess;
    if (!app.days.has(row.day)) app.days.set(row.day, []);
    app.days.get(row.day).push({
      type: row.type, name: typeName(row.type),
      reads: count(row.reads), samplesRead: count(row.samplesRead),
      writes: count(row.writes), samplesWritten: count(row.samplesWritten),
      lastAccess: typeof row.lastAccess === "string" ? row.lastAccess : null,
    });
  }
  const byInstantDescending = (a, b) => (b.lastAccess || "").localeCompare(a.lastAccess || "") || a.app.localeCompare(b.app);
  return [...apps.values()].sort(byInstantDescending).map((app) => ({
    app: app.app, displayName: app.displayName, lastAccess: app.lastAccess,
    days: [...app.days.entries()].sort((a, b) => b[0].localeCompare(a[0])).map(([day, types]) => ({
      day,
      types: types.sort((a, b) => (b.reads + b.writes) - (a.reads + a.writes) || a.name.localeCompare(b.name)),
    })),
  }));
}

function count(value) {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : 0;
}

const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const plural = (n, one, many) => `${integer.format(n)} ${n === 1 ? one : many}`;

/** "read 240 samples in 3 requests; wrote 12 samples in 1 request", what one type's row says. */
export function describeAccess(entry) {
  const parts = [];
  if (entry.reads > 0) parts.push(`read ${plural(entry.samplesRead, "sample", "samples")} in ${plural(entry.reads, "request", "requests")}`);
  if (entry.writes > 0) parts.push(`wrote ${plural(entry.samplesWritten, "sample", "samples")} in ${plural(entry.writes, "request", "requests")}`);
  return parts.join("; ") || "no samples";
}

/** An instant as a person reads it: "today at 14:05", "yesterday at 09:12", or "Mon 17 Nov at 08:00". */
export function formatWhen(instant, now = new Date()) {
  const date = instant instanceof Date ? instant : new Date(instant);
  if (Number.isNaN(date.getTime())) return "never";
  const day = dayKey(date);
  const time = formatClock(date);
  if (day === dayKey(now)) return `today at ${time}`;
  if (day === dayKey(localMidnight(now, -1))) return `yesterday at ${time}`;
  return `${formatDay(day)} at ${time}`;
}

/** A YYYY-MM-DD day as a heading: "Today", "Yesterday", or "Mon 17 Nov". */
export function formatDayHeading(day, now = new Date()) {
  if (day === dayKey(now)) return "Today";
  if (day === dayKey(localMidnight(now, -1))) return "Yesterday";
  return formatDay(day);
}

/** "in 14 minutes" / "in 30 seconds" for a Retry-After, rounded up. */
export function formatWait(seconds) {
  if (!(seconds > 0)) return "in a moment";
  if (seconds < 60) return `in ${plural(Math.ceil(seconds), "second", "seconds")}`;
  return `in ${plural(Math.ceil(seconds / 60), "minute", "minutes")}`;
}
