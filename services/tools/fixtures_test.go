package tools_test

import (
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

func station(id, name, typ string, interval int, lat, lon *float64) contract.Station {
	return contract.Station{ExternalID: id, Name: name, Description: name + " (fixture)", SensorType: typ, Status: "active",
		Latitude: lat, Longitude: lon, ReportingIntervalS: interval, DeploymentDate: "2020-01-01"}
}

// Fixture station positions.
const (
	lat41002, lon41002 = 31.759, -74.936
	latTPLM2, lonTPLM2 = 38.899, -76.436
)

// oceanFixture: buoy 41002 reports every 10 minutes from 07:50 to 11:50 with pressure
// falling 0.5 hPa per hour (1.5 hPa in 3 h) and waves only hourly, the last at 10:50; C-MAN
// TPLM2 reports hourly without waves; NOREAD has no readings.
func oceanFixture(t *testing.T) []store.Batch {
	var b41002 []obs
	latest := now.Add(-10 * time.Minute) // 11:50
	for i := 0; i <= 24; i++ {
		at := latest.Add(-time.Duration(i) * 10 * time.Minute)
		v := map[string]float64{
			canon.WindSpeedMS: 7.0, canon.WindDirectionDeg: 225, canon.WaterTemperatureC: 24.1,
			canon.AirTemperatureC: 22.3, canon.AirPressureHPa: 1010.0 + 0.5*latest.Sub(at).Hours(),
		}
		if at.Minute() == 50 && at != latest {
			v[canon.WaveHeightM] = 1.8
		}
		b41002 = append(b41002, obs{at, v})
	}
	var tplm2 []obs
	for i := 0; i < 6; i++ {
		tplm2 = append(tplm2, obs{now.Add(-time.Duration(i+1) * time.Hour), map[string]float64{
			canon.WindSpeedMS: 3.1, canon.WindDirectionDeg: 10, canon.WaterTemperatureC: 12.5, canon.AirPressureHPa: 1020,
		}})
	}
	return []store.Batch{
		batch(t, "ndbc", "ndbc-realtime", station("41002", "South Hatteras", "buoy", 600, fptr(lat41002), fptr(lon41002)), b41002),
		batch(t, "ndbc", "ndbc-realtime", station("TPLM2", "Thomas Point, MD", "fixed_station", 3600, fptr(latTPLM2), fptr(lonTPLM2)), tplm2),
		batch(t, "ndbc", "ndbc-realtime", station("NOREAD", "Never reported", "buoy", 600, nil, nil), nil),
	}
}

// weatherFixture: KFLL is hot and humid at 11:53 (90 °F, 50 %, heat index 94.6 °F);
// KPWM is 0 °F with a 15 mph wind (wind chill -19.4 °F); KOLD last reported at 07:00.
func weatherFixture(t *testing.T) []store.Batch {
	var kfll, kpwm []obs
	for i := 0; i < 5; i++ {
		at := now.Add(-7 * time.Minute).Add(-time.Duration(i) * time.Hour)
		kfll = append(kfll, obs{at, map[string]float64{
			canon.AirTemperatureC: (90.0 - 32) * 5 / 9, canon.RelativeHumidityPercent: 50, canon.WindSpeedMS: 2,
			canon.WindDirectionDeg: 90, canon.AirPressureHPa: 1015,
		}})
		kpwm = append(kpwm, obs{at, map[string]float64{
			canon.AirTemperatureC: (0.0 - 32) * 5 / 9, canon.RelativeHumidityPercent: 60, canon.WindSpeedMS: 15 * 0.44704,
			canon.WindDirectionDeg: 350, canon.AirPressureHPa: 1025 + float64(i),
		}})
	}
	return []store.Batch{
		batch(t, "nws", "nws-observations", station("KFLL", "Fort Lauderdale/Hollywood International Airport", "weather_station", 3600, fptr(26.07), fptr(-80.15)), kfll),
		batch(t, "nws", "nws-observations", station("KPWM", "Portland International Jetport", "weather_station", 3600, fptr(43.64), fptr(-70.30)), kpwm),
		batch(t, "nws", "nws-observations", station("KOLD", "Old Airfield", "weather_station", 3600, fptr(40), fptr(-100)),
			[]obs{{now.Add(-5 * time.Hour), map[string]float64{canon.AirTemperatureC: 15}}}),
	}
}

// airFixture: LA-STEADY has PM2.5 20 µg/m³ for 12 hours (NowCast 20, AQI 71); LA-SPIKE
// has 20 then 40 (NowCast (40 + 0.5*20) / 1.5 = 33.3, AQI 96); LA-GAP has only one of
// the three most recent hours (no NowCast: latest hour); AIRNOW-1 reports an AQI only;
// PM10-ONLY has neither PM2.5 nor AQI.
func airFixture(t *testing.T) []store.Batch {
	var steady []obs
	for i := 0; i < 12; i++ {
		steady = append(steady, obs{now.Add(-time.Duration(i+1) * time.Hour), map[string]float64{canon.PM25: 20, canon.PM10: 35, canon.OzonePPB: 30}})
	}
	spike := []obs{
		{now.Add(-2 * time.Hour), map[string]float64{canon.PM25: 20}},
		{now.Add(-1 * time.Hour), map[string]float64{canon.PM25: 40}},
	}
	gap := []obs{
		{now.Add(-5 * time.Hour), map[string]float64{canon.PM25: 60}},
		{now.Add(-1 * time.Hour), map[string]float64{canon.PM25: 12.3}},
	}
	return []store.Batch{
		batch(t, "openaq", "openaq-latest", station("LA-STEADY", "Los Angeles - N. Main St", "air_quality_monitor", 3600, fptr(34.0664), fptr(-118.2267)), steady),
		batch(t, "openaq", "openaq-latest", station("LA-SPIKE", "Los Angeles - Spike", "air_quality_monitor", 3600, fptr(34.1), fptr(-118.3)), spike),
		batch(t, "openaq", "openaq-latest", station("LA-GAP", "Los Angeles - Gap", "air_quality_monitor", 3600, fptr(34.2), fptr(-118.4)), gap),
		batch(t, "airnow", "airnow-current", station("AIRNOW-1", "AirNow reporting area", "air_quality_monitor", 3600, fptr(34), fptr(-118)),
			[]obs{{now.Add(-30 * time.Minute), map[string]float64{canon.AQI: 42}}}),
		batch(t, "openaq", "openaq-latest", station("PM10-ONLY", "PM10 sampler", "air_quality_monitor", 3600, fptr(34.3), fptr(-118.5)),
			[]obs{{now.Add(-30 * time.Minute), map[string]float64{canon.PM10: 80}}}),
	}
}
