package export_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/formats"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// BenchmarkExportThroughGateway measures the bulk export of a readings dataset read
// straight from the ocean service process and through a gateway process in front of it
// (one after the other in every iteration, same client, same sensors in the same order),
// so the gateway's share shows beside the service's: readings/s each way (through the
// gateway without compression and with gzip), and the CPU time each process spent per
// reading (from /proc, whatever else holds the machine).
//
// The dataset is a kept readingsbench database (docs/services.md "Formats and export"):
//
//	createdb -h 127.0.0.1 -U postgres export_speed_2m
//	go run ./services/runtime/cmd/readingsbench -db 'postgres://postgres@127.0.0.1:5432/export_speed_2m?sslmode=disable' \
//	  -stations 20 -per-station 100000 -load-only
//	SENSORGATE_EXPORT_BENCH_DB='postgres://postgres@127.0.0.1:5432/export_speed_2m?sslmode=disable' \
//	  scripts/testenv.sh go test -run '^$' -bench ExportThroughGateway -benchtime 3x -timeout 30m ./gateway/export/
//
// Without SENSORGATE_EXPORT_BENCH_DB it loads 4 stations x 20,000 readings into a fresh
// database first (readingsbench -load-only). The export covers the dataset's first 366
// days (the most one export takes).
func BenchmarkExportThroughGateway(b *testing.B) {
	dir := b.TempDir()
	db := os.Getenv("SENSORGATE_EXPORT_BENCH_DB")
	if db == "" {
		db = testenv.Postgres(b)
		loader := testenv.Build(b, dir, "readingsbench", "github.com/sensorgate/sensorgate/services/runtime/cmd/readingsbench")
		if out, err := exec.Command(loader, "-db", db, "-stations", "4", "-per-station", "20000", "-load-only").CombinedOutput(); err != nil {
			b.Fatalf("readingsbench: %v\n%s", err, out)
		}
	}
	const token = "export-bench-internal-token"
	gwBin := testenv.Build(b, dir, "gateway", "github.com/sensorgate/sensorgate/gateway/cmd/gateway")
	oceanBin := testenv.Build(b, dir, "ocean", "github.com/sensorgate/sensorgate/services/cmd/ocean")
	empty := filepath.Join(dir, "no-files")
	if err := os.Mkdir(empty, 0o755); err != nil {
		b.Fatal(err)
	}
	oceanAddr, gwAddr := testenv.FreeAddr(b), testenv.FreeAddr(b)
	pprof := func(name string) []string {
		// Binaries built with GOFLAGS=-tags=pprof serve net/http/pprof on PPROF_ADDR
		// (pkg/obs); the address is left in $E2E_PPROF_DIR/<name>.addr, as in
		// gateway/stream/e2e, for `go tool pprof` while the benchmark runs.
		dir := os.Getenv("E2E_PPROF_DIR")
		if dir == "" {
			return nil
		}
		addr := testenv.FreeAddr(b)
		_ = os.WriteFile(filepath.Join(dir, name+".addr"), []byte(addr), 0o644)
		return []string{"PPROF_ADDR=" + addr}
	}
	// Files mode over an empty folder: the service serves the dataset and ingests nothing.
	ocean := testenv.StartProcess(b, testenv.Command{Name: "ocean", Path: oceanBin, Env: append([]string{"SERVICE_ADDR=" + oceanAddr,
		"READINGS_DATABASE_URL=" + db, "SOURCE_MODE=files", "SOURCE_DIR=" + empty, "LOG_LEVEL=warn", "INTERNAL_TOKEN=" + token}, pprof("ocean")...)})
	ocean.WaitReady(b, "http://"+oceanAddr+"/readyz", 120*time.Second)
	gwEnv := []string{"SENSORGATE_ENV=production", "DATABASE_URL=" + testenv.Postgres(b), "INTERNAL_TOKEN=" + token,
		"SERVICE_URLS=ocean=http://" + oceanAddr, "SYNC_INTERVAL=2s", "REDIS_URL=" + testenv.RedisURL(), "LOG_LEVEL=warn",
		"RATE_LIMIT_PLANS=big=100000000/h"}
	cmd := exec.Command(gwBin, "keys", "create", "--owner", "export-bench", "--env", "production", "--plan", "big")
	cmd.Env = append(os.Environ(), gwEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("keys create: %v\n%s", err, out)
	}
	key, _, _ := strings.Cut(string(out), "\n")
	gw := testenv.StartProcess(b, testenv.Command{Name: "gateway", Path: gwBin, Env: append(append([]string{"GATEWAY_ADDR=" + gwAddr}, gwEnv...), pprof("gateway")...)})
	gw.WaitReady(b, "http://"+gwAddr+"/healthz", 60*time.Second)

	// The sensors, once the catalog has them, in the export's order (by sensor id).
	type sensor struct {
		ID         string `json:"id"`
		ExternalID string `json:"external_id"`
	}
	var sensors []sensor
	deadline := time.Now().Add(60 * time.Second)
	for len(sensors) == 0 || sensors[0].ID == "" {
		var page struct{ Sensors []sensor }
		body, status := fetch(b, "http://"+gwAddr+"/api/v1/sensors?service=ocean&limit=1000", contract.HeaderInternalToken, "", "x-api-key", key)
		if status == 200 && json.Unmarshal(body, &page) == nil && len(page.Sensors) > 0 {
			sensors = page.Sensors
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the gateway's catalog has no sensors after 60 s: %d %s", status, body)
		}
		time.Sleep(500 * time.Millisecond)
	}
	slices.SortFunc(sensors, func(x, y sensor) int { return strings.Compare(x.ID, y.ID) })
	// SENSORGATE_EXPORT_BENCH_SENSORS=N exports the first N sensors (by id) of a larger
	// dataset, e.g. 20 (1M readings) or 190 (10M) of the 100M one.
	through := url.Values{"service": {"ocean"}}
	if n, _ := strconv.Atoi(os.Getenv("SENSORGATE_EXPORT_BENCH_SENSORS")); n > 0 && n < len(sensors) {
		sensors = sensors[:n]
		ids := make([]string, n)
		for i, s := range sensors {
			ids[i] = s.ID
		}
		through = url.Values{"sensor_ids": {strings.Join(ids, ",")}}
	}
	ids := make([]string, len(sensors))
	for i, s := range sensors {
		ids[i] = s.ExternalID
	}
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // readingsbench's first reading
	q := contract.ExportQuery{Since: since, Until: since.Add(contract.MaxExportDays * 24 * time.Hour)}

	var readingsPerExport int64 // from the ndjson run, for the formats that are not line by line
	for _, f := range []string{"ndjson", "csv"} {
		b.Run(f, func(b *testing.B) {
			direct := "http://" + oceanAddr + contract.PathExport + "?" + contract.ExportValues(ids, q, f, true).Encode()
			v := maps.Clone(through)
			v.Set("format", f)
			v.Set("since", contract.FormatTime(q.Since))
			v.Set("until", contract.FormatTime(q.Until))
			through := "http://" + gwAddr + "/api/v1/readings/export?" + v.Encode()
			serviceRSS, gatewayRSS := procStatusKB(b, ocean, "VmRSS"), procStatusKB(b, gw, "VmRSS")
			// Through the gateway twice: without compression, and with gzip as a client
			// that accepts it gets (Go's transport asks for it and inflates it here, so
			// the bytes compared are the same).
			var d, g, z exportRun
			for i := 0; i < b.N; i++ {
				d.add(b, direct, f, []string{contract.HeaderInternalToken, token, "Accept-Encoding", "identity"}, ocean, nil)
				g.add(b, through, f, []string{"x-api-key", key, "Accept-Encoding", "identity"}, ocean, gw)
				z.add(b, through, f, []string{"x-api-key", key}, ocean, gw)
			}
			for _, r := range []exportRun{g, z} {
				if d.lines != r.lines || d.bytes != r.bytes {
					b.Fatalf("direct %d lines, %d bytes; through the gateway %d lines, %d bytes", d.lines, d.bytes, r.lines, r.bytes)
				}
			}
			rd := float64(d.readings)
			if f == "ndjson" {
				readingsPerExport = d.readings / int64(b.N)
			}
			b.ReportMetric(float64(g.bytes)/rd, "bytes/reading")
			b.ReportMetric(rd/d.took.Seconds(), "direct-readings/s")
			b.ReportMetric(rd/g.took.Seconds(), "gateway-readings/s")
			b.ReportMetric(rd/z.took.Seconds(), "gzip-readings/s")
			b.ReportMetric(float64(d.lines)/d.took.Seconds(), "direct-lines/s")
			b.ReportMetric(float64(d.lines)/g.took.Seconds(), "gateway-lines/s")
			b.ReportMetric(float64(d.serviceCPU.Nanoseconds())/rd, "service-cpu-ns/reading")
			b.ReportMetric(float64(g.gatewayCPU.Nanoseconds())/rd, "gateway-cpu-ns/reading")
			b.ReportMetric(float64(z.gatewayCPU.Nanoseconds())/rd, "gzip-gateway-cpu-ns/reading")
			b.ReportMetric(float64(d.readings)/float64(b.N), "readings/op")
			// Peak RSS since start (VmHWM) against RSS before this format's exports: flat
			// memory keeps the two close whatever the export's size.
			b.ReportMetric(float64(serviceRSS)/1024, "service-rss-before-MB")
			b.ReportMetric(float64(procStatusKB(b, ocean, "VmHWM"))/1024, "service-peak-rss-MB")
			b.ReportMetric(float64(gatewayRSS)/1024, "gateway-rss-before-MB")
			b.ReportMetric(float64(procStatusKB(b, gw, "VmHWM"))/1024, "gateway-peak-rss-MB")
			b.Logf("%s: %d readings, %d lines, %d MB an export; direct %s, through the gateway %s, gzip %s (b.N=%d)", f, d.readings/int64(b.N),
				d.lines/int64(b.N), d.bytes/int64(b.N)>>20, (d.took / time.Duration(b.N)).Round(time.Millisecond),
				(g.took / time.Duration(b.N)).Round(time.Millisecond), (z.took / time.Duration(b.N)).Round(time.Millisecond), b.N)
		})
	}

	// The science formats (docs/formats.md) exist only through the gateway, which writes
	// them from the services' CSV rows: readings/s, bytes per reading, CPU and peak RSS of
	// both processes. `make bench-formats` runs the whole benchmark once (-benchtime 1x).
	for _, f := range []string{"parquet", "netcdf"} {
		b.Run(f, func(b *testing.B) {
			if readingsPerExport == 0 {
				b.Skip("needs the ndjson run first (its reading count)")
			}
			v := maps.Clone(through)
			v.Set("format", f)
			v.Set("since", contract.FormatTime(q.Since))
			v.Set("until", contract.FormatTime(q.Until))
			u := "http://" + gwAddr + "/api/v1/readings/export?" + v.Encode()
			serviceRSS, gatewayRSS := procStatusKB(b, ocean, "VmRSS"), procStatusKB(b, gw, "VmRSS")
			var g exportRun
			for i := 0; i < b.N; i++ {
				g.add(b, u, f, []string{"x-api-key", key, "Accept-Encoding", "identity"}, ocean, gw)
			}
			rd := float64(readingsPerExport * int64(b.N))
			b.ReportMetric(rd/g.took.Seconds(), "gateway-readings/s")
			b.ReportMetric(float64(g.bytes)/rd, "bytes/reading")
			b.ReportMetric(float64(g.serviceCPU.Nanoseconds())/rd, "service-cpu-ns/reading")
			b.ReportMetric(float64(g.gatewayCPU.Nanoseconds())/rd, "gateway-cpu-ns/reading")
			b.ReportMetric(float64(serviceRSS)/1024, "service-rss-before-MB")
			b.ReportMetric(float64(procStatusKB(b, ocean, "VmHWM"))/1024, "service-peak-rss-MB")
			b.ReportMetric(float64(gatewayRSS)/1024, "gateway-rss-before-MB")
			b.ReportMetric(float64(procStatusKB(b, gw, "VmHWM"))/1024, "gateway-peak-rss-MB")
			b.Logf("%s: %d readings, %d MB an export, %s through the gateway (b.N=%d)", f, readingsPerExport, g.bytes/int64(b.N)>>20,
				(g.took / time.Duration(b.N)).Round(time.Millisecond), b.N)
		})
	}
}

