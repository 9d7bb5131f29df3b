package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
	"github.com/sensorgate/sensorgate/services/airquality"
	"github.com/sensorgate/sensorgate/services/ocean"
	"github.com/sensorgate/sensorgate/services/runtime/app"
	"github.com/sensorgate/sensorgate/services/tools"
	"github.com/sensorgate/sensorgate/services/weather"
)

// definitions are the three services exactly as their main packages build them.
var definitions = map[string]func() app.Definition{
	"ocean":      func() app.Definition { return ocean.Definition(tools.For()) },
	"weather":    func() app.Definition { return weather.Definition(tools.For()) },
	"airquality": func() app.Definition { return airquality.Definition(tools.For()) },
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runService starts a service through app.Run, as its binary does, on a free port with a
// SQLite store in simulate mode, and waits until /readyz answers 200.
func runService(t *testing.T, id string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := map[string]string{
		"SERVICE_ADDR": addr, "READINGS_SQLITE_PATH": filepath.Join(t.TempDir(), id+".db"),
		"SOURCE_MODE": "simulate", "SIM_STATIONS": "4", "SIM_DAYS": "1", "SIM_SEED": "3", "LOG_LEVEL": "warn",
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	errc := make(chan error, 1)
	go func() { errc <- app.Run(ctx, definitions[id](), nil, func(k string) string { return env[k] }, logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("%s stopped with %v", id, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not stop within 30 s", id)
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(90 * time.Second)
	for {
		if resp, err := http.Get(base + contract.PathReadyz); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case err := <-errc:
			t.Fatalf("%s exited: %v\n%s", id, err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 90 s:\n%s", id, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func getJSON(t *testing.T, url string, into any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, b)
	}
}

// TestRunningServices drives each real service (app.Run, simulate mode, SQLite) over HTTP:
// its meta lists the tools; the SDK client and a bare JSON client get, for a station named
// only in params._meta, the same latest reading the internal readings API serves; the
// domain tool answers for it; an unknown station is an isError result.
func TestRunningServices(t *testing.T) {
	t.Parallel()
	domain := map[string]string{"ocean": "sea_state", "weather": "current_conditions", "airquality": "aqi"}
	for id := range definitions {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			base := runService(t, id)

			var meta contract.ServiceMeta
			getJSON(t, base+contract.PathMeta, &meta)
			for _, name := range tools.Names(tools.Config{ServiceID: id}) {
				if !slices.Contains(meta.Tools, name) {
					t.Errorf("meta tools %v lack %s", meta.Tools, name)
				}
			}

			// The freshest station that reports something the domain tool summarizes.
			var page contract.StationPage
			getJSON(t, base+contract.PathSensors+"?limit=500", &page)
			var st *contract.Station
			for i := range page.Sensors {
				s := &page.Sensors[i]
				if s.LastReadingAt == nil || (id == "airquality" && !slices.Contains(s.DataTypes, "pm2_5_ug_per_m3") && !slices.Contains(s.DataTypes, "aqi")) {
					continue
				}
				if st == nil || s.LastReadingAt.After(st.LastReadingAt.Time) {
					st = s
				}
			}
			if st == nil {
				t.Fatalf("no station with readings among %d", len(page.Sensors))
			}
			var latest contract.LatestResponse
			getJSON(t, base+contract.LatestPath(st.ExternalID), &latest)

			url := base + contract.PathMCP
			cs := sdkSession(t, url)
			ctxMeta := map[string]any{"sensor_id": ids.Sensor(id, st.ExternalID).String(), "sensor_external_id": st.ExternalID, "sensor_name": st.Name, "feed_slug": st.FeedSlug}
			var out tools.LatestObservation
			res := call(t, cs, id+".latest_observation", nil, ctxMeta, &out)
			if res.IsError {
				t.Fatalf("latest_observation: %s", text(res))
			}
			if out.Timestamp != contract.FormatTime(latest.Reading.Timestamp.Time) || out.ReadingID != latest.Reading.ID ||
				len(out.Measurements) != len(latest.Reading.Measurements) || out.Provenance.SensorID != latest.Provenance.SensorID ||
				out.Provenance.Provider != latest.Provenance.Provider {
				t.Errorf("tool says %s %s (%d values, %+v); readings API says %s %s (%d values, %+v)",
					out.Timestamp, out.ReadingID, len(out.Measurements), out.Provenance,
					contract.FormatTime(latest.Reading.Timestamp.Time), latest.Reading.ID, len(latest.Reading.Measurements), latest.Provenance)
			}

			res = call(t, cs, id+"."+domain[id], nil, ctxMeta, nil)
			if res.IsError {
				t.Errorf("%s.%s for %s: %s", id, domain[id], st.ExternalID, text(res))
			}
			var list tools.StationList
			if res := call(t, cs, id+".list_stations", map[string]any{"limit": 500}, nil, &list); res.IsError || list.Pagination.Total != len(page.Sensors) {
				t.Errorf("list_stations: %d stations (%s), want %d", list.Pagination.Total, text(res), len(page.Sensors))
			}
			if res := call(t, cs, id+".describe_station", map[string]any{"station_id": "NO-SUCH-STATION"}, nil, nil); !res.IsError {
				t.Errorf("unknown station: want isError, got %s", text(res))
			}

			status, _, r := barePost(t, url, rpc(t, 1, "initialize", map[string]any{
				"protocolVersion": "2024-11-05", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "bare", "version": "1"},
			}))
			if status != 200 || r.Error != nil || !bytes.Contains(r.Result, []byte(`"protocolVersion":"2024-11-05"`)) {
				t.Fatalf("bare initialize: %d %+v %s", status, r.Error, r.Result)
			}
			status, _, r = barePost(t, url, rpc(t, 2, "tools/call", map[string]any{"name": id + ".latest_observation", "arguments": map[string]any{}, "_meta": ctxMeta}))
			var bare struct {
				StructuredContent tools.LatestObservation
				IsError           bool
			}
			if status != 200 || r.Error != nil || json.Unmarshal(r.Result, &bare) != nil || bare.IsError || bare.StructuredContent.ReadingID != latest.Reading.ID {
				t.Errorf("bare tools/call: %d %+v %s", status, r.Error, r.Result)
			}
		})
	}
}
