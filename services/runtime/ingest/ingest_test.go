package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/runtime/ingest"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// csvAdapter is a tiny provider for runtime tests: "STATION,RFC3339,celsius" lines.
func csvAdapter() observation.Adapter {
	return observation.Adapter{
		Name:     "csv",
		Provider: contract.Provider{Slug: "csv", Name: "CSV test provider"},
		Feeds:    []contract.Feed{{Slug: "csv-feed", ProviderSlug: "csv", Domain: "test", TemporalPattern: "periodic"}},
		Parsers:  map[string]observation.ParseFunc{"csv": parseCSV},
	}
}

func parseCSV(p observation.Payload) (observation.Batch, error) {
	b := observation.Batch{Provider: "csv"}
	if !bytes.HasPrefix(p.Body, []byte("#csv")) {
		return b, fmt.Errorf("csv: no #csv header")
	}
	for i, line := range strings.Split(strings.TrimSpace(string(p.Body)), "\n")[1:] {
		f := strings.Split(line, ",")
		if len(f) != 3 {
			b.Rejections = append(b.Rejections, observation.Rejection{Line: i + 2, Reason: "malformed_row"})
			continue
		}
		ts, err1 := time.Parse(time.RFC3339, f[1])
		v, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil {
			b.Rejections = append(b.Rejections, observation.Rejection{StationID: f[0], Line: i + 2, Reason: "malformed_row"})
			continue
		}
		m, err := canon.Normalize(canon.AirTemperatureC, v, "degC")
		if err != nil {
			b.Rejections = append(b.Rejections, observation.Rejection{StationID: f[0], Line: i + 2, Reason: canon.Reason(err)})
			continue
		}
		raw, _ := json.Marshal(map[string]string{"format": "csv", "line": line})
		b.Observations = append(b.Observations, observation.Observation{StationID: f[0], Time: ts, Measurements: []canon.Measurement{m}, Raw: raw, RawFormat: "csv"})
	}
	return b, nil
}

func csvProvider() ingest.Provider {
	return ingest.Provider{
		Adapter: csvAdapter(),
		Cadence: time.Hour,
		Live: ingest.LiveSpec{Targets: func(base string, stations []string, _ string) []ingest.Target {
			var out []ingest.Target
			for _, s := range stations {
				out = append(out, ingest.Target{URL: base + "/" + s + ".csv", Format: "csv"})
			}
			return out
		}},
		Classify: func(rel string, body []byte) (observation.Payload, bool) {
			return observation.Payload{Format: "csv", Body: body}, bytes.HasPrefix(body, []byte("#csv"))
		},
	}
}

func csvBody(station string, start time.Time, n int) []byte {
	var b bytes.Buffer
	b.WriteString("#csv\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%s,%s,%.1f\n", station, start.Add(time.Duration(i)*10*time.Minute).Format(time.RFC3339), 10+float64(i%20)/10)
	}
	return b.Bytes()
}

