package latest

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// TestParseAreaSensorIDs checks the sensor_ids list: trimmed, repeats and empty items
// dropped, UUIDs and external ids told apart, and one id over maxSensorIDs a 400 naming
// the parameter.
func TestParseAreaSensorIDs(t *testing.T) {
	const uuid = "0b8f7a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b"
	a, err := ParseArea(url.Values{"sensor_ids": {" 41002 ," + uuid + ",41002,,ndbc-44013"}}, MaxLimit)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(a.Filter.ExternalIDs, " "); got != "41002 "+uuid+" ndbc-44013" {
		t.Errorf("external ids %q", got)
	}
	if len(a.Filter.IDs) != 1 || a.Filter.IDs[0].String() != uuid {
		t.Errorf("ids %v, want [%s]", a.Filter.IDs, uuid)
	}

	ids := make([]string, maxSensorIDs+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("s%d", i)
	}
	full := strings.Join(ids[:maxSensorIDs], ",")
	if _, err := ParseArea(url.Values{"sensor_ids": {full + "," + ids[0]}}, MaxLimit); err != nil {
		t.Errorf("%d distinct ids and a repeat: %v", maxSensorIDs, err)
	}
	_, err = ParseArea(url.Values{"sensor_ids": {full + "," + ids[maxSensorIDs]}}, MaxLimit)
	var e *apierr.Error
	if !errors.As(err, &e) || e.Code != apierr.InvalidParameter || !strings.Contains(e.Message, "sensor_ids") {
		t.Errorf("%d distinct ids: %v, want invalid_parameter naming sensor_ids", maxSensorIDs+1, err)
	}
}
