package ogc_test

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

// TestOGCLatency measures, when OGC_BENCH=1 (scripts/ogc-bench.sh; run it on a quiet
// machine), the p99 of a 24-hour EDR locations/{id} query and of a 1,000-sensor EDR area
// query, each beside the REST call that answers the same question (the sensor's readings
// page; the export of the same sensors), on the same stack in the same run. It asserts
// only that every answer is a 200: the figures are reported, not judged.
func TestOGCLatency(t *testing.T) {
	if os.Getenv("OGC_BENCH") != "1" {
		t.Skip("a measurement: OGC_BENCH=1 (scripts/ogc-bench.sh) on a quiet machine")
	}
	n := 200
	if s := os.Getenv("OGC_BENCH_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	s := startStack(t)
	until := time.Now().UTC().Truncate(time.Minute)
	since := until.Add(-24 * time.Hour)
	dt := url.QueryEscape(datetimeParam(since, until))
	rng := "since=" + url.QueryEscape(contract.FormatTime(since)) + "&until=" + url.QueryEscape(contract.FormatTime(until))
	x := s.oceanSensors[0]

	// 1,000 weather sensors: the westernmost thousand, cut between the 1,000th and the
	// 1,001st longitude.
	var weather []restSensor
	u := s.ogc + "/collections/weather/locations"
	for u != "" {
		fc := decode[featureCollection](t, get(t, u), "weather locations")
		for _, f := range fc.Features {
			if f.Geometry != nil && f.Properties.FeedID != nil {
				weather = append(weather, f.Properties)
			}
		}
		u = fc.next()
	}
	slices.SortFunc(weather, func(a, b restSensor) int {
		switch {
		case *a.Longitude < *b.Longitude:
			return -1
		case *a.Longitude > *b.Longitude:
			return 1
		}
		return 0
	})
	if len(weather) <= 1000 || *weather[999].Longitude == *weather[1000].Longitude {
		t.Fatalf("want more than 1000 weather sensors with distinct longitudes at the cut, got %d", len(weather))
	}
	west, cut := *weather[0].Longitude-0.0001, (*weather[999].Longitude+*weather[1000].Longitude)/2
	poly := url.QueryEscape(fmt.Sprintf("POLYGON((%[1]v -90, %[2]v -90, %[2]v 90, %[1]v 90, %[1]v -90))", west, cut))
	box := fmt.Sprintf("min_lon=%v&min_lat=-90&max_lon=%v&max_lat=90", west, cut)

	for _, c := range []struct{ name, url string }{
		{"EDR locations/{id} 24 h", s.ogc + "/collections/ocean/locations/" + x.ID + "?datetime=" + dt},
		{"REST sensors/{id}/readings 24 h", s.api + "/sensors/" + x.ID + "/readings?limit=500&sort=asc&" + rng},
		{"EDR area 1,000 sensors 24 h", s.ogc + "/collections/weather/area?coords=" + poly + "&datetime=" + dt},
		{"REST readings/export 1,000 sensors 24 h", s.api + "/readings/export?service=weather&format=ndjson&" + box + "&" + rng},
	} {
		var took []time.Duration
		for i := 0; i < n+n/10; i++ {
			start := time.Now()
			r := get(t, c.url)
			d := time.Since(start)
			if r.status != 200 {
				t.Fatalf("%s: %d %.300s", c.name, r.status, r.body)
			}
			if i >= n/10 { // the first tenth warms caches and connections
				took = append(took, d)
			}
		}
		slices.Sort(took)
		p := func(q float64) time.Duration { return took[min(len(took)-1, int(q*float64(len(took))))] }
		t.Logf("%-42s n=%d p50=%v p99=%v max=%v", c.name, len(took), p(0.50).Round(10*time.Microsecond),
			p(0.99).Round(10*time.Microsecond), took[len(took)-1].Round(10*time.Microsecond))
	}
}
