// The calendar periods the step card and chart switch between, in the browser's local time, as
// the server's `/v1/summary?period=` counts them: a day, a week from Monday, a calendar month, a
// calendar year. Built from calendar fields (never by adding 24 h), so a week with a daylight-
// saving change is still seven calendar days.

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

/** "today", "this week"... for headings. */
export function periodPhrase(period) {
  return { day: "today", week: "this week", month: "this month", year: "this year" }[period] || "today";
}
