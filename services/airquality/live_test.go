package airquality_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/airquality"
	"github.com/sensorgate/sensorgate/services/internal/providerdata"
	"github.com/sensorgate/sensorgate/services/runtime/ingest"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// Live OpenAQ polls API v3 with the key: a recording server answers /v3/locations/3 (the
// location's entry of the recorded /v3/locations page) and /v3/locations/3/sensors (the
// recorded document), and the station lands with its metadata and its latest reading.
func TestLiveOpenAQv3(t *testing.T) {
	t.Parallel()
	dir := providerdata.Dir()
	if dir == "" {
		t.Fatalf("recorded provider payloads not found (testdata/providers at the repository root); set %s", providerdata.EnvDir)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, "openaq", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	location := oneLocation(t, read("v3_locations_limit100.json"), 3)
	sensors := read("v3_locations_3_sensors.json")
	var keyless atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != "k3y" {
			keyless.Add(1)
			http.Error(w, `{"message":"Unauthorized"}`, http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/v3/locations/3":
			_, _ = w.Write(location)
		case "/v3/locations/3/sensors":
			_, _ = w.Write(sensors)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)

	st, err := store.Open(context.Background(), store.Options{SQLitePath: filepath.Join(t.TempDir(), "aq.db"), ServiceID: airquality.ID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	s, err := ingest.New(ingest.Options{
		Mode: ingest.ModeLive, Store: st, Providers: []ingest.Provider{airquality.OpenAQ()},
		Live: map[string]ingest.LiveConfig{"openaq": {BaseURL: srv.URL, Stations: []string{"v3-3"}, APIKey: "k3y", Interval: time.Hour}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-s.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("first live cycle did not finish")
	}

	if h := s.Health()[0]; h.LastError != "" || keyless.Load() != 0 {
		t.Fatalf("health %+v, %d requests without the key", h, keyless.Load())
	}
	station, err := st.Station(ctx, "v3-3")
	if err != nil {
		t.Fatal(err)
	}
	if station.Name != "testing site 3" {
		t.Errorf("station name %q, want the location's name from /v3/locations/3", station.Name)
	}
	r, err := st.LatestReading(ctx, "v3-3")
	if err != nil {
		t.Fatal(err)
	}
	var ms []canon.Measurement
	if err := json.Unmarshal(r.Measurements, &ms); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range ms {
		got[m.Parameter] = m.Value
	}
	// The recorded sensor's latest value: pm25 1 µg/m³ at 2023-04-01T04:30:00Z (AQI 6).
	if !r.Time.Equal(time.Date(2023, 4, 1, 4, 30, 0, 0, time.UTC)) || got[canon.PM25] != 1 || got[canon.AQI] != 6 {
		t.Fatalf("latest reading at %s: %v", r.Time, got)
	}
}

// oneLocation cuts location id out of a recorded /v3/locations page into the document
// /v3/locations/{id} answers (the same envelope with one result).
func oneLocation(t *testing.T, page []byte, id int64) []byte {
	t.Helper()
	var doc struct {
		Meta    json.RawMessage   `json:"meta"`
		Results []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(page, &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range doc.Results {
		var head struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(r, &head); err == nil && head.ID == id {
			out, err := json.Marshal(map[string]any{"meta": doc.Meta, "results": []json.RawMessage{r}})
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	t.Fatalf("location %d not in the recorded page", id)
	return nil
}
