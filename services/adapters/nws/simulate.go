package nws

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/sensorgate/sensorgate/services/adapters/internal/synth"
	"github.com/sensorgate/sensorgate/services/observation"
)

// landAnchors are inland US cities; synthetic stations are scattered 30 km around them.
var landAnchors = []synth.Place{
	synth.At("Denver", 39.74, -104.99), synth.At("Kansas City", 39.10, -94.58), synth.At("Chicago", 41.88, -87.63),
	synth.At("Dallas", 32.78, -96.80), synth.At("Atlanta", 33.75, -84.39), synth.At("Columbus", 39.96, -82.99),
	synth.At("Phoenix", 33.45, -112.07), synth.At("Salt Lake City", 40.76, -111.89), synth.At("Minneapolis", 44.98, -93.27),
	synth.At("Nashville", 36.16, -86.78), synth.At("Albuquerque", 35.08, -106.65), synth.At("Boise", 43.62, -116.20),
	synth.At("Raleigh", 35.78, -78.64), synth.At("Oklahoma City", 35.47, -97.52), synth.At("Omaha", 41.26, -95.93),
	synth.At("St. Louis", 38.63, -90.20),
}

type simStation struct {
	i         int
	id, name  string
	lat, lon  float64
	elevation float64
}

// simID spells station i as a four-letter identifier starting with X (never an ICAO
// prefix of a real US station): XAAA, XAAB, ...
func simID(i int) string {
	b := []byte{'X', 'A', 'A', 'A'}
	for k := 3; k >= 1 && i > 0; k-- {
		b[k] = byte('A' + i%26)
		i /= 26
	}
	return string(b)
}

func simStations(w synth.World) []simStation {
	return synth.Spread(w, landAnchors, 30, func(i int, a synth.Place, lat, lon float64) simStation {
		return simStation{
			i: i, id: simID(i), name: fmt.Sprintf("%s Synthetic Field %d", a.Name, i/len(landAnchors)+1),
			lat: lat, lon: lon, elevation: synth.Round(150+1400*w.Unit(uint64(i), synth.Channel("elev")), 1),
		}
	})
}

type qv struct {
	UnitCode string   `json:"unitCode"`
	Value    *float64 `json:"value"`
	QC       string   `json:"qualityControl,omitempty"`
}

// simObsFeature is an observation Feature in api.weather.gov's field order.
type simObsFeature struct {
	ID         string      `json:"id"`
	Type       string      `json:"type"`
	Geometry   simGeometry `json:"geometry"`
	Properties simObsProps `json:"properties"`
}

type simObsProps struct {
	ID                 string   `json:"@id"`
	Type               string   `json:"@type"`
	Elevation          qv       `json:"elevation"`
	Station            string   `json:"station"`
	Timestamp          string   `json:"timestamp"`
	RawMessage         string   `json:"rawMessage"`
	TextDescription    string   `json:"textDescription"`
	PresentWeather     []string `json:"presentWeather"`
	Temperature        qv       `json:"temperature"`
	Dewpoint           qv       `json:"dewpoint"`
	WindDirection      qv       `json:"windDirection"`
	WindSpeed          qv       `json:"windSpeed"`
	WindGust           qv       `json:"windGust"`
	BarometricPressure qv       `json:"barometricPressure"`
	SeaLevelPressure   qv       `json:"seaLevelPressure"`
	Visibility         qv       `json:"visibility"`
	RelativeHumidity   qv       `json:"relativeHumidity"`
}

type simGeometry struct {
	Type        string     `json:"type"`
	Coordinates [2]float64 `json:"coordinates"`
}

// simStationList writes a gridpoints-stations-like FeatureCollection of the synthetic
// stations (ids XAAA, XAAB, ...).
func simStationList(w synth.World) ([]observation.Payload, error) {
	type props struct {
		ID                string `json:"@id"`
		Type              string `json:"@type"`
		Elevation         qv     `json:"elevation"`
		StationIdentifier string `json:"stationIdentifier"`
		Name              string `json:"name"`
		TimeZone          string `json:"timeZone"`
	}
	type feature struct {
		ID         string      `json:"id"`
		Type       string      `json:"type"`
		Geometry   simGeometry `json:"geometry"`
		Properties props       `json:"properties"`
	}
	var fs []feature
	for _, s := range simStations(w) {
		url := "https://api.weather.gov/stations/" + s.id
		e := s.elevation
		fs = append(fs, feature{
			ID: url, Type: "Feature", Geometry: simGeometry{"Point", [2]float64{s.lon, s.lat}},
			Properties: props{ID: url, Type: "wx:ObservationStation", Elevation: qv{UnitCode: "wmoUnit:m", Value: &e},
				StationIdentifier: s.id, Name: s.name, TimeZone: timeZone(s.lon)},
		})
	}
	body, err := json.Marshal(map[string]any{"type": "FeatureCollection", "features": fs})
	if err != nil {
		return nil, fmt.Errorf("nws: encode synthetic stations: %w", err)
	}
	return []observation.Payload{{Format: FormatStations, Body: body}}, nil
}

func timeZone(lon float64) string {
	switch {
	case lon < -114:
		return "America/Los_Angeles"
	case lon < -102:
		return "America/Denver"
	case lon < -87:
		return "America/Chicago"
	default:
		return "America/New_York"
	}
}

var (
	chTemp = synth.Channel("nws-temp")
	chDew  = synth.Channel("nws-dew")
	chWind = synth.Channel("nws-wind")
	chDir  = synth.Channel("nws-dir")
	chPres = synth.Channel("nws-pres")
	chQC   = synth.Channel("nws-qc")
)