func openStore(t *testing.T) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), store.Options{SQLitePath: filepath.Join(t.TempDir(), "r.db"), ServiceID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func readingCount(t *testing.T, s store.Store) int64 {
	t.Helper()
	f, err := s.Footprint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return f.Readings
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func runScheduler(t *testing.T, o ingest.Options) (*ingest.Scheduler, func()) {
	t.Helper()
	s, err := ingest.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Run(ctx)
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return s, stop
}

// A folder holding the same readings twice (a 45-day file and a copy of it, plus a
// malformed file and a bad row) stores each reading once and counts the bad ones.
func TestFilesReplayIsIdempotent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	body := csvBody("AB123", start, 45*144)
	if err := os.MkdirAll(filepath.Join(dir, "copy"), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := append(append([]byte(nil), csvBody("AB123", start, 2)...), "AB123,not-a-time,1\nAB123,2026-01-01T00:00:00Z,99999\n"...)
	for name, b := range map[string][]byte{"a.csv": body, "copy/a.csv": body, "bad.csv": bad, "other.txt": []byte("not mine")} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st := openStore(t)
	s, stop := runScheduler(t, ingest.Options{Mode: ingest.ModeFiles, Dir: dir, Store: st, Providers: []ingest.Provider{csvProvider()}})
	<-s.Ready()
	stop()
	if n := readingCount(t, st); n != 45*144 {
		t.Fatalf("stored %d readings, want %d (each once)", n, 45*144)
	}
	h := s.Health()[0]
	if h.RowsIngested != 45*144 || h.RowsRejected["malformed_row"] != 1 || h.RowsRejected["out_of_range"] != 1 || h.LastSuccessAt == nil {
		t.Fatalf("health = %+v", h)
	}
}

// The live source sends conditional GETs: after the first 200 the provider answers 304
// and nothing is parsed again; a changed document is fetched and only its new rows land.
func TestLiveConditionalGet(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	var (
		mu       sync.Mutex
		body     = csvBody("LIVE1", start, 100)
		version  = 1
		full     atomic.Int64
		notMod   atomic.Int64
		agentsOK atomic.Bool
	)
	agentsOK.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("User-Agent"), "sensorgate-test") {
			agentsOK.Store(false)
		}
		mu.Lock()
		etag := fmt.Sprintf(`"v%d"`, version)
		b := body
		mu.Unlock()
		if r.Header.Get("If-None-Match") == etag {
			notMod.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		full.Add(1)
		w.Header().Set("ETag", etag)
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	st := openStore(t)
	s, stop := runScheduler(t, ingest.Options{
		Mode: ingest.ModeLive, Store: st, Providers: []ingest.Provider{csvProvider()}, UserAgent: "sensorgate-test/1",
		Live: map[string]ingest.LiveConfig{"csv": {BaseURL: srv.URL, Stations: []string{"LIVE1"}, Interval: 20 * time.Millisecond}},
	})
	waitFor(t, "two 304 answers", func() bool { return notMod.Load() >= 2 })
	if full.Load() != 1 || readingCount(t, st) != 100 {
		t.Fatalf("after 304s: %d full fetches, %d readings; want 1 and 100", full.Load(), readingCount(t, st))
	}
	mu.Lock()
	body, version = csvBody("LIVE1", start, 130), 2 // the file grows by 30 rows
	mu.Unlock()
	waitFor(t, "the new version", func() bool { return readingCount(t, st) == 130 })
	stop()
	if full.Load() != 2 || !agentsOK.Load() {
		t.Fatalf("full fetches %d (want 2), user agent sent: %v", full.Load(), agentsOK.Load())
	}
	if h := s.Health()[0]; h.RowsIngested != 130 || h.Mode != ingest.ModeLive {
		t.Fatalf("health = %+v", h)
	}
}

// A provider answering 500 is retried a bounded number of times and reported in health;
// it never hangs the loop.
func TestLiveProviderDown(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	client := retryablehttp.NewClient()
	client.RetryMax, client.RetryWaitMin, client.RetryWaitMax, client.Logger = 2, time.Millisecond, 5*time.Millisecond, nil
	st := openStore(t)
	s, stop := runScheduler(t, ingest.Options{
		Mode: ingest.ModeLive, Store: st, Providers: []ingest.Provider{csvProvider()}, HTTPClient: client,
		Live: map[string]ingest.LiveConfig{"csv": {BaseURL: srv.URL, Stations: []string{"X"}, Interval: time.Hour}},
	})
	<-s.Ready()
	stop()
	h := s.Health()[0]
	if hits.Load() != 3 || h.LastErrorAt == nil || !strings.Contains(h.LastError, "500") || ingest.Healthy(h) {
		t.Fatalf("hits %d (want 1 + 2 retries), health %+v", hits.Load(), h)
	}
}

// gate holds the first batch until the scheduler has been told to stop, then lets it
// write: shutdown must wait for it, and it must land.
type gate struct {
	store.Store
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func (g *gate) Ingest(ctx context.Context, b store.Batch) (store.IngestResult, error) {
	g.once.Do(func() {
		close(g.started)
		<-g.release
	})
	return g.Store.Ingest(ctx, b)
}

func TestShutdownDrainsBatchInFlight(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := 0; i < 3; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.csv", i)), csvBody(fmt.Sprintf("ST%d", i), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 50), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	real := openStore(t)
	g := &gate{Store: real, started: make(chan struct{}), release: make(chan struct{})}
	s, err := ingest.New(ingest.Options{Mode: ingest.ModeFiles, Dir: dir, Store: g, Providers: []ingest.Provider{csvProvider()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	<-g.started
	cancel()
	select {
	case <-done:
		t.Fatal("Run returned while a batch was still being written")
	case <-time.After(50 * time.Millisecond):
	}
	close(g.release)
	<-done
	// The batch in flight landed whole; no batch was started after the stop.
	if n := readingCount(t, real); n != 50 {
		t.Fatalf("stored %d readings after shutdown, want the 50 of the batch in flight", n)
	}
}

func TestBadOptions(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	cases := []struct {
		name string
		o    ingest.Options
		want string
	}{
		{"unknown mode", ingest.Options{Mode: "psychic", Store: st, Providers: []ingest.Provider{csvProvider()}}, "source mode"},
		{"files without folder", ingest.Options{Mode: ingest.ModeFiles, Store: st, Providers: []ingest.Provider{csvProvider()}}, "SOURCE_DIR"},
		{"no store", ingest.Options{Mode: ingest.ModeFiles}, "no store"},
	}
	for _, c := range cases {
		if _, err := ingest.New(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
}
