package export_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
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

	"github.com/sensorgate/sensorgate/gateway/openapi"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/formats"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// longRow is one measurement of the NDJSON export in the long form both science formats
// hold.
type longRow struct {
	sensorID, externalID, parameter, unit, unitOriginal string
	ms                                                  int64
	value, valueOriginal                                float64
	flag                                                int
}

// TestScienceFormatsMatchNDJSON runs the ocean service (simulated NDBC buoys, PostgreSQL)
// and the gateway as processes and reads the science formats of one export back with
// independent readers: the Parquet file with DuckDB (@duckdb/node-api), the NetCDF file
// with ncdump -h, netCDF4-python, xarray and pandas, each compared row by row (values,
// units, UTC timestamps, QARTOD flags) with the NDJSON export of the same query; then a
// sensor's readings page as Parquet against its JSON page, and the 400s.
func TestScienceFormatsMatchNDJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	t.Parallel()
	dir := t.TempDir()
	gwBin := testenv.Build(t, dir, "gateway", "github.com/sensorgate/sensorgate/gateway/cmd/gateway")
	oceanBin := testenv.Build(t, dir, "ocean", "github.com/sensorgate/sensorgate/services/cmd/ocean")
	oceanAddr, gwAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	testenv.Start(t, oceanBin, "SERVICE_ADDR="+oceanAddr, "READINGS_DATABASE_URL="+testenv.Postgres(t),
		"SOURCE_MODE=simulate", "SIM_STATIONS=4", "SIM_DAYS=4", "SIM_SEED=11", "LOG_FORMAT=json")
	testenv.Start(t, gwBin, "GATEWAY_ADDR="+gwAddr, "SQLITE_PATH="+filepath.Join(dir, "catalog.db"), "SENSORGATE_ENV=development",
		"DEV_API_KEY="+devKey, "SERVICE_URLS=ocean=http://"+oceanAddr, "SYNC_INTERVAL=1s", "PROBE_INTERVAL=1s")
	base := "http://" + gwAddr + "/api/v1"
	deadline := time.Now().Add(120 * time.Second)
	for {
		var list struct {
			Sensors []struct{ ID string } `json:"sensors"`
		}
		ready := false
		req, _ := http.NewRequest("GET", base+"/sensors?limit=100", nil)
		req.Header.Set("x-api-key", devKey)
		if resp, err := http.DefaultClient.Do(req); err == nil { // refused until the gateway listens
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && json.Unmarshal(b, &list) == nil && len(list.Sensors) >= 4 {
				if resp, err := http.Get("http://" + oceanAddr + "/readyz"); err == nil {
					resp.Body.Close()
					ready = resp.StatusCode == 200
				}
			}
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sensors not ready after 120s")
		}
		time.Sleep(300 * time.Millisecond)
	}
	v, err := openapi.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	// Every answer checked against the OpenAPI document; no transparent gzip, so that
	// what the gateway compresses shows.
	client := &http.Client{Transport: v.Transport(t, &http.Transport{DisableCompression: true}), Timeout: 120 * time.Second}
	sget := func(u string, hdr ...string) reply {
		t.Helper()
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("x-api-key", devKey)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		return reply{resp.StatusCode, resp.Header, b}
	}
	until := time.Now().UTC().Add(-time.Hour).Truncate(time.Hour)
	since := until.AddDate(0, 0, -4)
	rng := "since=" + url.QueryEscape(contract.FormatTime(since)) + "&until=" + url.QueryEscape(contract.FormatTime(until))

	// The NDJSON export, in long form, and its readings (one NetCDF observation each).
	nd := sget(base + "/readings/export?service=ocean&format=ndjson&" + rng)
	if nd.status != 200 {
		t.Fatalf("ndjson export: %d %.300s", nd.status, nd.body)
	}
	var rows []longRow
	var readings []exportLine
	flags := map[int]int{}
	sc := bufio.NewScanner(bytes.NewReader(nd.body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l exportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.SensorID == "" {
			t.Fatalf("ndjson line %q: %v", sc.Text(), err)
		}
		readings = append(readings, l)
		for _, m := range l.Measurements {
			rows = append(rows, longRow{l.SensorID, l.ExternalID, m.Parameter, m.Unit, m.UnitOriginal, l.Timestamp.UnixMilli(),
				m.Value, m.ValueOriginal, m.Quality().Flag})
			flags[m.Quality().Flag]++
		}
	}
	if len(rows) == 0 {
		t.Fatal("the ndjson export is empty")
	}
	t.Logf("%d readings, %d measurements, flags %v", len(readings), len(rows), flags)

	// Parquet, asked for with gzip accepted: sent as it is (its pages are compressed).
	pq := sget(base+"/readings/export?service=ocean&format=parquet&"+rng, "Accept-Encoding", "gzip")
	if pq.status != 200 || pq.header.Get("Content-Type") != formats.TypeParquet || pq.header.Get("Content-Encoding") != "" ||
		pq.header.Get("Content-Disposition") != `attachment; filename="export.parquet"` || !bytes.HasPrefix(pq.body, []byte("PAR1")) {
		t.Fatalf("parquet export: %d %v %.100q", pq.status, pq.header, pq.body)
	}
	file := filepath.Join(dir, "export.parquet")
	if err := os.WriteFile(file, pq.body, 0o644); err != nil {
		t.Fatal(err)
	}
	got := duckDB(t, file)
	if len(got.Rows) != len(rows) {
		t.Fatalf("duckdb reads %d rows, ndjson has %d measurements", len(got.Rows), len(rows))
	}
	for i, w := range rows {
		g := got.Rows[i]
		if g["sensor_id"] != w.sensorID || g["external_id"] != w.externalID || g["parameter"] != w.parameter || g["unit"] != w.unit ||
			g["unit_original"] != w.unitOriginal || g["value"] != w.value || g["value_original"] != w.valueOriginal ||
			g["qc_flag"] != float64(w.flag) || g["timestamp_ms"] != float64(w.ms) ||
			g["timestamp_utc"] != contract.FormatTime(time.UnixMilli(w.ms)) {
			t.Fatalf("parquet row %d: %v, ndjson %+v", i, g, w)
		}
	}

	// NetCDF: spooled, sent with its length; gzip when accepted (it is not compressed).
	nc := sget(base + "/readings/export?service=ocean&format=netcdf&" + rng)
	if nc.status != 200 || nc.header.Get("Content-Type") != formats.TypeNetCDF || nc.header.Get("Content-Length") != strconv.Itoa(len(nc.body)) ||
		nc.header.Get("Content-Disposition") != `attachment; filename="export.nc"` || !bytes.HasPrefix(nc.body, []byte("CDF\x02")) {
		t.Fatalf("netcdf export: %d %v %.100q", nc.status, nc.header, nc.body)
	}
	if z := sget(base+"/readings/export?service=ocean&format=netcdf&"+rng, "Accept-Encoding", "gzip"); z.status != 200 || z.header.Get("Content-Encoding") != "gzip" || len(z.body) >= len(nc.body) {
		t.Errorf("netcdf with gzip accepted: %d %v, %d bytes against %d", z.status, z.header, len(z.body), len(nc.body))
	}
	file = filepath.Join(dir, "export.nc")
	if err := os.WriteFile(file, nc.body, 0o644); err != nil {
		t.Fatal(err)
	}
	hdr := ncdump(t, file)
	for _, want := range []string{`:Conventions = "CF-1.8, ACDD-1.3" ;`, `:featureType = "timeSeries" ;`, `station_id:cf_role = "timeseries_id" ;`,
		`time:units = "seconds since 1970-01-01T00:00:00Z" ;`, `:title = `, `:summary = `, `:source = "sensorgate services: ocean" ;`,
		`:history = `, `:date_created = `, fmt.Sprintf("obs = UNLIMITED ; // (%d currently)", len(readings))} {
		if !strings.Contains(hdr, want) {
			t.Errorf("ncdump -h lacks %q", want)
		}
	}
	x := netCDF4(t, file)
	if x.Global["Conventions"] != "CF-1.8, ACDD-1.3" || x.Global["featureType"] != "timeSeries" || x.FileFormat != "NETCDF3_64BIT_OFFSET" {
		t.Errorf("netCDF4 reads %s, globals %v", x.FileFormat, x.Global)
	}
	for name, va := range x.Vars {
		if strings.HasSuffix(name, "_qc") {
			if va.Attrs["standard_name"] != "aggregate_quality_flag" || fmt.Sprint(va.Attrs["flag_values"]) != "[1 2 3 4 9]" ||
				va.Attrs["flag_meanings"] != "pass not_evaluated suspect fail missing" {
				t.Errorf("%s: %v", name, va.Attrs)
			}
		}
	}
	if len(x.Obs["time_ms"]) != len(readings) || x.PandasRows != len(readings) {
		t.Fatalf("xarray/pandas read %d observations (%d rows), ndjson has %d readings", len(x.Obs["time_ms"]), x.PandasRows, len(readings))
	}
	for i, r := range readings {
		st := int(num(x.Obs["station_index"][i]))
		if x.StationID[st] != r.SensorID || x.ExternalID[st] != r.ExternalID || int64(num(x.Obs["time_ms"][i])) != r.Timestamp.UnixMilli() {
			t.Fatalf("observation %d: station %d (%s), time %v; ndjson %s at %s", i, st, x.StationID[st], x.Obs["time_ms"][i], r.SensorID, r.Timestamp)
		}
		have := map[string]bool{}
		for _, m := range r.Measurements {
			have[m.Parameter] = true
			if g := x.Obs[m.Parameter][i]; g == nil || num(g) != m.Value || int(num(x.Obs[m.Parameter+"_qc"][i])) != m.Quality().Flag {
				t.Fatalf("observation %d %s: %v flag %v; ndjson %v flag %d", i, m.Parameter, g, x.Obs[m.Parameter+"_qc"][i], m.Value, m.Quality().Flag)
			}
		}
		for name, col := range x.Obs {
			if name == "time_ms" || name == "station_index" || strings.HasSuffix(name, "_qc") || have[name] {
				continue
			}
			if col[i] != nil || int(num(x.Obs[name+"_qc"][i])) != 9 {
				t.Fatalf("observation %d lacks %s in ndjson, the file has %v flag %v", i, name, col[i], x.Obs[name+"_qc"][i])
			}
		}
	}

	// A sensor's readings page as Parquet: the JSON page's measurements.
	var page contract.ReadingsResponse
	pj := sget(base + "/sensors/" + readings[0].SensorID + "/readings?sort=asc&limit=50&" + rng)
	if pj.status != 200 || json.Unmarshal(pj.body, &page) != nil || len(page.Readings) == 0 {
		t.Fatalf("readings page: %d %.200s", pj.status, pj.body)
	}
	pp := sget(base + "/sensors/" + readings[0].SensorID + "/readings?sort=asc&limit=50&format=parquet&" + rng)
	if pp.status != 200 || pp.header.Get("Content-Type") != formats.TypeParquet || pp.header.Get("X-Total-Count") == "" {
		t.Fatalf("readings page as parquet: %d %v", pp.status, pp.header)
	}
	file = filepath.Join(dir, "page.parquet")
	if err := os.WriteFile(file, pp.body, 0o644); err != nil {
		t.Fatal(err)
	}
	got = duckDB(t, file)
	i := 0
	for _, r := range page.Readings {
		for _, m := range r.Measurements {
			g := got.Rows[i]
			if g["sensor_id"] != page.SensorID || g["parameter"] != m.Parameter || g["value"] != m.Value || g["qc_flag"] != float64(m.Quality().Flag) ||
				g["timestamp_ms"] != float64(r.Timestamp.UnixMilli()) {
				t.Fatalf("page parquet row %d: %v; json %s %+v", i, g, r.Timestamp, m)
			}
			i++
		}
	}
	if i != len(got.Rows) {
		t.Fatalf("page parquet has %d rows, the JSON page %d measurements", len(got.Rows), i)
	}

	// The 400s name the culprit.
	for q, culprit := range map[string]string{"format=netcdf&lineage=true&": "lineage", "format=xml&": "format"} {
		r := sget(base + "/readings/export?service=ocean&" + q + rng)
		if r.status != 400 || !bytes.Contains(r.body, []byte(`invalid parameter \"`+culprit+`\"`)) {
			t.Errorf("%s: %d %s, want 400 naming %s", q, r.status, r.body, culprit)
		}
	}
	if r := sget(base + "/readings/export?service=ocean&format=xml&" + rng); !bytes.Contains(r.body, []byte("parquet")) || !bytes.Contains(r.body, []byte("netcdf")) {
		t.Errorf("format=xml: %s, want the allowed formats named", r.body)
	}

	// The budget runs out mid-export: spend the key's hour down to its last request, then
	// export more than 10,000 rows. Row 10,001 needs another request, which is refused:
	// NetCDF answers 429 (it had sent nothing); a Parquet file ends without its footer, so
	// DuckDB refuses it, and the trailer says why.
	if len(rows) <= contract.ExportRowsPerRequest {
		t.Fatalf("%d rows: the budget check needs more than %d", len(rows), contract.ExportRowsPerRequest)
	}
	// A development key's budget refills one request every 3.6 s (1000/h), so a try that
	// a refill overtook (a slow machine) is made again, at most three times.
	burn := func() {
		for spent := 0; ; {
			r := sget(base + "/sensors/types")
			rem, _ := strconv.Atoi(r.header.Get("x-ratelimit-remaining"))
			switch {
			case r.status == 429 && spent < 10:
				// Spent already (an earlier try): wait for two refills, then spend down.
				spent++
				time.Sleep(8 * time.Second)
				continue
			case r.status != 200:
				t.Fatalf("burning the budget: %d %s", r.status, r.body)
			}
			if rem <= 1 {
				return
			}
		}
	}
	// NetCDF: the spool is refused at row 10,001; nothing was sent, so the answer is a
	// clean 429 error.
	for try := 1; ; try++ {
		burn()
		r := sget(base + "/readings/export?service=ocean&format=netcdf&" + rng)
		if r.status == 429 && bytes.Contains(r.body, []byte(`"code":"rate_limited"`)) && bytes.Contains(r.body, []byte("10000 rows")) {
			break
		}
		if r.status == 429 {
			time.Sleep(8 * time.Second) // refused at the door (the burn left nothing): again
		}
		if try == 3 {
			t.Fatalf("netcdf export past the budget: %d %.300q", r.status, r.body)
		}
	}
	// Parquet: row 10,001 is refused mid-file.
	var cut []byte
	var trailer string
	for try := 1; ; try++ {
		burn()
		req, _ := http.NewRequest("GET", base+"/readings/export?service=ocean&format=parquet&"+rng, nil)
		req.Header.Set("x-api-key", devKey)
		resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		cut, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 429 && try < 3 {
			time.Sleep(8 * time.Second) // refused at the door: the burn left nothing; again
			continue
		}
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("budget export: %d %v", resp.StatusCode, err)
		}
		if trailer = resp.Trailer.Get("X-Export-Error"); trailer != "" || try == 3 {
			break
		}
	}
	if !strings.HasPrefix(trailer, "rate_limited: export stopped after 10000 rows") || bytes.HasSuffix(cut, []byte("PAR1")) {
		t.Fatalf("budget export: trailer %q, %d bytes ending %q", trailer, len(cut), cut[max(0, len(cut)-4):])
	}
	file = filepath.Join(dir, "cut.parquet")
	if err := os.WriteFile(file, cut, 0o644); err != nil {
		t.Fatal(err)
	}
	dir2 := testenv.Node(t, testenv.NodePackage{Dir: filepath.Join("..", "..", "scripts", "parquet-read"), Files: []string{"read.mjs"}})
	if out, _, err := testenv.RunIn(dir2, 3*time.Minute, nil, "node", "read.mjs", file); err == nil {
		t.Fatalf("DuckDB read a Parquet file cut short by the budget: %.200s", out)
	}
}

