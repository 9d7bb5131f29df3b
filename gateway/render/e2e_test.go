package render_test

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/openapi"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/formats"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

const devKey = "sg_dev_render_test_key_0123456789abc"

type reply struct {
	status int
	header http.Header
	body   []byte
}

// TestFormatsMatchJSON runs the gateway and the ocean service as processes and asks for
// readings pages, aggregates and sensor lists in every format, each answer checked
// against the OpenAPI document, parsed back with a standard parser (encoding/csv,
// encoding/json line by line, encoding/json for GeoJSON) and compared with the JSON
// answer of the same query.
func TestFormatsMatchJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	t.Parallel()
	dir := t.TempDir()
	gwBin := testenv.Build(t, dir, "gateway", "github.com/sensorgate/sensorgate/gateway/cmd/gateway")
	oceanBin := testenv.Build(t, dir, "ocean", "github.com/sensorgate/sensorgate/services/cmd/ocean")
	oceanAddr, gwAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	testenv.Start(t, oceanBin, "SERVICE_ADDR="+oceanAddr, "READINGS_SQLITE_PATH="+filepath.Join(dir, "ocean.db"),
		"SOURCE_MODE=simulate", "SIM_STATIONS=3", "SIM_DAYS=2", "SIM_SEED=11")
	testenv.Start(t, gwBin, "GATEWAY_ADDR="+gwAddr, "SQLITE_PATH="+filepath.Join(dir, "catalog.db"), "SENSORGATE_ENV=development",
		"DEV_API_KEY="+devKey, "SERVICE_URLS=ocean=http://"+oceanAddr, "SYNC_INTERVAL=1s", "PROBE_INTERVAL=1s")
	base := "http://" + gwAddr
	v, err := openapi.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: v.Transport(t, nil), Timeout: 30 * time.Second}
	get := func(path string, hdr ...string) reply {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("x-api-key", devKey)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return reply{resp.StatusCode, resp.Header, b}
	}

	var list struct {
		Sensors []struct {
			ID         string   `json:"id"`
			ExternalID string   `json:"external_id"`
			Latitude   *float64 `json:"latitude"`
			Longitude  *float64 `json:"longitude"`
		} `json:"sensors"`
		Pagination contract.Pagination `json:"pagination"`
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		// Ready when the sensors are listed and the first has its readings.
		req, _ := http.NewRequest("GET", base+"/api/v1/sensors?limit=2", nil)
		req.Header.Set("x-api-key", devKey)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && json.Unmarshal(b, &list) == nil && len(list.Sensors) > 0 {
				req, _ := http.NewRequest("GET", base+"/api/v1/sensors/"+list.Sensors[0].ID+"/readings/latest", nil)
				req.Header.Set("x-api-key", devKey)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
					if resp.StatusCode == 200 {
						break
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sensors after 90s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	id := list.Sensors[0].ID

	// Whole answers say their length: without Content-Length net/http would send any
	// answer over 2 KiB chunked. A format converted from JSON has its own length, and a
	// compressed answer none that is wrong. Accept-Encoding is given each time: Go's
	// client would otherwise ask for gzip itself and drop the length as it decodes.
	t.Run("lengths", func(t *testing.T) {
		paths := []string{"/api/v1/sensors/" + id + "/readings?limit=50", "/api/v1/sensors/" + id + "/readings/latest",
			"/api/v1/sensors?limit=50", "/api/v1/sensors/" + id + "/readings?limit=50&format=csv"}
		for _, path := range paths {
			r := get(path, "Accept-Encoding", "identity")
			if r.status != 200 {
				t.Fatalf("%s: %d %s", path, r.status, r.body)
			}
			if cl := r.header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(r.body)) {
				t.Errorf("%s: Content-Length %s, body %d bytes", path, cl, len(r.body))
			} else if cl == "" && !strings.Contains(path, "format=csv") {
				t.Errorf("%s: a whole %d-byte answer without Content-Length", path, len(r.body))
			}
		}
		if r := get(paths[0], "Accept-Encoding", "identity"); len(r.body) <= 2048 {
			t.Fatalf("the readings page is %d bytes; the check wants one over net/http's 2 KiB", len(r.body))
		}
		gz := get(paths[0], "Accept-Encoding", "gzip")
		if gz.header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("gzip asked: Content-Encoding %q", gz.header.Get("Content-Encoding"))
		}
		if cl := gz.header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(gz.body)) {
			t.Errorf("gzip: Content-Length %s, body %d bytes", cl, len(gz.body))
		}
	})

	t.Run("readings", func(t *testing.T) {
		path := "/api/v1/sensors/" + id + "/readings?limit=20&sort=asc"
		var page contract.ReadingsResponse
		j := get(path)
		if j.status != 200 || json.Unmarshal(j.body, &page) != nil || len(page.Readings) == 0 {
			t.Fatalf("json: %d %s", j.status, j.body)
		}
		// CSV, by the query and by Accept; the query wins over Accept.
		for _, r := range []reply{get(path + "&format=csv"), get(path, "Accept", "text/csv")} {
			if r.status != 200 || r.header.Get("Content-Type") != formats.TypeCSV ||
				!strings.HasPrefix(r.header.Get("Content-Disposition"), `attachment; filename="readings-`) {
				t.Fatalf("csv: %d %v", r.status, r.header)
			}
			checkPaging(t, r, page.Pagination)
			recs, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(recs[0], formats.ReadingHeader) {
				t.Fatalf("header %v", recs[0])
			}
			var want [][]string
			for _, rd := range page.Readings {
				for _, m := range rd.Measurements {
					want = append(want, []string{page.SensorID, page.ExternalID, contract.FormatTime(rd.Timestamp.Time), m.Parameter,
						strconv.FormatFloat(m.Value, 'f', -1, 64), m.Unit, strconv.FormatFloat(m.ValueOriginal, 'f', -1, 64), m.UnitOriginal, formats.QCFlag(m)})
				}
			}
			if !reflect.DeepEqual(recs[1:], want) {
				t.Errorf("csv rows differ from the JSON page:\n%v\n%v", recs[1:], want)
			}
		}
		if r := get(path+"&format=json", "Accept", "text/csv"); !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Errorf("format=json with Accept text/csv answered %s", r.header.Get("Content-Type"))
		}
		// NDJSON: each line the same object as the JSON page's item.
		nd := get(path + "&format=ndjson")
		checkPaging(t, nd, page.Pagination)
		var items []json.RawMessage
		_ = json.Unmarshal(jsonField(t, j.body, "readings"), &items)
		lines := ndjsonLines(t, nd.body)
		if nd.header.Get("Content-Type") != formats.TypeNDJSON || len(lines) != len(items) {
			t.Fatalf("ndjson: %v, %d lines for %d readings", nd.header, len(lines), len(items))
		}
		for i := range lines {
			if !sameJSON(lines[i], items[i]) {
				t.Errorf("line %d %s != %s", i, lines[i], items[i])
			}
		}
		// GeoJSON: Points [lon, lat], one property per parameter.
		g := get(path + "&format=geojson")
		var fc featureCollection
		if g.header.Get("Content-Type") != formats.TypeGeoJSON || json.Unmarshal(g.body, &fc) != nil || fc.Type != "FeatureCollection" || len(fc.Features) != len(page.Readings) {
			t.Fatalf("geojson: %v %s", g.header, g.body)
		}
		for i, f := range fc.Features {
			rd := page.Readings[i]
			if rd.Location != nil && (f.Geometry == nil || f.Geometry.Coordinates != rd.Location.Coordinates) {
				t.Errorf("feature %d geometry %+v, want %v", i, f.Geometry, rd.Location.Coordinates)
			}
			if f.Properties["timestamp"] != contract.FormatTime(rd.Timestamp.Time) {
				t.Errorf("feature %d timestamp %v", i, f.Properties["timestamp"])
			}
			for _, m := range rd.Measurements {
				if f.Properties[m.Parameter] != m.Value {
					t.Errorf("feature %d %s = %v, want %v", i, m.Parameter, f.Properties[m.Parameter], m.Value)
				}
			}
		}
		// Validators per format; bad formats name the allowed values.
		c := get(path + "&format=csv")
		if c.header.Get("ETag") == "" || c.header.Get("ETag") == j.header.Get("ETag") {
			t.Errorf("csv ETag %q, json ETag %q", c.header.Get("ETag"), j.header.Get("ETag"))
		}
		if r := get(path+"&format=csv", "If-None-Match", c.header.Get("ETag")); r.status != 304 {
			t.Errorf("If-None-Match on csv: %d", r.status)
		}
		for _, bad := range []string{"&format=xml", "&format=csv&data_format=raw"} {
			if r := get(path + bad); r.status != 400 || !strings.Contains(string(r.body), `\"format\"`) {
				t.Errorf("%s: %d %s", bad, r.status, r.body)
			}
		}
	})

	t.Run("aggregate", func(t *testing.T) {
		path := "/api/v1/sensors/" + id + "/readings/aggregate?interval=6h&days=2&tz=America/New_York"
		j := get(path)
		var a contract.AggregateResponse
		var raw struct {
			Buckets []struct {
				Start      string                                `json:"start"`
				Values     map[string]map[string]json.RawMessage `json:"values"`
				StartLocal string                                `json:"start_local"`
			} `json:"buckets"`
		}
		if j.status != 200 || json.Unmarshal(j.body, &a) != nil || json.Unmarshal(j.body, &raw) != nil || len(a.Buckets) == 0 {
			t.Fatalf("json: %d %s", j.status, j.body)
		}
		c := get(path + "&format=csv")
		recs, err := csv.NewReader(bytes.NewReader(c.body)).ReadAll()
		if err != nil || c.status != 200 {
			t.Fatalf("csv: %d %v %s", c.status, err, c.body)
		}
		wantHeader := []string{"sensor_id", "external_id", "start", "end", "start_local", "parameter", "mean", "min", "max", "count", "coverage"}
		if !reflect.DeepEqual(recs[0], wantHeader) || len(recs)-1 != len(a.Buckets)*len(a.Parameters) {
			t.Fatalf("csv header %v, %d rows for %d buckets x %d parameters", recs[0], len(recs)-1, len(a.Buckets), len(a.Parameters))
		}
		row := 1
		for _, b := range raw.Buckets {
			for _, p := range a.Parameters {
				r := recs[row]
				row++
				if r[2] != b.Start || r[4] != b.StartLocal || r[5] != p {
					t.Errorf("row %v for bucket %s %s", r, b.Start, p)
				}
				for k, st := range wantHeader[6:] {
					want := string(b.Values[p][st])
					if want == "null" {
						want = ""
					}
					if r[6+k] != want {
						t.Errorf("bucket %s %s %s: csv %q, json %q", b.Start, p, st, r[6+k], want)
					}
				}
			}
		}
		nd := get(path + "&format=ndjson")
		var items []json.RawMessage
		_ = json.Unmarshal(jsonField(t, j.body, "buckets"), &items)
		lines := ndjsonLines(t, nd.body)
		if len(lines) != len(items) {
			t.Fatalf("%d lines for %d buckets", len(lines), len(items))
		}
		for i := range lines {
			if !sameJSON(lines[i], items[i]) {
				t.Errorf("bucket line %d differs", i)
			}
		}
		if r := get(path + "&format=geojson"); r.status != 400 || !strings.Contains(string(r.body), "json, csv, ndjson") {
			t.Errorf("geojson aggregate: %d %s", r.status, r.body)
		}
	})

	t.Run("sensors", func(t *testing.T) {
		path := "/api/v1/sensors?limit=2"
		j := get(path)
		var items []json.RawMessage
		_ = json.Unmarshal(jsonField(t, j.body, "sensors"), &items)
		c := get(path + "&format=csv")
		checkPaging(t, c, list.Pagination)
		recs, err := csv.NewReader(bytes.NewReader(c.body)).ReadAll()
		if err != nil || len(recs)-1 != len(list.Sensors) {
			t.Fatalf("csv: %v, %d rows for %d sensors", err, len(recs)-1, len(list.Sensors))
		}
		col := map[string]int{}
		for i, h := range recs[0] {
			col[h] = i
		}
		for i, s := range list.Sensors {
			r := recs[i+1]
			if r[col["id"]] != s.ID || r[col["external_id"]] != s.ExternalID || (s.Latitude != nil && r[col["latitude"]] != strconv.FormatFloat(*s.Latitude, 'f', -1, 64)) {
				t.Errorf("csv row %v for %+v", r, s)
			}
		}
		lines := ndjsonLines(t, get(path+"&format=ndjson").body)
		if len(lines) != len(items) {
			t.Fatalf("%d lines for %d sensors", len(lines), len(items))
		}
		for i := range lines {
			if !sameJSON(lines[i], items[i]) {
				t.Errorf("sensor line %d differs", i)
			}
		}
		var fc featureCollection
		g := get(path, "Accept", "application/geo+json")
		if err := json.Unmarshal(g.body, &fc); err != nil || len(fc.Features) != len(list.Sensors) {
			t.Fatalf("geojson %v: %s", err, g.body)
		}
		for i, s := range list.Sensors {
			f := fc.Features[i]
			if f.ID != s.ID || (s.Latitude != nil && (f.Geometry == nil || f.Geometry.Coordinates != [2]float64{*s.Longitude, *s.Latitude})) {
				t.Errorf("feature %+v for sensor %+v", f, s)
			}
		}
	})
	t.Logf("checked: %s", strings.Join(v.Seen(), "; "))
}

type featureCollection struct {
	Type     string `json:"type"`
	Features []struct {
		ID       string `json:"id"`
		Geometry *struct {
			Coordinates [2]float64 `json:"coordinates"`
		} `json:"geometry"`
		Properties map[string]any `json:"properties"`
	} `json:"features"`
}

func checkPaging(t *testing.T, r reply, pg contract.Pagination) {
	t.Helper()
	if r.header.Get("X-Total-Count") != strconv.Itoa(pg.Total) {
		t.Errorf("X-Total-Count %q, want %d", r.header.Get("X-Total-Count"), pg.Total)
	}
	next := pg.Page*pg.Limit < pg.Total
	link := r.header.Get("Link")
	if has := strings.Contains(link, fmt.Sprintf(`page=%d`, pg.Page+1)) && strings.HasSuffix(link, `>; rel="next"`); has != next {
		t.Errorf("Link %q (next page expected: %v)", link, next)
	}
}

func ndjsonLines(t *testing.T, b []byte) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var v json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("ndjson line %q: %v", sc.Text(), err)
		}
		out = append(out, append(json.RawMessage(nil), v...))
	}
	return out
}

func jsonField(t *testing.T, b []byte, k string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m[k]
}

func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
