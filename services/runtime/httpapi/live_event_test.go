package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/runtime/live"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// TestEventIsReadingsPageItem: a stream event carries the reading exactly as its readings
// page does. A weather station known from its metadata (with coordinates) whose observation
// batch names it without coordinates once gave events with "location": null while its
// page showed the station's point; the event now carries the stored station's location.
func TestEventIsReadingsPageItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := live.NewMemory(live.Retention, 1000, time.Now)
	pub := &live.Publisher{ServiceID: "weather", Log: log, Encode: ReadingJSON}
	st, err := store.Open(ctx, store.Options{ServiceID: "weather", SQLitePath: filepath.Join(t.TempDir(), "w.db"), Committed: pub.Committed})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lat, lon := 39.1754, -76.6684
	meta := store.Batch{Provider: "nws", Feed: "nws-observations", Stations: []contract.Station{{
		ExternalID: "KBWI", Name: "Baltimore-Washington International", SensorType: "weather_station", Latitude: &lat, Longitude: &lon,
	}}}
	if _, err := st.Ingest(ctx, meta); err != nil {
		t.Fatalf("metadata: %v", err)
	}
	at := time.Now().UTC().Add(-30 * time.Minute).Truncate(time.Minute)
	temp, _ := canon.Normalize(canon.AirTemperatureC, 7.5, "degC")
	obs := store.Batch{Provider: "nws", Feed: "nws-observations",
		Stations:     []contract.Station{{ExternalID: "KBWI", Name: "KBWI"}}, // no coordinates, as an observation document says
		Observations: []observation.Observation{{StationID: "KBWI", Time: at, Measurements: []canon.Measurement{temp}}}}
	if _, err := st.Ingest(ctx, obs); err != nil {
		t.Fatalf("observations: %v", err)
	}

	page, err := log.Read(ctx, &contract.Position{}, 10, 0)
	if err != nil || len(page.Entries) != 1 {
		t.Fatalf("log: %d entries, %v; want 1", len(page.Entries), err)
	}
	var event struct {
		Reading json.RawMessage `json:"reading"`
	}
	if err := json.Unmarshal(page.Entries[0].Body, &event); err != nil {
		t.Fatal(err)
	}

	station, err := st.Station(ctx, "KBWI")
	if err != nil {
		t.Fatal(err)
	}
	q := contract.ReadingsQuery{Page: 1, Limit: 10}
	rs, total, err := st.Readings(ctx, "KBWI", q)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := appendReadingsEnvelope(&buf, "weather", station, rs, total, q); err != nil {
		t.Fatal(err)
	}
	var readingsPage struct {
		Readings []json.RawMessage `json:"readings"`
	}
	if err := json.Unmarshal(buf.Bytes(), &readingsPage); err != nil || len(readingsPage.Readings) != 1 {
		t.Fatalf("page %s: %v", buf.Bytes(), err)
	}
	var fromEvent, fromPage map[string]any
	_ = json.Unmarshal(event.Reading, &fromEvent)
	_ = json.Unmarshal(readingsPage.Readings[0], &fromPage)
	if fromPage["location"] == nil {
		t.Fatalf("the page's reading has no location: %s", readingsPage.Readings[0])
	}
	a, _ := json.Marshal(fromEvent)
	b, _ := json.Marshal(fromPage)
	if !bytes.Equal(a, b) {
		t.Errorf("event reading differs from the readings page's:\nevent %s\npage  %s", a, b)
	}
}
