// Last night's sleep from sleepAnalysis samples. Time asleep is the asleep stages only (in bed and
// awake excluded), clipped to the night's window, with overlapping records (a watch and a phone
// recording the same night) counted once. Where records overlap with different stages, the time
// goes to the most specific stage, so the stages always add up to the total.

// The asleep stages in the order every bar stacks them and every legend and list names them: deep
// first, as the night's hypnogram has it early.
export const ASLEEP_STAGES = ["asleepDeep", "asleepCore", "asleepREM", "asleepUnspecified"];
// Highest first: a staged record beats an unstaged one; among stages, the rarer one wins.
const STAGE_PRIORITY = ["asleepDeep", "asleepREM", "asleepCore", "asleepUnspecified"];

/** { totalSeconds, stages: [{stage, seconds}] in ASLEEP_STAGES order } for samples overlapping [windowStart, windowEnd). */
export function summarizeSleep(samples, windowStart, windowEnd) {
  const intervals = [];
  for (const sample of samples) {
    if (!ASLEEP_STAGES.includes(sample.value)) continue;
    const start = Math.max(new Date(sample.start).getTime(), windowStart.getTime());
    const end = Math.min(new Date(sample.end).getTime(), windowEnd.getTime());
    if (end > start) intervals.push({ start, end, rank: STAGE_PRIORITY.indexOf(sample.value) });
  }
  // Sweep the elementary pieces between every start and end; each piece covered by any record
  // counts once, for the best-ranked stage covering it.
  const boundaries = [...new Set(intervals.flatMap((i) => [i.start, i.end]))].sort((a, b) => a - b);
  const milliseconds = new Map(ASLEEP_STAGES.map((stage) => [stage, 0]));
  let total = 0;
  for (let index = 0; index + 1 < boundaries.length; index++) {
    const from = boundaries[index];
    const to = boundaries[index + 1];
    let best = Infinity;
    for (const interval of intervals) {
      if (interval.start <= from && interval.end >= to && interval.rank < best) best = interval.rank;
    }
    if (best === Infinity) continue;
    const stage = STAGE_PRIORITY[best];
    milliseconds.set(stage, milliseconds.get(stage) + (to - from));
    total += to - from;
  }
  return {
    totalSeconds: total / 1000,
    stages: ASLEEP_STAGES.map((stage) => ({ stage, seconds: milliseconds.get(stage) / 1000 })),
  };
}
