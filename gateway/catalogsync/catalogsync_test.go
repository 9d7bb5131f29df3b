package catalogsync_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/catalogsync"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ids"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

var quiet = slog.New(slog.DiscardHandler)

func sqliteStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), store.Config{SQLitePath: filepath.Join(t.TempDir(), "c.db"), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func postgresStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), store.Config{DatabaseURL: testenv.Postgres(t), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func importFixture(t *testing.T, s catalog.Store) []catalogsync.ImportResult {
	t.Helper()
	f, err := os.Open("testdata/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := catalogsync.Import(context.Background(), s, f)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	return res
}

func extIDs(p catalog.SensorPage) []string {
	out := []string{}
	for _, s := range p.Sensors {
		out = append(out, s.ExternalID)
	}
	sort.Strings(out)
	return out
}

func TestImportFixture(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		name string
		open func(*testing.T) *store.Store
	}{{"postgres", postgresStore}, {"sqlite", sqliteStore}} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t)
			ctx := context.Background()
			first := importFixture(t, s)
			inserted := 0
			for _, r := range first {
				inserted += r.Inserted
			}
			if inserted != 30 {
				t.Fatalf("first import inserted %d sensors, want 30: %+v", inserted, first)
			}
			for _, r := range importFixture(t, s) {
				if r.Inserted+r.Updated+r.MarkedMissing != 0 {
					t.Fatalf("second import of the same file changed %s: %+v", r.ServiceID, r)
				}
			}
			svcs, err := s.Services(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, sv := range svcs {
				got[sv.ID] = sv.SensorCount
			}
			if want := map[string]int{"airquality": 8, "ocean": 12, "weather": 10}; len(got) != 3 || got["airquality"] != 8 || got["ocean"] != 12 || got["weather"] != 10 {
				t.Fatalf("service counts %v, want %v", got, want)
			}
			kdlz, err := s.SensorByExternalID(ctx, "KDLZ")
			if err != nil || kdlz.FeedID != nil || kdlz.ID != ids.Sensor("weather", "KDLZ") {
				t.Fatalf("KDLZ (no feed): %+v, %v", kdlz, err)
			}
			usv, err := s.Sensor(ctx, ids.Sensor("ocean", "1801593"))
			if err != nil || usv.Latitude != nil {
				t.Fatalf("1801593 (no location): %+v, %v", usv, err)
			}
			hatteras, err := s.SensorByExternalID(ctx, "41002")
			if err != nil || hatteras.ProviderSlug != "noaa-ndbc" || hatteras.FeedSlug != "ndbc-stdmet" || hatteras.DeploymentDate == nil {
				t.Fatalf("41002: %+v, %v", hatteras, err)
			}
			p, err := s.ListSensors(ctx, catalog.SensorFilter{BBox: &catalog.BBox{MinLat: 45, MinLon: 170, MaxLat: 60, MaxLon: -170}, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"46035", "46070", "46071", "PADK", "PASY"}; !slices.Equal(extIDs(p), want) {
				t.Fatalf("Aleutian box across the antimeridian: %v, want %v", extIDs(p), want)
			}
			tp, err := s.Project(ctx, "nws-observations")
			if err != nil || tp.SensorCount != 9 || tp.Visibility != catalog.VisibilityPublic {
				t.Fatalf("nws-observations project: %+v, %v", tp, err)
			}
		})
	}
}

