package nws

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

// ErrNotGeoJSON is returned for a payload that is not a GeoJSON Feature or FeatureCollection.
var ErrNotGeoJSON = errors.New("nws: not a GeoJSON Feature or FeatureCollection")

// quantity is an NWS QuantitativeValue.
type quantity struct {
	UnitCode string   `json:"unitCode"`
	Value    *float64 `json:"value"`
	QC       string   `json:"qualityControl"`
}

type geometry struct {
	Type        string    `json:"type"`
	Coordinates []float64 `json:"coordinates"`
}

type obsFeature struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	Geometry   *geometry `json:"geometry"`
	Properties struct {
		Station            string    `json:"station"`
		StationID          string    `json:"stationId"`
		Timestamp          string    `json:"timestamp"`
		Temperature        *quantity `json:"temperature"`
		WindDirection      *quantity `json:"windDirection"`
		WindSpeed          *quantity `json:"windSpeed"`
		BarometricPressure *quantity `json:"barometricPressure"`
		SeaLevelPressure   *quantity `json:"seaLevelPressure"`
		RelativeHumidity   *quantity `json:"relativeHumidity"`
		Dewpoint           *quantity `json:"dewpoint"`
		WindGust           *quantity `json:"windGust"`
		Visibility         *quantity `json:"visibility"`
	} `json:"properties"`
}

type envelope struct {
	Type     string            `json:"type"`
	Features []json.RawMessage `json:"features"`
}

// qcFailed reports whether an NWS/MADIS quality-control flag marks the value as failed.
// Kept: Z (preliminary, no QC), C (coarse pass, level 1), S (screened, levels 1-2), V
// (verified, levels 1-3), G (subjectively good). Dropped: X (failed level 1, erroneous),
// Q (questioned: passed level 1 but failed a level 2/3 consistency check) and B
// (subjectively bad). Q is dropped because it only appears when a neighbour or temporal
// check disagrees, and a bad value in a canonical series does more harm than a gap.
func qcFailed(flag string) bool {
	f := strings.ToUpper(strings.TrimPrefix(strings.TrimSpace(flag), "qc:"))
	switch f {
	case "X", "Q", "B":
		return true
	}
	return false
}

// ParseObservations reads observation GeoJSON: a Feature (observations/latest or
// observations/{time}) or a FeatureCollection (observations). Null values are skipped,
// values whose qualityControl failed (X, Q, B) are quality_control rejections, and
// air_pressure_hpa is seaLevelPressure, or barometricPressure when the sea-level value is
// null or failed QC (api.weather.gov's barometricPressure is the altimeter-style,
// sea-level-reduced pressure, so both compare across station elevations).
func ParseObservations(data []byte) (observation.Batch, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return observation.Batch{}, fmt.Errorf("%w: %w", ErrNotGeoJSON, err)
	}
	var features []json.RawMessage
	switch env.Type {
	case "FeatureCollection":
		features = env.Features
	case "Feature":
		features = []json.RawMessage{data}
	default:
		return observation.Batch{}, fmt.Errorf("%w: type is %q", ErrNotGeoJSON, batch.Truncate(env.Type, 40))
	}
	b := batch.New(ProviderSlug)
	b.SetRecords(len(features))
	for i, raw := range features {
		parseFeature(b, i+1, raw)
	}
	return b.Finish(baseStation), nil
}

func parseFeature(b *batch.Builder, n int, raw json.RawMessage) {
	var f obsFeature
	if err := json.Unmarshal(raw, &f); err != nil {
		b.Reject("", n, "", batch.ReasonMalformedRow, fmt.Sprintf("feature %d: %v", n, err))
		return
	}
	p := f.Properties
	id := CanonicalID(p.StationID)
	if id == "" {
		id = CanonicalID(stationFromURL(p.Station))
	}
	if id == "" {
		id = CanonicalID(stationFromURL(f.ID))
	}
	if err := contract.ValidExternalID(id); err != nil {
		b.Reject("", n, "station", batch.ReasonMissingStation, fmt.Sprintf("feature %d: station %q: %v", n, batch.Truncate(id, 40), err))
		return
	}
	ts, err := time.Parse(time.RFC3339, p.Timestamp)
	if err != nil {
		b.Reject(id, n, "timestamp", batch.ReasonBadTimestamp, fmt.Sprintf("timestamp %q is not RFC 3339", batch.Truncate(p.Timestamp, 40)))
		return
	}
	var lat, lon *float64
	if g := f.Geometry; g != nil && g.Type == "Point" && len(g.Coordinates) >= 2 {
		var ok bool
		if lat, lon, ok = batch.Coord(g.Coordinates[1], g.Coordinates[0]); !ok {
			b.Reject(id, n, "geometry", batch.ReasonBadCoordinates, fmt.Sprintf("point %v is not a valid [lon, lat]", g.Coordinates))
		}
	}
	ms := b.Start(id, n)
	add := func(field, param string, q *quantity) bool {
		if q == nil {
			return false
		}
		if q.Value == nil {
			b.Missing()
			return false
		}
		if qcFailed(q.QC) {
			b.Reject(id, n, field, batch.ReasonQualityControl, fmt.Sprintf("%s = %v flagged %q", field, *q.Value, q.QC))
			return false
		}
		before := ms.Len()
		ms.Add(field, param, *q.Value, q.UnitCode)
		return ms.Len() > before
	}
	add("temperature", canon.AirTemperatureC, p.Temperature)
	add("windDirection", canon.WindDirectionDeg, p.WindDirection)
	add("windSpeed", canon.WindSpeedMS, p.WindSpeed)
	if !add("seaLevelPressure", canon.AirPressureHPa, p.SeaLevelPressure) {
		add("barometricPressure", canon.AirPressureHPa, p.BarometricPressure)
	}
	add("relativeHumidity", canon.RelativeHumidityPercent, p.RelativeHumidity)
	add("dewpoint", canon.DewPointC, p.Dewpoint)
	add("windGust", canon.WindGustMS, p.WindGust)
	add("visibility", canon.VisibilityM, p.Visibility)
	compact, err := batch.CompactRaw(raw)
	if err != nil {
		b.Reject(id, n, "", batch.ReasonMalformedRow, err.Error())
		return
	}
	ms.Emit(ts, lat, lon, compact, RawFormat)
}

// stationFromURL returns the id after "/stations/" in an api.weather.gov URL.
func stationFromURL(u string) string {
	const seg = "/stations/"
	i := strings.Index(u, seg)
	if i < 0 {
		return ""
	}
	rest := u[i+len(seg):]
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		rest = rest[:j]
	}
	return rest
}
