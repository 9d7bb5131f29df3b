package covjson_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/covjson"
	"github.com/sensorgate/sensorgate/pkg/covjson/covjsontest"
)

var describe = map[string]covjson.Parameter{
	"air_temperature_c": {Type: "Parameter", Unit: covjson.Unit{Symbol: "°C"},
		ObservedProperty: covjson.ObservedProperty{ID: "air_temperature_c", Label: map[string]string{"en": "Air temperature"}}},
	"wind_speed_ms": {Type: "Parameter", Unit: covjson.Unit{Symbol: "m/s"},
		ObservedProperty: covjson.ObservedProperty{ID: "wind_speed_ms", Label: map[string]string{"en": "Wind speed"}}},
}

func at(min int) time.Time { return time.Date(2026, 3, 1, 12, min, 0, 0, time.UTC) }

// TestPointSeriesAlignsTimes: the t axis holds each distinct time once, in order; each
// parameter's range has a value where a sample was and null elsewhere.
func TestPointSeriesAlignsTimes(t *testing.T) {
	t.Parallel()
	s := covjson.Series{ID: "s1", Lon: -70.5, Lat: 42.25, Samples: []covjson.Sample{
		{at(20), "air_temperature_c", 3.5},
		{at(0), "air_temperature_c", 1.5},
		{at(0), "wind_speed_ms", 7},
		{at(10), "wind_speed_ms", 8},
		{at(10), "visibility_m", 9000}, // not asked for
	}}
	c := covjson.NewCoverage(s, []string{"air_temperature_c", "wind_speed_ms"}, describe)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := covjsontest.Validate(b); err != nil {
		t.Fatalf("schema: %v\n%s", err, b)
	}
	var got struct {
		Domain struct {
			DomainType string
			Axes       map[string]struct{ Values []any }
		}
		Ranges map[string]struct {
			Shape  []int
			Values []*float64
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Domain.DomainType != "PointSeries" {
		t.Errorf("domainType %q", got.Domain.DomainType)
	}
	wantT := []any{"2026-03-01T12:00:00.000Z", "2026-03-01T12:10:00.000Z", "2026-03-01T12:20:00.000Z"}
	if ts := got.Domain.Axes["t"].Values; len(ts) != 3 || ts[0] != wantT[0] || ts[1] != wantT[1] || ts[2] != wantT[2] {
		t.Errorf("t axis %v, want %v", ts, wantT)
	}
	if x, y := got.Domain.Axes["x"].Values, got.Domain.Axes["y"].Values; x[0] != -70.5 || y[0] != 42.25 {
		t.Errorf("x %v y %v", x, y)
	}
	if _, ok := got.Ranges["visibility_m"]; ok {
		t.Error("a parameter not asked for has a range")
	}
	check := func(p string, want []any) {
		t.Helper()
		r := got.Ranges[p]
		if len(r.Values) != len(want) || r.Shape[0] != len(want) {
			t.Fatalf("%s: %d values, shape %v, want %d", p, len(r.Values), r.Shape, len(want))
		}
		for i, w := range want {
			switch {
			case w == nil && r.Values[i] != nil:
				t.Errorf("%s[%d] = %v, want null", p, i, *r.Values[i])
			case w != nil && (r.Values[i] == nil || *r.Values[i] != w.(float64)):
				t.Errorf("%s[%d] = %v, want %v", p, i, r.Values[i], w)
			}
		}
	}
	check("air_temperature_c", []any{1.5, nil, 3.5})
	check("wind_speed_ms", []any{7.0, 8.0, nil})
}

// TestCollectionValidates: a collection of two series (and one left out for having no
// samples) is valid CoverageJSON, referencing and parameters given once.
func TestCollectionValidates(t *testing.T) {
	t.Parallel()
	series := []covjson.Series{
		{ID: "a", Lon: 1, Lat: 2, Samples: []covjson.Sample{{at(0), "wind_speed_ms", 1}}},
		{ID: "empty", Lon: 3, Lat: 4},
		{ID: "b", Lon: 5, Lat: 6, Samples: []covjson.Sample{{at(0), "wind_speed_ms", 2}, {at(5), "air_temperature_c", -1}}},
	}
	c := covjson.NewCollection(series, []string{"wind_speed_ms", "air_temperature_c"}, describe)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := covjsontest.Validate(b); err != nil {
		t.Fatalf("schema: %v\n%s", err, b)
	}
	if len(c.Coverages) != 2 || c.Coverages[0].ID != "a" || c.Coverages[1].ID != "b" {
		t.Errorf("coverages %+v", c.Coverages)
	}
	// An empty collection is still a valid document.
	b, _ = json.Marshal(covjson.NewCollection(nil, []string{"wind_speed_ms"}, describe))
	if err := covjsontest.Validate(b); err != nil {
		t.Errorf("empty collection: %v", err)
	}
}

// TestValidatorRejects: the schema is really applied (a broken document fails), so a
// pass above means something.
func TestValidatorRejects(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"ndarray string in float": `{"type":"NdArray","dataType":"float","values":["x"]}`,
		"coverage without domain": `{"type":"Coverage","parameters":{},"ranges":{}}`,
		"unknown top-level type":  `{"type":"Bogus"}`,
		"point series without t":  `{"type":"Coverage","domain":{"type":"Domain","domainType":"PointSeries","axes":{"x":{"values":[1]},"y":{"values":[2]}},"referencing":[]},"parameters":{},"ranges":{}}`,
		"empty values":            `{"type":"NdArray","dataType":"float","values":[]}`,
	} {
		if err := covjsontest.Validate([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.TrimSpace(err.Error()) == "" {
			t.Errorf("%s: empty error", name)
		}
	}
}
