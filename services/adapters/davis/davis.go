// Package davis reads Davis Instruments WeatherLink v2 /current responses, a second
// imperial-unit weather station source (°F, mph, inHg, epoch seconds), whose readings are
// spread over sensors (one or more ISS for temperature, humidity and wind; a barometer).
package davis

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

// catalog declares the provider and the feeds this adapter serves (observation.Declare).
//
//go:embed catalog.json
var catalog []byte

// Provider and feed slugs.
const (
	ProviderSlug = "davis-weatherlink"
	FeedSlug     = "weatherlink-current"
)

// FormatCurrent is the WeatherLink v2 /current/{station-id} response.
const FormatCurrent = "davis.weatherlink.v2.current"

// RawFormat is recorded on observations.
const RawFormat = "davis.weatherlink.v2.current"

// SensorType of WeatherLink stations.
const SensorType = "weather_station"

// ReportingIntervalS is the archive interval WeatherLink stations commonly use.
const ReportingIntervalS = 900

// ErrNotWeatherLink is returned for a payload that is not a WeatherLink v2 response.
var ErrNotWeatherLink = errors.New("davis: not a WeatherLink v2 current response")

// Adapter declares the WeatherLink adapter: its provider and feed and the parser of its
// one payload format (it has no simulator).
func Adapter() observation.Adapter {
	return observation.Declare(catalog, map[string]observation.ParseFunc{FormatCurrent: observation.BodyParser(ParseCurrent)}, nil)
}

type current struct {
	StationID json.Number `json:"station_id"`
	Sensors   []struct {
		LSID              json.Number       `json:"lsid"`
		SensorType        int               `json:"sensor_type"`
		DataStructureType int               `json:"data_structure_type"`
		Data              []json.RawMessage `json:"data"`
	} `json:"sensors"`
}

// conditions are the fields of a sensor data record that map to canonical parameters.
type conditions struct {
	TS          *float64 `json:"ts"`
	TxID        *int     `json:"tx_id"`
	Temp        *float64 `json:"temp"`
	Hum         *float64 `json:"hum"`
	DewPoint    *float64 `json:"dew_point"`
	WindLast    *float64 `json:"wind_speed_last"`
	WindDirLast *float64 `json:"wind_dir_last"`
	WindAvg2    *float64 `json:"wind_speed_avg_last_2_min"`
	WindDirAvg2 *float64 `json:"wind_dir_scalar_avg_last_2_min"`
	WindHi10    *float64 `json:"wind_speed_hi_last_10_min"`
	BarSeaLevel *float64 `json:"bar_sea_level"`
}

func (c conditions) isISS() bool {
	return c.Temp != nil || c.Hum != nil || c.WindLast != nil || c.WindAvg2 != nil
}

// suite is one integrated sensor suite (ISS) record and the id of the sensor it becomes.
type suite struct {
	c  conditions
	tx int
	id string
}

// SuiteID is the external id of the readings of transmitter tx of station: the primary suite
// (the lowest tx_id) is the station itself, every further suite "<station>-tx<tx_id>".
func SuiteID(station string, tx int, primary bool) string {
	if primary {
		return station
	}
	return fmt.Sprintf("%s-tx%d", station, tx)
}

