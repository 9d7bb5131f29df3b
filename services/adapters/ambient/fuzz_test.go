package ambient

import (
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/services/adapters/internal/adaptertest"
)

func seeds(f *testing.F) {
	for _, n := range []string{"ambient_device_details_response.json", "ambient_device_details_open_response.json"} {
		s := adaptertest.Testdata(f, n)
		f.Add(s)
		f.Add(s[:len(s)/2])
		f.Add([]byte(strings.Replace(string(s), `"tempf": `, `"tempf": 1e308, "x": `, 1)))
		f.Add([]byte(strings.Replace(string(s), `"dateutc": `, `"dateutc": -1e300, "x": `, 1)))
		f.Add([]byte(strings.Replace(string(s), `"humidity"`, "\"humid\xffity\"", 1)))
	}
	f.Add([]byte(`[{"dateutc":1e400}]`))
	f.Add([]byte(`[null, 1, {"dateutc": 9.9e13, "tempf": -459.67}]`))
}

func FuzzParseDeviceData(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if b, err := ParseDeviceData("AA:BB:CC:DD:EE:FF", data); err == nil {
			adaptertest.CheckBatch(t, b)
		}
	})
}

func FuzzParseDevices(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if b, err := ParseDevices(data); err == nil {
			adaptertest.CheckBatch(t, b)
		}
	})
}