func TestImportRejectsBadFiles(t *testing.T) {
	t.Parallel()
	s := sqliteStore(t)
	good := `{"id":"ocean","providers":[{"slug":"p","name":"P"}],"feeds":[{"slug":"f","name":"F","provider_slug":"p"}],"sensors":[%s]}`
	station := func(extra string) string {
		return `{"external_id":"A1","name":"a","provider_slug":"p","feed_slug":"f"` + extra + `}`
	}
	tests := []struct {
		name, body, culprit string
	}{
		{"not JSON", `{"services": [`, "catalog file"},
		{"unknown field", `{"services":[{"id":"ocean","colour":"blue"}]}`, "colour"},
		{"no services", `{"services":[]}`, "no services"},
		{"service without id", `{"services":[{"name":"x"}]}`, "no id"},
		{"bad date", `{"services":[` + strings.Replace(good, "%s", station(`,"deployment_date":"01/02/2020"`), 1) + `]}`, "deployment_date"},
		{"unknown provider", `{"services":[` + strings.Replace(good, "%s", `{"external_id":"A1","provider_slug":"q"}`, 1) + `]}`, `provider "q"`},
		{"unknown feed", `{"services":[` + strings.Replace(good, "%s", `{"external_id":"A1","provider_slug":"p","feed_slug":"g"}`, 1) + `]}`, `feed "g"`},
		{"bad external id", `{"services":[` + strings.Replace(good, "%s", `{"external_id":"a/b"}`, 1) + `]}`, `"a/b"`},
		{"off the globe", `{"services":[` + strings.Replace(good, "%s", station(`,"latitude":95,"longitude":0`), 1) + `]}`, "off the globe"},
		{"duplicate service", `{"services":[{"id":"ocean"},{"id":"ocean"}]}`, "twice"},
	}
	for _, tc := range tests {
		_, err := catalogsync.Import(context.Background(), s, strings.NewReader(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.culprit) {
			t.Errorf("%s: err %v, want one naming %q", tc.name, err, tc.culprit)
		}
	}
	if p, _ := s.ListSensors(context.Background(), catalog.SensorFilter{}); p.Total != 0 {
		t.Fatalf("rejected files left %d sensors", p.Total)
	}
}

// fakeService speaks the internal contract over HTTP with a station list the test edits.
type fakeService struct {
	t        *testing.T
	id       string
	mu       sync.Mutex
	stations map[string]contract.Station
	clock    time.Time
	requests []string
	fail     bool
	token    string
}

func newFakeService(t *testing.T, id string, n int) (*fakeService, *httptest.Server) {
	f := &fakeService{t: t, id: id, stations: map[string]contract.Station{}, clock: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), token: "tok"}
	for i := range n {
		f.put(contract.Station{ExternalID: id + "-" + strconv.Itoa(i), Name: id + " station " + strconv.Itoa(i),
			SensorType: "buoy", Status: "active", DataTypes: []string{"water_temperature_c"},
			Latitude: ptr(float64(i)), Longitude: ptr(float64(-i)), ProviderSlug: "prov-" + id, FeedSlug: "feed-" + id})
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func ptr[T any](v T) *T { return &v }

// put adds or changes a station, stamping it with the service clock (which then advances).
func (f *fakeService) put(st contract.Station) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clock = f.clock.Add(time.Second)
	st.UpdatedAt = contract.Time{Time: f.clock}
	f.stations[st.ExternalID] = st
}

func (f *fakeService) remove(ext string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.stations, ext)
}

func (f *fakeService) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

