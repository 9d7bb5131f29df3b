package app_test

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

// With RETENTION_DAYS the service removes older readings once its first ingest cycle is
// done (the simulated history goes 3 days back, retention keeps 1), counts them in
// /metrics, and serves only what is left.
func TestRetention(t *testing.T) {
	t.Parallel()
	base := service(t, map[string]string{"SIM_STATIONS": "2", "SIM_DAYS": "3", "RETENTION_DAYS": "1"})
	pruned := regexp.MustCompile(`(?m)^sensorgate_readings_pruned_total\{component="ocean"\} (\S+)$`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if m := pruned.FindSubmatch(body); m != nil {
			if n, _ := strconv.ParseFloat(string(m[1]), 64); n > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no readings pruned within 30s; metrics:\n%s", pruned.Find(body))
		}
		time.Sleep(100 * time.Millisecond)
	}
	cutoff := time.Now().Add(-24*time.Hour - time.Minute)
	var sensors contract.StationPage
	if code, b := get(t, base+"/v1/sensors?limit=100", nil, &sensors); code != http.StatusOK || len(sensors.Sensors) == 0 {
		t.Fatalf("sensors: %d %s", code, b)
	}
	withReadings := 0
	for _, st := range sensors.Sensors {
		var page contract.ReadingsResponse
		code, b := get(t, base+"/v1/sensors/"+st.ExternalID+"/readings?days=30&sort=asc&limit=1", nil, &page)
		if code != http.StatusOK {
			t.Fatalf("readings of %s: %d %s", st.ExternalID, code, b)
		}
		if len(page.Readings) == 0 {
			continue
		}
		withReadings++
		if first := page.Readings[0].Timestamp.Time; first.Before(cutoff) {
			t.Fatalf("%s still has a reading at %v, before the retention cutoff %v", st.ExternalID, first, cutoff)
		}
	}
	if withReadings == 0 {
		t.Fatal("no station has readings left to check")
	}
}