func num(n *json.Number) float64 {
	if n == nil {
		return math.NaN()
	}
	f, _ := n.Float64()
	return f
}

// duckDB reads a Parquet file with DuckDB (scripts/parquet-read).
type duckRows struct {
	Rows []map[string]any `json:"rows"`
}

func duckDB(t *testing.T, file string) duckRows {
	t.Helper()
	dir := testenv.Node(t, testenv.NodePackage{Dir: filepath.Join("..", "..", "scripts", "parquet-read"), Files: []string{"read.mjs"},
		Needs: "the Parquet tests read files back with DuckDB (@duckdb/node-api) and need Node.js 20+ and npm"})
	out, errOut, err := testenv.RunIn(dir, 3*time.Minute, nil, "node", "read.mjs", file)
	if err != nil {
		t.Fatalf("duckdb read: %v\n%s", err, errOut)
	}
	var r duckRows
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("duckdb read: %v", err)
	}
	return r
}

// ncdump is `ncdump -h` (Debian netcdf-bin).
func ncdump(t *testing.T, file string) string {
	t.Helper()
	if _, err := exec.LookPath("ncdump"); err != nil {
		t.Skip("ncdump is not installed (Debian netcdf-bin; scripts/prereqs.sh installs it)")
	}
	out, err := exec.Command("ncdump", "-h", file).CombinedOutput()
	if err != nil {
		t.Fatalf("ncdump -h: %v\n%s", err, out)
	}
	return string(out)
}

