package openaq

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

// Raw formats of v3 observations.
const (
	RawV3Sensors      = "openaq.v3.sensor"
	RawV3Measurements = "openaq.v3.measurement"
	RawV3Latest       = "openaq.v3.latest"
)

// V3StationID is the external id of an API v3 location: "v3-" and its numeric id. v3
// locations have ids, unlike v1's, so they are not named by country and name.
func V3StationID(locationID int64) string { return "v3-" + strconv.FormatInt(locationID, 10) }

type v3Parameter struct {
	Name  string `json:"name"`
	Units string `json:"units"`
}

type v3Time struct {
	UTC string `json:"utc"`
}

// v3Location is one location of /v3/locations.
type v3Location struct {
	ID       *int64  `json:"id"`
	Name     string  `json:"name"`
	Locality *string `json:"locality"`
	Country  struct {
		Code string `json:"code"`
		Name string `json:"name"`
	} `json:"country"`
	Provider struct {
		Name string `json:"name"`
	} `json:"provider"`
	Sensors []struct {
		Parameter v3Parameter `json:"parameter"`
	} `json:"sensors"`
	Coordinates *coordinates `json:"coordinates"`
}

// ParseV3Locations reads /v3/locations into station records (no observations).
func ParseV3Locations(data []byte) (observation.Batch, error) {
	env, err := decodeEnvelope(data)
	if err != nil {
		return observation.Batch{}, err
	}
	out := observation.Batch{Provider: ProviderSlug}
	for n, r := range batch.StationRecords[v3Location](&out, "location", env.Results) {
		if r.ID == nil || *r.ID < 0 {
			out.Reject("", n, "id", batch.ReasonMissingStation, fmt.Sprintf("location %d has no id", n))
			continue
		}
		id := V3StationID(*r.ID)
		place := r.Country.Name
		if r.Locality != nil && strings.TrimSpace(*r.Locality) != "" {
			place = strings.TrimSpace(*r.Locality)
		}
		params := make([]string, 0, len(r.Sensors))
		for _, s := range r.Sensors {
			params = append(params, s.Parameter.Name)
		}
		s := site{name: r.Name, city: place, country: r.Country.Code, source: r.Provider.Name}
		out.Stations = append(out.Stations, locationStation(&out, id, n, s, r.Coordinates, params))
	}
	return out, nil
}

// startV3 begins a v3 document of one location, stationID, which the document does not
// name (sensors and measurements): the location's id, its results and a parser that
// already knows the station.
func startV3(stationID string, data []byte) (string, envelope, *parser, error) {
	id := strings.TrimSpace(stationID)
	if err := contract.ValidExternalID(id); err != nil {
		return "", envelope{}, nil, fmt.Errorf("openaq: v3 sensors and measurements need their location's id as station id: %q: %w", stationID, err)
	}
	env, err := decodeEnvelope(data)
	if err != nil {
		return "", envelope{}, nil, err
	}
	p := newParser()
	p.b.Note(id, nil, nil)
	return id, env, p, nil
}

// v3Sensor is one sensor of /v3/locations/{id}/sensors with its latest value.
type v3Sensor struct {
	Parameter v3Parameter `json:"parameter"`
	Latest    *struct {
		Datetime    v3Time       `json:"datetime"`
		Value       *float64     `json:"value"`
		Coordinates *coordinates `json:"coordinates"`
	} `json:"latest"`
}

// ParseV3Sensors reads /v3/locations/{id}/sensors of the location stationID: each sensor's
// latest value, grouped by time into observations (raw fragment: the sensor object).
func ParseV3Sensors(stationID string, data []byte) (observation.Batch, error) {
	id, env, p, err := startV3(stationID, data)
	if err != nil {
		return observation.Batch{}, err
	}
	type group struct {
		t        time.Time
		ms       *batch.Measurements
		lat, lon *float64
		raws     [][]byte
	}
	groups := map[time.Time]*group{}
	var order []*group
	for rec, r := range batch.Records[v3Sensor](p.b, id, "sensor", env.Results) {
		n, raw := rec.N, rec.Raw
		if r.Latest == nil || r.Latest.Value == nil {
			continue // a sensor without a latest value has nothing to report
		}
		t, cr, ok := p.timed(id, n, "latest.datetime.utc", r.Latest.Datetime.UTC, raw)
		if !ok {
			continue
		}
		g, ok := groups[t]
		if !ok {
			g = &group{t: t, ms: p.b.Start(id, n)}
			groups[t] = g
			order = append(order, g)
		}
		if g.lat == nil {
			g.lat, g.lon = p.position(id, n, r.Latest.Coordinates)
		}
		g.raws = append(g.raws, cr)
		p.add(g.ms, id, n, value{field: r.Parameter.Name, param: r.Parameter.Name, v: *r.Latest.Value, unit: r.Parameter.Units})
	}
	for _, g := range order {
		p.emit(g.ms, g.t, g.lat, g.lon, batch.Results(g.raws), RawV3Sensors)
	}
	return p.finish(), nil
}

