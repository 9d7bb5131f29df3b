package ocean_test

import (
	"testing"

	"github.com/sensorgate/sensorgate/services/internal/definitiontest"
	"github.com/sensorgate/sensorgate/services/ocean"
)

// Each provider claims exactly the recorded payloads of its own kind (and parses them),
// and no file of another provider.
func TestClassifyRecordedPayloads(t *testing.T) {
	t.Parallel()
	// 41002, TPLM2, latest_obs, tplm272022, tplm2h2020, activestations; both CO-OPS files (one an error body).
	definitiontest.CheckRecordedPayloads(t, ocean.Definition(),
		map[string]string{"noaa-ndbc": "ndbc", "noaa-coops": "coops"},
		map[string]int{"noaa-ndbc": 6, "noaa-coops": 2})
}

// Live targets name the station and format of each document.
func TestLiveTargets(t *testing.T) {
	t.Parallel()
	definitiontest.CheckLiveTargets(t, ocean.Definition())
}
