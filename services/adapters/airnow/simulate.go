package airnow

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/sensorgate/sensorgate/services/adapters/aqi"
	"github.com/sensorgate/sensorgate/services/adapters/internal/synth"
	"github.com/sensorgate/sensorgate/services/observation"
)

// metro is an anchor for synthetic monitoring sites, with its air agency and typical PM2.5.
type metro struct {
	synth.Place
	agency string
	pm25   float64
}

// metros are US anchors for synthetic monitoring sites (10 km scatter).
var metros = []metro{
	{synth.At("Los Angeles", 34.05, -118.24), "South Coast AQMD", 12}, {synth.At("Fresno", 36.74, -119.79), "San Joaquin Valley APCD", 14},
	{synth.At("Phoenix", 33.45, -112.07), "Maricopa County AQD", 9}, {synth.At("Houston", 29.76, -95.37), "Texas CEQ", 10},
	{synth.At("Chicago", 41.88, -87.63), "Illinois EPA", 9}, {synth.At("Pittsburgh", 40.44, -79.99), "Allegheny County Health Dept", 10},
	{synth.At("New York", 40.71, -74.01), "New York State DEC", 8}, {synth.At("Seattle", 47.61, -122.33), "Puget Sound Clean Air Agency", 6},
	{synth.At("Denver", 39.74, -104.99), "Colorado DPHE", 7}, {synth.At("Atlanta", 33.75, -84.39), "Georgia EPD", 9},
}

type simSite struct {
	i        int
	code     string // 12-digit international AQS code (840 + 9 digits)
	name     string
	agency   string
	lat, lon float64
	pm25     float64
}

func simSites(w synth.World) []simSite {
	return synth.Spread(w, metros, 10, func(i int, m metro, lat, lon float64) simSite {
		return simSite{
			i: i, code: fmt.Sprintf("840999%06d", i+1), // state code 99 is no state: never a real site
			name: fmt.Sprintf("%s Synthetic Site %d", m.Name, i/len(metros)+1), agency: m.agency,
			lat: lat, lon: lon, pm25: m.pm25,
		}
	})
}

type simDataRecord struct {
	Latitude         float64 `json:"Latitude"`
	Longitude        float64 `json:"Longitude"`
	UTC              string  `json:"UTC"`
	Parameter        string  `json:"Parameter"`
	Unit             string  `json:"Unit"`
	Value            float64 `json:"Value"`
	RawConcentration float64 `json:"RawConcentration"`
	AQI              int     `json:"AQI"`
	Category         int     `json:"Category"`
	SiteName         string  `json:"SiteName"`
	AgencyName       string  `json:"AgencyName"`
	FullAQSCode      string  `json:"FullAQSCode"`
	IntlAQSCode      string  `json:"IntlAQSCode"`
}

// simStationList writes the station records. AirNow has no station-list endpoint that
// this package reads, so they come from one hour of monitoring-site data
// (2000-01-01T00:00Z) for every synthetic site, none of them quiet, gapped or missing.
func simStationList(w synth.World) ([]observation.Payload, error) {
	w.QuietFraction, w.GapRate, w.MissingRate = 0, 0, 0
	t := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	return simulate(w, t, t.Add(time.Hour))
}

var (
	chPM = synth.Channel("airnow-pm")
	chO3 = synth.Channel("airnow-o3")
)

// simulate writes one monitoring-site data response per hour in [from, to) holding every
// reporting synthetic site's PM2.5 (µg/m³) and ozone (ppb) records with their AQI and
// category, -999 for a missing raw concentration or value.
func simulate(w synth.World, from, to time.Time) ([]observation.Payload, error) {
	sites := simSites(w)
	var out []observation.Payload
	for _, t := range synth.Ticks(from, to, time.Hour, 0) {
		var recs []simDataRecord
		for _, s := range sites {
			if w.Quiet(s.i, t) || w.Gap(s.i, t) {
				continue
			}
			recs = append(recs, simSiteRecords(w, s, t)...)
		}
		if len(recs) == 0 {
			continue
		}
		body, err := json.Marshal(recs)
		if err != nil {
			return nil, fmt.Errorf("airnow: encode synthetic data: %w", err)
		}
		out = append(out, observation.Payload{Format: FormatData, Body: body})
	}
	return out, nil
}

func simSiteRecords(w synth.World, s simSite, t time.Time) []simDataRecord {
	i := s.i
	d := synth.Diurnal(t.Add(-8*time.Hour), s.lon, 0)
	pm := synth.Round(s.pm25*(0.7+0.5*d*d)*math.Exp(0.4*w.Smooth(i, chPM, t, 40*time.Hour)), 1)
	o3 := math.Round(math.Max(2, 32+20*synth.Diurnal(t, s.lon, 15)+8*w.Smooth(i, chO3, t, 48*time.Hour)))
	rec := func(param, unit string, v float64, idx int, ch uint64) simDataRecord {
		raw := synth.Round(v*(0.9+0.2*w.Unit(uint64(i), ch, uint64(t.Unix()))), 1)
		if w.Missing(i, ch+1, t) {
			raw = missing
		}
		cat, _ := aqi.CategoryOf(idx)
		n := 1
		for k, c := range aqi.Categories() {
			if c.Name == cat.Name {
				n = k + 1
			}
		}
		r := simDataRecord{
			Latitude: s.lat, Longitude: s.lon, UTC: t.Format("2006-01-02T15:04"), Parameter: param, Unit: unit,
			Value: v, RawConcentration: raw, AQI: idx, Category: n, SiteName: s.name, AgencyName: s.agency,
			FullAQSCode: s.code[3:], IntlAQSCode: s.code,
		}
		if w.Missing(i, ch, t) {
			r.Value, r.AQI, r.Category = missing, missing, 7
		}
		return r
	}
	pmAQI, _ := aqi.FromPM25(pm)
	// Ozone AQI below 70 ppb (8-hour): 0-54 ppb -> 0-50, 55-70 -> 51-100.
	o3AQI := int(math.Round(o3 * 50 / 54))
	if o3 > 54 {
		o3AQI = int(math.Round(51 + (math.Min(o3, 70)-55)*49/15))
	}
	return []simDataRecord{rec("PM2.5", "UG/M3", pm, pmAQI, chPM), rec("OZONE", "PPB", o3, o3AQI, chO3)}
}
