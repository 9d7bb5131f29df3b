package coops

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

// ErrNotDatagetter is returned for a payload that is not a datagetter JSON response.
var ErrNotDatagetter = errors.New("coops: not a datagetter JSON response")

// ErrAPI is returned for datagetter's error body, which comes with HTTP 200.
var ErrAPI = errors.New("coops: datagetter error")

// RawFormat is recorded on observations: "coops.datagetter.<product>".
const rawPrefix = "coops.datagetter."

type metadata struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Lat  string `json:"lat"`
	Lon  string `json:"lon"`
}

type response struct {
	Metadata json.RawMessage   `json:"metadata"`
	Data     []json.RawMessage `json:"data"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
}

type record struct {
	T string `json:"t"`
	V string `json:"v"`
	F string `json:"f"`
	// Q is the quality of water-level records: "p" preliminary, "v" verified.
	Q string `json:"q"`
}

// ParseDatagetter reads a datagetter response of product (water_temperature,
// air_temperature, air_pressure, humidity) requested with units (metric or english) and
// time_zone=gmt. {"error": {"message": ...}} is ErrAPI with the message, not an empty
// batch. A record whose value is "" is missing (counted as missing_sentinel). CO-OPS'
// own quality is kept on the value (docs/quality.md): its range flags (X maximum, N
// minimum exceeded) mark it provider_range, its rate flag (R) provider_rate_of_change,
// both suspect; a preliminary record (q "p") is provider_preliminary.
func ParseDatagetter(productName, units string, data []byte) (observation.Batch, error) {
	pr, ok := products[productName]
	if !ok {
		return observation.Batch{}, fmt.Errorf("coops: unknown product %q", productName)
	}
	unit := pr.metricUnit
	switch units {
	case "metric", "":
	case "english":
		unit = pr.englishUnit
	default:
		return observation.Batch{}, fmt.Errorf("coops: units %q, want metric or english", units)
	}
	var r response
	if err := json.Unmarshal(data, &r); err != nil {
		return observation.Batch{}, fmt.Errorf("%w: %w", ErrNotDatagetter, err)
	}
	if r.Error != nil {
		return observation.Batch{}, fmt.Errorf("%w: %s", ErrAPI, batch.Truncate(strings.TrimSpace(r.Error.Message), 300))
	}
	if r.Metadata == nil {
		return observation.Batch{}, fmt.Errorf("%w: no metadata", ErrNotDatagetter)
	}
	var md metadata
	if err := json.Unmarshal(r.Metadata, &md); err != nil {
		return observation.Batch{}, fmt.Errorf("%w: metadata: %w", ErrNotDatagetter, err)
	}
	id := strings.ToUpper(strings.TrimSpace(md.ID))
	if err := contract.ValidExternalID(id); err != nil {
		return observation.Batch{}, fmt.Errorf("%w: station id %q: %w", ErrNotDatagetter, batch.Truncate(md.ID, 40), err)
	}
	mdc, err := batch.CompactRaw(r.Metadata)
	if err != nil {
		return observation.Batch{}, fmt.Errorf("%w: metadata: %w", ErrNotDatagetter, err)
	}
	b := batch.New(ProviderSlug)
	var lat, lon *float64
	la, e1 := strconv.ParseFloat(strings.TrimSpace(md.Lat), 64)
	lo, e2 := strconv.ParseFloat(strings.TrimSpace(md.Lon), 64)
	if e1 == nil && e2 == nil {
		var ok bool
		if lat, lon, ok = batch.Coord(la, lo); !ok {
			b.Reject(id, 0, "metadata.lat/lon", batch.ReasonBadCoordinates, fmt.Sprintf("position %q, %q is out of range", md.Lat, md.Lon))
		}
	} else if md.Lat != "" || md.Lon != "" {
		b.Reject(id, 0, "metadata.lat/lon", batch.ReasonBadCoordinates, fmt.Sprintf("position %q, %q is not numeric", batch.Truncate(md.Lat, 20), batch.Truncate(md.Lon, 20)))
	}
	b.Note(id, lat, lon)
	rawFormat := rawPrefix + productName
	prefix := append([]byte(`{"metadata":`), mdc...)
	prefix = append(prefix, `,"data":[`...)
	for at, rec := range batch.Records[record](b, id, "record", r.Data) {
		n, raw := at.N, at.Raw
		t, err := time.Parse("2006-01-02 15:04", strings.TrimSpace(rec.T))
		if err != nil {
			b.Reject(id, n, "t", batch.ReasonBadTimestamp, fmt.Sprintf("t %q is not YYYY-MM-DD hh:mm", batch.Truncate(rec.T, 40)))
			continue
		}
		v := strings.TrimSpace(rec.V)
		if v == "" {
			b.Reject(id, n, "v", batch.ReasonMissingSentinel, "v is empty (no data for this time)")
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			b.Reject(id, n, "v", batch.ReasonBadNumber, fmt.Sprintf("v %q is not a number", batch.Truncate(v, 20)))
			continue
		}
		rc, err := batch.CompactRaw(raw)
		if err != nil {
			b.Reject(id, n, "", batch.ReasonMalformedRow, err.Error())
			continue
		}
		ms := b.Start(id, n)
		ms.Add("v", pr.param, x, unit)
		markFlags(ms, rec)
		if ms.Len() == 0 {
			continue // rejected with its reason by Add
		}
		frag := make([]byte, 0, len(prefix)+len(rc)+2)
		frag = append(append(append(frag, prefix...), rc...), "]}"...)
		ms.Emit(t, lat, lon, frag, rawFormat)
	}
	name := strings.TrimSpace(md.Name)
	return b.Finish(func(id string) contract.Station {
		if name == "" {
			name = id
		}
		return contract.Station{
			ExternalID: id, Name: name, Description: "NOAA CO-OPS station " + id, SensorType: SensorType, Status: "active",
			ProviderSlug: ProviderSlug, FeedSlug: FeedSlug, ReportingIntervalS: ReportingIntervalS,
			DataTypes: []string{pr.param},
		}
	}), nil
}

// flagged reports whether any of the comma-separated 0/1 range-check flags is set.
// markFlags maps a meteorological record's flags "X,N,R" (maximum, minimum, rate of
// change exceeded) and its quality q onto the value.
func markFlags(ms *batch.Measurements, rec record) {
	for i, f := range strings.Split(rec.F, ",") {
		if strings.TrimSpace(f) != "1" {
			continue
		}
		switch i {
		case 0, 1:
			ms.Mark(canon.FlagSuspect, canon.ProviderRange)
		case 2:
			ms.Mark(canon.FlagSuspect, canon.ProviderRateOfChange)
		}
	}
	if strings.TrimSpace(rec.Q) == "p" {
		ms.Mark(canon.FlagNotEvaluated, canon.ProviderPreliminary)
	}
}
