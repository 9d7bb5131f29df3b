// Command readingsbench measures a service's readings store and internal API at scale:
// it loads stations x readings (NDBC-shaped) into PostgreSQL through the store's ingest
// path, reports the ingest rate and the bytes per reading on disk, then serves the
// internal API on a loopback port and measures latest-reading and 500-row-page latency
// over real HTTP.
//
//	go run ./services/runtime/cmd/readingsbench -db postgres://postgres@127.0.0.1:5432/sensorgate_bench?sslmode=disable
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/jackc/pgx/v5"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/formats"
	"github.com/sensorgate/sensorgate/pkg/gctune"
	"github.com/sensorgate/sensorgate/pkg/settings"
	"github.com/sensorgate/sensorgate/services/runtime/benchdata"
	"github.com/sensorgate/sensorgate/services/runtime/httpapi"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

func main() {
	gctune.Apply(os.Getenv) // as the service binaries do
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil && !settings.IsHelp(err) {
		fmt.Fprintln(os.Stderr, "readingsbench:", err)
		os.Exit(1)
	}
}

// options are the benchmark's flags. They are a tool's, set on the command line only, so
// their rows in the table (pkg/settings, the mechanism of every binary) have no variable.
type options struct {
	DB, SQLite, Method, CPUProfile                string
	Stations, Per, Requests, Conc, ExportStations int
	SkipLoad, Reuse, LoadOnly, ExportOnly         bool
}

