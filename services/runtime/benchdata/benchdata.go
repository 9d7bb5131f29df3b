// Package benchdata generates readings shaped like the real NDBC ones (six canonical
// measurements, the raw row with its header lines) for the store and API benchmarks, so
// that their figures are about realistic bytes.
package benchdata

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/observation"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// StationID is the id of benchmark station i.
func StationID(i int) string { return fmt.Sprintf("B%05d", i) }

// Batch is stations [first, first+n) x perStation readings, 10 minutes apart from start.
func Batch(first, n, perStation int, start time.Time) store.Batch {
	b := store.Batch{Provider: "noaa-ndbc", Feed: "ndbc-stdmet", FetchedAt: start.Add(time.Duration(perStation) * 10 * time.Minute)}
	b.Observations = make([]observation.Observation, 0, n*perStation)
	for s := first; s < first+n; s++ {
		id := StationID(s)
		lat, lon := 30+float64(s%50)/10, -70-float64(s%70)/10
		for i := 0; i < perStation; i++ {
			ts := start.Add(time.Duration(i) * 10 * time.Minute)
			k := float64((s*7 + ts.Minute() + ts.Hour()*3) % 97)
			ms := make([]canon.Measurement, 0, 6)
			for _, m := range []struct {
				p, u string
				v    float64
			}{
				{canon.WindDirectionDeg, "degT", float64((s*13 + i*7) % 360)}, {canon.WindSpeedMS, "m/s", 2 + k/10},
				{canon.WaveHeightM, "m", 0.5 + k/50}, {canon.AirPressureHPa, "hPa", 1000 + k/4},
				{canon.AirTemperatureC, "degC", 15 + k/9}, {canon.WaterTemperatureC, "degC", 18 + k/11},
			} {
				if x, err := canon.Normalize(m.p, m.v, m.u); err == nil {
					ms = append(ms, x)
				}
			}
			line := fmt.Sprintf("%s %3d %4.1f %4.1f %5.2f %5.2f %5.2f %3d %6.1f %5.1f %5.1f   MM   MM   MM    MM",
				ts.Format("2006 01 02 15 04"), (s*13+i*7)%360, 2+k/10, 3+k/10, 0.5+k/50, 7+k/20, 5+k/25, (s*13+i*7)%360, 1000+k/4, 15+k/9, 18+k/11)
			raw, _ := json.Marshal(map[string]string{"format": "ndbc.realtime2.stdmet",
				"header": "#YY  MM DD hh mm WDIR WSPD GST  WVHT   DPD   APD MWD   PRES  ATMP  WTMP  DEWP  VIS PTDY  TIDE\n#yr  mo dy hr mn degT m/s  m/s     m   sec   sec degT   hPa  degC  degC  degC  nmi  hPa    ft",
				"line":   line})
			b.Observations = append(b.Observations, observation.Observation{StationID: id, Time: ts, Measurements: ms,
				Lat: &lat, Lon: &lon, Raw: raw, RawFormat: "ndbc.realtime2.stdmet"})
		}
	}
	return b
}
