// Small SVG charts drawn from API figures. Every mark carries its raw value in a data attribute
// (the browser test reads them back), and each chart gets an aria-label that says the same in words.

import { formatInteger, formatWeekday, formatDay, formatShortDate, formatClock, formatCompact } from "./format.js";
import { ASLEEP_STAGES } from "./sleep.js";

const SVG = "http://www.w3.org/2000/svg";

function element(name, attributes = {}, text) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function clear(svg) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
}

/** Draws in the SVG's own pixel width (within bounds), so text stays readable on a phone. */
function drawingWidth(svg) {
  const measured = svg.getBoundingClientRect().width;
  return Math.round(Math.min(900, Math.max(300, measured || 700)));
}

/**
 * Date labels under a daily axis: every 7th day (14th on a narrow chart), and the last day (drawn ending at the axis end)
 * unless it would touch the weekly label before it ("Nov 18" is about 50 px wide at 13 px).
 */
function dateLabelAt(index, count, spacing) {
  // Every week where a week is wide enough for a date and some air, else every second week...
  const every = 7 * Math.max(1, Math.ceil(66 / (7 * spacing)));
  if (index % every === 0) return true;
  return index === count - 1 && (index % every) * spacing >= 80;
}

/** The first date starts at the axis and the last ends at it, so neither reaches the value labels or the edge. */
function dateAnchor(index, count) {
  return index === 0 ? "start" : index === count - 1 ? "end" : "middle";
}

// Axis tops: these leading digits times a power of ten, each with the number of grid steps that
// splits it into round values (1.2 into 4 steps of 0.3, 1.5 into 3 of 0.5...). Finer than 1, 2, 5,
// so a series near 25k draws on a 25k axis, not half of a 50k one.
const AXIS_STEPS = [[1, 5], [1.2, 4], [1.5, 3], [2, 4], [2.5, 5], [3, 3], [4, 4], [5, 5], [6, 3], [8, 4], [10, 5]];

/** The axis for values up to `value`: { top, ticks }, top the least nice value at least `value`. */
export function niceAxis(value) {
  if (!(value > 0) || !Number.isFinite(value)) return { top: 1, ticks: 5 };
  const exponent = Math.floor(Math.log10(value));
  for (const power of [exponent - 1, exponent, exponent + 1]) {  // log10 can be off by one near a power of ten
    for (const [leading, ticks] of AXIS_STEPS) {
      // toPrecision drops the binary noise of 1.2 × 10ⁿ, so the top reads as written.
      const top = Number((leading * 10 ** power).toPrecision(12));
      if (top >= value) return { top, ticks };
    }
  }
  return { top: value, ticks: 5 };
}

function horizontalGrid(svg, box, top, ticks, format) {
  for (let i = 0; i <= ticks; i++) {
    const value = (top * i) / ticks;
    const y = box.bottom - ((box.bottom - box.top) * i) / ticks;
    svg.append(element("line", { x1: box.left, x2: box.right, y1: y, y2: y, class: "grid" }));
    svg.append(element("text", { x: box.left - 6, y: y + 4, class: "axis-label", "text-anchor": "end" }, format(value)));
  }
}

/** Removes a chart's marks, for a panel that has nothing to draw ("No data yet": no bogus axes). */
export function clearChart(svg) {
  clear(svg);
  svg.removeAttribute("viewBox");
}

/**
 * Step bars for a period: `bars` is [{key, label, title, sum: number | undefined, current, future,
 * day?}] in order. A bucket without data gets a flat bar marked data-value="" and, where there is
 * room, "no data"; a future bucket gets nothing. Value labels are written in full where a bar is
 * wide enough, abbreviated (12.1k) where it is narrower, and left out (the tooltip keeps them)
 * where even that would touch its neighbours; axis labels are thinned the same way.
 */
