package store

import (
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/ids"
)

func TestReadingIDsMatch(t *testing.T) {
	t.Parallel()
	sensor := ids.Sensor("ocean", "TPLM2")
	r := newReadingIDs(sensor)
	for _, ts := range []time.Time{
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2022, 7, 31, 23, 50, 0, 123456789, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 999000000, time.FixedZone("x", 3600)),
		time.UnixMilli(1),
	} {
		if got, want := r.id(ts), ids.Reading(sensor, ts); got != want {
			t.Fatalf("%v: %s, want %s", ts, got, want)
		}
	}
}
