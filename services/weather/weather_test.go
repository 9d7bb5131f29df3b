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
	// The five NWS documents; the Ambient devices list and device data (its MAC in a
	// sidecar); the Davis sample; the METAR text and ADDS JSON.
	definitiontest.CheckRecordedPayloads(t, weather.Definition(),
		map[string]string{"noaa-nws": "nws", "ambient-weather": "imperial_station", "davis-weatherlink": "imperial_station", "noaa-awc": "imperial_station"},
		map[string]int{"noaa-nws": 5, "ambient-weather": 2, "davis-weatherlink": 1, "noaa-awc": 2})
}

// Live targets name the station and format of each document.
func TestLiveTargets(t *testing.T) {
	t.Parallel()
	definitiontest.CheckLiveTargets(t, weather.Definition())
}
