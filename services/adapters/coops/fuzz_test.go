package coops

import (
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/services/adapters/internal/adaptertest"
)

func FuzzParseDatagetter(f *testing.F) {
	for _, n := range []string{"8723970_excerpt.json", "error_no_data.json"} {
		s := adaptertest.Testdata(f, n)
		f.Add("water_temperature", false, s)
		f.Add("air_temperature", true, s[:len(s)/2])
		f.Add("air_pressure", false, []byte(strings.Replace(string(s), `"30.1"`, `"1e308"`, 1)))
		f.Add("humidity", false, []byte(strings.Replace(string(s), `"30.1"`, `"NaN"`, 1)))
		f.Add("water_temperature", false, []byte(strings.Replace(string(s), `"30.1"`, `"-Inf"`, 1)))
		f.Add("water_temperature", false, []byte(strings.Replace(string(s), `"2014-09-27 00:00"`, "\"2014-09-27 \xff0:00\"", 1)))
	}
	f.Fuzz(func(t *testing.T, product string, english bool, data []byte) {
		units := "metric"
		if english {
			units = "english"
		}
		if b, err := ParseDatagetter(product, units, data); err == nil {
			adaptertest.CheckBatch(t, b)
		}
	})
}
