package timebucket

import (
	"testing"
	"time"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func lengths(b []time.Time) []time.Duration {
	out := make([]time.Duration, len(b)-1)
	for i := range out {
		out[i] = b[i+1].Sub(b[i])
	}
	return out
}

// TestDSTDays checks the local-clock rule on the two DST days of 2026 in New York (8 March:
// 23 hours, 1 November: 25 hours), by interval.
func TestDSTDays(t *testing.T) {
	ny := mustZone(t, "America/New_York")
	spring := time.Date(2026, 3, 8, 0, 0, 0, 0, ny)
	fall := time.Date(2026, 11, 1, 0, 0, 0, 0, ny)
	cases := []struct {
		day     time.Time
		iv      Interval
		buckets int
		total   time.Duration
		odd     map[int]time.Duration // bucket index -> length when not the nominal one
	}{
		{spring, Day, 1, 23 * time.Hour, map[int]time.Duration{0: 23 * time.Hour}},
		{fall, Day, 1, 25 * time.Hour, map[int]time.Duration{0: 25 * time.Hour}},
		{spring, Hour1, 23, 23 * time.Hour, nil},
		{fall, Hour1, 25, 25 * time.Hour, nil},
		{spring, Hour3, 8, 23 * time.Hour, map[int]time.Duration{0: 2 * time.Hour}},
		{fall, Hour3, 8, 25 * time.Hour, map[int]time.Duration{0: 4 * time.Hour}},
		{spring, Hour6, 4, 23 * time.Hour, map[int]time.Duration{0: 5 * time.Hour}},
		{fall, Hour6, 4, 25 * time.Hour, map[int]time.Duration{0: 7 * time.Hour}},
	}
	for _, c := range cases {
		end := c.day.AddDate(0, 0, 1)
		b, err := Bounds(c.day, end, c.iv, ny)
		if err != nil {
			t.Fatal(err)
		}
		if len(b)-1 != c.buckets || !b[0].Equal(c.day) || !b[len(b)-1].Equal(end) || b[len(b)-1].Sub(b[0]) != c.total {
			t.Errorf("%s on %s: %d buckets %v .. %v, want %d covering %v", c.iv.Name, c.day.Format("2006-01-02"), len(b)-1, b[0], b[len(b)-1], c.buckets, c.total)
			continue
		}
		for i, l := range lengths(b) {
			want, ok := c.odd[i]
			if !ok {
				want = c.iv.nominal
			}
			if l != want {
				t.Errorf("%s on %s: bucket %d (%s local) is %v, want %v", c.iv.Name, c.day.Format("2006-01-02"), i, b[i].In(ny).Format(time.RFC3339), l, want)
			}
		}
	}
	// The repeated hour is two hourly buckets, with different offsets.
	b, _ := Bounds(fall, fall.AddDate(0, 0, 1), Hour1, ny)
	if b[1].In(ny).Format("15:04-07:00") != "01:00-04:00" || b[2].In(ny).Format("15:04-07:00") != "01:00-05:00" {
		t.Errorf("repeated hour: %s, %s", b[1].In(ny).Format(time.RFC3339), b[2].In(ny).Format(time.RFC3339))
	}
}

func TestRoundingMonthsAndHalfHourZones(t *testing.T) {
	ny := mustZone(t, "America/New_York")
	// A range inside buckets is widened to whole buckets.
	since := time.Date(2026, 1, 15, 13, 7, 0, 0, time.UTC)
	until := time.Date(2026, 4, 2, 0, 0, 0, 0, time.UTC)
	b, err := Bounds(since, until, Month, ny)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2026-01-01T00:00:00-05:00", "2026-02-01T00:00:00-05:00", "2026-03-01T00:00:00-05:00", "2026-04-01T00:00:00-04:00", "2026-05-01T00:00:00-04:00"}
	if len(b) != len(want) {
		t.Fatalf("bounds %v", b)
	}
	for i := range want {
		if got := b[i].In(ny).Format(time.RFC3339); got != want[i] {
			t.Errorf("bound %d = %s, want %s", i, got, want[i])
		}
	}
	kol := mustZone(t, "Asia/Kolkata")
	b, err = Bounds(since, since.Add(3*time.Hour), Hour1, kol)
	if err != nil {
		t.Fatal(err)
	}
	if b[0].Minute() != 30 || WholeHours(b) {
		t.Errorf("Kolkata hours start at %v (want :30 UTC), whole hours %v", b[0], WholeHours(b))
	}
	if bu, _ := Bounds(since, since.Add(3*time.Hour), Hour1, time.UTC); !WholeHours(bu) {
		t.Errorf("UTC hours are not whole hours")
	}
	if Index(b, b[1]) != 1 || Index(b, b[1].Add(-time.Millisecond)) != 0 || Index(b, b[len(b)-1]) != -1 || Index(b, b[0].Add(-1)) != -1 {
		t.Errorf("Index is wrong at the edges")
	}
}

func TestTooManyBuckets(t *testing.T) {
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := Bounds(since, since.Add(1000*time.Hour), Hour1, time.UTC); err != nil {
		t.Errorf("1000 hours: %v", err)
	}
	if _, err := Bounds(since, since.Add(1001*time.Hour), Hour1, time.UTC); err == nil {
		t.Errorf("1001 hours accepted")
	}
	if _, err := Bounds(since, since.AddDate(100, 0, 0), Hour1, time.UTC); err == nil {
		t.Errorf("a century of hours accepted")
	}
}
