// Package ambient reads Ambient Weather REST API payloads, the imperial-unit source of the
// weather service (tempf in °F, windspeedmph in mph, baromrelin in inHg, dateutc in epoch
// milliseconds), and simulates personal weather stations that report every five minutes.
package ambient

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/adapters/internal/synth"
	"github.com/sensorgate/sensorgate/services/observation"
)

// catalog declares the provider and the feeds this adapter serves (observation.Declare).
//
//go:embed catalog.json
var catalog []byte

// Provider and feed slugs.
const (
	ProviderSlug = "ambient-weather"
	FeedSlug     = "ambient-weather-stations"
)

// Payload formats.
const (
	// FormatDeviceData is GET /v1/devices/{macAddress}: an array of records of one device,
	// which the records do not name, so Payload.StationID must be the MAC address.
	FormatDeviceData = "ambient.device_data"
	// FormatDevices is GET /v1/devices (an array of devices) or one device object, each with
	// macAddress, info (name, coords) and lastData.
	FormatDevices = "ambient.devices"
)

// RawFormat is recorded on observations.
const RawFormat = "ambient.record"

// SensorType of Ambient devices.
const SensorType = "weather_station"

// ReportingIntervalS is the 5-minute upload cadence of Ambient stations.
const ReportingIntervalS = 300

// ErrNotAmbient is returned for a payload that is not Ambient JSON.
var ErrNotAmbient = errors.New("ambient: not an Ambient Weather JSON payload")

// Adapter declares the Ambient Weather adapter: its provider and feed, a parser per
// payload format, and its simulator of synthetic backyard stations.
func Adapter() observation.Adapter {
	return observation.Declare(catalog, map[string]observation.ParseFunc{
		FormatDeviceData: observation.StationParser(ParseDeviceData),
		FormatDevices:    observation.BodyParser(ParseDevices),
	}, synth.Simulator{Name: "ambient", Stations: simStationList, Window: simulate})
}

// CanonicalID is a device MAC address in upper case ("AA:BB:CC:DD:EE:FF").
func CanonicalID(mac string) string { return strings.ToUpper(strings.TrimSpace(mac)) }

// record holds the fields of an Ambient data record that map to canonical parameters.
type record struct {
	DateUTC      *float64 `json:"dateutc"`
	TempF        *float64 `json:"tempf"`
	Humidity     *float64 `json:"humidity"`
	WindSpeedMPH *float64 `json:"windspeedmph"`
	WindDir      *float64 `json:"winddir"`
	BaromRelIn   *float64 `json:"baromrelin"`
	WindGustMPH  *float64 `json:"windgustmph"`
	DewPointF    *float64 `json:"dewPoint"`
}

// fields maps Ambient fields to canonical parameters and their units. baromrelin (relative,
// reduced to sea level by the station's calibration) is used, not baromabsin (station
// pressure), so it compares with NDBC and NWS sea-level pressure.
var fields = []struct {
	name, param, unit string
	get               func(r *record) *float64
}{
	{"tempf", canon.AirTemperatureC, "degF", func(r *record) *float64 { return r.TempF }},
	{"humidity", canon.RelativeHumidityPercent, "percent", func(r *record) *float64 { return r.Humidity }},
	{"windspeedmph", canon.WindSpeedMS, "mph", func(r *record) *float64 { return r.WindSpeedMPH }},
	{"winddir", canon.WindDirectionDeg, "deg", func(r *record) *float64 { return r.WindDir }},
	{"baromrelin", canon.AirPressureHPa, "inHg", func(r *record) *float64 { return r.BaromRelIn }},
	{"windgustmph", canon.WindGustMS, "mph", func(r *record) *float64 { return r.WindGustMPH }},
	{"dewPoint", canon.DewPointC, "degF", func(r *record) *float64 { return r.DewPointF }},
}

type stationInfo struct {
	name, location string
	lat, lon       *float64
}

type parser struct {
	b     *batch.Builder
	infos map[string]stationInfo
}

// record parses one data record of station id.
func (p *parser) record(id string, n int, raw json.RawMessage, lat, lon *float64) {
	var r record
	if err := json.Unmarshal(raw, &r); err != nil {
		p.b.Reject(id, n, "", batch.ReasonMalformedRow, fmt.Sprintf("record %d: %v", n, err))
		return
	}
	if r.DateUTC == nil || math.IsNaN(*r.DateUTC) || *r.DateUTC < 0 || *r.DateUTC > 1e14 {
		p.b.Reject(id, n, "dateutc", batch.ReasonBadTimestamp, "dateutc is missing or not epoch milliseconds")
		return
	}
	t := time.UnixMilli(int64(*r.DateUTC)).UTC()
	ms := p.b.Start(id, n)
	for _, f := range fields {
		if v := f.get(&r); v != nil {
			ms.Add(f.name, f.param, *v, f.unit)
		}
	}
	c, err := batch.CompactRaw(raw)
	if err != nil {
		p.b.Reject(id, n, "", batch.ReasonMalformedRow, err.Error())
		return
	}
	ms.Emit(t, lat, lon, c, RawFormat)
}

