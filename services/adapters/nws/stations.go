package nws

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

type stationFeature struct {
	ID         string    `json:"id"`
	Geometry   *geometry `json:"geometry"`
	Properties struct {
		StationIdentifier string    `json:"stationIdentifier"`
		Name              string    `json:"name"`
		TimeZone          string    `json:"timeZone"`
		Elevation         *quantity `json:"elevation"`
	} `json:"properties"`
}

// StationDataTypes are the canonical parameters an NWS station reports.
var stationDataTypes = []string{canon.AirTemperatureC, canon.WindDirectionDeg, canon.WindSpeedMS, canon.AirPressureHPa, canon.RelativeHumidityPercent}

// ParseStations reads a station metadata FeatureCollection (/gridpoints/{wfo}/{x},{y}/stations
// or /stations) into Batch.Stations. A feature without an identifier or a usable point is a
// rejection.
func ParseStations(data []byte) (observation.Batch, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return observation.Batch{}, fmt.Errorf("%w: %w", ErrNotGeoJSON, err)
	}
	if env.Type != "FeatureCollection" {
		return observation.Batch{}, fmt.Errorf("%w: stations payload type is %q, want FeatureCollection", ErrNotGeoJSON, batch.Truncate(env.Type, 40))
	}
	out := observation.Batch{Provider: ProviderSlug}
	for n, f := range batch.StationRecords[stationFeature](&out, "feature", env.Features) {
		id := CanonicalID(f.Properties.StationIdentifier)
		if id == "" {
			id = CanonicalID(stationFromURL(f.ID))
		}
		if err := contract.ValidExternalID(id); err != nil {
			out.Reject("", n, "stationIdentifier", batch.ReasonMissingStation, fmt.Sprintf("feature %d: station %q: %v", n, batch.Truncate(id, 40), err))
			continue
		}
		g := f.Geometry
		if g == nil || g.Type != "Point" || len(g.Coordinates) < 2 {
			out.Reject(id, n, "geometry", batch.ReasonBadCoordinates, "station has no Point geometry")
			continue
		}
		lat, lon, ok := batch.Coord(g.Coordinates[1], g.Coordinates[0])
		if !ok {
			out.Reject(id, n, "geometry", batch.ReasonBadCoordinates, fmt.Sprintf("point %v is not a valid [lon, lat]", g.Coordinates))
			continue
		}
		st := baseStation(id)
		if name := strings.TrimSpace(f.Properties.Name); name != "" {
			st.Name = name
		}
		desc := []string{"NWS observation station " + id}
		if tz := strings.TrimSpace(f.Properties.TimeZone); tz != "" {
			desc = append(desc, "time zone "+tz)
		}
		if e := f.Properties.Elevation; e != nil && e.Value != nil {
			desc = append(desc, "elevation "+strconv.FormatFloat(*e.Value, 'f', -1, 64)+" m")
		}
		st.Description = strings.Join(desc, "; ")
		st.DataTypes = append([]string(nil), stationDataTypes...)
		st.DataTypes = batch.MergeTypes(st.DataTypes, nil)
		st.Latitude, st.Longitude = lat, lon
		out.Stations = append(out.Stations, st)
	}
	return out, nil
}
