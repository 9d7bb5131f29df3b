package readings

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
)

// Fault modes of a fakeService.
const (
	modeNormal     int32 = iota
	modeHang             // never answers until the request is cancelled
	mode500              // answers 500
	mode503Once          // answers 503 once, then normally
	modeNonJSON404       // answers a plain-text 404, as a service without the route would
	// Hostile or broken answers (upstream_test.go): the body of each holds hostileSecret.
	modeHTML         // 200 text/html with a script
	modeRedirect     // 302 to another host
	mode204          // 204 No Content
	modeJSONLie      // 200 application/json over an HTML page
	modeSecret404    // 404 in the error shape plus fields it must not have
	modeWrongCode404 // 404 in the error shape with a code of another status
	mode401          // 401, as for a wrong internal token
	mode403          // 403 naming the internal header, as the services once did
	modeCSV          // 200 text/csv, a format answer
)

// hostileSecret is in every hostile answer's body: it must reach neither client nor log.
const hostileSecret = "postgres://admin:hunter2@10.0.0.5:5432/readings"

// fakeService is a real HTTP server on a loopback port speaking the internal contract of a
// backing service (readings, latest, health), which a test can stop and start again on
// the same port, or switch into a fault mode.
type fakeService struct {
	t     *testing.T
	id    string
	port  int
	mode  atomic.Int32
	calls atomic.Int64
	// stations: external id -> readings, newest first; a station with none answers
	// no_readings.
	stations map[string][]contract.Reading

	mu        sync.Mutex
	srv       *http.Server
	requestID string
	paths     []string
}

func newFakeService(t *testing.T, id string, stations map[string][]contract.Reading) *fakeService {
	t.Helper()
	f := &fakeService{t: t, id: id, stations: stations}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.port = ln.Addr().(*net.TCPAddr).Port
	f.serve(ln)
	t.Cleanup(f.stop)
	return f
}

func (f *fakeService) url() string { return "http://127.0.0.1:" + strconv.Itoa(f.port) }

func (f *fakeService) serve(ln net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sensors/{id}/readings/latest", f.handle(true))
	mux.HandleFunc("GET /v1/sensors/{id}/readings", f.handle(false))
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		if f.fault(w, r) {
			return
		}
		writeJSON(w, 200, contract.Health{ServiceID: f.id, Status: contract.StatusOK, Version: "test", CheckedAt: contract.Time{Time: time.Now()},
			Store: contract.StoreHealth{Reachable: true}, Providers: []contract.ProviderHealth{}})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	f.mu.Lock()
	f.srv = srv
	f.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// stop closes the listener and every connection: the service is gone.
func (f *fakeService) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv != nil {
		_ = f.srv.Close()
		f.srv = nil
	}
}

// start serves again on the same port.
func (f *fakeService) start() {
	f.t.Helper()
	var ln net.Listener
	var err error
	for range 100 {
		if ln, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(f.port)); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		f.t.Fatalf("restart %s on port %d: %v", f.id, f.port, err)
	}
	f.serve(ln)
}

// fault applies the fault mode; true when it answered.
func (f *fakeService) fault(w http.ResponseWriter, r *http.Request) bool {
	f.calls.Add(1)
	f.mu.Lock()
	f.requestID = r.Header.Get(contract.HeaderRequestID)
	f.paths = append(f.paths, r.URL.RequestURI())
	f.mu.Unlock()
	switch f.mode.Load() {
	case modeHang:
		<-r.Context().Done()
		return true
	case mode500:
		http.Error(w, "boom", 500)
		return true
	case mode503Once:
		f.mode.Store(modeNormal)
		http.Error(w, "warming up", 503)
		return true
	case modeNonJSON404:
		http.Error(w, "404 page not found", 404)
		return true
	case modeHTML:
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<script>alert(1)</script>" + hostileSecret))
		return true
	case modeRedirect:
		w.Header().Set("Location", "http://169.254.169.254/latest/meta-data/?"+hostileSecret)
		w.WriteHeader(http.StatusFound)
		return true
	case mode204:
		w.Header().Set("X-Secret", hostileSecret)
		w.WriteHeader(http.StatusNoContent)
		return true
	case modeJSONLie:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("<html>" + hostileSecret + "</html>"))
		return true
	case modeSecret404:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(404)
		_, _ = w.Write([]byte(`{"error":"sensor \"X\" not found","code":"sensor_not_found","dsn":"` + hostileSecret + `","stack":"main.go:12"}`))
		return true
	case modeWrongCode404:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(404)
		_, _ = w.Write([]byte(`{"error":"` + hostileSecret + `","code":"internal"}`))
		return true
	case mode401, mode403:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(map[int32]int{mode401: 401, mode403: 403}[f.mode.Load()])
		_, _ = w.Write([]byte(`{"error":"send the shared token in X-Internal-Token ` + hostileSecret + `","code":"forbidden"}`))
		return true
	case modeCSV:
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		_, _ = w.Write([]byte("time,parameter,value\n2026-01-01T00:00:00Z,wave_height_m,1.5\n"))
		return true
	}
	return false
}