export function drawBars(svg, bars, description) {
  clear(svg);
  const width = drawingWidth(svg), height = 260;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const box = { left: 44, right: width - 8, top: 24, bottom: height - 34 };
  const { top, ticks } = niceAxis(Math.max(0, ...bars.map((d) => d.sum ?? 0)));
  svg.setAttribute("data-axis-top", String(top));
  horizontalGrid(svg, box, top, ticks, formatCompact);
  const slot = (box.right - box.left) / Math.max(bars.length, 1);
  // Digits are about 8 px wide at 13 px and 6.6 px at the compact labels' 11 px; a label needs
  // its text plus a little air.
  const fits = (text) => text.length * 8 + 6 <= slot;
  const fitsCompact = (text) => text.length * 6.6 + 4 <= slot;
  const fullFits = bars.every((d) => d.sum === undefined || fits(formatInteger(d.sum)));
  const compactFits = bars.every((d) => d.sum === undefined || fitsCompact(formatCompact(d.sum)));
  const labelEvery = Math.max(1, Math.ceil((Math.max(...bars.map((d) => d.label.length)) * 8 + 8) / slot));
  const words = [];
  bars.forEach((d, index) => {
    const x = box.left + slot * index + slot * 0.15;
    const barHeight = d.sum === undefined ? 0 : ((box.bottom - box.top) * d.sum) / top;
    const said = d.sum === undefined ? (d.future ? "not yet" : "no data") : `${formatInteger(d.sum)} steps`;
    const attributes = { x, y: box.bottom - barHeight, width: slot * 0.7, height: Math.max(barHeight, 0),
      class: d.current ? "bar bar-today" : "bar", "data-bucket": d.key, "data-value": d.sum ?? "" };
    if (d.day) attributes["data-day"] = d.day;
    const bar = element("rect", attributes);
    bar.append(element("title", {}, `${d.title}: ${said}`));
    svg.append(bar);
    if (index % labelEvery === 0) {
      svg.append(element("text", { x: x + slot * 0.35, y: box.bottom + 18, class: "axis-label", "text-anchor": "middle" }, d.label));
    }
    let valueText = null;
    if (d.sum !== undefined) valueText = fullFits ? formatInteger(d.sum) : compactFits ? formatCompact(d.sum) : null;
    else if (!d.future && fits("no data")) valueText = "no data";
    if (valueText !== null) {
      const kind = d.sum === undefined ? "bar-label bar-label-empty" : fullFits ? "bar-label" : "bar-label bar-label-compact";
      svg.append(element("text", { x: x + slot * 0.35, y: box.bottom - barHeight - 6, class: kind, "text-anchor": "middle",
        "data-label-for": d.key }, valueText));
    }
    if (!d.future) words.push(`${d.title} ${said}`);
  });
  svg.setAttribute("aria-label", `${description}: ${words.join("; ")}`);
}

/**
 * A daily reading over several days (resting heart rate, weight): points joined by a line, gaps
 * where a day has none, on an axis fitted to the values (not from zero: a 2 kg change must show).
 * `days` is [{day, value: number | undefined}].
 */
export function drawDailyLine(svg, days, { format, unit, step }) {
  clear(svg);
  const width = drawingWidth(svg), height = 200;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const box = { left: 48, right: width - 24, top: 14, bottom: height - 30 };
  const values = days.filter((d) => d.value !== undefined).map((d) => d.value);
  const low = Math.floor((Math.min(...values) - step / 2) / step) * step;
  const high = Math.max(low + 2 * step, Math.ceil((Math.max(...values) + step / 2) / step) * step);
  const ticks = Math.round((high - low) / step);
  const every = Math.max(1, Math.ceil(ticks / 4));
  const xOf = (index) => box.left + ((box.right - box.left) * index) / Math.max(days.length - 1, 1);
  const yOf = (value) => box.bottom - ((box.bottom - box.top) * (value - low)) / (high - low);
  for (let i = 0; i <= ticks; i += every) {
    const value = low + i * step;
    svg.append(element("line", { x1: box.left, x2: box.right, y1: yOf(value), y2: yOf(value), class: "grid" }));
    svg.append(element("text", { x: box.left - 6, y: yOf(value) + 4, class: "axis-label", "text-anchor": "end" }, format(value)));
  }
  days.forEach((d, index) => {
    if (dateLabelAt(index, days.length, (box.right - box.left) / Math.max(days.length - 1, 1))) {
      svg.append(element("text", { x: xOf(index), y: box.bottom + 18, class: "axis-label", "text-anchor": dateAnchor(index, days.length) },
        formatShortDate(d.day)));
    }
  });
  let run = [];
  const flush = () => {
    if (run.length > 1) svg.append(element("polyline", { points: run.join(" "), class: "reading-line" }));
    run = [];
  };
  days.forEach((d, index) => {
    if (d.value === undefined) { flush(); return; }
    run.push(`${xOf(index)},${yOf(d.value)}`);
  });
  flush();
  days.forEach((d, index) => {
    if (d.value === undefined) return;
    const point = element("circle", { cx: xOf(index), cy: yOf(d.value), r: 3.2, class: "reading-point",
      "data-reading-day": d.day, "data-value": d.value });
    point.append(element("title", {}, `${formatDay(d.day)}: ${format(d.value)} ${unit}`));
    svg.append(point);
  });
  svg.setAttribute("aria-label", `${values.length} days with a reading, from ${format(Math.min(...values))} to ${format(Math.max(...values))} ${unit}`);
}

