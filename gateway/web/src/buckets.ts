// Aggregate buckets (docs/api-decisions.md, "Aggregates") as chart columns, apart from the
// chart itself so that the rules can be tested without a browser.
import type { Range } from "./state";

export interface BucketStats {
  mean?: number | null;
  min?: number | null;
  max?: number | null;
  count?: number | null;
  coverage?: number | null;
  /** values the quality filter left out (qc=good: suspect and failed ones). */
  excluded?: number | null;
}

export interface Bucket {
  start: string;
  end?: string;
  values?: Record<string, BucketStats>;
}

/** The interval and span of each range: at most 365 buckets, far below the 1000 limit. */
export const rangeQuery: Record<Range, { interval: string; days: number }> = {
  "24h": { interval: "1h", days: 1 },
  "7d": { interval: "3h", days: 7 },
  "30d": { interval: "6h", days: 30 },
  "1y": { interval: "1d", days: 365 },
};

/** series turns buckets into uPlot's aligned columns: time, mean, min, max; null where a
 * bucket is empty, so uPlot leaves a gap. The fifth column marks the buckets whose
 * suspect or failed values the aggregate left out (docs/quality.md): at the bucket's mean,
 * or at the last mean before it when every value of the bucket was left out. */
export function series(
  buckets: Bucket[],
  parameter: string,
): { data: [number[], ...(number | null)[][]]; gaps: number; flagged: number; excluded: number } {
  const xs: number[] = [];
  const mean: (number | null)[] = [];
  const min: (number | null)[] = [];
  const max: (number | null)[] = [];
  const marks: (number | null)[] = [];
  let gaps = 0;
  let flagged = 0;
  let excluded = 0;
  let last: number | null = null;
  for (const b of buckets) {
    const s = b.values?.[parameter];
    const empty = !s || s.count === 0 || s.coverage === 0 || s.mean === null || s.mean === undefined;
    xs.push(Date.parse(b.start) / 1000);
    mean.push(empty ? null : s.mean!);
    min.push(empty ? null : (s.min ?? s.mean!));
    max.push(empty ? null : (s.max ?? s.mean!));
    if (!empty) last = s.mean!;
    const x = s?.excluded ?? 0;
    marks.push(x > 0 ? last : null);
    if (x > 0) {
      flagged++;
      excluded += x;
    }
    if (empty) gaps++;
  }
  return { data: [xs, mean, min, max, marks], gaps, flagged, excluded };
}
