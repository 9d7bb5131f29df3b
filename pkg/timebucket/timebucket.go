// Package timebucket cuts a time range into the aggregate buckets of docs/api-decisions.md
// "Wave 2" (interval 1h, 3h, 6h, 1d or 1mo on the local clock of an IANA zone). It is the
// one bucket rule: the gateway checks the bucket count with it before calling a service,
// and a service computes every aggregate (in SQL over its rollups or in Go over raw
// readings) over the boundaries it returns, so both ways answer alike.
//
// A boundary is an instant where the zone's local clock shows the start of a bucket: a
// multiple of the interval's hours at minute 0 (1h, 3h, 6h), or the first instant of a
// local day (1d) or of a month's first local day (1mo). So a local day in a zone with a
// DST change is 23 or 25 hours long, a 3h bucket holding the repeated hour is 4 hours
// long, and each hourly bucket is one real hour (the repeated 01:00 is two buckets with
// different offsets). Offsets are multiples of 15 minutes in every zone since 1970, so
// boundaries are found on a 15-minute UTC grid.
package timebucket

import (
	"fmt"
	"time"
)

// MaxBuckets is the most buckets one aggregate answer holds.
const MaxBuckets = 1000

// Interval is a bucket width.
type Interval struct {
	Name  string
	hours int // 1, 3, 6 for sub-day intervals; 0 otherwise
	month bool
	// nominal is the usual length, for estimates only.
	nominal time.Duration
}

// Intervals in the order the API lists them.
var (
	Hour1  = Interval{Name: "1h", hours: 1, nominal: time.Hour}
	Hour3  = Interval{Name: "3h", hours: 3, nominal: 3 * time.Hour}
	Hour6  = Interval{Name: "6h", hours: 6, nominal: 6 * time.Hour}
	Day    = Interval{Name: "1d", nominal: 24 * time.Hour}
	Month  = Interval{Name: "1mo", month: true, nominal: 30 * 24 * time.Hour}
	byName = map[string]Interval{"1h": Hour1, "3h": Hour3, "6h": Hour6, "1d": Day, "1mo": Month}
)

// Names lists the interval names.
const Names = "1h, 3h, 6h, 1d, 1mo"

// ParseInterval returns the interval named s.
func ParseInterval(s string) (Interval, bool) {
	iv, ok := byName[s]
	return iv, ok
}

// Nominal is the interval's usual length (a month counts 30 days).
func (iv Interval) Nominal() time.Duration { return iv.nominal }

const grid = 15 * time.Minute

// isBoundary reports whether t (on the 15-minute grid) starts a bucket in loc.
func (iv Interval) isBoundary(t time.Time, loc *time.Location) bool {
	lt := t.In(loc)
	pt := t.Add(-grid).In(loc)
	newDay := lt.Day() != pt.Day() || lt.Month() != pt.Month() || lt.Year() != pt.Year()
	switch {
	case iv.month:
		return newDay && (lt.Day() == 1 || pt.Month() != lt.Month())
	case iv.hours == 0:
		return newDay
	default:
		return newDay || (lt.Minute() == 0 && lt.Second() == 0 && lt.Hour()%iv.hours == 0)
	}
}

// Floor is the start of the bucket that holds t.
func (iv Interval) Floor(t time.Time, loc *time.Location) time.Time {
	b := t.UTC().Truncate(grid)
	for !iv.isBoundary(b, loc) {
		b = b.Add(-grid)
	}
	return b
}

// Next is the boundary after boundary b.
func (iv Interval) Next(b time.Time, loc *time.Location) time.Time {
	// Jump close to the next boundary (local clock changes move it by at most 2 hours),
	// then walk the grid.
	var t time.Time
	switch {
	case iv.month:
		lt := b.In(loc)
		t = time.Date(lt.Year(), lt.Month()+1, 1, 0, 0, 0, 0, loc).Add(-3 * time.Hour)
	case iv.hours == 0:
		t = b.Add(21 * time.Hour)
	default:
		t = b.Add(time.Duration(max(iv.hours-2, 0)) * time.Hour)
	}
	if !t.After(b) {
		t = b
	}
	t = t.UTC().Truncate(grid).Add(grid)
	for !iv.isBoundary(t, loc) {
		t = t.Add(grid)
	}
	return t
}

// Bounds returns the boundaries of the buckets covering [since, until): since rounded
// down to the start of its bucket, until rounded up to the end of its bucket, so every
// bucket is whole; len(result)-1 buckets. More than MaxBuckets is an error naming the
// interval and the range.
func Bounds(since, until time.Time, iv Interval, loc *time.Location) ([]time.Time, error) {
	if !until.After(since) {
		return nil, fmt.Errorf("until %s is not after since %s", until.UTC().Format(time.RFC3339), since.UTC().Format(time.RFC3339))
	}
	tooMany := func() error {
		return fmt.Errorf("interval %s over %s .. %s gives more than %d buckets; shorten the range or use a longer interval",
			iv.Name, since.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339), MaxBuckets)
	}
	// A cheap estimate first, so that a century of hours is refused without walking it.
	if until.Sub(since)/iv.nominal > (MaxBuckets+2)*11/10 {
		return nil, tooMany()
	}
	b := iv.Floor(since, loc)
	out := []time.Time{b}
	for b.Before(until) {
		b = iv.Next(b, loc)
		out = append(out, b)
		if len(out)-1 > MaxBuckets {
			return nil, tooMany()
		}
	}
	return out, nil
}

// Index is the bucket of bounds that holds t (bounds[i] <= t < bounds[i+1]), or -1.
func Index(bounds []time.Time, t time.Time) int {
	return IndexMs(boundsMs(bounds), t.UnixMilli())
}

// IndexMs is Index over boundaries and a time in epoch milliseconds.
func IndexMs(bounds []int64, t int64) int {
	if len(bounds) < 2 || t < bounds[0] || t >= bounds[len(bounds)-1] {
		return -1
	}
	lo, hi := 0, len(bounds)-1 // bounds[lo] <= t < bounds[hi]
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if bounds[mid] <= t {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// Millis converts boundaries to epoch milliseconds.
func Millis(bounds []time.Time) []int64 { return boundsMs(bounds) }

func boundsMs(bounds []time.Time) []int64 {
	out := make([]int64, len(bounds))
	for i, b := range bounds {
		out[i] = b.UnixMilli()
	}
	return out
}

// WholeHours reports whether every boundary falls on a UTC hour, so that hourly rollups
// answer the buckets exactly (true in every zone whose offsets over the range are whole
// hours; false in zones such as Asia/Kolkata).
func WholeHours(bounds []time.Time) bool {
	for _, b := range bounds {
		if b.UnixMilli()%3_600_000 != 0 {
			return false
		}
	}
	return true
}
