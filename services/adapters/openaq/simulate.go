package openaq

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/sensorgate/sensorgate/services/adapters/internal/synth"
	"github.com/sensorgate/sensorgate/services/observation"
)

// city is an anchor for synthetic monitors, with its typical PM2.5 level.
type city struct {
	synth.Place
	country string
	utcOff  int     // hours, for date.local
	pm25    float64 // typical µg/m³
}

var cities = []city{
	{synth.At("Delhi", 28.61, 77.21), "IN", 5, 90}, {synth.At("Beijing", 39.90, 116.40), "CN", 8, 55},
	{synth.At("Los Angeles", 34.05, -118.24), "US", -8, 12}, {synth.At("Mexico City", 19.43, -99.13), "MX", -6, 24},
	{synth.At("London", 51.51, -0.13), "GB", 0, 10}, {synth.At("Paris", 48.86, 2.35), "FR", 1, 12},
	{synth.At("Jakarta", -6.21, 106.85), "ID", 7, 40}, {synth.At("São Paulo", -23.55, -46.63), "BR", -3, 18},
	{synth.At("Lagos", 6.52, 3.38), "NG", 1, 50}, {synth.At("Cairo", 30.04, 31.24), "EG", 2, 55},
	{synth.At("Bangkok", 13.76, 100.50), "TH", 7, 30}, {synth.At("Seoul", 37.57, 126.98), "KR", 9, 25},
	{synth.At("Santiago", -33.45, -70.67), "CL", -4, 25}, {synth.At("Warsaw", 52.23, 21.01), "PL", 1, 20},
	{synth.At("Johannesburg", -26.20, 28.05), "ZA", 2, 25}, {synth.At("Sydney", -33.87, 151.21), "AU", 10, 7},
}

type simStation struct {
	i        int
	c        city
	name     string
	lat, lon float64
	ppm      bool // reports ozone in ppm, as Taiwan EPA and US AirNow sources do
}

func simStations(w synth.World) []simStation {
	return synth.Spread(w, cities, 12, func(i int, c city, lat, lon float64) simStation {
		return simStation{i: i, c: c, name: fmt.Sprintf("%s Synthetic Monitor %d", c.Name, i/len(cities)+1), lat: lat, lon: lon, ppm: i%3 == 0}
	})
}

type simCoords struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
}

// simStationList writes a /v1/locations page of the synthetic monitors (one per city of a
// fixed list, cycling, ids like "IN:Delhi Synthetic Monitor 1").
func simStationList(w synth.World) ([]observation.Payload, error) {
	type loc struct {
		Location    string    `json:"location"`
		City        string    `json:"city"`
		Country     string    `json:"country"`
		SourceName  string    `json:"sourceName"`
		Coordinates simCoords `json:"coordinates"`
		Parameters  []string  `json:"parameters"`
	}
	var res []loc
	for _, s := range simStations(w) {
		res = append(res, loc{s.name, s.c.Name, s.c.country, "sensorgate-simulator", simCoords{s.lat, s.lon}, []string{"pm25", "pm10", "o3", "no2"}})
	}
	body, err := json.Marshal(map[string]any{"meta": simMeta(len(res)), "results": res})
	if err != nil {
		return nil, fmt.Errorf("openaq: encode synthetic locations: %w", err)
	}
	return []observation.Payload{{Format: FormatLocations, Body: body}}, nil
}

func simMeta(found int) map[string]any {
	return map[string]any{"name": "openaq-api", "license": "CC BY 4.0", "website": "https://docs.openaq.org/", "page": 1, "limit": found, "found": found}
}

var (
	chPM  = synth.Channel("openaq-pm")
	chO3  = synth.Channel("openaq-o3")
	chNO2 = synth.Channel("openaq-no2")
)