// ParseCurrent reads a /current response. Every integrated sensor suite (an ISS record, with
// temperature, humidity or wind) is kept: the primary suite (lowest tx_id) is the station's
// sensor, with the barometer's bar_sea_level as pressure; each further suite is its own
// sensor "<station_id>-tx<tx_id>" (SuiteID), so a second transmitter is never discarded.
// Wind is the current value (wind_speed_last, wind_dir_last); the 2-minute averages are
// kept as wind_speed_avg_2min_ms and wind_direction_avg_2min_deg, the highest speed of the
// last 10 minutes as wind_gust_ms (the METAR gust window). Each suite's time is its
// record's ts. The raw fragment is the whole response.
func ParseCurrent(data []byte) (observation.Batch, error) {
	var c current
	if err := json.Unmarshal(data, &c); err != nil {
		return observation.Batch{}, fmt.Errorf("%w: %w", ErrNotWeatherLink, err)
	}
	id := strings.TrimSpace(c.StationID.String())
	if id == "" || c.Sensors == nil {
		return observation.Batch{}, fmt.Errorf("%w: no station_id or sensors", ErrNotWeatherLink)
	}
	if err := contract.ValidExternalID(id); err != nil {
		return observation.Batch{}, fmt.Errorf("%w: station_id %q: %w", ErrNotWeatherLink, id, err)
	}
	raw, err := batch.CompactRaw(data)
	if err != nil {
		return observation.Batch{}, fmt.Errorf("%w: %w", ErrNotWeatherLink, err)
	}
	b := batch.New(ProviderSlug)
	var suites []suite
	var bar *conditions
	for i, s := range c.Sensors {
		for _, rec := range s.Data {
			var r conditions
			if err := json.Unmarshal(rec, &r); err != nil {
				b.Reject(id, i+1, "lsid "+s.LSID.String(), batch.ReasonMalformedRow, err.Error())
				continue
			}
			if r.isISS() {
				tx := math.MaxInt - len(suites)
				if r.TxID != nil {
					tx = *r.TxID
				}
				suites = append(suites, suite{c: r, tx: tx})
			}
			if r.BarSeaLevel != nil && bar == nil {
				rr := r
				bar = &rr
			}
		}
	}
	b.SetRecords(len(suites) + btoi(bar != nil))
	sort.SliceStable(suites, func(i, j int) bool { return suites[i].tx < suites[j].tx })
	b.Note(id, nil, nil)
	if len(suites) == 0 && bar != nil {
		suites = append(suites, suite{})
	}
	seen := map[string]bool{}
	for k := range suites {
		s := &suites[k]
		s.id = SuiteID(id, s.tx, k == 0)
		if seen[s.id] {
			b.Reject(id, 0, "tx_id", batch.ReasonDuplicate, fmt.Sprintf("a second ISS record with tx_id %d", s.tx))
			continue
		}
		seen[s.id] = true
		ts := s.c.TS
		if k == 0 && ts == nil && bar != nil {
			ts = bar.TS
		}
		if ts == nil || math.IsNaN(*ts) || *ts < 0 || *ts > 1e11 {
			b.Reject(s.id, 0, "ts", batch.ReasonBadTimestamp, "no usable ts (epoch seconds) in the ISS or barometer record")
			continue
		}
		ms := b.Start(s.id, 0)
		add := func(field, param string, v *float64, unit string) {
			if v != nil {
				ms.Add(field, param, *v, unit)
			}
		}
		add("temp", canon.AirTemperatureC, s.c.Temp, "degF")
		add("hum", canon.RelativeHumidityPercent, s.c.Hum, "percent")
		add("dew_point", canon.DewPointC, s.c.DewPoint, "degF")
		add("wind_speed_last", canon.WindSpeedMS, s.c.WindLast, "mph")
		add("wind_dir_last", canon.WindDirectionDeg, s.c.WindDirLast, "deg")
		add("wind_speed_avg_last_2_min", canon.WindSpeedAvg2MinMS, s.c.WindAvg2, "mph")
		add("wind_dir_scalar_avg_last_2_min", canon.WindDirectionAvg2MinDeg, s.c.WindDirAvg2, "deg")
		add("wind_speed_hi_last_10_min", canon.WindGustMS, s.c.WindHi10, "mph")
		if k == 0 && bar != nil {
			add("bar_sea_level", canon.AirPressureHPa, bar.BarSeaLevel, "inHg")
		}
		ms.Emit(time.Unix(int64(*ts), 0), nil, nil, raw, RawFormat)
	}
	return b.Finish(func(sid string) contract.Station {
		st := base(sid)
		if sid != id {
			st.Name = "WeatherLink station " + id + " " + strings.TrimPrefix(sid, id+"-")
			st.Description = "Davis WeatherLink station " + id + ", integrated sensor suite on transmitter " + strings.TrimPrefix(sid, id+"-tx")
		}
		return st
	}), nil
}

func base(id string) contract.Station {
	return contract.Station{
		ExternalID: id, Name: "WeatherLink station " + id, Description: "Davis WeatherLink station " + id,
		SensorType: SensorType, Status: "active", ProviderSlug: ProviderSlug, FeedSlug: FeedSlug,
		ReportingIntervalS: ReportingIntervalS,
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
