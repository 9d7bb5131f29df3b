package latest

import (
	"encoding/json"
	"strconv"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/jsonbytes"
)

// appendAnswer appends ans as JSON, byte for byte what json.Marshal(ans) gives
// (encode_test.go checks it), without its cost: encoding/json re-validates and compacts
// every item's measurements (json.RawMessage), the bulk of a 1,000-sensor answer, which
// are the services' own JSON, already checked when their answer was decoded. The other
// fields are written directly, so an item costs no allocation (docs/live.md, figures).
func appendAnswer(b []byte, ans *Answer) ([]byte, error) {
	b = append(b, `{"items":`...)
	if ans.Items == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range ans.Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendItem(b, &ans.Items[i])
		}
		b = append(b, ']')
	}
	// The small rest goes through encoding/json.
	rest, err := json.Marshal(struct {
		Warnings      []Warning           `json:"warnings"`
		MaxAgeSeconds *int64              `json:"max_age_seconds"`
		ServerTime    contract.Time       `json:"server_time"`
		Pagination    contract.Pagination `json:"pagination"`
	}{ans.Warnings, ans.MaxAgeSeconds, ans.ServerTime, ans.Pagination})
	if err != nil {
		return nil, err
	}
	b = append(b, ',')
	return append(b, rest[1:]...), nil
}

// answerSize estimates the JSON size of ans, so its buffer grows at most once.
func answerSize(ans *Answer) int {
	size := 512
	for i := range ans.Items {
		size += 360 + len(ans.Items[i].Name) + len(ans.Items[i].Measurements)
	}
	return size
}

func appendItem(b []byte, it *Item) []byte {
	b = append(b, `{"sensor_id":`...)
	b = jsonbytes.AppendString(b, it.SensorID)
	b = append(b, `,"external_id":`...)
	b = jsonbytes.AppendString(b, it.ExternalID)
	b = append(b, `,"name":`...)
	b = jsonbytes.AppendString(b, it.Name)
	b = append(b, `,"latitude":`...)
	b = appendOptFloat(b, it.Latitude)
	b = append(b, `,"longitude":`...)
	b = appendOptFloat(b, it.Longitude)
	b = append(b, `,"service_id":`...)
	b = jsonbytes.AppendString(b, it.ServiceID)
	b = append(b, `,"timestamp":`...)
	if it.Timestamp == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = it.Timestamp.UTC().AppendFormat(b, contract.TimeLayout)
		b = append(b, '"')
	}
	b = append(b, `,"age_seconds":`...)
	if it.AgeSeconds == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *it.AgeSeconds, 10)
	}
	b = append(b, `,"expected_interval_seconds":`...)
	b = strconv.AppendInt(b, it.ExpectedIntervalSeconds, 10)
	b = append(b, `,"stale_after_seconds":`...)
	b = strconv.AppendInt(b, it.StaleAfterSeconds, 10)
	b = append(b, `,"stale":`...)
	b = strconv.AppendBool(b, it.Stale)
	b = append(b, `,"unavailable":`...)
	b = strconv.AppendBool(b, it.Unavailable)
	b = append(b, `,"measurements":`...)
	if it.Measurements == nil {
		b = append(b, "null"...)
	} else {
		b = jsonbytes.AppendCompact(b, it.Measurements)
	}
	return append(b, '}')
}

// appendOptFloat appends f as encoding/json writes a float64 (null when nil).
func appendOptFloat(b []byte, f *float64) []byte {
	if f == nil {
		return append(b, "null"...)
	}
	return jsonbytes.AppendFloat(b, *f) // NaN as null: json.Marshal would fail; coordinates never are
}