type simRecord struct {
	Location        string          `json:"location"`
	Parameter       string          `json:"parameter"`
	Date            simDate         `json:"date"`
	Value           float64         `json:"value"`
	Unit            string          `json:"unit"`
	Coordinates     simCoords       `json:"coordinates"`
	Country         string          `json:"country"`
	City            string          `json:"city"`
	SourceName      string          `json:"sourceName"`
	AveragingPeriod simAveragingPer `json:"averagingPeriod"`
}

type simDate struct {
	UTC   string `json:"utc"`
	Local string `json:"local"`
}

type simAveragingPer struct {
	Unit  string `json:"unit"`
	Value int    `json:"value"`
}

// simulate writes one /v1/measurements page per synthetic monitor with hourly pm25, pm10,
// o3 and no2 records in [from, to), newest first; rush-hour PM peaks, afternoon ozone,
// lognormal noise, -99 for missing values, and missing hours.
func simulate(w synth.World, from, to time.Time) ([]observation.Payload, error) {
	var out []observation.Payload
	for _, s := range simStations(w) {
		ticks := w.Reporting(s.i, synth.Ticks(from, to, time.Hour, 0))
		if len(ticks) == 0 {
			continue
		}
		var recs []simRecord
		for _, t := range ticks {
			recs = append(recs, simRecords(w, s, t)...)
		}
		body, err := json.Marshal(map[string]any{"meta": simMeta(len(recs)), "results": recs})
		if err != nil {
			return nil, fmt.Errorf("openaq: encode synthetic measurements: %w", err)
		}
		out = append(out, observation.Payload{Format: FormatMeasurements, StationID: StationID(s.c.country, s.name), Body: body})
	}
	return out, nil
}

func simRecords(w synth.World, s simStation, t time.Time) []simRecord {
	i := s.i
	// Two rush-hour peaks (08 and 20 local solar time) and a slow multi-day drift.
	rush := 0.5 + 0.5*synth.Diurnal(t.Add(-8*time.Hour), s.lon, 0)*synth.Diurnal(t.Add(-8*time.Hour), s.lon, 0)
	pm25 := s.c.pm25 * (0.6 + 0.6*rush) * math.Exp(0.35*w.Smooth(i, chPM, t, 36*time.Hour)+0.12*w.Normal(uint64(i), chPM, uint64(t.Unix())))
	pm10 := pm25 * (1.5 + 0.3*w.Unit(uint64(i), chPM+1, uint64(t.Unix())))
	o3ppb := math.Max(1, 30+22*synth.Diurnal(t, s.lon, 15)+8*w.Smooth(i, chO3, t, 48*time.Hour))
	no2 := math.Max(1, 25*(0.5+rush)*math.Exp(0.2*w.Normal(uint64(i), chNO2, uint64(t.Unix()))))
	local := t.Add(time.Duration(s.c.utcOff)*time.Hour).Format("2006-01-02T15:04:05") + fmt.Sprintf("%+03d:00", s.c.utcOff)
	rec := func(param string, v float64, unit string, ch uint64) simRecord {
		if w.Missing(i, ch, t) {
			v = -99
		}
		return simRecord{
			Location: s.name, Parameter: param, Date: simDate{t.Format("2006-01-02T15:04:05Z"), local},
			Value: v, Unit: unit, Coordinates: simCoords{s.lat, s.lon}, Country: s.c.country, City: s.c.Name,
			SourceName: "sensorgate-simulator", AveragingPeriod: simAveragingPer{"hours", 1},
		}
	}
	o3 := rec("o3", synth.Round(o3ppb*1.9957, 1), "µg/m³", chO3)
	if s.ppm {
		o3 = rec("o3", synth.Round(o3ppb/1000, 4), "ppm", chO3)
	}
	return []simRecord{
		rec("pm25", synth.Round(pm25, 1), "µg/m³", chPM),
		rec("pm10", synth.Round(pm10, 1), "µg/m³", chPM+1),
		o3,
		rec("no2", synth.Round(no2, 1), "µg/m³", chNO2),
	}
}
