package app

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/ogc"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// The EDR area path reads a service's CSV export into samples: a reading's rows grouped
// under its sensor, rows of sensors not asked for skipped, an empty value left out; a
// service that fails mid-answer (its "# code: message" record) is a 503 and an answer cut
// inside a row a 502, not a coverage short of readings. The faults are a fake service's:
// a real one cannot be made to fail on cue; the e2e tests (gateway/ogc) read real ones.
func TestOGCExportRows(t *testing.T) {
	const rows = "u1,41002,2026-11-20T00:00:00Z,air_temperature_c,21.5,°C,70.7,°F,1\n" +
		"u1,41002,2026-11-20T00:00:00Z,wind_speed_ms,3,m/s,5.8,kn,3\n" +
		"u9,99999,2026-11-20T00:00:00Z,wind_speed_ms,7,m/s,13.6,kn,1\n" +
		"u2,41003,2026-11-20T00:10:00Z,wind_speed_ms,,m/s,,kn,9\n" +
		"u2,41003,2026-11-20T00:20:00Z,wind_speed_ms,4.25,m/s,8.3,kn,1\n" +
		"u1,41002,2026-11-20T00:10:00Z,air_temperature_c,21.25,°C,70.3,°F,1\n"
	var tail string
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = r.URL.Query()["station"]
		mu.Unlock()
		if f := r.URL.Query().Get("format"); f != "csv" {
			http.Error(w, "format "+f, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/csv")
		_, _ = w.Write([]byte(rows + tail))
	}))
	defer srv.Close()
	c, err := contract.NewClient("weather", srv.URL, contract.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := catalog.Sensor{ID: uuid.New(), ExternalID: "41002", ServiceID: "weather"}, catalog.Sensor{ID: uuid.New(), ExternalID: "41003", ServiceID: "weather"}
	r := ogcReadings{clients: map[string]*contract.Client{"weather": c}}
	w := ogc.Window{Since: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), Until: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}

	got, err := r.export(context.Background(), []catalog.Sensor{a, b}, w)
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 2 {
		t.Errorf("the service was asked for %q, want both sensors", asked)
	}
	if len(got) != 2 || len(got[a.ID]) != 3 || len(got[b.ID]) != 1 {
		t.Fatalf("samples: %+v", got)
	}
	x := got[a.ID][1]
	if x.Parameter != "wind_speed_ms" || x.Value != 3 || !x.Time.Equal(w.Since) || x.Time.Location() != time.UTC {
		t.Errorf("second sample of 41002: %+v", x)
	}
	if y := got[b.ID][0]; y.Value != 4.25 || !y.Time.Equal(w.Since.Add(20*time.Minute)) {
		t.Errorf("41003's sample: %+v (the empty value is left out)", y)
	}
	if z := got[a.ID][2]; z.Value != 21.25 || !z.Time.Equal(w.Since.Add(10*time.Minute)) {
		t.Errorf("41002's last sample: %+v", z)
	}

	// Many area queries at once over the one client (its pooled connections): each reads
	// its own answer into its own samples (run under -race by make test's race step).
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			one := []catalog.Sensor{a, b}[i%2]
			got, err := r.export(context.Background(), []catalog.Sensor{one}, w)
			if want := map[uuid.UUID]int{a.ID: 3, b.ID: 1}[one.ID]; err != nil || len(got) != 1 || len(got[one.ID]) != want {
				t.Errorf("concurrent export of %s: %d sensors, %d samples (want %d), %v", one.ExternalID, len(got), len(got[one.ID]), want, err)
			}
		})
	}
	wg.Wait()

	for _, c := range []struct {
		tail, code string
	}{
		{"# internal_error: the store went away\n", apierr.UpstreamUnavailable},
		{"u1,41002,2026-11-20T00:30:00Z,air_temperature_c,21", apierr.UpstreamBadResponse}, // cut inside "21.75"
		{"u1,41002,yesterday,air_temperature_c,1,°C,1,°C,1\n", apierr.UpstreamBadResponse},
	} {
		tail = c.tail
		_, err := r.export(context.Background(), []catalog.Sensor{a, b}, w)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Code != c.code {
			t.Errorf("answer ending %q: got %v, want %s", c.tail, err, c.code)
		}
	}
}