/**
 * Activity rings: move (outer), exercise, stand (inner), each a circle filled clockwise by its
 * share of the goal (a second lap over 100 % is drawn over the first, as on the watch).
 * `rings` is [{ring: "move"|"exercise"|"stand", value, goal}].
 */
export function drawRings(svg, rings, size) {
  clear(svg);
  svg.setAttribute("viewBox", `0 0 ${size} ${size}`);
  const stroke = size / 9;
  rings.forEach((r, index) => {
    const radius = size / 2 - stroke / 2 - index * (stroke + 1.5);
    const circumference = 2 * Math.PI * radius;
    const share = r.goal > 0 ? r.value / r.goal : 0;
    const centre = size / 2;
    svg.append(element("circle", { cx: centre, cy: centre, r: radius, class: `ring-track ring-${r.ring}`, "stroke-width": stroke }));
    const filled = Math.min(share, 1) * circumference;
    const arc = element("circle", { cx: centre, cy: centre, r: radius, class: `ring-arc ring-${r.ring}`, "stroke-width": stroke,
      "stroke-dasharray": `${filled} ${circumference}`, transform: `rotate(-90 ${centre} ${centre})`,
      "data-ring": r.ring, "data-value": r.value, "data-goal": r.goal });
    svg.append(arc);
    if (share > 1) {
      const lap = Math.min(share - 1, 1) * circumference;
      svg.append(element("circle", { cx: centre, cy: centre, r: radius, class: `ring-arc ring-lap ring-${r.ring}`,
        "stroke-width": stroke, "stroke-dasharray": `${lap} ${circumference}`, transform: `rotate(-90 ${centre} ${centre})` }));
    }
  });
}

/**
 * 28 days of steps as points joined by a line, with the trailing 7-day average as a second line
 * (the average of the days with data among the last seven, so a missing day does not read as 0).
 */
export function drawTrend(svg, days) {
  clear(svg);
  const width = drawingWidth(svg), height = 260;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const box = { left: 58, right: width - 30, top: 16, bottom: height - 34 };
  const { top, ticks } = niceAxis(Math.max(0, ...days.map((d) => d.sum ?? 0)));
  svg.setAttribute("data-axis-top", String(top));
  horizontalGrid(svg, box, top, ticks, formatInteger);
  const step = (box.right - box.left) / Math.max(days.length - 1, 1);
  const xOf = (index) => box.left + step * index;
  const yOf = (value) => box.bottom - ((box.bottom - box.top) * value) / top;
  const dailyPoints = [];
  const averagePoints = [];
  days.forEach((d, index) => {
    if (d.sum !== undefined) dailyPoints.push(`${xOf(index)},${yOf(d.sum)}`);
    const window = days.slice(Math.max(0, index - 6), index + 1).filter((w) => w.sum !== undefined);
    if (window.length > 0) {
      const average = window.reduce((total, w) => total + w.sum, 0) / window.length;
      averagePoints.push(`${xOf(index)},${yOf(average)}`);
    }
    if (dateLabelAt(index, days.length, step)) {
      svg.append(element("text", { x: xOf(index), y: box.bottom + 18, class: "axis-label", "text-anchor": dateAnchor(index, days.length) },
        formatShortDate(d.day)));
    }
  });
  svg.append(element("polyline", { points: dailyPoints.join(" "), class: "trend-daily" }));
  svg.append(element("polyline", { points: averagePoints.join(" "), class: "trend-average" }));
  days.forEach((d, index) => {
    if (d.sum === undefined) return;
    const point = element("circle", { cx: xOf(index), cy: yOf(d.sum), r: 3.5, class: "trend-point",
      "data-trend-day": d.day, "data-value": d.sum });
    point.append(element("title", {}, `${formatDay(d.day)}: ${formatInteger(d.sum)} steps`));
    svg.append(point);
  });
  const withData = days.filter((d) => d.sum !== undefined).length;
  svg.setAttribute("aria-label", `Steps per day over ${days.length} days, ${withData} of them with data, with a 7-day average line`);
}

/**
 * Today's heart-rate samples from local midnight to the next, one point per sample, with the
 * target zone as a band when one is known. A gap of over 30 minutes breaks the line.
 */