type ncFile struct {
	FileFormat string         `json:"file_format"`
	Global     map[string]any `json:"global"`
	Vars       map[string]struct {
		Attrs map[string]any `json:"attrs"`
	} `json:"vars"`
	StationID  []string                  `json:"station_id"`
	ExternalID []string                  `json:"external_id"`
	Obs        map[string][]*json.Number `json:"obs"`
	PandasRows int                       `json:"pandas_rows"`
}

// netCDF4 reads a NetCDF file with netCDF4-python, xarray and pandas (scripts/netcdf-read).
func netCDF4(t *testing.T, file string) ncFile {
	t.Helper()
	const py = "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import netCDF4, xarray, pandas").CombinedOutput(); err != nil {
		t.Skipf("Debian python3 with python3-netcdf4, python3-xarray, python3-pandas is needed (scripts/prereqs.sh installs them): %v %s", err, out)
	}
	script, _ := filepath.Abs(filepath.Join("..", "..", "scripts", "netcdf-read", "read.py"))
	out, err := exec.Command(py, script, file).Output()
	if err != nil {
		t.Fatalf("netcdf read: %v", err)
	}
	var r ncFile
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("netcdf read: %v", err)
	}
	if !slices.Contains([]string{"NETCDF3_64BIT_OFFSET"}, r.FileFormat) {
		t.Errorf("file format %s", r.FileFormat)
	}
	return r
}
