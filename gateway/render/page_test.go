package render

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/pkg/formats"
)

// TestRawReadingsWithHugeNumbers: a raw-form page whose provider payload holds a number no
// float64 holds (valid JSON, kept as sent) renders in every format; before, CSV and
// GeoJSON decoded the payload and failed.
func TestRawReadingsWithHugeNumbers(t *testing.T) {
	body := []byte(`{"sensor_id":"s","external_id":"x1","readings":[` +
		`{"id":"r1","timestamp":"2026-01-01T00:00:00.000Z","location":{"type":"Point","coordinates":[-106.5,35.1]},` +
		`"raw":{"summary":{"avg":20.4e3254948170144}},"source_format":"openaq.v3"}],` +
		`"pagination":{"page":1,"limit":1,"total":1}}`)
	for _, f := range []string{formats.CSV, formats.GeoJSON, formats.NDJSON} {
		var out bytes.Buffer
		req := httptest.NewRequest(http.MethodGet, "/api/v1/sensors/s/readings?format="+f, nil)
		if err := readingsPage(&out, http.Header{}, req, body, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		// CSV is the long form, one row per measurement: a raw reading has none, so the
		// header alone; the other forms carry the reading.
		if f != formats.CSV && !strings.Contains(out.String(), "2026-01-01T00:00:00") {
			t.Errorf("%s: the reading is missing: %s", f, out.String())
		}
	}
}
