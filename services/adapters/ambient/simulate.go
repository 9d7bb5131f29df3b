package ambient

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/sensorgate/sensorgate/services/adapters/internal/synth"
	"github.com/sensorgate/sensorgate/services/observation"
)

// towns are anchors for synthetic backyard stations, scattered 20 km around.
var towns = []synth.Place{
	synth.At("Austin, TX", 30.27, -97.74), synth.At("Boulder, CO", 40.01, -105.27), synth.At("Portland, OR", 45.52, -122.68),
	synth.At("Tampa, FL", 27.95, -82.46), synth.At("Madison, WI", 43.07, -89.40), synth.At("Tucson, AZ", 32.22, -110.97),
	synth.At("Raleigh, NC", 35.78, -78.64), synth.At("Sacramento, CA", 38.58, -121.49), synth.At("Burlington, VT", 44.48, -73.21),
	synth.At("Lexington, KY", 38.04, -84.50),
}

type simStation struct {
	i        int
	mac      string
	name     string
	town     string
	lat, lon float64
	elev     float64 // m
}

// simMAC is a locally administered unicast address (first octet 0x5A), which no
// manufacturer assigns, so a synthetic device never shadows a real one.
func simMAC(i int) string {
	return fmt.Sprintf("5A:47:00:%02X:%02X:%02X", (i>>16)&0xff, (i>>8)&0xff, i&0xff)
}

func simStations(w synth.World) []simStation {
	return synth.Spread(w, towns, 20, func(i int, tn synth.Place, lat, lon float64) simStation {
		return simStation{
			i: i, mac: simMAC(i + 1), name: fmt.Sprintf("Backyard %d (synthetic)", i+1), town: tn.Name,
			lat: lat, lon: lon, elev: 50 + 1500*w.Unit(uint64(i), synth.Channel("ambient-elev")),
		}
	})
}

// simStationList writes a GET /v1/devices list of the synthetic devices (MACs
// 5A:47:00:..., names "Backyard N (synthetic)") without lastData.
func simStationList(w synth.World) ([]observation.Payload, error) {
	type coords struct {
		Lat float64 `json:"lat"`
		Lon float64 `json:"lon"`
	}
	type dev struct {
		MacAddress string `json:"macAddress"`
		Info       struct {
			Name   string `json:"name"`
			Coords struct {
				Coords    coords  `json:"coords"`
				Location  string  `json:"location"`
				Elevation float64 `json:"elevation"`
			} `json:"coords"`
		} `json:"info"`
	}
	var devs []dev
	for _, s := range simStations(w) {
		var d dev
		d.MacAddress = s.mac
		d.Info.Name = s.name
		d.Info.Coords.Coords = coords{s.lat, s.lon}
		d.Info.Coords.Location = s.town
		d.Info.Coords.Elevation = synth.Round(s.elev, 1)
		devs = append(devs, d)
	}
	body, err := json.Marshal(devs)
	if err != nil {
		return nil, fmt.Errorf("ambient: encode synthetic devices: %w", err)
	}
	return []observation.Payload{{Format: FormatDevices, Body: body}}, nil
}

// simRecord is an Ambient data record; absent sensors are omitted, as Ambient does.
type simRecord struct {
	DateUTC        int64    `json:"dateutc"`
	WindDir        *float64 `json:"winddir,omitempty"`
	WindSpeedMPH   *float64 `json:"windspeedmph,omitempty"`
	WindGustMPH    *float64 `json:"windgustmph,omitempty"`
	TempF          *float64 `json:"tempf,omitempty"`
	HourlyRainIn   float64  `json:"hourlyrainin"`
	DailyRainIn    float64  `json:"dailyrainin"`
	BaromRelIn     *float64 `json:"baromrelin,omitempty"`
	BaromAbsIn     *float64 `json:"baromabsin,omitempty"`
	Humidity       *float64 `json:"humidity,omitempty"`
	SolarRadiation float64  `json:"solarradiation"`
	UV             int      `json:"uv"`
	FeelsLike      *float64 `json:"feelsLike,omitempty"`
	DewPoint       *float64 `json:"dewPoint,omitempty"`
	Date           string   `json:"date"`
}

