package export_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/openapi"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/formats"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

const devKey = "sg_dev_export_test_key_0123456789abc"

type reply struct {
	status int
	header http.Header
	body   []byte
}

// validating checks every answer of get against the OpenAPI document, once set.
var validating *http.Client

func get(t *testing.T, u string, hdr ...string) reply {
	t.Helper()
	client := http.DefaultClient
	if validating != nil && !slices.Contains(hdr, "Accept-Encoding") {
		client = validating
	}
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
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, b}
}

// exportLine is one NDJSON export line: a reading with its sensor's ids.
type exportLine struct {
	SensorID   string `json:"sensor_id"`
	ExternalID string `json:"external_id"`
	contract.Reading
}

// TestExportMatchesPagedReadings runs the ocean service (simulated NDBC buoys, PostgreSQL)
// and the gateway as processes and checks the bulk export: NDJSON equal row by row to the
// readings pages of every sensor (ordered by sensor id, then time), CSV equal to its long
// form, gzip when accepted, 400s naming the bad parameter, the budget charged per started
// 10,000 rows with a final line when it runs out, and a client that goes away ending the
// service's scan.
func TestExportMatchesPagedReadings(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	t.Parallel()
	dir := t.TempDir()
	gwBin := testenv.Build(t, dir, "gateway", "github.com/sensorgate/sensorgate/gateway/cmd/gateway")
	oceanBin := testenv.Build(t, dir, "ocean", "github.com/sensorgate/sensorgate/services/cmd/ocean")
	oceanAddr, gwAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	oceanLog := testenv.Start(t, oceanBin, "SERVICE_ADDR="+oceanAddr, "READINGS_DATABASE_URL="+testenv.Postgres(t),
		"SOURCE_MODE=simulate", "SIM_STATIONS=6", "SIM_DAYS=7", "SIM_SEED=3", "LOG_FORMAT=json")
	testenv.Start(t, gwBin, "GATEWAY_ADDR="+gwAddr, "SQLITE_PATH="+filepath.Join(dir, "catalog.db"), "SENSORGATE_ENV=development",
		"DEV_API_KEY="+devKey, "SERVICE_URLS=ocean=http://"+oceanAddr, "SYNC_INTERVAL=1s", "PROBE_INTERVAL=1s")
	base := "http://" + gwAddr + "/api/v1"

	// Ready when every sensor is in the catalog and has readings.
	var list struct {
		Sensors []struct {
			ID         string `json:"id"`
			ExternalID string `json:"external_id"`
		} `json:"sensors"`
	}
	deadline := time.Now().Add(120 * time.Second)
	for {
		req, _ := http.NewRequest("GET", base+"/sensors?limit=100", nil)
		req.Header.Set("x-api-key", devKey)
		ready := false
		if resp, err := http.DefaultClient.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ready = resp.StatusCode == 200 && json.Unmarshal(b, &list) == nil && len(list.Sensors) >= 6
		}
		if ready { // and the service's first ingest cycle is done
			if resp, err := http.Get("http://" + oceanAddr + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
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
	validating = &http.Client{Transport: v.Transport(t, nil), Timeout: 60 * time.Second}
	defer func() { validating = nil }()
	// A fixed range in the past, so the simulator's new readings change nothing.
	until := time.Now().UTC().Add(-time.Hour).Truncate(time.Hour)
	since := until.AddDate(0, 0, -7)
	rng := "since=" + url.QueryEscape(contract.FormatTime(since)) + "&until=" + url.QueryEscape(contract.FormatTime(until))

	nd := get(t, base+"/readings/export?service=ocean&format=ndjson&"+rng)
	if nd.status != 200 || nd.header.Get("Content-Type") != formats.TypeNDJSON {
		t.Fatalf("ndjson export: %d %v %.300s", nd.status, nd.header, nd.body)
	}
	var lines []exportLine
	var rawLines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(nd.body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l exportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.SensorID == "" {
			t.Fatalf("line %d %q: %v", len(lines), sc.Text(), err)
		}
		lines = append(lines, l)
		rawLines = append(rawLines, append([]byte(nil), sc.Bytes()...))
	}
	// Row by row against the readings pages, sensor by sensor in id order.
	ids := make([]string, 0, len(list.Sensors))
	for _, s := range list.Sensors {
		ids = append(ids, s.ID)
	}
	sortStrings(ids)
	at := 0
	for _, id := range ids {
		for page := 1; ; page++ {
			var p struct {
				ExternalID string            `json:"external_id"`
				Readings   []json.RawMessage `json:"readings"`
				Pagination contract.Pagination
			}
			r := get(t, fmt.Sprintf("%s/sensors/%s/readings?sort=asc&limit=500&page=%d&%s", base, id, page, rng))
			if r.status != 200 || json.Unmarshal(r.body, &p) != nil {
				t.Fatalf("page %d of %s: %d %.200s", page, id, r.status, r.body)
			}
			for _, want := range p.Readings {
				if at >= len(lines) {
					t.Fatalf("export ended after %d rows; sensor %s has more", at, id)
				}
				var got, exp map[string]any
				_ = json.Unmarshal(rawLines[at], &got)
				_ = json.Unmarshal(want, &exp)
				if got["sensor_id"] != id || got["external_id"] != p.ExternalID {
					seen := map[string]int{}
					for _, l := range lines {
						seen[l.SensorID+" "+l.ExternalID]++
					}
					t.Logf("export sensors: %v; catalog: %+v; sensor %s page %d total %d", seen, list.Sensors, id, page, p.Pagination.Total)
					t.Fatalf("row %d is of %v, want sensor %s", at, got["sensor_id"], id)
				}
				delete(got, "sensor_id")
				delete(got, "external_id")
				if !reflect.DeepEqual(got, exp) {
					t.Fatalf("row %d differs from the readings page:\n%s\n%s", at, rawLines[at], want)
				}
				at++
			}
			if page >= p.Pagination.TotalPages {
				break
			}
		}
	}
	if at != len(lines) || at == 0 {
		t.Fatalf("export has %d rows, the pages %d", len(lines), at)
	}

	// CSV: the long form of the same readings; gzip when accepted.
	c := get(t, base+"/readings/export?service=ocean&"+rng, "Accept", "text/csv")
	recs, err := csv.NewReader(bytes.NewReader(c.body)).ReadAll()
	if err != nil || c.header.Get("Content-Type") != formats.TypeCSV || !reflect.DeepEqual(recs[0], formats.ReadingHeader) {
		t.Fatalf("csv export: %v %v %.200s", err, c.header, c.body)
	}
	longForm := func(body []byte) [][]string {
		var out [][]string
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l exportLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("ndjson line: %v", err)
			}
			for _, m := range l.Measurements {
				out = append(out, []string{l.SensorID, l.ExternalID, contract.FormatTime(l.Timestamp.Time), m.Parameter,
					formats.Float(m.Value), m.Unit, formats.Float(m.ValueOriginal), m.UnitOriginal, formats.QCFlag(m)})
			}
		}
		return out
	}
	if want := longForm(nd.body); !reflect.DeepEqual(recs[1:], want) {
		// Once (seen under load), the readings of the range changed between the two
		// exports. That is no fault of the CSV when a new NDJSON export says the same as it.
		again := get(t, base+"/readings/export?service=ocean&format=ndjson&"+rng)
		if bytes.Equal(again.body, nd.body) || !reflect.DeepEqual(recs[1:], longForm(again.body)) {
			t.Fatalf("csv export (%d rows) differs from the ndjson export (%d measurements; %d in a second ndjson export)", len(recs)-1, len(want), len(longForm(again.body)))
		}
		t.Logf("the range's readings changed between the exports (%d measurements, then %d); the csv export matches the second ndjson export", len(want), len(recs)-1)
	}
	z := get(t, base+"/readings/export?service=ocean&format=csv&"+rng, "Accept-Encoding", "gzip")
	if z.header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("no gzip: %v", z.header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(z.body))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	if !bytes.Equal(plain, c.body) {
		t.Errorf("gzip export differs from the plain one")
	}
	t.Logf("export: %d readings, %d csv rows, %d bytes csv, %d gzip", len(lines), len(recs)-1, len(c.body), len(z.body))

	// One sensor by external id, one parameter.
	one := get(t, base+"/readings/export?format=csv&parameter="+canon.WaterTemperatureC+"&sensor_ids="+list.Sensors[0].ExternalID+"&"+rng)
	r1, _ := csv.NewReader(bytes.NewReader(one.body)).ReadAll()
	for _, r := range r1[1:] {
		if r[1] != list.Sensors[0].ExternalID || r[3] != canon.WaterTemperatureC {
			t.Fatalf("filtered export row %v", r)
		}
	}

	many := make([]string, 1001)
	for i := range many {
		many[i] = fmt.Sprintf("S%d", i)
	}
	for _, bad := range []struct{ query, param string }{
		{"service=ocean", "since"},
		{"service=ocean&since=2024-01-01&until=2025-06-01", "since"},
		{"service=ocean&format=geojson&" + rng, "format"},
		{"sensor_ids=" + strings.Join(many, ",") + "&" + rng, "sensor_ids"},
		{"service=ocean&parameter=bogus&" + rng, "parameter"},
	} {
		if r := get(t, base+"/readings/export?"+bad.query); r.status != 400 || !strings.Contains(string(r.body), `\"`+bad.param+`\"`) {
			t.Errorf("%.80s: %d %s, want 400 naming %s", bad.query, r.status, r.body, bad.param)
		}
	}

	// A client that goes away: the service's export request ends (its access line is
	// written when the handler returns) although most rows were never read.
	before, _ := os.ReadFile(oceanLog)
	req, _ := http.NewRequest("GET", base+"/readings/export?service=ocean&format=csv&"+rng, nil)
	req.Header.Set("x-api-key", devKey)
	resp, err := (&http.Client{Transport: &http.Transport{ReadBufferSize: 1024, DisableCompression: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1024)
	_, _ = io.ReadFull(resp.Body, buf)
	resp.Body.Close()
	stopped := false
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end) && !stopped; time.Sleep(100 * time.Millisecond) {
		after, _ := os.ReadFile(oceanLog)
		stopped = bytes.Count(after, []byte(contract.PathExport)) > bytes.Count(before, []byte(contract.PathExport))
	}
	if !stopped {
		t.Errorf("the service's export did not end after the client went away")
	}

	// The budget: spend the key's hour down to its last request, then export more than
	// 10,000 rows: the export is that request, row 10,001 needs another, which is refused,
	// and the answer ends with the final line.
	for {
		r := get(t, base+"/sensors/types")
		rem, _ := strconv.Atoi(r.header.Get("x-ratelimit-remaining"))
		if r.status != 200 {
			t.Fatalf("burning the budget: %d %s", r.status, r.body)
		}
		if rem <= 1 {
			break
		}
	}
	b := get(t, base+"/readings/export?service=ocean&format=csv&"+rng)
	brecs, err := csv.NewReader(bytes.NewReader(b.body)).ReadAll()
	if err != nil || b.status != 200 {
		t.Fatalf("budget export: %d %v", b.status, err)
	}
	last := brecs[len(brecs)-1]
	if len(brecs) != 1+contract.ExportRowsPerRequest+1 || !strings.HasPrefix(last[0], "# rate_limited: export stopped after 10000 rows") {
		t.Fatalf("budget export: %d records, last %q", len(brecs), last)
	}
	if !reflect.DeepEqual(brecs[1:1+contract.ExportRowsPerRequest], recs[1:1+contract.ExportRowsPerRequest]) {
		t.Errorf("the rows before the budget ran out differ from the full export")
	}
}

func sortStrings(s []string) { slices.Sort(s) }