// v3Measurement is one record of /v3/sensors/{id}/measurements.
type v3Measurement struct {
	Value     *float64    `json:"value"`
	Parameter v3Parameter `json:"parameter"`
	FlagInfo  struct {
		HasFlags bool `json:"hasFlags"`
	} `json:"flagInfo"`
	Period struct {
		DatetimeTo v3Time `json:"datetimeTo"`
	} `json:"period"`
	Coordinates *coordinates `json:"coordinates"`
}

// ParseV3Measurements reads /v3/sensors/{id}/measurements of a sensor of the location
// stationID. Each record is one observation at the end of its averaging period
// (period.datetimeTo), as v1 dated values; a record OpenAQ flagged (flagInfo.hasFlags)
// is kept, marked provider_flagged (suspect).
func ParseV3Measurements(stationID string, data []byte) (observation.Batch, error) {
	id, env, p, err := startV3(stationID, data)
	if err != nil {
		return observation.Batch{}, err
	}
	for rec, r := range batch.Records[v3Measurement](p.b, id, "measurement", env.Results) {
		n, raw := rec.N, rec.Raw
		if r.Value == nil {
			p.b.Reject(id, n, "value", batch.ReasonMissingSentinel, "value is null")
			continue
		}
		t, cr, ok := p.timed(id, n, "period.datetimeTo.utc", r.Period.DatetimeTo.UTC, raw)
		if !ok {
			continue
		}
		lat, lon := p.position(id, n, r.Coordinates)
		ms := p.b.Start(id, n)
		p.add(ms, id, n, value{field: r.Parameter.Name, param: r.Parameter.Name, v: *r.Value, unit: r.Parameter.Units})
		if r.FlagInfo.HasFlags {
			ms.Mark(canon.FlagSuspect, canon.ProviderFlagged)
		}
		p.emit(ms, t.UTC(), lat, lon, cr, RawV3Measurements)
	}
	return p.finish(), nil
}

// v3ParameterIDs are the ids of OpenAQ v3's parameters table that have a canonical id,
// with the unit the table gives them (a /v3/parameters/{id}/latest record names neither).
var v3ParameterIDs = map[int]v3Parameter{
	1: {Name: "pm10", Units: "µg/m³"},
	2: {Name: "pm25", Units: "µg/m³"},
}

// parameterInPath finds the parameter id of a /v3/parameters/{id}/latest request path or of
// a recorded file named after it (v3_parameters_2_latest.json).
var parameterInPath = regexp.MustCompile(`parameters[/_](\d+)[/_]latest`)

// v3LatestRecord is one record of /v3/parameters/{id}/latest.
type v3LatestRecord struct {
	Datetime    v3Time       `json:"datetime"`
	Value       *float64     `json:"value"`
	Coordinates *coordinates `json:"coordinates"`
	LocationsID *int64       `json:"locationsId"`
}

// ParseV3ParameterLatest reads /v3/parameters/{id}/latest: per record the latest value of
// that parameter at location locationsId (station v3-<id>), at datetime.utc, with the
// location's coordinates. The parameter comes from path; ids without a canonical parameter
// (or not in v3ParameterIDs) make every record an unsupported_parameter rejection.
func ParseV3ParameterLatest(path string, data []byte) (observation.Batch, error) {
	m := parameterInPath.FindStringSubmatch(path)
	if m == nil {
		return observation.Batch{}, fmt.Errorf("openaq: a /v3/parameters/{id}/latest page names its parameter only in its path, and %q has none", batch.Truncate(path, 80))
	}
	pid, _ := strconv.Atoi(m[1])
	env, err := decodeEnvelope(data)
	if err != nil {
		return observation.Batch{}, err
	}
	par, known := v3ParameterIDs[pid]
	p := newParser()
	for rec, r := range batch.Records[v3LatestRecord](p.b, "", "record", env.Results) {
		n, raw := rec.N, rec.Raw
		if r.LocationsID == nil || *r.LocationsID < 0 {
			p.b.Reject("", n, "locationsId", batch.ReasonMissingStation, fmt.Sprintf("record %d has no locationsId", n))
			continue
		}
		id := V3StationID(*r.LocationsID)
		if !known {
			p.b.Reject(id, n, "parameter "+m[1], batch.ReasonUnsupportedParam, fmt.Sprintf("v3 parameter id %d has no canonical id here", pid))
			continue
		}
		if r.Value == nil {
			p.b.Reject(id, n, "value", batch.ReasonMissingSentinel, "value is null")
			continue
		}
		t, cr, ok := p.timed(id, n, "datetime.utc", r.Datetime.UTC, raw)
		if !ok {
			continue
		}
		lat, lon := p.position(id, n, r.Coordinates)
		ms := p.b.Start(id, n)
		p.add(ms, id, n, value{field: "value", param: par.Name, v: *r.Value, unit: par.Units})
		p.emit(ms, t.UTC(), lat, lon, cr, RawV3Latest)
	}
	return p.finish(), nil
}