func (f *fakeService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.URL.RequestURI())
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get(contract.HeaderInternalToken) != f.token {
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"error":"token","code":"forbidden"}`))
		return
	}
	if f.fail {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error":"store down","code":"internal"}`))
		return
	}
	switch r.URL.Path {
	case contract.PathMeta:
		_ = json.NewEncoder(w).Encode(contract.ServiceMeta{ID: f.id, Name: f.id, Domain: "ocean", TemporalPattern: "periodic", Status: "active", Version: "0.1",
			Providers: []contract.Provider{{Slug: "prov-" + f.id, Name: "Provider of " + f.id}},
			Feeds:     []contract.Feed{{Slug: "feed-" + f.id, Name: "Feed of " + f.id, ProviderSlug: "prov-" + f.id}}})
	case contract.PathSensors:
		q := r.URL.Query()
		var since time.Time
		if s := q.Get("updated_since"); s != "" {
			t, err := contract.ParseTime(s)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			since = t
		}
		page, _ := strconv.Atoi(q.Get("page"))
		limit, _ := strconv.Atoi(q.Get("limit"))
		var list []contract.Station
		for _, st := range f.stations {
			if since.IsZero() || st.UpdatedAt.After(since) {
				list = append(list, st)
			}
		}
		sort.Slice(list, func(i, j int) bool { return list[i].ExternalID < list[j].ExternalID })
		from, to := min((page-1)*limit, len(list)), min(page*limit, len(list))
		_ = json.NewEncoder(w).Encode(contract.StationPage{Sensors: append([]contract.Station{}, list[from:to]...),
			Pagination: contract.NewPagination(page, limit, len(list)), ServerTime: contract.Time{Time: f.clock}})
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func TestSyncerFullIncrementalAndMissing(t *testing.T) {
	t.Parallel()
	s := sqliteStore(t)
	ocean, oceanSrv := newFakeService(t, "ocean", 7)
	sy, err := catalogsync.New(s, catalogsync.Config{Services: clients(t, "tok", map[string]string{"ocean": oceanSrv.URL}), PageSize: 3, FullEvery: 3, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// Round 1: full, three pages.
	res, err := sy.SyncService(ctx, "ocean")
	if err != nil {
		t.Fatal(err)
	}
	if res != (catalog.SyncResult{Inserted: 7}) {
		t.Fatalf("round 1 = %+v", res)
	}
	if pages := countPrefix(ocean.log(), "/v1/sensors?"); pages != 3 {
		t.Fatalf("round 1 asked %d pages, want 3: %v", pages, ocean.log())
	}
	got, err := s.Sensor(ctx, ids.Sensor("ocean", "ocean-3"))
	if err != nil || got.FeedSlug != "feed-ocean" || got.ProviderName != "Provider of ocean" || *got.Latitude != 3 {
		t.Fatalf("synced sensor: %+v, %v", got, err)
	}

	// Round 2: incremental, sees only the changed station; the removed one is not yet marked.
	st := ocean.stations["ocean-2"]
	st.Name = "renamed"
	ocean.put(st)
	ocean.remove("ocean-5")
	res, err = sy.SyncService(ctx, "ocean")
	if err != nil {
		t.Fatal(err)
	}
	if res != (catalog.SyncResult{Updated: 1}) {
		t.Fatalf("round 2 (incremental) = %+v", res)
	}
	last := ocean.log()[len(ocean.log())-1]
	if !strings.Contains(last, "updated_since=") {
		t.Fatalf("incremental round did not send updated_since: %s", last)
	}
	// Round 3: incremental, nothing changed.
	if res, err = sy.SyncService(ctx, "ocean"); err != nil || res != (catalog.SyncResult{}) {
		t.Fatalf("round 3 = %+v, %v", res, err)
	}
	// Round 4: full again (FullEvery 3): the removed station is marked missing.
	res, err = sy.SyncService(ctx, "ocean")
	if err != nil {
		t.Fatal(err)
	}
	if res != (catalog.SyncResult{Unchanged: 6, MarkedMissing: 1}) {
		t.Fatalf("round 4 (full) = %+v", res)
	}
	gone, _ := s.Sensor(ctx, ids.Sensor("ocean", "ocean-5"))
	if gone.MissingSince == nil || gone.Status != catalog.StatusInactive {
		t.Fatalf("removed station: %+v", gone)
	}
	sv, err := s.Service(ctx, "ocean")
	if err != nil || sv.SensorCount != 6 || sv.URL != oceanSrv.URL || sv.Version != "0.1" {
		t.Fatalf("service record: %+v, %v", sv, err)
	}
}

func countPrefix(reqs []string, prefix string) int {
	n := 0
	for _, r := range reqs {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

func TestSyncerIsolatesFailingServices(t *testing.T) {
	t.Parallel()
	s := sqliteStore(t)
	_, oceanSrv := newFakeService(t, "ocean", 2)
	weather, weatherSrv := newFakeService(t, "weather", 3)
	weather.fail = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + ln.Addr().String()
	ln.Close()
	sy, err := catalogsync.New(s, catalogsync.Config{
		Services:   clients(t, "tok", map[string]string{"ocean": oceanSrv.URL, "weather": weatherSrv.URL, "airquality": deadURL}),
		MaxBackoff: time.Hour, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := sy.Register(ctx); err != nil {
		t.Fatal(err)
	}
	err = sy.SyncOnce(ctx)
	if err == nil || !strings.Contains(err.Error(), "weather") || !strings.Contains(err.Error(), "airquality") || strings.Contains(err.Error(), "of ocean") {
		t.Fatalf("SyncOnce error = %v", err)
	}
	if !errors.Is(err, contract.ErrUnreachable) {
		t.Fatalf("the dead service's error is not ErrUnreachable: %v", err)
	}
	p, _ := s.ListSensors(ctx, catalog.SensorFilter{})
	if p.Total != 2 {
		t.Fatalf("the healthy service's sensors: %d, want 2", p.Total)
	}
	// The dead service is listed even though it never answered.
	if sv, err := s.Service(ctx, "airquality"); err != nil || sv.Status != "down" {
		t.Fatalf("unreached service: %+v, %v", sv, err)
	}
	// Backing off: the next round leaves the failed services alone.
	before := len(weather.log())
	if err := sy.SyncOnce(ctx); err != nil {
		t.Fatalf("second round (failed services backing off) = %v", err)
	}
	if len(weather.log()) != before {
		t.Fatalf("a backing-off service was called again: %v", weather.log()[before:])
	}
	// An explicit SyncService still works once the service recovers.
	weather.mu.Lock()
	weather.fail = false
	weather.mu.Unlock()
	if res, err := sy.SyncService(ctx, "weather"); err != nil || res.Inserted != 3 {
		t.Fatalf("recovered service: %+v, %v", res, err)
	}
}

func TestSyncerRejectsImpostorsAndBadStations(t *testing.T) {
	t.Parallel()
	s := sqliteStore(t)
	ocean, oceanSrv := newFakeService(t, "ocean", 2)
	ocean.put(contract.Station{ExternalID: "bad-date", Name: "x", DeploymentDate: "yesterday", ProviderSlug: "prov-ocean"})
	ocean.put(contract.Station{ExternalID: "alien", Name: "y", ProviderSlug: "someone-else"})
	sy, err := catalogsync.New(s, catalogsync.Config{Services: clients(t, "tok", map[string]string{"ocean": oceanSrv.URL, "weather": oceanSrv.URL}), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := sy.SyncService(ctx, "ocean")
	if err != nil || res.Inserted != 2 {
		t.Fatalf("bad stations must be skipped, not fail the round: %+v, %v", res, err)
	}
	// The ocean service configured as "weather" says it is ocean.
	if _, err := sy.SyncService(ctx, "weather"); err == nil || !strings.Contains(err.Error(), `"ocean"`) {
		t.Fatalf("impostor: %v", err)
	}
	if _, err := sy.SyncService(ctx, "nope"); err == nil {
		t.Fatal("unknown service id accepted")
	}
	if _, err := catalogsync.New(s, catalogsync.Config{}); err == nil {
		t.Fatal("New without services succeeded")
	}
}

func TestSyncerRunStopsWithContext(t *testing.T) {
	t.Parallel()
	s := sqliteStore(t)
	ocean, oceanSrv := newFakeService(t, "ocean", 2)
	sy, err := catalogsync.New(s, catalogsync.Config{Services: clients(t, "tok", map[string]string{"ocean": oceanSrv.URL}), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sy.Run(ctx, time.Hour) }()
	// The first round runs at once; wait for it to land.
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, _ := s.ListSensors(context.Background(), catalog.SensorFilter{})
		if p.Total == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Run did not sync within 10 s; requests %v", ocean.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if err := sy.Run(context.Background(), 0); err == nil {
		t.Fatal("Run with a zero interval started")
	}
}

// TestStartupFailuresLogInfo: while a service has never answered (it is starting), a failed
// round is INFO; once it has been synced, a failure is a WARN.
func TestStartupFailuresLogInfo(t *testing.T) {
	t.Parallel()
	s := sqliteStore(t)
	f, srv := newFakeService(t, "ocean", 2)
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) }), nil))
	sy, err := catalogsync.New(s, catalogsync.Config{Services: clients(t, "tok", map[string]string{"ocean": srv.URL}), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f.mu.Lock()
	f.fail = true
	f.mu.Unlock()
	_, _ = sy.SyncService(ctx, "ocean")
	f.mu.Lock()
	f.fail = false
	f.mu.Unlock()
	if _, err := sy.SyncService(ctx, "ocean"); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.fail = true
	f.mu.Unlock()
	_, _ = sy.SyncService(ctx, "ocean")
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if !strings.Contains(out, `level=INFO msg="catalog sync: service not answering yet"`) || !strings.Contains(out, `level=WARN msg="catalog sync failed"`) ||
		strings.Index(out, "not answering yet") > strings.Index(out, "catalog sync failed") {
		t.Errorf("want INFO before the first success, WARN after:\n%s", out)
	}
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }

// clients are the services' clients as the gateway builds them.
func clients(t *testing.T, token string, urls map[string]string) map[string]*contract.Client {
	t.Helper()
	cs, err := contract.NewClients(urls, contract.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