func (p *parser) finish() observation.Batch {
	return p.b.Finish(func(id string) contract.Station {
		info := p.infos[id]
		name := strings.TrimSpace(info.name)
		if name == "" {
			name = "Ambient Weather " + id
		}
		desc := "Ambient Weather personal weather station"
		if l := strings.TrimSpace(info.location); l != "" {
			desc += " in " + l
		}
		return contract.Station{
			ExternalID: id, Name: name, Description: desc, SensorType: SensorType, Status: "active",
			Latitude: info.lat, Longitude: info.lon,
			ProviderSlug: ProviderSlug, FeedSlug: FeedSlug, ReportingIntervalS: ReportingIntervalS,
		}
	})
}

// ParseDeviceData reads the records of the device mac (GET /v1/devices/{mac}), newest
// first as Ambient sends them.
func ParseDeviceData(mac string, data []byte) (observation.Batch, error) {
	id := CanonicalID(mac)
	if err := contract.ValidExternalID(id); err != nil {
		return observation.Batch{}, fmt.Errorf("ambient: device data needs the device MAC as station id: %q: %w", mac, err)
	}
	var recs []json.RawMessage
	if err := json.Unmarshal(data, &recs); err != nil {
		return observation.Batch{}, fmt.Errorf("%w: device data is not an array of records: %w", ErrNotAmbient, err)
	}
	p := &parser{b: batch.New(ProviderSlug), infos: map[string]stationInfo{}}
	p.b.SetRecords(len(recs))
	for i, raw := range recs {
		p.record(id, i+1, raw, nil, nil)
	}
	p.b.Note(id, nil, nil)
	return p.finish(), nil
}

type device struct {
	MacAddress string          `json:"macAddress"`
	LastData   json.RawMessage `json:"lastData"`
	Info       struct {
		Name   string `json:"name"`
		Coords struct {
			Location string `json:"location"`
			Coords   struct {
				Lat *float64 `json:"lat"`
				Lon *float64 `json:"lon"`
			} `json:"coords"`
		} `json:"coords"`
	} `json:"info"`
}

// ParseDevices reads GET /v1/devices (an array of devices) or one device object: a station
// record per device (name and position from info) and an observation from lastData.
func ParseDevices(data []byte) (observation.Batch, error) {
	t := bytes.TrimSpace(data)
	var raws []json.RawMessage
	switch {
	case len(t) > 0 && t[0] == '[':
		if err := json.Unmarshal(t, &raws); err != nil {
			return observation.Batch{}, fmt.Errorf("%w: %w", ErrNotAmbient, err)
		}
	case len(t) > 0 && t[0] == '{':
		var probe struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(t, &probe) == nil && probe.Error != "" {
			return observation.Batch{}, fmt.Errorf("ambient: API error: %s", batch.Truncate(probe.Error, 200))
		}
		raws = []json.RawMessage{t}
	default:
		return observation.Batch{}, fmt.Errorf("%w: want a device object or an array of devices", ErrNotAmbient)
	}
	p := &parser{b: batch.New(ProviderSlug), infos: map[string]stationInfo{}}
	p.b.SetRecords(len(raws))
	for i, raw := range raws {
		n := i + 1
		var d device
		if err := json.Unmarshal(raw, &d); err != nil {
			p.b.Reject("", n, "", batch.ReasonBadStationMetadata, fmt.Sprintf("device %d: %v", n, err))
			continue
		}
		id := CanonicalID(d.MacAddress)
		if err := contract.ValidExternalID(id); err != nil {
			p.b.Reject("", n, "macAddress", batch.ReasonMissingStation, fmt.Sprintf("device %d: macAddress %q: %v", n, batch.Truncate(d.MacAddress, 40), err))
			continue
		}
		info := stationInfo{name: d.Info.Name, location: d.Info.Coords.Location}
		if c := d.Info.Coords.Coords; c.Lat != nil && c.Lon != nil {
			lat, lon, ok := batch.Coord(*c.Lat, *c.Lon)
			if !ok {
				p.b.Reject(id, n, "info.coords", batch.ReasonBadCoordinates, fmt.Sprintf("position %v, %v is out of range", *c.Lat, *c.Lon))
			}
			info.lat, info.lon = lat, lon
		}
		p.infos[id] = info
		p.b.Note(id, info.lat, info.lon)
		if len(d.LastData) > 0 && string(d.LastData) != "null" {
			p.record(id, n, d.LastData, info.lat, info.lon)
		}
	}
	return p.finish(), nil
}