// exportRun sums the exports of one way.
type exportRun struct {
	lines, readings, bytes int64
	took                   time.Duration
	serviceCPU, gatewayCPU time.Duration
}

// add reads one export to its end, counting lines and readings (CSV: rows of one reading
// are consecutive and share their first three fields), and the CPU time the processes
// spent meanwhile.
func (r *exportRun) add(b *testing.B, u, format string, hdr []string, service, gateway *testenv.Process) {
	b.Helper()
	s0, g0 := procCPU(b, service), procCPU(b, gateway)
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		b.Fatalf("GET %s: %d %s", u, resp.StatusCode, body)
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	header := format == "csv"
	var last []byte
	for {
		l, err := br.ReadSlice('\n')
		r.bytes += int64(len(l))
		if format == "parquet" || format == "netcdf" {
			// Binary: only the bytes count (the readings come from the ndjson run).
		} else if len(l) > 0 && l[len(l)-1] == '\n' {
			r.lines++
			switch {
			case format != "csv":
				r.readings++
			case header:
				header = false
			default:
				if k := formats.ReadingRowKey(l); !bytes.Equal(k, last) {
					r.readings++
					last = append(last[:0], k...)
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			b.Fatalf("reading %s: %v", u, err)
		}
	}
	r.took += time.Since(t0)
	r.serviceCPU += procCPU(b, service) - s0
	r.gatewayCPU += procCPU(b, gateway) - g0
}

// procCPU is the user and system CPU time process p has used (Linux /proc; 0 for nil).
func procCPU(b *testing.B, p *testenv.Process) time.Duration {
	if p == nil {
		return 0
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid()))
	if err != nil {
		b.Fatalf("cpu time: %v", err)
	}
	// Fields after the command name (which may hold spaces) in parentheses: utime and
	// stime are the 12th and 13th, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// procStatusKB is a kB field of process p's /proc status (VmRSS, VmHWM).
func procStatusKB(b *testing.B, p *testenv.Process, field string) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		b.Fatalf("%s: %v", field, err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, p.Pid())
	return 0
}

// fetch GETs u with header pairs (empty values skipped).
func fetch(b *testing.B, u string, hdr ...string) ([]byte, int) {
	b.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] != "" {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return body, resp.StatusCode
}
