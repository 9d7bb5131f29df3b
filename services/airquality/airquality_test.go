package airquality_test

import (
	"testing"

	"github.com/sensorgate/sensorgate/services/airquality"
	"github.com/sensorgate/sensorgate/services/internal/definitiontest"
)

// Each provider claims exactly the recorded payloads of its own kind (and parses them),
// and no file of another provider.
func TestClassifyRecordedPayloads(t *testing.T) {
	t.Parallel()
	// The three OpenAQ v1 pages, the v3 location list and the v3 sensors of location 3 (the
	// other v3 documents do not say which location they belong to); the three AirNow files.
	definitiontest.CheckRecordedPayloads(t, airquality.Definition(),
		map[string]string{"openaq": "openaq", "epa-airnow": "airnow"},
		map[string]int{"openaq": 8, "epa-airnow": 3})
}

// Live targets name the station and format of each document.
func TestLiveTargets(t *testing.T) {
	t.Parallel()
	definitiontest.CheckLiveTargets(t, airquality.Definition())
}