export function drawHeartRate(svg, samples, dayStart, dayEnd, zone, now) {
  clear(svg);
  const width = drawingWidth(svg), height = 280;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const box = { left: 44, right: width - 26, top: 12, bottom: height - 30 };
  const values = samples.map((s) => s.value);
  if (zone) values.push(zone.low, zone.high);
  const low = Math.max(0, Math.floor((Math.min(60, ...values) - 10) / 10) * 10);
  const high = Math.ceil((Math.max(140, ...values) + 10) / 10) * 10;
  const span = dayEnd.getTime() - dayStart.getTime();
  const xOf = (time) => box.left + ((box.right - box.left) * (time - dayStart.getTime())) / span;
  const yOf = (value) => box.bottom - ((box.bottom - box.top) * (value - low)) / (high - low);
  for (let value = low; value <= high; value += 20) {
    svg.append(element("line", { x1: box.left, x2: box.right, y1: yOf(value), y2: yOf(value), class: "grid" }));
    svg.append(element("text", { x: box.left - 6, y: yOf(value) + 4, class: "axis-label", "text-anchor": "end" }, String(value)));
  }
  for (let hour = 0; hour <= 24; hour += 6) {
    const tick = new Date(dayStart.getFullYear(), dayStart.getMonth(), dayStart.getDate(), hour);
    svg.append(element("text", { x: xOf(tick.getTime()), y: box.bottom + 20, class: "axis-label", "text-anchor": "middle" },
      hour === 24 ? "24:00" : formatClock(tick)));
  }
  if (zone) {
    const band = element("rect", { x: box.left, width: box.right - box.left, y: yOf(zone.high),
      height: Math.max(0, yOf(zone.low) - yOf(zone.high)), class: "zone-band", "data-zone-low": zone.low, "data-zone-high": zone.high });
    band.append(element("title", {}, `Target zone ${formatInteger(zone.low)}–${formatInteger(zone.high)} bpm`));
    svg.append(band);
  }
  if (now >= dayStart && now < dayEnd) {
    svg.append(element("line", { x1: xOf(now.getTime()), x2: xOf(now.getTime()), y1: box.top, y2: box.bottom, class: "now-line" }));
  }
  let run = [];
  let previous = null;
  const flush = () => {
    if (run.length > 1) svg.append(element("polyline", { points: run.join(" "), class: "hr-line" }));
    run = [];
  };
  const points = samples.map((s) => ({ time: new Date(s.start).getTime(), value: s.value }))
    .sort((a, b) => a.time - b.time);
  for (const p of points) {
    if (previous !== null && p.time - previous > 30 * 60 * 1000) flush();
    run.push(`${xOf(p.time)},${yOf(p.value)}`);
    previous = p.time;
  }
  flush();
  for (const p of points) {
    const outside = zone && (p.value < zone.low || p.value > zone.high);
    svg.append(element("circle", { cx: xOf(p.time), cy: yOf(p.value), r: 2.2,
      class: outside ? "hr-point hr-point-outside" : "hr-point", "data-hr-point": "", "data-value": p.value }));
  }
  svg.setAttribute("data-point-count", String(points.length));
  const range = values.length && samples.length
    ? `, from ${formatInteger(Math.min(...samples.map((s) => s.value)))} to ${formatInteger(Math.max(...samples.map((s) => s.value)))} bpm`
    : "";
  svg.setAttribute("aria-label", `Heart rate today: ${points.length} readings${range}` +
    (zone ? `; target zone ${formatInteger(zone.low)} to ${formatInteger(zone.high)} bpm` : ""));
}

/**
 * Sleep stages as one horizontal stacked bar (time per stage), filling `filled` of the 300-unit
 * width (all of it by default; less to compare nights on one scale).
 */
export function drawSleepStages(svg, stages, filled = 300) {
  clear(svg);
  const width = 300, height = 24;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("preserveAspectRatio", "none");
  const total = stages.reduce((sum, s) => sum + s.seconds, 0);
  let x = 0;
  // The legend's order (ASLEEP_STAGES), whatever order `stages` came in.
  for (const s of [...stages].sort((a, b) => ASLEEP_STAGES.indexOf(a.stage) - ASLEEP_STAGES.indexOf(b.stage))) {
    if (s.seconds <= 0 || total <= 0) continue;
    const w = (filled * s.seconds) / total;
    const segment = element("rect", { x, y: 0, width: w, height, class: `stage stage-${s.stage}`, "data-stage": s.stage,
      "data-seconds": s.seconds });
    segment.append(element("title", {}, s.label));
    svg.append(segment);
    x += w;
  }
}
