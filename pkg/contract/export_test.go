package contract_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

// CSVRecords hands on whole records, and tells the three ways an answer ends: whole, with
// the service's failure record, and cut inside a record.
func TestCSVRecords(t *testing.T) {
	rows := "u1,41002,2026-11-20T00:00:00Z,air_temperature,21.5,°C,70.7,°F,1\n" +
		"u1,41002,2026-11-20T00:00:00Z,wind_speed,3,m/s,5.8,kn,1\n"
	for _, c := range []struct {
		name, body string
		records    int
		check      func(error) bool
	}{
		{"whole", rows, 2, func(err error) bool { return err == nil }},
		{"empty", "", 0, func(err error) bool { return err == nil }},
		{"failed", rows + "# internal_error: store read failed\n", 2, func(err error) bool {
			var f *contract.ExportFailure
			return errors.As(err, &f) && f.Code == "internal_error" && f.Message == "store read failed"
		}},
		{"cut", rows + "u1,41002,2026-11-20T01:00:00Z,air_te", 2, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "ended mid-row after 2 rows")
		}},
		{"quoted field cut", rows + "u1,\"41002", 2, func(err error) bool { return err != nil }},
	} {
		var got [][]string
		err := contract.CSVRecords(strings.NewReader(c.body), func(rec []string) error {
			got = append(got, slices.Clone(rec))
			return nil
		})
		if len(got) != c.records || !c.check(err) {
			t.Errorf("%s: %d records, %v", c.name, len(got), err)
		}
		if len(got) > 1 && (got[1][3] != "wind_speed" || got[0][3] != "air_temperature") {
			t.Errorf("%s: records %q", c.name, got)
		}
	}
	stop := errors.New("stop")
	if err := contract.CSVRecords(strings.NewReader(rows), func([]string) error { return stop }); err != stop {
		t.Errorf("row's error: got %v", err)
	}
}
