package weather_test

import (
	"testing"

	"github.com/sensorgate/sensorgate/services/internal/definitiontest"
	"github.com/sensorgate/sensorgate/services/weather"
)

// Each provider claims exactly the recorded payloads of its own kind (and parses them),
// and no file of another provider.
func TestClassifyRecordedPayloads(t *testing.T) {
	t.Parallel()
	// The five NWS documents; the Ambient devices list (the device-data file names no MAC); the Davis sample.
	definitiontest.CheckRecordedPayloads(t, weather.Definition(),
		map[string]string{"noaa-nws": "nws", "ambient-weather": "imperial_station", "davis-weatherlink": "imperial_station"},
		map[string]int{"noaa-nws": 5, "ambient-weather": 1, "davis-weatherlink": 1})
}

// Live targets name the station and format of each document.
func TestLiveTargets(t *testing.T) {
	t.Parallel()
	definitiontest.CheckLiveTargets(t, weather.Definition())
}