func (f *fakeService) handle(latest bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if f.fault(w, r) {
			return
		}
		ext := r.PathValue("id")
		readings, ok := f.stations[strings.ToUpper(ext)]
		if !ok {
			writeJSON(w, 404, apierr.New(apierr.SensorNotFound, "sensor %q not found", ext))
			return
		}
		var q contract.ReadingsQuery
		var err error
		if latest {
			q, err = contract.ParseLatestQuery(r.URL.Query(), time.Now())
		} else {
			q, err = contract.ParseReadingsQuery(r.URL.Query(), time.Now())
		}
		if err != nil {
			writeJSON(w, 400, apierr.From(err))
			return
		}
		sid := ids.Sensor(f.id, ext).String()
		prov := contract.Provenance{SensorID: sid, ServiceID: f.id, SourceID: ext, Provider: "test"}
		if latest {
			if len(readings) == 0 {
				writeJSON(w, 404, apierr.New(apierr.NoReadings, "sensor %q has no readings", ext))
				return
			}
			writeJSON(w, 200, contract.LatestResponse{SensorID: sid, ExternalID: ext, Name: "Station " + ext, ServiceID: f.id, Reading: readings[0], Provenance: prov})
			return
		}
		sel := []contract.Reading{}
		for _, rd := range readings {
			if (q.Since.IsZero() || !rd.Timestamp.Before(q.Since)) && (q.Until.IsZero() || rd.Timestamp.Before(q.Until)) {
				sel = append(sel, rd)
			}
		}
		total := len(sel)
		lo, hi := min(q.Offset(), total), min(q.Offset()+q.Limit, total)
		writeJSON(w, 200, contract.ReadingsResponse{SensorID: sid, ExternalID: ext, Name: "Station " + ext, ServiceID: f.id,
			Readings: sel[lo:hi], Provenance: prov, Pagination: contract.NewPagination(q.Page, q.Limit, total)})
	}
}

func (f *fakeService) lastRequestID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requestID
}

func (f *fakeService) lastPath() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.paths) == 0 {
		return ""
	}
	return f.paths[len(f.paths)-1]
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// sampleReadings returns n hourly readings ending at end, newest first.
func sampleReadings(sensor uuid.UUID, end time.Time, n int) []contract.Reading {
	out := make([]contract.Reading, n)
	for i := range out {
		ts := end.Add(-time.Duration(i) * time.Hour)
		out[i] = contract.Reading{
			ID:        ids.Reading(sensor, ts).String(),
			Timestamp: contract.Time{Time: ts},
			Measurements: []canon.Measurement{
				{Parameter: "water_temperature_c", Value: 14.2, Unit: "celsius", UnitOriginal: "degC"},
				{Parameter: "wave_height_m", Value: 1.3, Unit: "m", UnitOriginal: "m"},
			},
			Location: contract.Point(17.0, -160.0),
		}
	}
	return out
}

// catalogSensor describes one sensor of the test catalog.
type catalogSensor struct {
	service, ext string
	feed         bool
}

// newCatalog is a real catalog store (SQLite in a temp dir) holding the given sensors.
func newCatalog(t testing.TB, sensors []catalogSensor) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{SQLitePath: t.TempDir() + "/catalog.db", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	byService := map[string][]catalog.Sensor{}
	for _, s := range sensors {
		sn := catalog.Sensor{ExternalID: s.ext, Name: "Station " + s.ext, SensorType: "buoy", ProviderSlug: "test"}
		if s.feed {
			sn.FeedSlug = s.service + "-feed"
		}
		byService[s.service] = append(byService[s.service], sn)
	}
	for svc, sns := range byService {
		_, err := st.Sync(ctx, catalog.SyncBatch{
			Service:   catalog.Service{ID: svc, Name: svc},
			Providers: []catalog.Provider{{Slug: "test", Name: "Test provider"}},
			Projects:  []catalog.Project{{Slug: svc + "-feed", Name: svc + " feed", ProviderSlug: "test", ServiceID: svc}},
			Sensors:   sns,
			Full:      true,
		})
		if err != nil {
			t.Fatalf("sync %s: %v", svc, err)
		}
	}
	return st
}

// resolver resolves :id over the store as the gateway does (UUID first, then external id).
func resolver(st *store.Store) ResolveFunc {
	return func(ctx context.Context, ref string) (catalog.Sensor, error) {
		if isUUID(ref) {
			if sn, err := st.Sensor(ctx, uuid.MustParse(ref)); err == nil {
				return sn, nil
			}
		}
		sn, err := st.SensorByExternalID(ctx, ref)
		if errors.Is(err, catalog.ErrNotFound) {
			return sn, apierr.New(apierr.SensorNotFound, "sensor %q not found", ref)
		}
		return sn, err
	}
}

func jsonBytes(v any) ([]byte, error) { return json.Marshal(v) }
