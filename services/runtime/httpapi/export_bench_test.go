package httpapi_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/runtime/benchdata"
	"github.com/sensorgate/sensorgate/services/runtime/httpapi"
	"github.com/sensorgate/sensorgate/services/runtime/store"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// discard is a ResponseWriter that counts and drops what it is given (the export streams
// hundreds of MB; a recorder would hold them), counting lines.
type discard struct {
	h            http.Header
	bytes, lines int64
}

func (d *discard) Header() http.Header { return d.h }
func (d *discard) WriteHeader(int)     {}
func (d *discard) Flush()              {}
func (d *discard) Write(b []byte) (int, error) {
	d.bytes += int64(len(b))
	d.lines += int64(bytes.Count(b, []byte{'\n'}))
	return len(b), nil
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backendCPU is the CPU time (user and system, from /proc) of every PostgreSQL backend
// connected to the database of url, by process id.
func backendCPU(b *testing.B, url string) map[int]time.Duration {
	db, err := sql.Open("pgx", url)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	out := map[int]time.Duration{}
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			b.Fatal(err)
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // PostgreSQL on another host: no figure
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		out[pid] = time.Duration(ut+st) * 10 * time.Millisecond // clock ticks of 1/100 s
	}
	return out
}

// BenchmarkExport is the service's CPU per exported reading without the network: the
// store's scan from PostgreSQL, block decoding and the encoding, into a writer that drops
// the bytes; 4 stations x 10,000 readings (NDBC-shaped, in blocks of 32) per export.
//
//	scripts/testenv.sh go test -run '^$' -bench Export -benchtime 5x ./services/runtime/httpapi/
func BenchmarkExport(b *testing.B) {
	const stations, per = 4, 10000
	ctx := context.Background()
	dbURL := testenv.Postgres(b)
	st, err := store.Open(ctx, store.Options{ServiceID: "ocean", DatabaseURL: dbURL})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for off := 0; off < per; off += 500 {
		if _, err := st.Ingest(ctx, benchdata.Batch(0, stations, 500, start.Add(time.Duration(off)*10*time.Minute))); err != nil {
			b.Fatal(err)
		}
	}
	h := httpapi.NewServer(httpapi.Deps{Meta: contract.ServiceMeta{ID: "ocean"}, Store: st})
	ids := make([]string, stations)
	for i := range ids {
		ids[i] = benchdata.StationID(i)
	}
	q := contract.ExportQuery{Since: start, Until: start.Add(per * 10 * time.Minute)}
	for _, f := range []string{"ndjson", "csv"} {
		b.Run(f, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, contract.PathExport+"?"+contract.ExportValues(ids, q, f, true).Encode(), nil)
			var lines, n int64
			pg0 := backendCPU(b, dbURL)
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w := &discard{h: http.Header{}}
				h.ServeHTTP(w, req)
				lines, n = lines+w.lines, n+w.bytes
			}
			cpu := cpuTime() - cpu0
			var pg time.Duration
			for pid, t := range backendCPU(b, dbURL) {
				pg += t - pg0[pid]
			}
			el := b.Elapsed().Seconds()
			readings := float64(b.N * stations * per)
			b.ReportMetric(readings/el, "readings/s")
			b.ReportMetric(float64(lines)/el, "lines/s")
			b.ReportMetric(el*1e9/readings, "ns/reading")
			b.ReportMetric(float64(n)/float64(b.N), "out-bytes/op")
			// This process's CPU (user + system) a reading, whatever else holds the
			// machine: the service's share of the cost, without PostgreSQL's.
			b.ReportMetric(float64(cpu.Nanoseconds())/readings, "cpu-ns/reading")
			// The CPU time of the database's PostgreSQL backends (the store's pool) a
			// reading: the queries' share, planning included.
			b.ReportMetric(float64(pg.Nanoseconds())/readings, "pg-cpu-ns/reading")
		})
	}
}
