// Aggregate buckets (docs/api-decisions.md, "Aggregates") as chart columns, apart from the
// chart itself so that the rules can be tested without a browser.
import type { Range } from "./state";

export interface BucketStats {
  mean?: number | null;
  min?: number | null;
  max?: number | null;
  count?: number | null;
  coverage?: number | null;
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
 * bucket is empty, so uPlot leaves a gap. */
export function series(buckets: Bucket[], parameter: string): { data: [number[], ...(number | null)[][]]; gaps: number } {
  const xs: number[] = [];
  const mean: (number | null)[] = [];
  const min: (number | null)[] = [];
  const max: (number | null)[] = [];
  let gaps = 0;
  for (const b of buckets) {
    const s = b.values?.[parameter];
    const empty = !s || s.count === 0 || s.coverage === 0 || s.mean === null || s.mean === undefined;
    xs.push(Date.parse(b.start) / 1000);
    mean.push(empty ? null : s.mean!);
    min.push(empty ? null : (s.min ?? s.mean!));
    max.push(empty ? null : (s.max ?? s.mean!));
    if (empty) gaps++;
  }
  return { data: [xs, mean, min, max], gaps };
}

