// Package davis reads Davis Instruments WeatherLink v2 /current responses, a second
// imperial-unit weather station source (°F, mph, inHg, epoch seconds), whose readings are
// spread over sensors (an ISS for temperature, humidity and wind; a barometer).
package davis

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

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

// Adapter is the WeatherLink observation.Adapter.
type Adapter struct{}

var _ observation.Adapter = Adapter{}

// Provider implements observation.Adapter.
func (Adapter) Provider() contract.Provider {
	return contract.Provider{
		Slug:        ProviderSlug,
		Name:        "Davis Instruments WeatherLink",
		Description: "Davis weather stations reporting through the WeatherLink v2 API, in imperial units.",
		URL:         "https://weatherlink.github.io/v2-api/",
		License:     "Station owners' data; no licence stated",
	}
}

// Feeds implements observation.Adapter.
func (Adapter) Feeds() []contract.Feed {
	return []contract.Feed{{
		Slug:            FeedSlug,
		Name:            "WeatherLink current conditions",
		Description:     "Current temperature, humidity, wind and sea-level pressure of Davis WeatherLink stations.",
		ProviderSlug:    ProviderSlug,
		Domain:          "weather",
		TemporalPattern: "periodic",
		FeedType:        "timeseries",
	}}
}

// Formats implements observation.Adapter.
func (Adapter) Formats() []string { return []string{FormatCurrent} }

// Parse implements observation.Adapter.
func (Adapter) Parse(p observation.Payload) (observation.Batch, error) {
	if p.Format != FormatCurrent {
		return observation.Batch{}, fmt.Errorf("davis: unknown payload format %q (want %s)", p.Format, FormatCurrent)
	}
	return ParseCurrent(p.Body)
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
	WindAvg2    *float64 `json:"wind_speed_avg_last_2_min"`
	WindDirAvg2 *float64 `json:"wind_dir_scalar_avg_last_2_min"`
	WindLast    *float64 `json:"wind_speed_last"`
	WindDirLast *float64 `json:"wind_dir_last"`
	BarSeaLevel *float64 `json:"bar_sea_level"`
}

// ParseCurrent reads a /current response into one observation: temperature, humidity and
// wind from the integrated sensor suite with the lowest transmitter id (the primary ISS;
// wind as the 2-minute average, as METARs report it, else the last sample), and
// air_pressure_hpa from the barometer's bar_sea_level (inHg). The time is the ISS record's
// ts. The raw fragment is the whole response.
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
	b := batch.New(ProviderSlug)
	var iss, bar *conditions
	issTx := math.MaxInt
	for i, s := range c.Sensors {
		for _, raw := range s.Data {
			var r conditions
			if err := json.Unmarshal(raw, &r); err != nil {
				b.Reject(id, i+1, "lsid "+s.LSID.String(), batch.ReasonMalformedRow, err.Error())
				continue
			}
			if r.Temp != nil || r.Hum != nil || r.WindAvg2 != nil || r.WindLast != nil {
				tx := math.MaxInt - 1
				if r.TxID != nil {
					tx = *r.TxID
				}
				if tx < issTx {
					rr := r
					iss, issTx = &rr, tx
				}
			}
			if r.BarSeaLevel != nil && bar == nil {
				rr := r
				bar = &rr
			}
		}
	}
	b.Note(id, nil, nil)
	var ts *float64
	switch {
	case iss != nil && iss.TS != nil:
		ts = iss.TS
	case bar != nil && bar.TS != nil:
		ts = bar.TS
	}
	if ts == nil || math.IsNaN(*ts) || *ts < 0 || *ts > 1e11 {
		b.Reject(id, 0, "ts", batch.ReasonBadTimestamp, "no usable ts (epoch seconds) in the ISS or barometer record")
		return b.Finish(base), nil
	}
	ms := b.Start(id, 0)
	if iss != nil {
		if iss.Temp != nil {
			ms.Add("temp", canon.AirTemperatureC, *iss.Temp, "degF")
		}
		if iss.Hum != nil {
			ms.Add("hum", canon.RelativeHumidityPercent, *iss.Hum, "percent")
		}
		if w, f := first(iss.WindAvg2, iss.WindLast, "wind_speed_avg_last_2_min", "wind_speed_last"); w != nil {
			ms.Add(f, canon.WindSpeedMS, *w, "mph")
		}
		if d, f := first(iss.WindDirAvg2, iss.WindDirLast, "wind_dir_scalar_avg_last_2_min", "wind_dir_last"); d != nil {
			ms.Add(f, canon.WindDirectionDeg, *d, "deg")
		}
	}
	if bar != nil {
		ms.Add("bar_sea_level", canon.AirPressureHPa, *bar.BarSeaLevel, "inHg")
	}
	raw, err := batch.CompactRaw(data)
	if err != nil {
		return observation.Batch{}, fmt.Errorf("%w: %w", ErrNotWeatherLink, err)
	}
	ms.Emit(time.Unix(int64(*ts), 0), nil, nil, raw, RawFormat)
	return b.Finish(base), nil
}

func first(a, b *float64, an, bn string) (*float64, string) {
	if a != nil {
		return a, an
	}
	return b, bn
}

func base(id string) contract.Station {
	return contract.Station{
		ExternalID: id, Name: "WeatherLink station " + id, Description: "Davis WeatherLink station " + id,
		SensorType: SensorType, Status: "active", ProviderSlug: ProviderSlug, FeedSlug: FeedSlug,
		ReportingIntervalS: ReportingIntervalS,
	}
}