func table() []settings.Setting[options] {
	intRow := func(name, def, usage string, lo, hi int, dst func(o *options) *int) settings.Setting[options] {
		return settings.Setting[options]{Flag: name, Default: def, Usage: usage, Set: func(o *options, v string) (err error) {
			*dst(o), err = settings.Int(v, lo, hi)
			return err
		}}
	}
	boolRow := func(name, usage string, dst func(o *options) *bool) settings.Setting[options] {
		return settings.Setting[options]{Flag: name, Default: "false", Switch: true, Usage: usage, Set: func(o *options, v string) (err error) {
			*dst(o), err = settings.Bool(v)
			return err
		}}
	}
	return []settings.Setting[options]{
		{Flag: "db", Usage: "PostgreSQL URL of the (dedicated) benchmark database; empty: SQLite at -sqlite", Secret: true, Set: func(o *options, v string) error {
			if v != "" {
				if _, err := settings.URL(v, "postgres://user@host:5432/db", "postgres", "postgresql"); err != nil {
					return err
				}
			}
			o.DB = v
			return nil
		}},
		{Flag: "sqlite", Usage: "SQLite file, when -db is empty", Set: func(o *options, v string) error { o.SQLite = v; return nil }},
		intRow("stations", "1000", "stations to load", 1, 10_000_000, func(o *options) *int { return &o.Stations }),
		intRow("per-station", "10000", "readings per station", 1, 100_000_000, func(o *options) *int { return &o.Per }),
		{Flag: "insert", Default: store.InsertCopy, Usage: "PostgreSQL insert method: copy, unnest or values", Set: func(o *options, v string) (err error) {
			o.Method, err = settings.OneOf(v, store.InsertCopy, store.InsertUnnest, store.InsertValues)
			return err
		}},
		intRow("requests", "2000", "requests per query kind", 1, 10_000_000, func(o *options) *int { return &o.Requests }),
		intRow("concurrency", "4", "concurrent HTTP clients", 1, 10_000, func(o *options) *int { return &o.Conc }),
		boolRow("skip-load", "do not load (the database already holds the data)", func(o *options) *bool { return &o.SkipLoad }),
		intRow("export-stations", "10", "stations in the export measurement (0: skip it)", 0, 1_000_000, func(o *options) *int { return &o.ExportStations }),
		boolRow("reuse", "load only when the database holds fewer than stations x per-station readings (a dataset kept between runs is measured again without loading)", func(o *options) *bool { return &o.Reuse }),
		boolRow("load-only", "load (unless -reuse finds the data), VACUUM ANALYZE, report the footprint, and stop", func(o *options) *bool { return &o.LoadOnly }),
		boolRow("export-only", "measure only the export (no latency requests, no gzip ratio)", func(o *options) *bool { return &o.ExportOnly }),
		{Flag: "cpuprofile", Usage: "write a CPU profile of the exports (the whole process: server and client) to this file", Set: func(o *options, v string) error { o.CPUProfile = v; return nil }},
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("readingsbench", flag.ContinueOnError)
	fs.SetOutput(out)
	l := settings.Register(fs, table(), func(string) string { return "" })
	l.SetHeader("usage: readingsbench [flags]\n\nLoads stations x readings into a readings store, then measures its internal API (docs/services.md, Benchmarks).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var o options
	if err := l.Load(&o); err != nil {
		return err
	}
	if o.DB == "" && o.SQLite == "" {
		return errors.New("give -db (PostgreSQL) or -sqlite")
	}
	st, err := store.Open(ctx, store.Options{DatabaseURL: o.DB, SQLitePath: o.SQLite, ServiceID: "ocean", InsertMethod: o.Method, MaxConns: 16})
	if err != nil {
		return err
	}
	defer st.Close()

	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if o.Reuse && !o.SkipLoad {
		fp, err := st.Footprint(ctx)
		if err != nil {
			return err
		}
		if fp.Readings >= int64(o.Stations)*int64(o.Per) {
			fmt.Fprintf(out, "reuse: the database holds %d readings already, not loading\n", fp.Readings)
			o.SkipLoad = true
		}
	}
	loaded := false
	if !o.SkipLoad {
		loaded = true
		// Batches of 10,000 readings: 100 stations x 100 consecutive readings, walking
		// forward in time as a live feed would.
		const stationsPerBatch, readingsPerBatch = 100, 100
		t0 := time.Now()
		var n int64
		for off := 0; off < o.Per; off += readingsPerBatch {
			for first := 0; first < o.Stations; first += stationsPerBatch {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				k := min(readingsPerBatch, o.Per-off)
				b := benchdata.Batch(first, min(stationsPerBatch, o.Stations-first), k, start.Add(time.Duration(off)*10*time.Minute))
				res, err := st.Ingest(ctx, b)
				if err != nil {
					return err
				}
				n += int64(res.Inserted)
			}
			if off%1000 == 0 {
				fmt.Fprintf(out, "loaded %d readings, %.0f readings/s\n", n, float64(n)/time.Since(t0).Seconds())
			}
		}
		el := time.Since(t0)
		fmt.Fprintf(out, "ingest: %d readings in %s = %.0f readings/s (insert method %s, batches of 10000, generation and encoding included)\n",
			n, el.Round(time.Millisecond), float64(n)/el.Seconds(), o.Method)
	}
	if loaded && o.DB != "" {
		// What autovacuum does after a bulk load; before it, index-only scans read the heap.
		if err := vacuumAnalyze(ctx, o.DB); err != nil {
			return err
		}
	}
	fp, err := st.Footprint(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "storage: %d readings, %d bytes (tables + indexes) = %.1f bytes/reading\n", fp.Readings, fp.Bytes, float64(fp.Bytes)/float64(max(fp.Readings, 1)))
	fmt.Fprintf(out, "rollups: %d bytes = %.1f bytes/reading\n", fp.RollupBytes, float64(fp.RollupBytes)/float64(max(fp.Readings, 1)))
	if o.LoadOnly {
		return nil
	}

	api := httpapi.NewServer(httpapi.Deps{Meta: contract.ServiceMeta{ID: "ocean"}, Store: st})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: o.Conc}}

	pages := max(o.Per/500, 1)
	kinds := []struct {
		name string
		url  func(r *rand.Rand) string
	}{
		{"latest", func(r *rand.Rand) string { return base + contract.LatestPath(benchdata.StationID(r.IntN(o.Stations))) }},
		{"page of 500 (page 1)", func(r *rand.Rand) string {
			return base + contract.ReadingsPath(benchdata.StationID(r.IntN(o.Stations))) + "?limit=500"
		}},
		{"page of 500 (random page)", func(r *rand.Rand) string {
			return base + contract.ReadingsPath(benchdata.StationID(r.IntN(o.Stations))) + fmt.Sprintf("?limit=500&page=%d", 1+r.IntN(pages))
		}},
		{"page of 500, last 7 days", func(r *rand.Rand) string {
			return base + contract.ReadingsPath(benchdata.StationID(r.IntN(o.Stations))) + "?limit=500&since=" +
				start.Add(time.Duration(o.Per)*10*time.Minute-7*24*time.Hour).Format(time.RFC3339)
		}},
		{"page of 500, raw", func(r *rand.Rand) string {
			return base + contract.ReadingsPath(benchdata.StationID(r.IntN(o.Stations))) + "?limit=500&data_format=raw"
		}},
		// Aggregates over the whole loaded range (at most 1000 buckets an answer).
		{"aggregate 1d, whole range", func(r *rand.Rand) string {
			return base + contract.AggregatePath(benchdata.StationID(r.IntN(o.Stations))) + "?interval=1d&since=" + start.Format(time.RFC3339) +
				"&until=" + start.Add(min(time.Duration(o.Per)*10*time.Minute, 999*24*time.Hour)).Format(time.RFC3339)
		}},
		// A year from its hourly rollups (8,760 rows), as daily buckets: a year of hourly
		// buckets is more than an answer holds.
		{"aggregate 1d, one year", func(r *rand.Rand) string {
			return base + contract.AggregatePath(benchdata.StationID(r.IntN(o.Stations))) + "?interval=1d&since=" + start.Format(time.RFC3339) +
				"&until=" + start.Add(365*24*time.Hour).Format(time.RFC3339)
		}},
		{"aggregate 1h, 1000 hours", func(r *rand.Rand) string {
			return base + contract.AggregatePath(benchdata.StationID(r.IntN(o.Stations))) + "?interval=1h&since=" + start.Format(time.RFC3339) +
				"&until=" + start.Add(1000*time.Hour).Format(time.RFC3339)
		}},
		{"aggregate 1h, 1000 h, raw", func(r *rand.Rand) string {
			return base + contract.AggregatePath(benchdata.StationID(r.IntN(o.Stations))) + "?source=readings&interval=1h&since=" + start.Format(time.RFC3339) +
				"&until=" + start.Add(1000*time.Hour).Format(time.RFC3339)
		}},
	}
	if o.ExportOnly {
		kinds = nil
	}
	for _, k := range kinds {
		// Warm up connections and caches the way a running service is warm.
		if _, err := measure(ctx, client, k.url, 200, o.Conc); err != nil {
			return err
		}
		lat, err := measure(ctx, client, k.url, o.Requests, o.Conc)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-28s n=%d concurrency=%d p50=%s p90=%s p99=%s max=%s\n", k.name, len(lat), o.Conc,
			pct(lat, 50), pct(lat, 90), pct(lat, 99), lat[len(lat)-1].Round(10*time.Microsecond))
	}
	if !o.ExportOnly {
		if err := gzipRatio(ctx, client, base+contract.ReadingsPath(benchdata.StationID(0))+"?limit=500", out); err != nil {
			return err
		}
	}
	if o.ExportStations > 0 {
		if o.CPUProfile != "" {
			f, err := os.Create(o.CPUProfile)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			defer pprof.StopCPUProfile()
		}
		ids := make([]string, min(o.ExportStations, o.Stations))
		for i := range ids {
			ids[i] = benchdata.StationID(i)
		}
		q := contract.ExportQuery{Since: start, Until: start.Add(min(time.Duration(o.Per)*10*time.Minute, contract.MaxExportDays*24*time.Hour))}
		for _, f := range []string{"ndjson", "csv"} {
			if err := exportRate(ctx, base+contract.PathExport+"?"+contract.ExportValues(ids, q, f, true).Encode(), f, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// gzipRatio reports how much gzip (the default level) shrinks a 500-row page.
func gzipRatio(ctx context.Context, c *http.Client, u string, out io.Writer) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	_, _ = w.Write(body)
	_ = w.Close()
	fmt.Fprintf(out, "gzip of a 500-row page: %d -> %d bytes = %.1fx smaller\n", len(body), z.Len(), float64(len(body))/float64(z.Len()))
	return nil
}

// exportRate streams one export and reports its lines per second, and readings per
// second beside them (CSV is long form, one row per measurement, about six a reading;
// NDJSON one line a reading), and this process's resident memory (it serves the export):
// before, and its peak during (VmHWM, reset first).
func exportRate(ctx context.Context, u, format string, out io.Writer) error {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // reset the peak RSS (Linux)
	before := procStatus("VmRSS")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var rows, readings, n int64
	var last []byte // CSV: the sensor_id,external_id,timestamp of the previous row
	header := format == "csv"
	for {
		l, err := br.ReadSlice('\n')
		n += int64(len(l))
		if len(l) > 0 && l[len(l)-1] == '\n' {
			rows++
			switch {
			case format != "csv":
				readings++
			case header:
				header = false // the header row is no reading
			default:
				// Rows of one reading are consecutive (sensor, then time order) and share
				// their first three fields.
				if k := formats.ReadingRowKey(l); !bytes.Equal(k, last) {
					readings++
					last = append(last[:0], k...)
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
	el := time.Since(t0)
	fmt.Fprintf(out, "export %-6s %d rows, %d readings (%.2f rows/reading), %d MB in %s = %.0f rows/s, %.0f readings/s; RSS before %s, peak %s\n",
		format, rows, readings, float64(rows)/float64(max(readings, 1)), n>>20, el.Round(time.Millisecond),
		float64(rows)/el.Seconds(), float64(readings)/el.Seconds(), before, procStatus("VmHWM"))
	return nil
}

// procStatus is a field of /proc/self/status ("" elsewhere than Linux).
func procStatus(field string) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "n/a"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			return strings.Join(strings.Fields(strings.TrimPrefix(l, field+":")), " ")
		}
	}
	return "n/a"
}

func measure(ctx context.Context, c *http.Client, url func(*rand.Rand) string, n, conc int) ([]time.Duration, error) {
	var (
		mu   sync.Mutex
		lat  = make([]time.Duration, 0, n)
		errs []error
		wg   sync.WaitGroup
		next = make(chan struct{}, n)
	)
	for i := 0; i < n; i++ {
		next <- struct{}{}
	}
	close(next)
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, 42))
			for range next {
				if ctx.Err() != nil {
					return
				}
				u := url(r)
				t0 := time.Now()
				resp, err := c.Get(u)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != 200 {
						err = fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
					}
				}
				d := time.Since(t0)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					lat = append(lat, d)
				}
				mu.Unlock()
			}
		}(uint64(w))
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, fmt.Errorf("%d failed requests, first: %w", len(errs), errs[0])
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, ctx.Err()
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)].Round(10 * time.Microsecond)
}

// vacuumAnalyze runs VACUUM ANALYZE on the benchmark database.
func vacuumAnalyze(ctx context.Context, url string) error {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	return nil
}