// simulate writes one observations FeatureCollection per synthetic station that reports
// in [from, to), routine METARs at :53 past the hour, newest first, in the current wmoUnit:
// scheme, with null values (qualityControl Z), occasional X-flagged bad values, and
// missing hours.
func simulate(w synth.World, from, to time.Time) ([]observation.Payload, error) {
	var out []observation.Payload
	for _, s := range simStations(w) {
		ticks := w.Reporting(s.i, synth.Ticks(from, to, time.Hour, 53*time.Minute))
		if len(ticks) == 0 {
			continue
		}
		body := []byte(`{"type":"FeatureCollection","features":[`)
		for n, t := range ticks {
			f, err := simFeature(w, s, t)
			if err != nil {
				return nil, err
			}
			if n > 0 {
				body = append(body, ',')
			}
			body = append(body, f...)
		}
		body = append(body, "]}"...)
		out = append(out, observation.Payload{Format: FormatObservations, StationID: s.id, Body: body})
	}
	return out, nil
}

func simFeature(w synth.World, s simStation, t time.Time) (json.RawMessage, error) {
	i := s.i
	temp := 24 - 0.55*(s.lat-30) - 0.0055*s.elevation + 12*synth.Seasonal(t) + 6*synth.Diurnal(t, s.lon, 15) + 3*w.Smooth(i, chTemp, t, 30*time.Hour)
	dew := math.Min(temp-0.5, temp-6-4*synth.Diurnal(t, s.lon, 15)+3*w.Smooth(i, chDew, t, 20*time.Hour))
	rh := 100 * math.Exp(17.625*dew/(243.04+dew)) / math.Exp(17.625*temp/(243.04+temp))
	wind := math.Max(0, 14+8*w.Smooth(i, chWind, t, 10*time.Hour)+5*synth.Diurnal(t, s.lon, 14)) // km/h
	dir := math.Mod(220+150*w.Smooth(i, chDir, t, 24*time.Hour)+720, 360)
	slp := 101500 + 1200*w.Smooth(i, chPres, t, 60*time.Hour) + 250*w.Smooth(i, chPres+1, t, 8*time.Hour) // Pa
	alt := slp - 10 + 20*w.Unit(uint64(i), chPres, uint64(t.Unix()))

	val := func(v float64, digits int) *float64 { r := synth.Round(v, digits); return &r }
	q := func(unit string, v *float64, ch uint64) qv {
		if w.Missing(i, ch, t) {
			return qv{UnitCode: unit, Value: nil, QC: "Z"}
		}
		// About one value in 400 is a sensor glitch that NWS QC flags X.
		if w.Unit(uint64(i), ch, chQC, uint64(t.Unix())) < 0.0025 {
			bad := *v + 60
			return qv{UnitCode: unit, Value: &bad, QC: "X"}
		}
		return qv{UnitCode: unit, Value: v, QC: "V"}
	}
	calm := wind < 2
	wdir := q("wmoUnit:degree_(angle)", val(math.Round(dir/10)*10, 0), chDir)
	if calm {
		wdir = qv{UnitCode: "wmoUnit:degree_(angle)", Value: nil, QC: "Z"}
	}
	id := "https://api.weather.gov/stations/" + s.id + "/observations/" + t.Format("2006-01-02T15:04:05+00:00")
	elev := s.elevation
	f := simObsFeature{
		ID: id, Type: "Feature",
		Geometry: simGeometry{"Point", [2]float64{s.lon, s.lat}},
		Properties: simObsProps{
			ID:                 id,
			Type:               "wx:ObservationStation",
			Elevation:          qv{UnitCode: "wmoUnit:m", Value: &elev},
			Station:            "https://api.weather.gov/stations/" + s.id,
			Timestamp:          t.Format("2006-01-02T15:04:05+00:00"),
			RawMessage:         metar(s.id, t, temp, dew, wind, dir, alt, calm),
			TextDescription:    "Clear",
			PresentWeather:     []string{},
			Temperature:        q("wmoUnit:degC", val(temp, 1), chTemp),
			Dewpoint:           q("wmoUnit:degC", val(dew, 1), chDew),
			WindDirection:      wdir,
			WindSpeed:          q("wmoUnit:km_h-1", val(wind, 2), chWind),
			WindGust:           qv{UnitCode: "wmoUnit:km_h-1", Value: nil, QC: "Z"},
			BarometricPressure: q("wmoUnit:Pa", val(alt, -1), chPres+1),
			SeaLevelPressure:   q("wmoUnit:Pa", val(slp, -1), chPres),
			Visibility:         qv{UnitCode: "wmoUnit:m", Value: val(16090, 0), QC: "C"},
			RelativeHumidity:   q("wmoUnit:percent", val(math.Min(100, rh), 2), chDew+1),
		},
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("nws: encode synthetic observation: %w", err)
	}
	return b, nil
}

// metar writes a plausible routine METAR for the rawMessage field.
func metar(id string, t time.Time, temp, dew, windKmh, dir, altPa float64, calm bool) string {
	kt := int(math.Round(windKmh / 1.852))
	wind := fmt.Sprintf("%03d%02dKT", int(math.Round(dir/10)*10)%360, kt)
	if calm || kt == 0 {
		wind = "00000KT"
	}
	tc := func(v float64) string {
		r := int(math.Round(v))
		if r < 0 {
			return fmt.Sprintf("M%02d", -r)
		}
		return fmt.Sprintf("%02d", r)
	}
	return fmt.Sprintf("%s %sZ AUTO %s 10SM CLR %s/%s A%04d RMK AO2", id, t.Format("021504"), wind, tc(temp), tc(dew), int(math.Round(altPa/100/33.8639*100)))
}