var (
	chTemp = synth.Channel("ambient-temp")
	chHum  = synth.Channel("ambient-hum")
	chWind = synth.Channel("ambient-wind")
	chDir  = synth.Channel("ambient-dir")
	chBaro = synth.Channel("ambient-baro")
	// chPhase picks a device's upload minute.
	chPhase = synth.Channel("ambient-phase")
)

// simulate writes per synthetic device that reports in [from, to) a GET
// /v1/devices/{mac} array of 5-minute records, newest first, in imperial units, with
// sensors dropping out (fields omitted) and missing uploads.
func simulate(w synth.World, from, to time.Time) ([]observation.Payload, error) {
	var out []observation.Payload
	for _, s := range simStations(w) {
		// Each device uploads on its own minute of the five (real devices are not in step),
		// so a live stream of the simulated world shows readings every minute.
		ticks := w.Reporting(s.i, synth.Ticks(from, to, 5*time.Minute, time.Duration(w.Hash(uint64(s.i), chPhase)%5)*time.Minute))
		if len(ticks) == 0 {
			continue
		}
		recs := make([]simRecord, 0, len(ticks))
		for _, t := range ticks {
			recs = append(recs, simRec(w, s, t))
		}
		body, err := json.Marshal(recs)
		if err != nil {
			return nil, fmt.Errorf("ambient: encode synthetic records: %w", err)
		}
		out = append(out, observation.Payload{Format: FormatDeviceData, StationID: s.mac, Body: body})
	}
	return out, nil
}

func simRec(w synth.World, s simStation, t time.Time) simRecord {
	i := s.i
	c := 22 - 0.6*(s.lat-30) - 0.006*s.elev + 11*synth.Seasonal(t) + 6.5*synth.Diurnal(t, s.lon, 15) + 2.5*w.Smooth(i, chTemp, t, 30*time.Hour)
	dew := math.Min(c-0.3, c-7-4*synth.Diurnal(t, s.lon, 15)+3*w.Smooth(i, chHum, t, 24*time.Hour))
	rh := math.Min(100, 100*math.Exp(17.625*dew/(243.04+dew))/math.Exp(17.625*c/(243.04+c)))
	mph := math.Max(0, 5+4*w.Smooth(i, chWind, t, 8*time.Hour)+2.5*synth.Diurnal(t, s.lon, 14)+1.2*w.Normal(uint64(i), chWind, uint64(t.Unix())))
	dir := math.Mod(200+160*w.Smooth(i, chDir, t, 18*time.Hour)+25*w.Normal(uint64(i), chDir, uint64(t.Unix()))+720, 360)
	hpa := 1015 + 10*w.Smooth(i, chBaro, t, 60*time.Hour) + 2*w.Smooth(i, chBaro+1, t, 9*time.Hour)
	inHg := hpa / 33.8638866667
	absInHg := inHg * math.Exp(-s.elev/8434)
	sun := math.Max(0, synth.Diurnal(t, s.lon, 12.5))
	f := func(v float64, digits int, ch uint64) *float64 {
		if w.Missing(i, ch, t) {
			return nil
		}
		r := synth.Round(v, digits)
		return &r
	}
	tf := c*9/5 + 32
	return simRecord{
		DateUTC:        t.UnixMilli(),
		WindDir:        f(dir, 0, chDir),
		WindSpeedMPH:   f(mph, 2, chWind),
		WindGustMPH:    f(mph*1.4+1, 2, chWind),
		TempF:          f(tf, 1, chTemp),
		BaromRelIn:     f(inHg, 3, chBaro),
		BaromAbsIn:     f(absInHg, 3, chBaro),
		Humidity:       f(math.Round(rh), 0, chHum),
		SolarRadiation: synth.Round(850*sun*sun, 2),
		UV:             int(math.Round(8 * sun * sun)),
		FeelsLike:      f(tf, 1, chTemp),
		DewPoint:       f(dew*9/5+32, 2, chHum),
		Date:           t.Format("2006-01-02T15:04:05.000Z"),
	}
}
