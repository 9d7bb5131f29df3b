package formats

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
)

func TestNegotiate(t *testing.T) {
	all := []string{JSON, CSV, NDJSON, GeoJSON}
	cases := []struct {
		query, accept string
		allowed       []string
		want          string
		bad           bool
	}{
		{"", "", all, JSON, false},
		{"", "text/csv", all, CSV, false},
		{"", "application/x-ndjson", all, NDJSON, false},
		{"", "application/geo+json", all, GeoJSON, false},
		{"", "text/html, text/csv;q=0.5, application/x-ndjson;q=0.9", all, NDJSON, false},
		{"", "text/csv;q=0", all, JSON, false},
		{"", "*/*", all, JSON, false},
		{"format=json", "text/csv", all, JSON, false}, // the query wins
		{"format=CSV", "", all, CSV, false},
		{"format=xml", "", all, "", true},
		{"format=", "", all, "", true},
		{"format=geojson", "", []string{CSV, NDJSON}, "", true},
		{"", "application/geo+json", []string{CSV, NDJSON}, CSV, false},
	}
	for _, c := range cases {
		q, _ := url.ParseQuery(c.query)
		got, err := Negotiate(q, c.accept, c.allowed...)
		if c.bad {
			var ae *apierr.Error
			if !errors.As(err, &ae) || ae.Status() != http.StatusBadRequest || !strings.Contains(ae.Message, `"format"`) ||
				!strings.Contains(ae.Message, strings.Join(c.allowed, ", ")) {
				t.Errorf("Negotiate(%q, %q) = %q, %v; want a 400 naming format and %v", c.query, c.accept, got, err, c.allowed)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Negotiate(%q, %q) = %q, %v; want %q", c.query, c.accept, got, err, c.want)
		}
	}
}

func TestCSVReadingsRoundTrip(t *testing.T) {
	ms := []canon.Measurement{
		{Parameter: canon.AirTemperatureC, Value: 22, Unit: canon.Celsius, UnitOriginal: "degF", ValueOriginal: 71.6},
		{Parameter: canon.WindSpeedMS, Value: 0.1 + 0.2, Unit: canon.MetersPerSec, UnitOriginal: "m/s", ValueOriginal: 0.1 + 0.2},
	}
	var buf bytes.Buffer
	c, err := NewCSV(&buf, ReadingHeader)
	if err != nil {
		t.Fatal(err)
	}
	// An external id with a comma and a quote must survive RFC 4180 quoting.
	if err := c.ReadingRows("id-1", `A,"B"`, "2026-11-21T06:50:00.000Z", ms); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || strings.Join(recs[0], ",") != strings.Join(ReadingHeader, ",") {
		t.Fatalf("records %q", recs)
	}
	for i, m := range ms {
		r := recs[i+1]
		if r[1] != `A,"B"` || r[3] != m.Parameter || r[4] != Float(m.Value) || r[6] != Float(m.ValueOriginal) || r[7] != m.UnitOriginal {
			t.Errorf("row %d = %q, want %+v", i, r, m)
		}
	}
}

func TestNDJSONAndGeoJSON(t *testing.T) {
	var buf bytes.Buffer
	n := NewNDJSON(&buf)
	items := []map[string]any{{"a": 1.5}, {"b": "x\ny"}}
	for _, it := range items {
		if err := n.Value(it); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Flush(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&buf)
	i := 0
	for sc.Scan() {
		var got map[string]any
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if b1, _ := json.Marshal(got); string(b1) != string(must(json.Marshal(items[i]))) {
			t.Errorf("line %d = %s", i, b1)
		}
		i++
	}
	if i != len(items) {
		t.Fatalf("%d lines, want %d", i, len(items))
	}

	buf.Reset()
	g, err := NewGeoJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	lat, lon := 44.5, -70.25
	if err := g.Feature(Feature{ID: "s1", Lat: &lat, Lon: &lon, Properties: map[string]any{"name": "one"}}); err != nil {
		t.Fatal(err)
	}
	if err := g.Feature(Feature{ID: "s2"}); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(map[string]any{"pagination": map[string]int{"total": 2}}); err != nil {
		t.Fatal(err)
	}
	var fc struct {
		Type     string `json:"type"`
		Features []struct {
			ID       string `json:"id"`
			Geometry *struct {
				Type        string     `json:"type"`
				Coordinates [2]float64 `json:"coordinates"`
			} `json:"geometry"`
			Properties map[string]any `json:"properties"`
		} `json:"features"`
		Pagination map[string]int `json:"pagination"`
	}
	if err := json.Unmarshal(buf.Bytes(), &fc); err != nil {
		t.Fatalf("%v: %s", err, buf.Bytes())
	}
	if fc.Type != "FeatureCollection" || len(fc.Features) != 2 || fc.Pagination["total"] != 2 {
		t.Fatalf("collection %s", buf.Bytes())
	}
	if g0 := fc.Features[0].Geometry; g0 == nil || g0.Coordinates != [2]float64{lon, lat} || fc.Features[0].Properties["name"] != "one" {
		t.Errorf("feature 0 = %+v, want [lon, lat] = [%v, %v]", fc.Features[0], lon, lat)
	}
	if fc.Features[1].Geometry != nil {
		t.Errorf("feature without location has geometry %+v", fc.Features[1].Geometry)
	}
}

func TestNextPage(t *testing.T) {
	u, _ := url.Parse("/api/v1/sensors/x/readings?limit=2&format=csv")
	if got := NextPage(u, 1, 2, 5); got != "/api/v1/sensors/x/readings?format=csv&limit=2&page=2" {
		t.Errorf("next = %q", got)
	}
	if got := NextPage(u, 3, 2, 5); got != "" {
		t.Errorf("next of last page = %q", got)
	}
	h := http.Header{}
	SetPaging(h, 5, "/n")
	if h.Get("X-Total-Count") != "5" || h.Get("Link") != `</n>; rel="next"` {
		t.Errorf("headers %v", h)
	}
	h = http.Header{}
	SetHeaders(h, CSV, "readings-x")
	if SafeName(`a b/"c`) != "a_b__c" {
		t.Errorf("SafeName = %q", SafeName(`a b/"c`))
	}
	if h.Get("Content-Type") != TypeCSV || h.Get("Content-Disposition") != `attachment; filename="readings-x.csv"` {
		t.Errorf("headers %v", h)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
