package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

type latestAnswer struct {
	Items []struct {
		SensorID                string          `json:"sensor_id"`
		ExternalID              string          `json:"external_id"`
		Name                    string          `json:"name"`
		ServiceID               string          `json:"service_id"`
		Timestamp               *time.Time      `json:"timestamp"`
		AgeSeconds              *int64          `json:"age_seconds"`
		ExpectedIntervalSeconds int64           `json:"expected_interval_seconds"`
		StaleAfterSeconds       int64           `json:"stale_after_seconds"`
		Stale                   bool            `json:"stale"`
		Unavailable             bool            `json:"unavailable"`
		Measurements            json.RawMessage `json:"measurements"`
	} `json:"items"`
	Warnings []struct {
		ServiceID string `json:"service_id"`
		Code      string `json:"code"`
	} `json:"warnings"`
	MaxAgeSeconds *int64    `json:"max_age_seconds"`
	ServerTime    time.Time `json:"server_time"`
	Pagination    struct {
		Total      int `json:"total"`
		TotalPages int `json:"total_pages"`
	} `json:"pagination"`
}

func areaLatest(t *testing.T, g *gateway, query string) latestAnswer {
	t.Helper()
	r := get(t, g.url+"/api/v1/readings/latest?"+query)
	if r.status != 200 {
		t.Fatalf("area latest ?%s: %d %s", query, r.status, r.body)
	}
	var a latestAnswer
	if err := json.Unmarshal(r.body, &a); err != nil {
		t.Fatalf("area latest ?%s: %v\n%s", query, err, r.body)
	}
	return a
}

