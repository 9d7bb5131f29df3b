package coops

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/sensorgate/sensorgate/services/adapters/internal/synth"
	"github.com/sensorgate/sensorgate/services/observation"
)

// piers are coastal anchors for synthetic CO-OPS stations (scattered 3 km around).
var piers = []synth.Place{
	synth.At("Vaca Key, Florida Bay", 24.711, -81.107), synth.At("Key West", 24.551, -81.808), synth.At("Charleston", 32.781, -79.925),
	synth.At("The Battery, New York", 40.700, -74.014), synth.At("Boston", 42.354, -71.053), synth.At("Galveston Pier 21", 29.310, -94.793),
	synth.At("San Diego", 32.714, -117.174), synth.At("San Francisco", 37.807, -122.465), synth.At("Seattle", 47.603, -122.339),
	synth.At("Honolulu", 21.307, -157.867),
}

type simStation struct {
	i        int
	id, name string
	lat, lon float64
}

func simStations(w synth.World) []simStation {
	return synth.Spread(w, piers, 3, func(i int, a synth.Place, lat, lon float64) simStation {
		name := a.Name + " (synthetic)"
		if i >= len(piers) {
			name = fmt.Sprintf("%s %d (synthetic)", a.Name, i/len(piers)+1)
		}
		return simStation{i: i, id: fmt.Sprintf("SGC%04d", i+1), name: name, lat: lat, lon: lon}
	})
}

func simMetadata(s simStation) []byte {
	b, _ := json.Marshal(metadata{ID: s.id, Name: s.name, Lat: strconv.FormatFloat(s.lat, 'f', 4, 64), Lon: strconv.FormatFloat(s.lon, 'f', 4, 64)})
	return b
}

// simStationList writes for each synthetic station (ids SGC0001, ...) a water_temperature
// response with its metadata and no data, which Parse turns into the station record.
func simStationList(w synth.World) ([]observation.Payload, error) {
	var out []observation.Payload
	for _, s := range simStations(w) {
		body := append([]byte(`{"metadata":`), simMetadata(s)...)
		body = append(body, `, "data": []}`...)
		out = append(out, observation.Payload{Format: FormatWaterTemperature, StationID: s.id, Body: body})
	}
	return out, nil
}

var chWater = synth.Channel("coops-water")

// simulate writes one datagetter water_temperature response (units=metric,
// time_zone=gmt) per synthetic station that reports in [from, to), 6-minute records oldest
// first as CO-OPS writes them, values as strings with one decimal, and
// {"v": "", "f": "1,1,1"} for missing values.
func simulate(w synth.World, from, to time.Time) ([]observation.Payload, error) {
	var out []observation.Payload
	for _, s := range simStations(w) {
		ticks := w.Reporting(s.i, synth.Ticks(from, to, 6*time.Minute, 0))
		if len(ticks) == 0 {
			continue
		}
		slices.Reverse(ticks)
		var buf bytes.Buffer
		buf.WriteString(`{"metadata":`)
		buf.Write(simMetadata(s))
		buf.WriteString(`, "data": [`)
		for n, t := range ticks {
			if n > 0 {
				buf.WriteByte(',')
			}
			if w.Missing(s.i, chWater, t) {
				fmt.Fprintf(&buf, `{"t":"%s", "v":"", "f":"1,1,1"}`, t.Format("2006-01-02 15:04"))
				continue
			}
			// Warm, shallow water: seasonal and diurnal cycle, a semidiurnal tidal wiggle.
			v := 28 - 0.5*math.Max(0, s.lat-22) + 4*synth.Seasonal(t) + 0.6*synth.Diurnal(t, s.lon, 16) +
				0.3*math.Sin(2*math.Pi*float64(t.Unix())/44712) + 0.4*w.Smooth(s.i, chWater, t, 30*time.Hour)
			fmt.Fprintf(&buf, `{"t":"%s", "v":"%.1f", "f":"0,0,0"}`, t.Format("2006-01-02 15:04"), v)
		}
		buf.WriteString("]}")
		out = append(out, observation.Payload{Format: FormatWaterTemperature, StationID: s.id, Body: buf.Bytes()})
	}
	return out, nil
}
