// Display rules for the dashboard's figures. Every number shown comes straight from the API and
// is only rounded here, the same way everywhere (the "Dashboard" section of docs/guide.md lists them).

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const twoDecimals = new Intl.NumberFormat(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });

/** Steps, kcal, bpm and minutes: nearest integer (halves up), with the locale's thousands separators. */
export function formatInteger(value) {
  return integer.format(Math.round(value));
}

/** Metres shown as kilometres with two decimals. */
export function formatKilometres(metres) {
  return twoDecimals.format(metres / 1000);
}

/** Seconds as h:mm, rounded to the nearest minute. */
export function formatHoursMinutes(seconds) {
  const minutes = Math.round(seconds / 60);
  return `${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, "0")}`;
}

/** The local clock time of an instant, e.g. "14:05". */
export function formatClock(date) {
  return `${String(date.getHours()).padStart(2, "0")}:${String(date.getMinutes()).padStart(2, "0")}`;
}

const weekday = new Intl.DateTimeFormat(undefined, { weekday: "short" });
const dayMonth = new Intl.DateTimeFormat(undefined, { weekday: "short", day: "numeric", month: "short" });

/** "Mon" for a YYYY-MM-DD day key (read as a local calendar day). */
export function formatWeekday(dayKey) {
  return weekday.format(dateFromDayKey(dayKey));
}

const shortDate = new Intl.DateTimeFormat(undefined, { day: "numeric", month: "short" });

/** "17 Nov" for a YYYY-MM-DD day key. */
export function formatShortDate(dayKey) {
  return shortDate.format(dateFromDayKey(dayKey));
}

/** "Mon 17 Nov" for a YYYY-MM-DD day key. */
export function formatDay(dayKey) {
  return dayMonth.format(dateFromDayKey(dayKey));
}

// Local calendar arithmetic. Dates are built from calendar fields (never by adding 24 h), so a
// day across a daylight-saving change is still one calendar day.

export function localMidnight(date, dayOffset = 0) {
  return new Date(date.getFullYear(), date.getMonth(), date.getDate() + dayOffset);
}

export function localTime(date, dayOffset, hour) {
  return new Date(date.getFullYear(), date.getMonth(), date.getDate() + dayOffset, hour);
}

export function dayKey(date) {
  return `${date.getFullYear()}-${String(date.getMonth() + 1).padStart(2, "0")}-${String(date.getDate()).padStart(2, "0")}`;
}

export function dateFromDayKey(key) {
  const [year, month, day] = key.split("-").map(Number);
  return new Date(year, month - 1, day);
}

const oneDecimal = new Intl.NumberFormat(undefined, { minimumFractionDigits: 1, maximumFractionDigits: 1 });

/** One decimal (kilograms), halves away from zero. */
export function formatOneDecimal(value) {
  return oneDecimal.format(value);
}

/** A bar's label where space is short: 950, 12.1k, 1.2M (one decimal below 100k). */
export function formatCompact(value) {
  const rounded = Math.round(value);
  const magnitude = Math.abs(rounded);
  if (magnitude < 1000) return String(rounded);
  const [divisor, suffix] = magnitude < 1e6 ? [1000, "k"] : [1e6, "M"];
  const scaled = rounded / divisor;
  return `${Math.abs(scaled) < 100 ? (Math.round(scaled * 10) / 10).toFixed(1).replace(/\.0$/, "") : Math.round(scaled)}${suffix}`;
}

/** Seconds as "42 min" or "1 h 05 min", rounded to the minute. */
export function formatMinutesLong(seconds) {
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, "0")} min`;
}

const monthShort = new Intl.DateTimeFormat(undefined, { month: "short" });

/** "Mar" for a YYYY-MM-DD day key. */
export function formatMonth(dayKey) {
  return monthShort.format(dateFromDayKey(dayKey));
}
