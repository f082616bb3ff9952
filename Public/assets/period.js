// The calendar periods the step card and chart switch between, in the browser's local time, as
// the server's `/v1/summary?period=` counts them: a day, a week from Monday, a calendar month, a
// calendar year. Built from calendar fields (never by adding 24 h), so a week with a daylight-
// saving change is still seven calendar days.

import { dayKey, formatDay, formatShortDate } from "./format.js";

export const PERIODS = ["day", "week", "month", "year"];

/**
 * { start, end } (local midnights, end exclusive) of the period holding `date`, and the interval
 * of the step chart's buckets: hours for a day, days for a week or month, months for a year.
 */
export function periodRange(period, date) {
  const y = date.getFullYear(), m = date.getMonth(), d = date.getDate();
  switch (period) {
    case "week": {
      const sinceMonday = (date.getDay() + 6) % 7;
      return { start: new Date(y, m, d - sinceMonday), end: new Date(y, m, d - sinceMonday + 7), interval: "P1D" };
    }
    case "month":
      return { start: new Date(y, m, 1), end: new Date(y, m + 1, 1), interval: "P1D" };
    case "year":
      return { start: new Date(y, 0, 1), end: new Date(y + 1, 0, 1), interval: "P1M" };
    default:
      return { start: new Date(y, m, d), end: new Date(y, m, d + 1), interval: "PT1H" };
  }
}

/**
 * Words for the period holding `shown`, seen on `today` (local dates). The period holding today is
 * "today", "this week"...; another names itself ("on Fri, Nov 27", "in the week of Nov 23", "in
 * November 2026", "in 2026"). `current` says which.
 */
export function periodWords(period, shown, today) {
  const range = periodRange(period, shown);
  if (range.start <= today && today < range.end) {
    return { current: true, phrase: { day: "today", week: "this week", month: "this month", year: "this year" }[period] || "today" };
  }
  switch (period) {
    case "week": return { current: false, phrase: `in the week of ${formatShortDate(dayKey(range.start))}` };
    case "month": return { current: false, phrase: `in ${monthYear.format(range.start)}` };
    case "year": return { current: false, phrase: `in ${range.start.getFullYear()}` };
    default: return { current: false, phrase: `on ${formatDay(dayKey(range.start))}` };
  }
}

const monthYear = new Intl.DateTimeFormat(undefined, { month: "long", year: "numeric" });