// TestAreaLatest: every sensor's item agrees with its service's own latest reading, ages
// and staleness flags follow from the answer's server time by the one rule, filters and
// paging select the catalog's sensors, and a stopped service makes its sensors
// unavailable with a warning while the others answer.
func TestAreaLatest(t *testing.T) {
	st := startStack(t, stackOptions{services: []string{"ocean", "weather", "airquality"}, simStations: 6})
	g := st.startGateway(t, "gateway", 30)
	var total struct{ Pagination struct{ Total int } }
	if r := get(t, g.url+"/api/v1/sensors?limit=1"); json.Unmarshal(r.body, &total) != nil {
		t.Fatal("sensor list")
	}

	all := areaLatest(t, g, "limit=5000")
	if len(all.Items) != total.Pagination.Total || all.Pagination.Total != total.Pagination.Total || len(all.Warnings) != 0 {
		t.Fatalf("area latest without filters: %d items (total %d), warnings %v; the catalog lists %d", len(all.Items), all.Pagination.Total, all.Warnings, total.Pagination.Total)
	}
	fresh, stale := 0, 0
	for _, it := range all.Items {
		svc := st.services[it.ServiceID]
		var own struct {
			Reading struct {
				Timestamp    time.Time       `json:"timestamp"`
				Measurements json.RawMessage `json:"measurements"`
			} `json:"reading"`
		}
		r := get(t, svc.url+"/v1/sensors/"+url.PathEscape(it.ExternalID)+"/readings/latest", "X-Internal-Token", internalToken)
		if it.Unavailable {
			t.Fatalf("%s unavailable with every service up", it.ExternalID)
		}
		switch {
		case r.status == 404 && it.Timestamp == nil:
			if !it.Stale || it.AgeSeconds != nil {
				t.Errorf("%s never reported: stale %v age %v, want stale and no age", it.ExternalID, it.Stale, it.AgeSeconds)
			}
			continue
		case r.status != 200:
			t.Fatalf("%s: the service answers %d %s", it.ExternalID, r.status, r.body)
		}
		_ = json.Unmarshal(r.body, &own)
		// The service may have stored a newer reading between the two calls.
		if it.Timestamp == nil || it.Timestamp.After(own.Reading.Timestamp) {
			t.Fatalf("%s: area latest %v, the service's latest %s", it.ExternalID, it.Timestamp, own.Reading.Timestamp)
		}
		if it.Timestamp.Equal(own.Reading.Timestamp) && !jsonEqual(it.Measurements, own.Reading.Measurements) {
			t.Errorf("%s: measurements %s, the service's %s", it.ExternalID, it.Measurements, own.Reading.Measurements)
		}
		age := int64(all.ServerTime.Sub(*it.Timestamp) / time.Second)
		wantAfter := 2 * it.ExpectedIntervalSeconds
		if it.AgeSeconds == nil || *it.AgeSeconds != max(age, 0) || it.StaleAfterSeconds != wantAfter || it.Stale != (age > wantAfter) {
			t.Errorf("%s: age %v stale_after %d stale %v; computed age %d, stale after %d", it.ExternalID, it.AgeSeconds, it.StaleAfterSeconds, it.Stale, age, wantAfter)
		}
		if it.Stale {
			stale++
		} else {
			fresh++
		}
	}
	if fresh == 0 {
		t.Errorf("no fresh sensor among %d: the simulated world reports live", len(all.Items))
	}

	// max_age replaces the interval rule: 1 s makes nearly everything stale, a day nothing.
	for _, q := range []struct {
		maxAge string
		secs   int64
	}{{"1", 1}, {"P1D", 86400}, {"PT10M", 600}} {
		a := areaLatest(t, g, "limit=5000&max_age="+q.maxAge)
		if a.MaxAgeSeconds == nil || *a.MaxAgeSeconds != q.secs {
			t.Errorf("max_age=%s: max_age_seconds %v", q.maxAge, a.MaxAgeSeconds)
		}
		for _, it := range a.Items {
			want := it.AgeSeconds == nil || *it.AgeSeconds > q.secs
			if it.Stale != want || it.StaleAfterSeconds != q.secs {
				t.Errorf("max_age=%s %s: age %v stale %v after %d", q.maxAge, it.ExternalID, it.AgeSeconds, it.Stale, it.StaleAfterSeconds)
			}
		}
	}

	// sensor_ids by UUID and by external id; service; parameter; paging.
	a, b := all.Items[0], all.Items[len(all.Items)-1]
	ids := areaLatest(t, g, "sensor_ids="+url.QueryEscape(a.SensorID+","+b.ExternalID))
	got := []string{}
	for _, it := range ids.Items {
		got = append(got, it.SensorID)
	}
	sort.Strings(got)
	want := []string{a.SensorID, b.SensorID}
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("sensor_ids: got %v, want %v", got, want)
	}
	for _, it := range areaLatest(t, g, "service=ocean&limit=5000").Items {
		if it.ServiceID != "ocean" {
			t.Errorf("service=ocean gave a %s sensor", it.ServiceID)
		}
	}
	for _, it := range areaLatest(t, g, "parameter=air_temperature_c&limit=5000").Items {
		var ms []struct{ Parameter string }
		_ = json.Unmarshal(it.Measurements, &ms)
		for _, m := range ms {
			if m.Parameter != "air_temperature_c" {
				t.Errorf("parameter=air_temperature_c kept %s of %s", m.Parameter, it.ExternalID)
			}
		}
	}
	p2 := areaLatest(t, g, "limit=7&page=2")
	if len(p2.Items) != 7 || p2.Items[0].SensorID != all.Items[7].SensorID || p2.Pagination.TotalPages != (len(all.Items)+6)/7 {
		t.Errorf("page 2 of 7: %d items starting %s, pages %d", len(p2.Items), p2.Items[0].SensorID, p2.Pagination.TotalPages)
	}
	for q, param := range map[string]string{"max_age=soon": "max_age", "max_age=P1M": "max_age", "parameter=nope": "parameter",
		"sensor_ids=a%2Fb": "sensor_ids", "limit=0": "limit", "min_lat=1": "min_lon", "format=xml": "format"} {
		r := get(t, g.url+"/api/v1/readings/latest?"+q)
		if r.status != 400 || !bytes.Contains(r.body, []byte(`\"`+param+`\"`)) || !bytes.Contains(r.body, []byte(`"invalid_parameter"`)) {
			t.Errorf("?%s: %d %s, want 400 naming %s", q, r.status, r.body, param)
		}
	}

	// The other formats: one row per measurement (CSV), one item per line (NDJSON), one
	// Point Feature per sensor (GeoJSON).
	if r := get(t, g.url+"/api/v1/readings/latest?format=csv&limit=5000"); r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") ||
		!strings.HasPrefix(string(r.body), "sensor_id,external_id,name,service_id,") {
		t.Errorf("format=csv: %d %s %.200s", r.status, r.header.Get("Content-Type"), r.body)
	}
	if r := get(t, g.url+"/api/v1/readings/latest?limit=5000", "Accept", "application/x-ndjson"); r.status != 200 ||
		len(strings.Split(strings.TrimSpace(string(r.body)), "\n")) != len(all.Items) {
		t.Errorf("ndjson: %d, %d lines for %d sensors", r.status, len(strings.Split(strings.TrimSpace(string(r.body)), "\n")), len(all.Items))
	}
	var fc struct {
		Type     string `json:"type"`
		Features []struct {
			Properties map[string]any `json:"properties"`
		} `json:"features"`
	}
	if r := get(t, g.url+"/api/v1/readings/latest?format=geojson&limit=5000"); r.status != 200 || json.Unmarshal(r.body, &fc) != nil ||
		fc.Type != "FeatureCollection" || len(fc.Features) != len(all.Items) || fc.Features[0].Properties["stale"] == nil {
		t.Errorf("geojson: %d, %d features", r.status, len(fc.Features))
	}

	// A stopped service: its sensors unavailable (with their last known time), one warning,
	// the others answer.
	st.services["airquality"].p.Kill()
	down := areaLatest(t, g, "limit=5000")
	if len(down.Items) != len(all.Items) {
		t.Fatalf("with airquality down: %d items, want %d", len(down.Items), len(all.Items))
	}
	if len(down.Warnings) != 1 || down.Warnings[0].ServiceID != "airquality" || down.Warnings[0].Code != "upstream_unavailable" {
		t.Errorf("warnings %+v, want one upstream_unavailable for airquality", down.Warnings)
	}
	before := map[string]*time.Time{}
	for _, it := range all.Items {
		before[it.SensorID] = it.Timestamp
	}
	known := 0
	for _, it := range down.Items {
		if it.Unavailable && it.Timestamp != nil {
			// The catalog's last known reading (LastReadingTimes, not the cached page):
			// from a sync, so never after what the service itself answered.
			known++
			if b := before[it.SensorID]; b == nil || it.Timestamp.After(*b) {
				t.Errorf("%s: unavailable with last known reading %s, after the service's own %v", it.ExternalID, it.Timestamp, b)
			}
		}
		if it.Unavailable != (it.ServiceID == "airquality") {
			t.Errorf("%s (%s): unavailable %v", it.ExternalID, it.ServiceID, it.Unavailable)
		}
		if it.Unavailable && string(it.Measurements) != "null" {
			t.Errorf("%s: unavailable but measurements %s", it.ExternalID, it.Measurements)
		}
	}
	if known == 0 {
		t.Error("no unavailable sensor carries the catalog's last known reading time")
	}
	t.Logf("%d sensors: %d fresh, %d stale by their intervals", len(all.Items), fresh, stale)
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}
