package mcp

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
)

// TestFitAnswer: a result over MaxToolResultBytes comes back under it, as the first items
// of its longest list with a note saying how many, the tool's summary, and a resource_link
// to the REST URL of the whole result; a small one passes untouched.
func TestFitAnswer(t *testing.T) {
	t.Parallel()
	var readings []map[string]any
	for i := range 2000 {
		readings = append(readings, map[string]any{"timestamp": fmt.Sprintf("2026-11-28T%02d:00:00.000Z", i%24), "measurements": []map[string]any{{"parameter": "water_temperature_c", "value": 20.5, "unit": "celsius"}}})
	}
	result := map[string]any{
		"content":           []map[string]any{{"type": "text", "text": "2000 readings of 41001"}},
		"structuredContent": map[string]any{"sensor_id": "s", "readings": readings, "pagination": map[string]any{"total": 5000}},
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "result": result})
	if len(b) <= MaxToolResultBytes {
		t.Fatalf("fixture is only %d bytes", len(b))
	}
	id := uuid.New()
	sc := &scope{kind: "sensor", sensor: &catalog.Sensor{ID: id}, service: &catalog.Service{ID: "ocean"}}
	link := linkFor("https://gw.example", sc, "ocean.get_readings", json.RawMessage(`{"from":"2026-11-01T00:00:00Z","parameters":["water_temperature_c"]}`))
	wantURI := "https://gw.example/api/v1/sensors/" + id.String() + "/readings?format=csv&from=2026-11-01T00%3A00%3A00Z&parameters=water_temperature_c"
	if link.uri != wantURI || link.mime != "text/csv" {
		t.Fatalf("link %+v, want %s", link, wantURI)
	}
	out := fitAnswer(b, "ocean.get_readings", link)
	if len(out) > MaxToolResultBytes {
		t.Fatalf("cut answer is %d bytes", len(out))
	}
	var got struct {
		ID     int `json:"id"`
		Result struct {
			Content []struct {
				Type, Text, URI, MimeType string
			} `json:"content"`
			StructuredContent struct {
				SensorID   string            `json:"sensor_id"`
				Readings   []json.RawMessage `json:"readings"`
				Pagination map[string]int    `json:"pagination"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	r := got.Result
	if got.ID != 7 || len(r.Content) != 3 || r.Content[1].Type != "resource_link" || r.Content[1].URI != wantURI {
		t.Fatalf("content %+v", r.Content)
	}
	// The same rows as Parquet, for a notebook.
	wantParquet := strings.Replace(wantURI, "format=csv", "format=parquet", 1)
	if p := r.Content[2]; p.Type != "resource_link" || p.URI != wantParquet || p.MimeType != "application/vnd.apache.parquet" || !strings.Contains(r.Content[0].Text, wantParquet) {
		t.Errorf("parquet link %+v", p)
	}
	kept := len(r.StructuredContent.Readings)
	if kept == 0 || kept >= 2000 || r.StructuredContent.SensorID != "s" || r.StructuredContent.Pagination["total"] != 5000 {
		t.Errorf("structured: %d readings, sensor %q, pagination %v", kept, r.StructuredContent.SensorID, r.StructuredContent.Pagination)
	}
	if text := r.Content[0].Text; !strings.HasPrefix(text, "2000 readings of 41001") || !strings.Contains(text, fmt.Sprintf("first %d of 2000", kept)) || !strings.Contains(text, wantURI) {
		t.Errorf("text %q", text)
	}

	small := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}`)
	if string(fitAnswer(small, "x", link)) != string(small) {
		t.Error("a small answer was changed")
	}
	huge := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":%q}]}}`, strings.Repeat("x", 40<<10))
	if n := len(fitAnswer(huge, "x", restLink{})); n > MaxToolResultBytes {
		t.Errorf("one huge text: %d bytes", n)
	}
}
